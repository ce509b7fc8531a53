# amaranth: UnusedElaboratable=no
"""The ring under a staged GEMM (make test's size): every schedule of the memory-heavy
scenario on 4 GPUs, bit-exact against numpy, and the system model within the crosscheck's
tolerances of it; then the same runs with a DRAM-like memory (:class:`~tb.gemm_ring.row_bank.RowBank`)
behind every slice. ``make crosscheck`` runs every scenario at full size, and
``python -m tb.gemm_ring.row_ring`` any scenario behind rows."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from tb.common.seeds import derive_seed
from tb.common.stats import add_stats
from tb.gemm_ring.row_bank import RowTiming
from tb.gemm_ring.scenarios import SCHEDULES, scenarios

SCENARIO = next(s for s in scenarios("quick") if s.name == "memory_heavy")
#: Four banks of 16-beat rows and an 8-cycle miss: rows shorter than a tile (64 beats), so
#: every stream crosses rows, and a miss as long as a few beats, so its cost shows.
TIMING = RowTiming(banks=4, row_beats=16, miss_cycles=8)
ROWS = replace(SCENARIO, system=replace(SCENARIO.system, rows=TIMING))


#: Each run's trace, ring and launch cycle (``run_scenario``'s ``keep``), by (schedule, rows).
_KEPT: dict = {}


@functools.cache
def _run(schedule: str, rows: bool = False) -> dict:
    from tb.gemm_ring.run import run_scenario

    scenario = ROWS if rows else SCENARIO
    seed = derive_seed("gemm_ring", scenario.name, schedule)
    print(f"gemm_ring {scenario.label} {schedule} rows={rows}: data seed {seed}")
    figures = run_scenario(scenario, schedule, seed=seed, keep=_KEPT.setdefault((schedule, rows), {}))
    add_stats("gemm_ring behind rows" if rows else "gemm_ring (staged GEMM + RS)", runs=1,
              cycles=figures["total_cycles"] + figures["launch_cycle"], words_bit_exact=figures["words_checked"],
              **({"row_misses": figures["row_misses"]} if rows else {}))
    return figures


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_schedule_runs_bit_exact(schedule: str) -> None:
    """The run checks itself (protocol, plan, launch after the set-up, every chunk read back
    against numpy, link beats conserved, no error flag) and raises on any failure."""
    figures = _run(schedule)
    assert figures["words_checked"] == SCENARIO.system.gpus * SCENARIO.gemm.tiles_per_stage * 4
    assert 0 < figures["gemm_cycles"] <= figures["total_cycles"]
    if schedule == "sequential":
        # The sequential schedule starts its reduce-scatter only after the GEMM: at least
        # N - 1 chunks on the link after it.
        link = (SCENARIO.system.gpus - 1) * SCENARIO.gemm.tiles_per_stage * 4 * SCENARIO.system.link_cycles_per_beat
        assert figures["rs_cycles_after_gemm"] >= link


def test_model_within_tolerance() -> None:
    from system_model.studies.crosscheck import entries, violations

    runs = [_run(s) for s in SCHEDULES]
    found = entries(runs, "quick")
    assert [e["scenario"] for e in found] == [SCENARIO.name]
    assert violations(found) == []


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_rows_run_bit_exact_and_cost_time(schedule: str) -> None:
    """Behind rows the run checks itself as with the block RAM (protocol, plan, every chunk
    read back against numpy, link beats conserved, no error flag, the RTL's assertions). Then:
    the rows were really crossed, a held offer is at most one per cycle, and a memory that only
    ever delays a grant does not make the run finish sooner than the block RAM's with the same data."""
    figures = _run(schedule, rows=True)
    block = _run(schedule)
    assert figures["words_checked"] == block["words_checked"]
    # The GEMM's output tiles alone cross a row every row_beats beats.
    assert figures["row_misses"] >= ROWS.gemm.tiles(ROWS.system.gpus) * ROWS.system.tile_beats // TIMING.row_beats
    assert 0 < figures["row_wait_cycles"] <= figures["total_cycles"]
    assert figures["gemm_cycles"] >= block["gemm_cycles"], (figures, block)
    assert figures["total_cycles"] >= block["total_cycles"], (figures, block)


def test_the_door_census_reads_the_rows_run() -> None:
    """The door census (``system_model.studies.crosscheck.door_census``) of every GPU's every stage: its
    replay of each door answers every offer as the memory did and counts the openings the
    memory counted (else it raises), and its grants are the ones the slice's arbiter counted."""
    import numpy as np

    from system_model.studies.crosscheck.door_census import DoorTrace, stage_window
    from tb.gemm_ring.row_bank import RowBank
    from tb.trace.bench import FastPacker

    _run("t3", rows=True)
    keep = _KEPT[("t3", True)]
    trace, ring, launch = keep["trace"], keep["ring"], keep["launch"]
    s = ring.ring.slices[0]
    n, beats = ROWS.system.gpus, ROWS.gemm.tiles_per_stage * ROWS.system.tile_beats
    status_packer = FastPacker(s.status_layout)
    row_packer = FastPacker(RowBank(addr_width=s.nmc.addr_width, timing=TIMING).status_layout)
    for g in range(n):
        door = DoorTrace(trace, gpu=g, launch=launch, timing=TIMING, addr_width=s.nmc.addr_width,
                         status_packer=status_packer, row_packer=row_packer)
        counters = [status_packer.unpack(v) for v in trace.col(f"status__{g}")]
        grants = np.array([c["arbiter.compute_grants"] + c["arbiter.comm_grants"] for c in counters])
        for stage in range(n):
            window = stage_window(trace, g, launch, stage, beats)
            census = door.census(window, stage=stage, stage_chunks=[(g - 1 - k) % n for k in range(n)],
                                 chunk_requests=beats)
            assert census.cycles == window[1] - window[0] > 0
            # The arbiter counts the window's grants in the cycle after each.
            first, last = launch + window[0], launch + window[1]
            assert sum(census.grants.values()) == grants[last] - grants[first]
            assert census.grants.get("gemm_store" if stage else "update", 0) > 0 and census.openings
