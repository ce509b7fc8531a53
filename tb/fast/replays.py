"""The slice's and the ring's trace replays on the compiled model (see :mod:`tb.fast`).

Each function does what its bench's Python ``replay_reference`` does, with the per-cycle
work in C++: the same comparisons in the same order (so the same first mismatch, named the
same way), the same coverage bins, the same checks counted. What needs numpy stays here:
every lane sum the C++ proposed is held to numpy, and the ring's finished rounds are held
to numpy's reduce-scatter, in the bank and in the RTL's read-back.
"""

from __future__ import annotations

import numpy as np

from tb.trace.bench import FastPacker
from tb.trace.check import Trace

from . import (
    B_FAIL,
    B_SNAPSHOTS,
    buffer,
    check_lane_sums,
    field_table,
    library,
    pointer,
    port_table,
    slice_params,
)

__all__ = ["replay_slice", "replay_ring"]

_STREAM = ("valid", "payload", "ready")
SLICE_PORTS = (["rst", "mode", "threshold", "starvation_limit", "dram_ready", "status"]
               + [f"{s}__{x}" for s in ("arm", "gemm", "gemm_read", "gemm_remote", "ingress", "program", "egress")
                  for x in _STREAM]
               + ["gemm_read_data__valid", "gemm_read_data__payload", "notify__valid", "notify__payload",
                  "dram_request__valid", "dram_request__payload"])
SLICE_CHECKS = ("gemm.ready", "gemm_read.ready", "gemm_remote.ready", "ingress.ready", "arm.ready", "program.ready",
                "gemm_read_data.valid", "egress.valid", "notify.valid", "dram_request.valid", "dram_request.payload",
                "gemm_read_data.payload", "egress.payload", "notify.payload", "status")
SLICE_COVER = ("reset with tiles armed", "offer held by the memory beyond", "read held by the memory beyond",
               "GEMM read returned", "egress beat of an unknown word", "egress back-pressured",
               "DMA forwards as stores", "tile notified", "arm held back: every trigger slot reserved",
               "remote store sent", "update held by the bank's adder hazard",
               "GEMM update held by the bank's adder hazard", "ingress update counted", "GEMM store counted",
               "ingress store counted", "read after write", "MCA: comm granted", "round robin mode",
               "tile forwarded by its DMA")
RING_PORTS = ("arm", "gemm", "gemm_read", "gemm_remote", "program")
RING_COVER = ("reset with a beat waiting at a link's output", "GEMM read returned", "tile notified", "tile forwarded",
              "finished round read back from the RTL")


def _fields(component) -> np.ndarray:
    return field_table(gemm=FastPacker(component.gemm_layout), packet=FastPacker(component.packet_layout),
                       arm=FastPacker(component.tracker.arm_layout), program=FastPacker(component.table.program_layout),
                       request=FastPacker(component.dram_request_layout), status=FastPacker(component.status_layout))


def _width(packer: FastPacker, name: str) -> int:
    return next(mask.bit_length() for n, _, mask in packer.fields if n == name)


def _params(component, *, depth, entries, trigger_depth, commands, max_beats, queue_depth, tile_beats_log2,
            compute_queue_depth, wait_width) -> np.ndarray:
    return slice_params(nmc=component.nmc, depth=depth, entries=entries,
                        tile_bits=_width(FastPacker(component.tracker.arm_layout), "tile"),
                        trigger_depth=trigger_depth, commands=commands,
                        index_bits=max(_width(FastPacker(component.table.program_layout), "index"),
                                       _width(FastPacker(component.tracker.arm_layout), "dma_cmd")),
                        max_beats=max_beats, queue_depth=queue_depth, tile_beats_log2=tile_beats_log2,
                        compute_queue_depth=compute_queue_depth, wait_width=wait_width,
                        read_latency=component.read_latency)


def _record(trace: Trace) -> np.ndarray:
    return np.ascontiguousarray(trace.record, dtype=np.uint32)


def _raise_failure(trace: Trace, name_of, explain_of) -> None:
    """Turn the C++ failure record into the reference replay's message."""
    fail = buffer(B_FAIL)
    cycle, code, gpu, detail, words = (int(x) for x in fail[:5])
    shift = 32 if words > 1 else 64
    expected = sum(int(w) << (shift * k) for k, w in enumerate(fail[5:5 + words]))
    got = sum(int(w) << (shift * k) for k, w in enumerate(fail[5 + words:5 + 2 * words]))
    explain = explain_of(code, got, expected)
    trace.fail(cycle, name_of(code, gpu, detail), expected, got, explain)


def replay_slice(bench, trace: Trace) -> dict:
    """:meth:`tb.slice.trace.SliceTrace.replay_reference`, compiled."""
    p, s = bench.params, bench.component
    lib = library()
    record = _record(trace)
    ports = port_table(trace.layout, SLICE_PORTS)
    fields = _fields(s)
    params = _params(s, depth=p["depth"], entries=p["entries"], trigger_depth=p["trigger_depth"],
                     commands=p["commands"], max_beats=p["max_beats"], queue_depth=p["queue_depth"],
                     tile_beats_log2=p["tile_beats_log2"], compute_queue_depth=p["compute_queue_depth"],
                     wait_width=p["wait_width"])
    threshold, limit = (r for r in bench.ranges if r.name in ("threshold", "starvation_limit"))
    ends = np.array([threshold.lo, threshold.hi, limit.lo, limit.hi], dtype=np.int64)
    result = np.zeros(4, dtype=np.int64)
    cover = np.zeros(len(SLICE_COVER) + 6, dtype=np.int64)
    status_p, packet_p = FastPacker(s.status_layout), bench.packet_p
    if lib.fr_slice_replay(pointer(record), record.shape[0], record.shape[1], pointer(ports), pointer(fields),
                           pointer(params), pointer(ends), pointer(result), pointer(cover)):
        def explain(code, got, expected):
            name = SLICE_CHECKS[code]
            return (status_p.diff(got, expected) if name == "status" else
                    packet_p.diff(got, expected) if name == "egress.payload" else "")
        _raise_failure(trace, lambda code, _, __: SLICE_CHECKS[code], explain)
    sums = check_lane_sums(s.nmc.format.name, trace)
    counts = trace.coverage.counts
    mode = next(r for r in bench.ranges if r.name == "mode")
    names = SLICE_COVER + (*mode.bins, *threshold.bins, *limit.bins)
    for name, count in zip(names, cover.tolist(), strict=True):
        counts[name] += count
    trace.checked_cycles = int(result[0])
    trace.checks += int(result[1])
    trace.stream_fields(bench.REPLAY_FIELDS)
    return {"notifies": counts["tile notified"], "forwarded": counts["tile forwarded by its DMA"],
            "lane_sums_numpy": sums}


def _ring_check_name(code: int, g: int, addr: int) -> str:
    if code < len(RING_PORTS):
        return f"{RING_PORTS[code]}__{g}.ready"
    return (f"gemm_read_data__{g}.valid", f"notify__{g}.valid", f"gemm_read_data[{g}].payload",
            f"notify[{g}].payload", f"status[{g}]", f"gemm_read_data[{g}] of word {addr}")[code - len(RING_PORTS)]


def _ring_explain(status_p: FastPacker):
    def explain(code: int, got: int, expected: int) -> str:
        if code == len(RING_PORTS) + 4:
            return status_p.diff(got, expected)
        return "the last round's reduce-scatter (numpy)" if code == len(RING_PORTS) + 5 else ""
    return explain


def _rounds(bench, n: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Per planned round: the tiles each GPU notifies when it finishes and the words of each
    GPU's chunk read back in the next segment; and their numpy values, by address."""
    from tb.nmc.model import lanes_to_beat

    rounds = np.zeros((max(1, len(bench.rounds)), 1 + n), dtype=np.int32)
    expected = np.zeros((max(1, len(bench.rounds)), n, depth), dtype=np.uint64)
    for k, (_, plan) in enumerate(bench.rounds):
        rounds[k, 0] = plan.tiles
        for g in range(n):
            addrs = plan.chunk_addresses(g)
            rounds[k, 1 + g] = len(addrs)
            expected[k, g, addrs.start:addrs.stop] = [lanes_to_beat(row) for row in plan.expected[g]]
    return rounds, expected


def replay_ring(bench, trace: Trace) -> dict:
    """:meth:`tb.ring.trace.RingTrace.replay_reference`, compiled."""
    p, n = bench.params, bench.gpus
    s = bench.slice
    lib = library()
    record = _record(trace)
    names = ["rst", "mode", "threshold", "starvation_limit"]
    for g in range(n):
        names += [f"{x}__{g}__{y}" for x in RING_PORTS for y in _STREAM]
        names += [f"gemm_read_data__{g}__valid", f"gemm_read_data__{g}__payload", f"notify__{g}__valid",
                  f"notify__{g}__payload", f"status__{g}"]
    ports = port_table(trace.layout, names)
    fields = _fields(s)
    params = _params(s, depth=p["depth"], entries=p["entries"], trigger_depth=s.tracker.trigger_depth,
                     commands=p["commands"], max_beats=p["max_beats"], queue_depth=s.table.queue_depth,
                     tile_beats_log2=p["tile_beats_log2"], compute_queue_depth=p.get("compute_queue_depth", 8),
                     wait_width=s.arbiter.wait_width)
    link = bench.component.links[0]
    link_params = np.array([link.latency, link.cycles_per_beat, link.depth], dtype=np.int32)
    chunk_words = bench.tiles * bench.beats
    result = np.zeros(4, dtype=np.int64)
    cover = np.zeros(len(RING_COVER) + n, dtype=np.int64)
    status_p = FastPacker(s.status_layout)
    rounds, expected = _rounds(bench, n, p["depth"])
    if lib.fr_ring_replay(pointer(record), record.shape[0], record.shape[1], pointer(ports), pointer(fields),
                          pointer(params), n, pointer(link_params), chunk_words, len(bench.rounds), pointer(rounds),
                          pointer(expected), pointer(result), pointer(cover)):
        fail = buffer(B_FAIL)
        if int(fail[1]) == len(RING_PORTS) and fail[5] == fail[6]:
            raise AssertionError(f"ring: cycle {int(fail[0])}: GPU {int(fail[2])} returned a GEMM read it never "
                                 f"accepted\n  {trace.replay}")
        if int(fail[1]) == len(RING_PORTS) + 6:      # the bank check of a finished round, as _end_round words it
            seg = bench.rounds[int(fail[3])][0]
            raise AssertionError(f"ring: round {seg.index}: GPU {int(fail[2])}'s chunk differs from the "
                                 f"reduce-scatter at {int(fail[6])} words (first: word {int(fail[5])})")
        _raise_failure(trace, _ring_check_name, _ring_explain(status_p))
    sums = check_lane_sums(s.nmc.format.name, trace)
    counts = trace.coverage.counts
    for name, count in zip(RING_COVER, cover[:len(RING_COVER)].tolist(), strict=True):
        counts[name] += count
    for stage, count in enumerate(cover[len(RING_COVER):].tolist()):
        if count:
            counts[bench.stage_bins[stage]] += count
    _check_banks(bench, trace, n, p["depth"])
    if int(result[2]) > 8:
        raise AssertionError(f"ring: GEMM reads never answered: {int(result[2])} at one GPU")
    trace.checked_cycles = int(result[0])
    trace.checks += int(result[1])
    trace.stream_fields(bench.replay_fields())
    return {"rounds_completed": counts["reduce-scatter completed"], "lane_sums_numpy": sums}


def _check_banks(bench, trace: Trace, n: int, depth: int) -> None:
    """Each finished round's chunks in the model's banks against numpy (``bench._end_round``),
    from the banks the compiled replay recorded at every segment's end."""
    snaps = buffer(B_SNAPSHOTS)
    size = 1 + n + 2 * n * depth
    counts = trace.coverage.counts
    for start in range(0, len(snaps), size):
        snap = snaps[start:start + size]
        segment = int(snap[0])
        notified = snap[1:1 + n].astype(np.int64).tolist()
        words = snap[1 + n:].reshape(n, depth, 2)
        banks = [[int(v) if known else None for v, known in bank.tolist()] for bank in words]
        current = bench.rounds[segment] if segment < len(bench.rounds) else None   # 2**64 - 1: none released
        bench._end_round(current, notified, banks, counts)
