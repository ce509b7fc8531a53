# amaranth: UnusedElaboratable=no
# (The RTL ring's blocks are built only to read their layouts.)
"""Who opens rows at a GPU's door, in the RTL ring behind rows and in the model's channel.

Why: behind rows a request costs what it closes. The crosscheck compares totals; when the
model misses one, the question is which streams take rows from which, and whether the
model's channel has the RTL's answer. This census counts, over one GPU's stage of a T3 run,
every row opening by the kind of the request that starts it and the kind of the request
last granted in that bank (the row it closes), the grants by kind, and which stage's chunk
the stores, updates and DMA reads land in (kinds: :data:`~system_model.engine.dram_door.KINDS`).

* **The RTL's**: from the trace of a run of the ring behind rows
  (:class:`tb.gemm_ring.row_ring.RowGemmRing` shows each door's offer and the memory's
  answer). The door is replayed from power-up with the memory's documented rule
  (:class:`tb.gemm_ring.row_bank.RowTiming`); the replay must answer every offer as the
  memory did, cycle by cycle, and count the openings the memory counted
  (``row_status.misses``), or the census raises. A grant is a cycle in which the slice's
  arbiter counted one (its counters count a grant in the cycle after it; the memory may
  let an offer go that the slice does not take); its kind is the arbiter's class and
  whether it writes. An opening's kind is that of the next grant of its address.
* **The model's**: the waves the model's channel served for that GPU's stage in the same
  scenario (:func:`system_model.schemes.t3.t3_ring` run as the crosscheck runs it), each
  simulated again with a :class:`~system_model.engine.dram_door.DoorCensus` and weighted
  by the time the timeline ran it.

``python -m system_model crosscheck --rtl --rows --only latency_bound --gpus 8 --schedule t3
--door-census 0:3`` runs the RTL scenario (Verilator, under a minute) and prints both
censuses per 1,000 cycles.
"""

from __future__ import annotations

import numpy as np

from ...engine.dram_cycle import STARVATION_CAP, TRACE_WINDOW, WAVES, recording_waves
from ...engine.dram_door import KINDS, DoorCensus, simulate_door

__all__ = ["DoorTrace", "model_census", "stage_window", "census_markdown", "door_census"]

#: How far ahead an offer's grant is looked for (cycles): a held offer waits at most a row's
#: opening and the arbiter's starvation limit, far less.
GRANT_HORIZON_CYCLES = 4096


def stage_window(trace, gpu: int, launch: int, stage: int, beats_per_stage: int) -> tuple[int, int]:
    """The cycles ``[first, last)`` (from the launch) of ``gpu``'s stage ``stage`` of a T3 run:
    from the cycle after its previous stage's last store (stage 1: its last write to the next
    GPU; stage 0: the launch) to its own last (stage 0: its last write to the next GPU)."""
    stores = np.flatnonzero(trace.np_col(f"store__{gpu}__valid") & trace.np_col(f"store__{gpu}__ready")) - launch
    remote = np.flatnonzero(trace.np_col(f"remote__{gpu}__valid") & trace.np_col(f"remote__{gpu}__ready")) - launch
    stores, remote = stores[stores >= 0], remote[remote >= 0]
    if stage < 0 or stage * beats_per_stage > stores.size:
        raise ValueError(f"stage must be from 0 to {stores.size // beats_per_stage}, not {stage}")
    if stage == 0:
        return 0, int(remote[-1]) + 1
    first = int(remote[-1]) if stage == 1 else int(stores[(stage - 1) * beats_per_stage - 1])
    return first + 1, int(stores[stage * beats_per_stage - 1]) + 1


class DoorTrace:
    """One GPU's door in a run of the ring behind rows, replayed once (see the module): every
    row opening after the launch as ``(cycle, opener's kind, closed row's kind)`` and every
    grant as ``(cycle, kind, address)``, cycles from the launch. Raises ``AssertionError``
    where the replay does not answer as the memory did, or does not count its openings."""

    def __init__(self, trace, *, gpu: int, launch: int, timing, addr_width: int, status_packer, row_packer):
        door = trace.np_col(f"door__{gpu}").astype(np.int64)
        valid = trace.np_col(f"door_valid__{gpu}").astype(bool)
        ready = trace.np_col(f"door_ready__{gpu}").astype(bool)
        reset = trace.reset_mask()
        counters = [status_packer.unpack(v) for v in trace.col(f"status__{gpu}")]
        comm = np.array([c["arbiter.comm_grants"] for c in counters], dtype=np.int64)
        compute = np.array([c["arbiter.compute_grants"] for c in counters], dtype=np.int64)
        addr, write = door & ((1 << addr_width) - 1), (door >> addr_width) & 1
        # The arbiter's counters count a grant in the cycle after it.
        by_comm, by_compute = np.zeros(len(door), dtype=bool), np.zeros(len(door), dtype=bool)
        by_comm[:-1], by_compute[:-1] = np.diff(comm) > 0, np.diff(compute) > 0
        granted = np.flatnonzero(valid & ready & (by_comm | by_compute))
        kinds = {int(c): ("update" if write[c] else "dma_read") if by_comm[c] else
                 ("gemm_store" if write[c] else "gemm_read") for c in granted}

        def offered_kind(c: int) -> str:
            j = int(np.searchsorted(granted, c))
            for k in granted[j:]:
                if k - c > GRANT_HORIZON_CYCLES:
                    break
                if addr[k] == addr[c]:
                    return kinds[int(k)]
            return "never granted"

        self.openings: list[tuple[int, str, str | None]] = []
        self.grants = [(int(c) - launch, kinds[int(c)], int(addr[c])) for c in granted if c >= launch]
        opened: list = [None] * timing.banks
        countdown = [0] * timing.banks
        owner: list = [None] * timing.banks
        for c in range(len(door)):
            if reset[c]:
                opened, countdown, owner = [None] * timing.banks, [0] * timing.banks, [None] * timing.banks
                continue
            start = None
            if valid[c]:
                bank, row = timing.bank_row(int(addr[c]))
                answer = countdown[bank] == 0 and opened[bank] == row
                assert answer == ready[c], (f"cycle {c}: the door's replay of GPU {gpu} answers {answer} to "
                                            f"address {int(addr[c])}, the memory {bool(ready[c])}")
                if countdown[bank] == 0 and opened[bank] != row:
                    start = (bank, row)
                    if c >= launch:
                        self.openings.append((c - launch, offered_kind(c), owner[bank]))
                if c in kinds:
                    owner[bank] = kinds[c]
            countdown = [max(0, left - 1) for left in countdown]
            if start is not None:
                opened[start[0]], countdown[start[0]] = start[1], timing.miss_cycles - 1
        rows = trace.col(f"row_status__{gpu}")
        counted = row_packer.unpack(rows[-1])["misses"] - row_packer.unpack(rows[launch])["misses"]
        assert len(self.openings) == counted, (f"the door's replay of GPU {gpu} opened {len(self.openings)} rows "
                                               f"after the launch, the memory counted {counted}")

    def census(self, window: tuple[int, int], *, stage: int, stage_chunks: list[int],
               chunk_requests: int) -> DoorCensus:
        """The census over ``window`` (cycles from the launch): the GPU's stage ``stage``,
        whose stages fill the chunks ``stage_chunks`` of ``chunk_requests`` requests in turn."""
        n, (first, last) = len(stage_chunks), window

        def place(a: int) -> int | None:
            c = a // chunk_requests
            return (stage_chunks.index(c) - stage + n // 2) % n - n // 2 if c in stage_chunks else None
        census = DoorCensus(place)
        census.cycles = last - first
        for c, opener, closed in self.openings:
            if first <= c < last:
                census.openings[(opener, closed)] = census.openings.get((opener, closed), 0) + 1
        for c, kind, a in self.grants:
            if first <= c < last:
                census.grants[kind] = census.grants.get(kind, 0) + 1
                if kind != "gemm_read":
                    key = (kind, place(a))
                    census.places[key] = census.places.get(key, 0) + 1
        return census


def model_census(scenario, schedule: str, gpu: int, stage: int) -> DoorCensus:
    """The census of the waves the model's channel served for ``gpu``'s stage ``stage`` of
    ``scenario`` under ``schedule`` ("t3" or "t3_mca"), as the crosscheck runs it: each wave
    the timeline ran (the last one asked at each time) simulated with a census, its counts
    weighted by the time it ran."""
    from ...schemes.context import Sublayer
    from ...schemes.t3 import t3_ring
    from . import gpu_study, micro_study

    if schedule not in ("t3", "t3_mca"):
        raise ValueError(f"schedule must be 't3' or 't3_mca', not {schedule!r}")
    cfg, gemm, shape, kernel = micro_study(scenario)
    n = scenario.system.gpus
    if cfg.cycle_rows is None:
        raise ValueError("the scenario has no rows (a census needs the DRAM-like memory)")
    with recording_waves() as served:
        result = t3_ring(Sublayer(gpu_study(cfg, n, gpu), shape, n, "reduce_scatter", kernel),
                         policy="mca" if schedule == "t3_mca" else "rr", gemm=gemm)
    ran: dict[float, tuple] = {}
    for clock_s, *wave in served:
        ran[clock_s] = tuple(wave)             # the last wave asked at a time is the one run
    times = sorted(ran) + [result.gemm_s]
    hz = cfg.system.gpu.mc_clock_GHz * 1e9
    census, ran_cycles = DoorCensus(), 0.0
    for begin, end in zip(times, times[1:], strict=False):
        load, policy, threshold, limit = ran[begin]
        if load.stage != stage or load.reads <= 0 or load.update_rate + load.dma_rate <= 0 or end <= begin:
            continue
        if policy != "mca":        # only T3-MCA reads the threshold and the starvation limit
            threshold = limit = 1
        one = DoorCensus()
        simulate_door(load.representative(), policy, threshold, limit, waves=WAVES, trace_window=TRACE_WINDOW,
                      starvation_cap=STARVATION_CAP, census=one)
        cycles = (end - begin) * hz            # the wave's counts, scaled to the cycles it ran
        for field in ("openings", "grants", "places"):
            total = getattr(census, field)
            for key, count in getattr(one, field).items():
                total[key] = total.get(key, 0) + count * cycles / max(1, one.cycles)
        ran_cycles += cycles
    if ran_cycles <= 0:
        raise ValueError(f"the model ran no wave of stage {stage} with communication beside it")
    census.cycles = round(ran_cycles)
    return census


def census_markdown(rtl: DoorCensus, model: DoorCensus, title: str) -> str:
    """Both censuses side by side, per 1,000 cycles."""
    def per_k(census: DoorCensus, count: float) -> str:
        return f"{1000 * count / max(1, census.cycles):.1f}"
    lines = [f"# {title}", "", f"RTL: {rtl.cycles:,} cycles; model: {model.cycles:,} cycles of the waves it ran.", "",
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


def door_census(name: str, gpus: int, schedule: str, gpu: int, stage: int, *, size: str = "full",
                seed: int = 1) -> str:
    """Run the crosscheck scenario ``name`` on ``gpus`` GPUs behind rows under ``schedule`` on
    the RTL, and return the census of ``gpu``'s stage ``stage`` beside the model's (markdown;
    ``python -m system_model crosscheck ... --door-census GPU:STAGE``)."""
    from tb.gemm_ring.row_bank import RowBank
    from tb.gemm_ring.run import run_scenario
    from tb.trace.bench import FastPacker

    from . import ROWS, size_scenarios

    chosen = [s for s in size_scenarios(size, ROWS) if s.name == name and s.system.gpus == gpus]
    if not chosen:
        raise ValueError(f"no {size} scenario {name!r} of {gpus} GPUs")
    scenario = chosen[0]
    model = model_census(scenario, schedule, gpu, stage)
    keep: dict = {}
    run_scenario(scenario, schedule, seed=seed, keep=keep)
    trace, ring, launch = keep["trace"], keep["ring"], keep["launch"]
    s = ring.ring.slices[0]
    beats = scenario.gemm.tiles_per_stage * scenario.system.tile_beats
    window = stage_window(trace, gpu, launch, stage, beats)
    door = DoorTrace(trace, gpu=gpu, launch=launch, timing=scenario.system.rows, addr_width=s.nmc.addr_width,
                     status_packer=FastPacker(s.status_layout),
                     row_packer=FastPacker(RowBank(addr_width=s.nmc.addr_width, timing=ROWS).status_layout))
    rtl = door.census(window, stage=stage, stage_chunks=[(gpu - 1 - k) % gpus for k in range(gpus)],
                      chunk_requests=beats)
    return census_markdown(rtl, model, f"Door census: {name}, {gpus} GPUs, {schedule}, GPU {gpu}, stage {stage} "
                                       f"(RTL cycles {window[0]:,}-{window[1]:,})")
