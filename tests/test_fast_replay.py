"""The compiled slice and ring replays (tb/fast) against the Python reference replays.

The compiled model is a translation, so it is held to the reference it translates: on the
same recorded traces both must give the same verdict, the same checks, the same coverage
and the same figures; on records corrupted in one bit of one output (every compared
output, one bit of every payload field, lane and status field, and a read-back word) both
must stop at the same cycle on the same field; and on random inputs (tb/fast/step.py) the
two slice models must agree on every output every cycle. Its lane sums are held to numpy.
Seeds print and follow ``SEED=``.
"""

from __future__ import annotations

import os
import random
import re

import numpy as np
import pytest

from tb.common.seeds import derive_seed

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SLICE_CYCLES = 40_000
RING_CYCLES = 30_000


def _record(bench, cycles: int, seed: int):
    from rtl.flow.generate import to_verilog
    from tb.common.runner import REPO_ROOT
    from tb.trace.harness import Ports, run_harness

    verilog = to_verilog(bench.block, simulation=True, **bench.params)
    ports = Ports(verilog, bench.block)
    stimulus, responders = bench.stimulus(random.Random(seed), cycles)
    folder = REPO_ROOT / "sim_build" / "trace" / f"{bench.label}_compiled_vs_reference"
    # Its own run folder per process: under xdist two workers may record the same run.
    return run_harness(folder, verilog, ports, stimulus, responders, run_name=f"run-{os.getpid()}-{seed}")


def _replay(bench, record, layout, *, compiled: bool):
    """(outcome, checked cycles, checks, coverage, figures); outcome is None or the first
    line of the mismatch up to the values."""
    from tb.fast.replays import replay_ring, replay_slice
    from tb.trace.check import Coverage, Trace, TraceMismatch

    trace = Trace(bench.label, record, layout, replay="replay: test", coverage=Coverage(bench.label, bench.bins))
    try:
        if compiled:
            figures = (replay_slice if bench.label == "slice" else replay_ring)(bench, trace)
        else:
            figures = bench.replay_reference(trace)
    except TraceMismatch as error:
        head = str(error).splitlines()[0]
        return re.sub(r": expected .*", "", head), None, None, None, None
    return None, trace.checked_cycles, trace.checks, dict(trace.coverage.counts), figures


def _bench(which: str):
    from tb.ring.trace import RingTrace
    from tb.slice.trace import SliceTrace

    if which == "slice":
        return SliceTrace()
    return RingTrace.for_run(RingTrace.RUN_GPUS.index(int(which[4:])))    # "ring4", "ring6"


RUNS = ("slice", "ring4", "ring6")


@pytest.fixture(scope="module", params=RUNS)
def run(request):
    """A clean record of the slice, and of the ring on 4 and 6 GPUs (make test's ring runs but
    the 3-GPU one, which runs the same n-generic code)."""
    which = request.param
    seed = derive_seed("compiled replay", which)
    print(f"compiled vs reference {which} replay: seed {seed}")
    bench = _bench(which)
    record, layout = _record(bench, SLICE_CYCLES if which == "slice" else RING_CYCLES, seed)
    return which, bench, record, layout


def test_compiled_replay_equals_the_reference(run):
    which, bench, record, layout = run
    compiled = _replay(bench, record, layout, compiled=True)
    reference = _replay(bench, record, layout, compiled=False)
    assert reference[0] is None, f"the reference replay failed on the clean record: {reference[0]}"
    sums = compiled[4].pop("lane_sums_numpy")
    assert compiled == reference
    assert sums > 1000, "the run added lanes, and numpy checked every sum"
    assert compiled[1] > 0.95 * len(record), "most cycles are checked"
    from tb.trace.ranges import range_bins

    # The range ends hang on a few segments' draws; the behaviour bins do not.
    ends = set(range_bins(bench.ranges)) if hasattr(bench, "ranges") else set()
    missed = [name for name, count in compiled[3].items() if not count and name not in ends]
    assert len(missed) <= 2, f"a short run still hits most behaviour bins; missed: {missed}"


def _flip(record, layout, port: str, cycle: int, bit: int = 0):
    word, shift, _ = layout.fields[port]
    out = record.copy()
    position = shift + bit
    out[cycle, word + position // 32] ^= np.uint32(1 << (position % 32))
    return out


def _column(record, layout, port: str) -> np.ndarray:
    from tb.trace.check import Coverage, Trace

    return Trace("x", record, layout, replay="", coverage=Coverage("x", [])).np_col(port).astype(bool)


def _corruptions(which: str, bench, layout) -> list[tuple[str, str | None, int, bool]]:
    """(port, a port high in the flipped cycle or None, bit, may pass): every compared output,
    one bit of every payload sub-field and of every lane, one bit of every status field (of
    each GPU in turn on the ring). Only a data bit may pass: the model makes no promise about
    a word never stored."""
    from tb.fast import STATUS_FIELDS
    from tb.trace.bench import FastPacker

    s = bench.component if which == "slice" else bench.slice
    status = {n: o for n, o, _ in FastPacker(s.status_layout).fields}
    packet = {n: o for n, o, _ in FastPacker(s.packet_layout).fields}
    lane_bits = [k * s.nmc.beat_width // s.nmc.lanes + 3 for k in range(s.nmc.lanes)]
    out = []
    if which == "slice":
        for port in ("gemm", "gemm_read", "gemm_remote", "ingress", "arm", "program"):
            out.append((f"{port}__ready", None, 0, False))
        for port in ("egress__valid", "gemm_read_data__valid", "notify__valid", "dram_request__valid"):
            out.append((port, None, 0, False))
        out += [("egress__payload", "egress__valid", packet[f], False) for f in ("dst_port", "dst_addr", "op", "last")]
        out += [("egress__payload", "egress__valid", packet["data"] + b, True) for b in lane_bits]
        out += [("gemm_read_data__payload", "gemm_read_data__valid", b, True) for b in lane_bits]
        out.append(("notify__payload", "notify__valid", 0, False))
        out += [("dram_request__payload", "dram_request__valid", b, False) for b in (0, 8)]   # address, write
        out += [("status", None, status[f], False) for f in STATUS_FIELDS]
        return out
    n = bench.gpus
    for g in range(n):
        ports = ("arm", "gemm", "gemm_read", "gemm_remote", "program")
        out += [(f"{ports[k % 5]}__{g}__ready", None, 0, False) for k in (g, g + 2)]   # each port on some GPU
        out += [(f"gemm_read_data__{g}__valid", None, 0, False), (f"notify__{g}__valid", None, 0, False),
                (f"notify__{g}__payload", f"notify__{g}__valid", 0, False)]
        lane = lane_bits[g % len(lane_bits)]
        out.append((f"gemm_read_data__{g}__payload", f"gemm_read_data__{g}__valid", lane, True))
        out += [(f"status__{g}", None, status[f], False) for f in STATUS_FIELDS[g::n]]
    return out


def test_compiled_replay_stops_where_the_reference_does(run):
    """A record corrupted at one output in one cycle: both replays stop there, on that field."""
    which, bench, record, layout = run
    if which == "ring6":
        # The 4-GPU ring sweeps the same n-generic code in under half the time (fewer GPUs'
        # outputs to corrupt, each replay shorter); the 6-GPU record is replayed clean above.
        pytest.skip("the 4-GPU ring sweeps the same n-generic code")
    rng = random.Random(derive_seed("compiled replay corruption", which))
    active = ~_column(record, layout, "rst")
    missed_data = data = 0
    for port, when, bit, may_pass in _corruptions(which, bench, layout):
        mask = active & _column(record, layout, when) if when else active
        candidates = np.flatnonzero(mask)
        candidates = candidates[candidates > 1_000]
        early = candidates[candidates < 6_000]      # early: the reference replay stops sooner
        candidates = early if early.size else candidates
        assert candidates.size, f"no cycle to corrupt {port} in"
        cycle = int(candidates[rng.randrange(candidates.size)])
        bad = _flip(record[:cycle + 200], layout, port, cycle, bit)     # the record up to just after the flip
        compiled = _replay(bench, bad, layout, compiled=True)
        reference = _replay(bench, bad, layout, compiled=False)
        assert compiled[0] == reference[0], f"{port} bit {bit} flipped in cycle {cycle}"
        if reference[0] is None:
            assert may_pass, f"{port} bit {bit} flipped in cycle {cycle} went unnoticed"
            missed_data += 1
        else:
            assert f"cycle {cycle}:" in reference[0], reference[0]
        data += may_pass
    if which == "slice":    # the ring's GEMM reads mostly meet words never stored; its read-back test covers data
        assert missed_data <= data // 2, (f"{missed_data} of {data} data flips landed on words the model does not know "
                                          f"(record seed {derive_seed('compiled replay', which)})")


def test_compiled_ring_checks_the_read_back(run):
    """The first word a GPU reads back after a finished round, corrupted: both replays name it."""
    which, bench, record, layout = run
    if which == "slice":
        pytest.skip("the ring's read-back")
    rst = _column(record, layout, "rst")
    releases = np.flatnonzero(rst[:-1] & ~rst[1:]) + 1
    returns = np.flatnonzero(_column(record, layout, "gemm_read_data__0__valid") & ~rst)
    named = 0
    for start in releases[1:4]:
        cycle = int(returns[returns >= start][0])
        bad = _flip(record, layout, "gemm_read_data__0__payload", cycle, 7)
        compiled = _replay(bench, bad, layout, compiled=True)
        reference = _replay(bench, bad, layout, compiled=False)
        assert compiled[0] == reference[0]
        named += reference[0] is not None and "of word" in reference[0]
    assert named, "a finished round was read back within the first resets"


def test_compiled_slice_model_steps_with_the_reference_on_random_inputs():
    """Random inputs at small sizes, corners included (tb/fast/step.py)."""
    from tb.fast.step import differential_run

    total: dict[str, int] = {}
    for k in range(3):
        seed = derive_seed("compiled slice model, random inputs", k)
        print(f"compiled vs reference slice model on random inputs: seed {seed}")
        for corner, count in differential_run(seed, 20_000).items():
            total[corner] = total.get(corner, 0) + count
    assert all(total.values()), f"corners not met in three runs: {total}"


@pytest.mark.parametrize("fmt", ["binary16", "bfloat16", "binary32"])
def test_compiled_lane_sums_are_numpys(fmt):
    """Every bit pattern class (subnormals, infinities, NaNs, ties) against numpy."""
    from tb.fast import FORMATS, library, pointer
    from tb.fp_add.golden import golden_add, mismatches, random_bits

    seed = derive_seed("compiled lane sums", fmt)
    print(f"compiled lane sums, {fmt}: seed {seed}")
    gen = np.random.default_rng(seed)
    n = 200_000
    a, b = random_bits(gen, fmt, n), random_bits(gen, fmt, n)
    # Near-cancellations and equal exponents, where rounding ties and subnormal results live.
    b[: n // 4] = a[: n // 4] ^ gen.integers(0, 8, size=n // 4, dtype=np.uint64)
    a, b = a.astype(np.uint64), b.astype(np.uint64)
    out = np.zeros(n, dtype=np.uint64)
    library().fr_lane_sums(FORMATS[fmt], n, pointer(a), pointer(b), pointer(out))
    bad = mismatches(fmt, out, golden_add(fmt, a, b))
    assert bad.size == 0, f"{fmt}: {a[bad[0]]:#x} + {b[bad[0]]:#x} = {out[bad[0]]:#x}, numpy says otherwise"


def test_a_wrong_lane_sum_fails_the_run():
    from tb.fast import check_lane_sums
    from tb.fp_add.golden import golden_add
    from tb.trace.check import Coverage, Trace, TraceMismatch

    a = np.array([0x3C00, 0x4000, 0x7E00], dtype=np.uint64)        # 1, 2, NaN
    b = np.array([0x3C00, 0x3C00, 0x3C00], dtype=np.uint64)
    log = np.stack([a, b, golden_add("binary16", a, b).astype(np.uint64)], axis=1)
    trace = Trace("x", np.zeros((1, 1), dtype=np.uint32), None, replay="", coverage=Coverage("x", []))
    assert check_lane_sums("binary16", trace, log) == 3
    log[1, 2] ^= 1
    with pytest.raises(TraceMismatch, match="0x4000 \\+ 0x3c00"):
        check_lane_sums("binary16", trace, log)


def test_trace_model_takes_only_its_two_values(monkeypatch):
    from tb.fast import use_compiled

    monkeypatch.setenv("TRACE_MODEL", "verilator")
    with pytest.raises(ValueError, match="TRACE_MODEL must be 'cxx' or 'python'"):
        use_compiled()
    monkeypatch.setenv("TRACE_MODEL", "python")
    assert use_compiled() is False
