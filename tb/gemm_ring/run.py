# amaranth: UnusedElaboratable=no
"""Run one crosscheck scenario on the RTL: a staged GEMM and its reduce-scatter on every GPU of
:class:`rtl.gemm_ring.GemmRing`, on the trace harness (Verilator), measured from the record.

The run, per GPU: program the DMA descriptors, arm the tiles, zero the output buffer (all
before the launch cycle ``T0``), then at ``T0`` every GPU's GEMM starts (``run``) and the
source releases the driver's writes as its waves finish. After a GPU's last notify the
driver reads its chunk back. No reset in the middle: the figures are of one clean run.

Checks (any failure raises ``AssertionError`` with the replay line):

* the stream protocol of every port, the driver's plan and its dependencies
  (:mod:`tb.trace.audit`);
* the launch came after every GPU's programs, arms and zeroing (the zeroing executed:
  its last write accepted ``compute_queue_depth + 4`` cycles before ``T0``);
* every GPU notified all its tiles, its chunk read back equals the numpy reduce-scatter bit
  for bit, it sent ``(N - 1) x tiles x beats`` beats on its link and received as many, and
  no block raised an error flag;
* the GEMM sources report no configuration error.

Figures (cycles counted from ``T0``): ``total_cycles`` (the last GPU's last notify),
``gemm_cycles`` (the last GPU's GEMM ``done``), ``gpu_gemm_cycles`` and ``gpu_total_cycles``
(each GPU's GEMM ``done`` and last notify), ``comm_wait_max`` (the longest wait of a
communication request at any arbiter), ``bank_utilisation`` (grants per cycle, busiest GPU)
and the sources' operand and store waits.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict

import numpy as np

from rtl.flow.generate import to_verilog
from rtl.gemm_ring import GemmRing
from tb.common.runner import REPO_ROOT
from tb.dma.trace import DescriptorCodec
from tb.nmc.model import lanes_to_beat
from tb.slice.trace import same_lanes
from tb.trace.audit import check_junk, check_plan
from tb.trace.bench import FastPacker
from tb.trace.check import Coverage, Trace, check_stream_protocol
from tb.trace.harness import Ports, run_harness, trace_simulator
from tb.trace.stimulus import Stimulus

from .row_bank import RowBank, RowTiming
from .row_ring import TOP as ROW_TOP
from .row_ring import row_ring_verilog
from .scenarios import Scenario
from .schedule import make_schedules

__all__ = ["run_scenario", "harness_cycles", "replay_line"]


def harness_cycles(scenario: Scenario, launch: int) -> int:
    """The harness's length: a power of two (so that the runs of a ring mostly share one
    build) above a generous bound of the run: every wave's compute and bank work, and
    every step's chunk on the link, one after another."""
    sysm, g = scenario.system, scenario.gemm
    tiles = g.tiles(sysm.gpus)
    waves = -(-tiles // g.tiles_per_wave)
    # Behind a DRAM-like memory every access may wait for its row.
    per_access = 1 + (sysm.rows.miss_cycles if sysm.rows is not None else 0)
    wave = g.compute_cycles_per_tile + g.tiles_per_wave * (g.read_beats_per_tile + sysm.tile_beats) * per_access + 64
    link = (sysm.gpus - 1) * (g.tiles_per_stage * sysm.tile_beats * sysm.link_cycles_per_beat + 4 * sysm.link_latency)
    return 1 << (launch + waves * wave + link).bit_length()
MCA, ROUND_ROBIN = 0, 1


def replay_line(scenario: Scenario, schedule: str, seed: int) -> str:
    """The command that repeats one run."""
    rows = scenario.system.rows
    if rows is not None:
        return (f"replay: python -m tb.gemm_ring.row_ring --size {scenario.size} --only {scenario.name} "
                f"--gpus {scenario.system.gpus} --schedule {schedule} --seed {seed} --banks {rows.banks} "
                f"--row-beats {rows.row_beats} --miss-cycles {rows.miss_cycles}"
                + ("" if rows.bank_hash else " --no-bank-hash"))
    return (f"replay: python -m system_model crosscheck --rtl --size {scenario.size} --only {scenario.name} "
            f"--gpus {scenario.system.gpus} --schedule {schedule} --seed {seed}")


def _launch_cycle(scenario: Scenario, params: dict, tiles: int) -> int:
    """A launch cycle after the longest set-up stream (arms wait for the tracker's sweep)."""
    n = scenario.system.gpus
    arms = n * tiles + params["entries"]
    zeroing = n * tiles * scenario.system.tile_beats
    rows = scenario.system.rows
    if rows is not None:   # the zeroing's rows open one after another (twice over, for the arms' reads between)
        zeroing += 2 * (zeroing // rows.row_beats + 1) * rows.miss_cycles
    return max(arms, zeroing, n * tiles) + 64


@functools.cache
def _ring_verilog(rows: RowTiming | None, params: tuple) -> tuple[str, str]:
    """The ring's Verilog and top module, converted once per process for each set of
    parameters (the three schedules of a scenario run the same hardware)."""
    if rows is None:
        return to_verilog("gemm_ring", simulation=True, **dict(params)), "gemm_ring"
    return row_ring_verilog(timing=rows, **dict(params)), ROW_TOP


def run_scenario(scenario: Scenario, schedule: str, *, seed: int = 1, simulator: str | None = None,
                 keep: dict | None = None, run_name: str | None = None) -> dict:
    """Run ``scenario`` under ``schedule`` ("t3", "t3_mca" or "sequential"); return its figures
    (``keep``, a dict, receives the trace and the ring for a closer look; ``run_name``: the
    harness's run folder, for runs of one scenario side by side)."""
    if schedule not in ("t3", "t3_mca", "sequential"):
        raise ValueError(f"schedule must be 't3', 't3_mca' or 'sequential', not {schedule!r}")
    sysm, gemm = scenario.system, scenario.gemm
    n, S, B = sysm.gpus, gemm.tiles_per_stage, sysm.tile_beats
    params = sysm.ring_params(S)
    ring = GemmRing(**params)
    s = ring.ring.slices[0]
    simulator = simulator or trace_simulator()
    replay = replay_line(scenario, schedule, seed)
    started = time.perf_counter()
    verilog, top = _ring_verilog(sysm.rows, tuple(sorted(params.items())))
    ports = Ports(verilog, top)
    plan, schedules = make_schedules(np.random.default_rng(seed), schedule="t3" if schedule != "sequential"
                                     else "sequential", gpus=n, tiles=S, beats=B, lanes=s.nmc.lanes,
                                     fmt=s.nmc.format.name, notify_cmd=s.notify_cmd, entries=params["entries"],
                                     depth=params["depth"])
    codec = DescriptorCodec(s.table)
    arm_p, gemm_p, packet_p = FastPacker(s.tracker.arm_layout), FastPacker(s.gemm_layout), FastPacker(s.packet_layout)
    names = [f"{port}__{g}" for g in range(n) for port in ("arm", "host_read", "program", "remote", "store")]
    t0 = _launch_cycle(scenario, params, S)
    cycles = harness_cycles(scenario, t0)
    stim = Stimulus(cycles, names)
    stim.control("run")[t0:] = 1
    stim.control("mode")[:] = MCA if schedule == "t3_mca" else ROUND_ROBIN
    stim.control("threshold")[:] = sysm.threshold
    stim.control("starvation_limit")[:] = sysm.starvation_limit
    setup = FastPacker(ring.sources[0].setup_layout).pack({
        "tiles": gemm.tiles(n), "remote_tiles": S if schedule != "sequential" else 0,
        "tiles_per_wave": gemm.tiles_per_wave, "read_beats_per_tile": gemm.read_beats_per_tile,
        "step_cycles": gemm.step_cycles, "outstanding_reads": gemm.outstanding_reads})
    stim.control("setup")[:] = setup
    for g, sch in enumerate(schedules):
        src = {port: stim.sources[f"{port}__{g}"] for port in ("arm", "host_read", "program", "remote", "store")}
        for prog in sch.programs:
            src["program"].add(codec.encode(prog["index"], prog["desc"]))
        last_arm = None
        for arm in sch.arms:
            last_arm = src["arm"].add(arm_p.pack(arm))
        for write in sch.zero_writes:
            src["store"].add(gemm_p.pack(write))
        for k, write in enumerate(sch.local_writes + sch.doorbells):
            src["store"].add(gemm_p.pack(write), after=(f"arm__{g}", last_arm) if k == 0 else None)
        for write in sch.remote_writes:
            src["remote"].add(packet_p.pack(write))
        for k, addr in enumerate(sch.readback):
            src["host_read"].add(addr, after=(f"notify__{g}", S - 1) if k == 0 else None)
    rows = "" if sysm.rows is None else (f"_rows{sysm.rows.banks}x{sysm.rows.row_beats}m{sysm.rows.miss_cycles}"
                                         f"{'h' if sysm.rows.bank_hash else ''}")
    folder = REPO_ROOT / "sim_build" / "gemm_ring" / f"n{n}_cpb{sysm.link_cycles_per_beat}_t{S}_c{cycles}{rows}"
    record, layout = run_harness(folder, verilog, ports, stim, [], simulator=simulator,
                                 run_name=run_name or f"{scenario.name}_{schedule}")
    sim_s = time.perf_counter() - started
    trace = Trace(top, record, layout, replay=replay, coverage=Coverage(top, ()))
    check_stream_protocol(trace, ports)
    check_plan(trace, ports, stim)
    check_junk(trace, ports)
    figures = _measure(trace, ring, scenario, schedule, plan, schedules, t0)
    if keep is not None:
        keep.update(trace=trace, ring=ring, launch=t0)
    figures.update(scenario=scenario.name, gpus=n, schedule=schedule, seed=seed, simulator=simulator,
                   wall_s=round(time.perf_counter() - started, 2), sim_s=round(sim_s, 2),
                   system=asdict(sysm), gemm=asdict(gemm))
    return figures


def _field_bit(trace: Trace, port: str, offset: int) -> np.ndarray:
    """Bit ``offset`` of a port of any width in every cycle, from the raw record (decoding a
    wide status word per cycle in Python would take seconds)."""
    word, shift, _ = trace.layout.fields[port]
    bit = shift + offset
    return (trace.record[:, word + bit // 32] >> np.uint32(bit % 32)) & np.uint32(1)


def _first(column: np.ndarray, after: int) -> int | None:
    hits = np.flatnonzero(column[after:])
    return int(hits[0]) + after if hits.size else None


def _measure(trace: Trace, ring: GemmRing, scenario: Scenario, schedule: str, plan, schedules, t0: int) -> dict:
    n, S, B = scenario.system.gpus, scenario.gemm.tiles_per_stage, scenario.system.tile_beats
    s = ring.ring.slices[0]
    status_p = FastPacker(s.status_layout)
    gemm_status_p = FastPacker(ring.sources[0].status_layout)
    margin = scenario.system.compute_queue_depth + 4
    done_offset = next(offset for name, offset, _ in gemm_status_p.fields if name == "done")
    last_notify, gemm_done, per_gpu = [], [], []
    for g in range(n):
        for port in ("program", "arm"):
            valid, ready = trace.np_col(f"{port}__{g}__valid"), trace.np_col(f"{port}__{g}__ready")
            handshakes = np.flatnonzero(valid & ready)
            if handshakes.size and handshakes[-1] >= t0:
                trace.fail(int(handshakes[-1]), f"{port}[{g}]", f"done before the launch at {t0}", "a transfer",
                           "raise the launch cycle")
        zeroing = len(schedules[g].zero_writes)
        store_hs = np.flatnonzero(trace.np_col(f"store__{g}__valid") & trace.np_col(f"store__{g}__ready"))
        if store_hs.size < zeroing or store_hs[zeroing - 1] + margin >= t0:
            trace.fail(t0, f"store[{g}]", f"zeroing executed before the launch at {t0}",
                       f"its last write at {store_hs[zeroing - 1] if store_hs.size >= zeroing else None}",
                       "raise the launch cycle")
        notify = np.flatnonzero(trace.np_col(f"notify__{g}__valid"))
        if notify.size != S:
            trace.fail(trace.cycles - 1, f"notify[{g}]", f"{S} notifies", f"{notify.size}",
                       "the reduce-scatter did not finish (or notified twice)")
        last_notify.append(int(notify[-1]))
        first_done = _first(_field_bit(trace, f"gemm_status__{g}", done_offset), t0)
        if first_done is None:
            trace.fail(trace.cycles - 1, f"gemm_status[{g}].done", 1, 0, "the GEMM never finished")
        gemm_done.append(first_done)
        final_gemm = gemm_status_p.unpack(trace.col(f"gemm_status__{g}")[-1])
        if final_gemm["config_error"]:
            trace.fail(trace.cycles - 1, f"gemm_status[{g}].config_error", 0, 1)
        # The read-back: the last len(chunk) words of this GPU's read data.
        rd_valid = np.flatnonzero(trace.np_col(f"read_data__{g}__valid"))
        payload = trace.col(f"read_data__{g}__payload")      # any beat width
        words = [int(payload[c]) for c in rd_valid[-len(schedules[g].readback):]]
        want = [lanes_to_beat(row) for row in plan.expected[g]]
        nmc = s.nmc
        for i, (got, exp) in enumerate(zip(words, want, strict=True)):
            if got != exp and not same_lanes(nmc.format.name, nmc.lanes, nmc.beat_width, got, exp):
                trace.fail(int(rd_valid[-len(want) + i]), f"read_data[{g}] (read-back of word "
                           f"{schedules[g].readback[i]})", exp, got, "the numpy reduce-scatter")
        end = trace.col(f"status__{g}")
        st = status_p.unpack(end[trace.cycles - 1])
        errors = {k: v for k, v in st.items() if k.split(".")[-1].startswith("err_") and not k.endswith(("_tile",
                  "_index")) and v}
        if errors:
            trace.fail(trace.cycles - 1, f"status[{g}]", "no error flag", errors)
        sent = (n - 1) * S * B
        for key in ("egress_beats", "ingress_beats"):
            if st[key] != sent:
                trace.fail(trace.cycles - 1, f"status[{g}].{key}", sent, st[key], "beats on the link (conservation)")
        at_end, at_launch = status_p.unpack(end[last_notify[-1]]), status_p.unpack(end[t0])
        per_gpu.append({
            "grants": sum(at_end[f"arbiter.{k}"] - at_launch[f"arbiter.{k}"]
                          for k in ("compute_grants", "comm_grants")),
            "comm_wait_max": at_end["arbiter.max_comm_wait"],
            "operand_wait_cycles": final_gemm["operand_wait_cycles"],
            "store_wait_cycles": final_gemm["store_wait_cycles"],
        })
        if scenario.system.rows is not None:
            row_p = FastPacker(RowBank(addr_width=s.nmc.addr_width, timing=scenario.system.rows).status_layout)
            rows = trace.col(f"row_status__{g}")
            at_end, at_launch = row_p.unpack(rows[last_notify[-1]]), row_p.unpack(rows[t0])
            per_gpu[-1].update({k: at_end[k] - at_launch[k] for k in ("misses", "wait_cycles")})
    total = max(last_notify) - t0 + 1
    rows = {} if scenario.system.rows is None else {
        "row_misses": max(p["misses"] for p in per_gpu),
        "row_wait_cycles": max(p["wait_cycles"] for p in per_gpu)}
    return {**rows,
        "launch_cycle": t0,
        "total_cycles": total,
        "gemm_cycles": max(gemm_done) - t0 + 1,
        "rs_cycles_after_gemm": max(last_notify) - max(gemm_done),
        # Per GPU (the ring's GPUs differ behind rows: each fills its chunks in its own order).
        "gpu_gemm_cycles": [d - t0 + 1 for d in gemm_done],
        "gpu_total_cycles": [x - t0 + 1 for x in last_notify],
        "comm_wait_max": max(p["comm_wait_max"] for p in per_gpu),
        "bank_utilisation": round(max(p["grants"] for p in per_gpu) / total, 4),
        "operand_wait_cycles": max(p["operand_wait_cycles"] for p in per_gpu),
        "store_wait_cycles": max(p["store_wait_cycles"] for p in per_gpu),
        "words_checked": sum(len(x.readback) for x in schedules),
    }
