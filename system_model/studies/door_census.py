# amaranth: UnusedElaboratable=no
# (The RTL ring is built only to read its layouts.)
"""Who opens rows at a GPU's door, in the RTL ring behind rows and in the model's channel.

Why: behind rows a request costs what it closes. The crosscheck compares totals; when the
model misses one, the question is which streams take rows from which, and whether the
model's channel has the RTL's answer. This census counts, over one GPU's stage of a T3 run,
every row opening by the kind of the request that starts it and the kind of the request
last granted in that bank (the row it closes), and the grants by kind (kinds:
:data:`~system_model.engine.dram_door.KINDS`).

* **The RTL's**: from the trace of a run of the ring behind rows
  (:class:`tb.gemm_ring.row_ring.RowGemmRing` shows each door's offer and the memory's
  answer). The door is replayed from the offers with the memory's documented rule
  (:class:`tb.gemm_ring.row_bank.RowTiming`), and the replay must count exactly the
  openings the memory counted (``row_status.misses``), or the census raises. A grant's kind
  is its class at the arbiter (the slice's grant counters, which count a grant in the cycle
  after it) and whether it writes; an opening's, that of the next grant of its address.
* **The model's**: the wave the model's channel settled on for that GPU and stage in the
  same scenario (:func:`system_model.schemes.t3.t3_ring` run as the crosscheck runs it, the
  last wave of the stage served), simulated again with a
  :class:`~system_model.engine.dram_door.DoorCensus`.

``python -m system_model.studies.door_census --scenario latency_bound --gpus 8 --schedule t3
--gpu 0 --stage 3`` runs the RTL scenario (Verilator, under a minute) and prints both
censuses per 1,000 cycles.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..engine.dram_cycle import STARVATION_CAP, TRACE_WINDOW, WAVES, recording_waves
from ..engine.dram_door import KINDS, DoorCensus, simulate_door

__all__ = ["rtl_census", "model_census", "stage_window", "census_markdown", "main"]

#: How far ahead (cycles) an offer's grant is looked for: a held offer waits at most a
#: row's opening and the arbiter's starvation limit, far less.
GRANT_HORIZON = 4096


def stage_window(trace, gpu: int, launch: int, stage: int, beats_per_stage: int) -> tuple[int, int]:
    """The cycles (from the launch) of ``gpu``'s stage ``stage`` of a T3 run: from its previous
    stage's last store (stage 1: its last write to the next GPU; stage 0: the launch) to its own
    last (stage 0: its last write to the next GPU)."""
    stores = np.flatnonzero(trace.np_col(f"store__{gpu}__valid") & trace.np_col(f"store__{gpu}__ready")) - launch
    remote = np.flatnonzero(trace.np_col(f"remote__{gpu}__valid") & trace.np_col(f"remote__{gpu}__ready")) - launch
    stores, remote = stores[stores >= 0], remote[remote >= 0]
    if stage < 0 or stage * beats_per_stage > stores.size:
        raise ValueError(f"stage must be from 0 to {stores.size // beats_per_stage}, not {stage}")
    if stage == 0:
        return 0, int(remote[-1]) + 1
    first = int(remote[-1]) if stage == 1 else int(stores[(stage - 1) * beats_per_stage - 1])
    return first, int(stores[stage * beats_per_stage - 1]) + 1


def rtl_census(trace, *, gpu: int, launch: int, window: tuple[int, int], stage: int, stage_chunks: list[int],
               chunk_requests: int, timing, addr_width: int, status_packer, row_packer) -> DoorCensus:
    """The census of ``gpu``'s door over ``window`` (cycles from ``launch``; its GEMM's stage
    ``stage``, whose stages fill the chunks ``stage_chunks`` of ``chunk_requests`` requests in
    turn) in a run of the ring behind rows (see the module); raises ``AssertionError`` when the
    door's replay does not count the memory's own openings."""
    door = trace.np_col(f"door__{gpu}")[launch:].astype(np.int64)
    valid = trace.np_col(f"door_valid__{gpu}")[launch:].astype(bool)
    ready = trace.np_col(f"door_ready__{gpu}")[launch:].astype(bool)
    status = trace.col(f"status__{gpu}")[launch:]
    comm = np.array([status_packer.unpack(v)["arbiter.comm_grants"] for v in status], dtype=np.int64)
    addr, write = door & ((1 << addr_width) - 1), (door >> addr_width) & 1
    granted = np.flatnonzero(valid & ready)
    # The counters count a grant in the cycle after it.
    by_comm = np.zeros(len(door), dtype=bool)
    by_comm[:-1] = np.diff(comm) > 0
    kinds = {int(c): ("update" if write[c] else "dma_read") if by_comm[c] else
             ("gemm_store" if write[c] else "gemm_read") for c in granted}

    def offered_kind(c: int) -> str:
        j = int(np.searchsorted(granted, c))
        for k in granted[j:j + GRANT_HORIZON]:
            if addr[k] == addr[c]:
                return kinds[int(k)]
            if k - c > GRANT_HORIZON:
                break
        return "never granted"

    first, last = window
    n, chunk = len(stage_chunks), chunk_requests

    def place(a: int) -> int | None:
        c = a // chunk
        return (stage_chunks.index(c) - stage + n // 2) % n - n // 2 if c in stage_chunks else None
    census = DoorCensus(place)
    census.cycles = last - first
    opened = [None] * timing.banks
    countdown = [0] * timing.banks
    owner: list = [None] * timing.banks
    openings = 0
    for c in range(len(door)):
        start = None
        if valid[c]:
            bank, row = timing.bank_row(int(addr[c]))
            if countdown[bank] == 0 and opened[bank] != row:
                start = (bank, row)
                openings += 1
                if first <= c < last:
                    key = (offered_kind(c), owner[bank])
                    census.openings[key] = census.openings.get(key, 0) + 1
            if ready[c]:
                owner[bank] = kinds[c]
                if first <= c < last:
                    census.grants[kinds[c]] = census.grants.get(kinds[c], 0) + 1
                    if kinds[c] != "gemm_read":
                        key = (kinds[c], place(int(addr[c])))
                        census.places[key] = census.places.get(key, 0) + 1
        countdown = [max(0, n - 1) for n in countdown]
        if start is not None:
            opened[start[0]], countdown[start[0]] = start[1], timing.miss_cycles - 1
    rows = trace.col(f"row_status__{gpu}")
    counted = row_packer.unpack(rows[-1])["misses"] - row_packer.unpack(rows[launch])["misses"]
    assert openings == counted, (f"the door's replay of GPU {gpu} opened {openings} rows, the memory counted "
                                 f"{counted}: the census does not read this trace as the memory ran")
    return census


def model_census(scenario, schedule: str, gpu: int, stage: int) -> DoorCensus:
    """The census of the wave the model's channel settled on for ``gpu``'s stage ``stage`` of
    ``scenario`` under ``schedule`` ("t3" or "t3_mca"), as the crosscheck runs it."""
    from ..schemes.context import Sublayer
    from ..schemes.t3 import t3_ring
    from .crosscheck import gpu_study, micro_study

    if schedule not in ("t3", "t3_mca"):
        raise ValueError(f"schedule must be 't3' or 't3_mca', not {schedule!r}")
    cfg, gemm, shape, kernel = micro_study(scenario)
    n = scenario.system.gpus
    if cfg.cycle_rows is None:
        raise ValueError("the scenario has no rows (a census needs the DRAM-like memory)")
    with recording_waves() as served:
        t3_ring(Sublayer(gpu_study(cfg, n, gpu), shape, n, "reduce_scatter", kernel),
                policy="mca" if schedule == "t3_mca" else "rr", gemm=gemm)
    waves = [w for w in served if w[0].stage == stage and w[0].reads > 0 and w[0].update_rate + w[0].dma_rate > 0]
    if not waves:
        raise ValueError(f"the model served no wave of stage {stage} with communication beside it")
    load, policy, threshold, limit = waves[-1]
    if policy != "mca":        # only T3-MCA reads the threshold and the starvation limit
        threshold = limit = 1
    census = DoorCensus()
    simulate_door(load.representative(), policy, threshold, limit, waves=WAVES, trace_window=TRACE_WINDOW,
                  starvation_cap=STARVATION_CAP, census=census)
    return census


def census_markdown(rtl: DoorCensus, model: DoorCensus, title: str) -> str:
    """Both censuses side by side, per 1,000 cycles."""
    def per_k(census: DoorCensus, count: int) -> str:
        return f"{1000 * count / max(1, census.cycles):.1f}"
    lines = [f"# {title}", "", f"RTL: {rtl.cycles:,} cycles; model: {model.cycles:,} cycles of its settled wave.", "",
             "| grants by kind (per 1,000 cycles) | RTL | model |", "|---|---|---|"]
    for kind in KINDS:
        lines.append(f"| {kind} | {per_k(rtl, rtl.grants.get(kind, 0))} | {per_k(model, model.grants.get(kind, 0))} |")
    lines += ["", "| row opened by | row it closes | RTL | model |", "|---|---|---|---|"]
    keys = sorted(set(rtl.openings) | set(model.openings),
                  key=lambda k: -(rtl.openings.get(k, 0) / max(1, rtl.cycles) + model.openings.get(k, 0)
                                  / max(1, model.cycles)))
    for key in keys:
        lines.append(f"| {key[0]} | {key[1] or 'none open'} | {per_k(rtl, rtl.openings.get(key, 0))} "
                     f"| {per_k(model, model.openings.get(key, 0))} |")
    total = [sum(c.openings.values()) for c in (rtl, model)]
    grants = [sum(c.grants.values()) for c in (rtl, model)]
    lines.append(f"| all | | {per_k(rtl, total[0])} | {per_k(model, total[1])} |")
    lines += ["", "| grants of | in the chunk of stage | RTL | model |", "|---|---|---|---|"]
    for key in sorted(set(rtl.places) | set(model.places), key=lambda k: (KINDS.index(k[0]), k[1] is None, k[1] or 0)):
        step = "another" if key[1] is None else ("this one" if key[1] == 0 else f"{key[1]:+d}")
        lines.append(f"| {key[0]} | {step} | {per_k(rtl, rtl.places.get(key, 0))} "
                     f"| {per_k(model, model.places.get(key, 0))} |")
    lines += ["", f"Openings per grant: RTL {total[0] / max(1, grants[0]):.3f}, "
                  f"model {total[1] / max(1, grants[1]):.3f}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run one crosscheck scenario behind rows on the RTL and print the door census of one
    GPU's stage beside the model's."""
    from tb.gemm_ring.row_bank import RowBank
    from tb.gemm_ring.run import run_scenario
    from tb.trace.bench import FastPacker

    from .crosscheck import ROWS, size_scenarios

    parser = argparse.ArgumentParser(prog="python -m system_model.studies.door_census", description=main.__doc__)
    parser.add_argument("--scenario", required=True, choices=("compute_bound", "memory_heavy", "link_bound",
                                                              "latency_bound"))
    parser.add_argument("--gpus", type=int, default=8, help="4 or 8 at full size (default 8)")
    parser.add_argument("--size", choices=("quick", "full"), default="full")
    parser.add_argument("--schedule", choices=("t3", "t3_mca"), default="t3")
    parser.add_argument("--gpu", type=int, default=0, help="the GPU whose door is counted (default 0)")
    parser.add_argument("--stage", type=int, default=3, help="its GEMM's stage, from 0 (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="data seed of the RTL run (default 1)")
    args = parser.parse_args(argv)
    try:
        chosen = [s for s in size_scenarios(args.size, ROWS) if s.name == args.scenario and s.system.gpus == args.gpus]
        if not chosen:
            raise ValueError(f"--gpus: the {args.size} {args.scenario} scenario has no run of {args.gpus} GPUs")
        scenario = chosen[0]
        if not 0 <= args.gpu < args.gpus:
            raise ValueError(f"--gpu must be from 0 to {args.gpus - 1}, not {args.gpu}")
        if not 0 <= args.stage < args.gpus:
            raise ValueError(f"--stage must be from 0 to {args.gpus - 1}, not {args.stage}")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    model = model_census(scenario, args.schedule, args.gpu, args.stage)
    keep: dict = {}
    run_scenario(scenario, args.schedule, seed=args.seed, keep=keep)
    trace, ring, launch = keep["trace"], keep["ring"], keep["launch"]
    s = ring.ring.slices[0]
    beats = scenario.gemm.tiles_per_stage * scenario.system.tile_beats
    window = stage_window(trace, args.gpu, launch, args.stage, beats)
    n = args.gpus
    rtl = rtl_census(trace, gpu=args.gpu, launch=launch, window=window, stage=args.stage,
                     stage_chunks=[(args.gpu - 1 - k) % n for k in range(n)], chunk_requests=beats,
                     timing=scenario.system.rows,
                     addr_width=s.nmc.addr_width, status_packer=FastPacker(s.status_layout),
                     row_packer=FastPacker(RowBank(addr_width=s.nmc.addr_width, timing=ROWS).status_layout))
    print(census_markdown(rtl, model, f"Door census: {scenario.name}, {args.gpus} GPUs, {args.schedule}, GPU "
                                      f"{args.gpu}, stage {args.stage} (RTL cycles {window[0]:,}-{window[1]:,})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
