"""The ring under a staged GEMM (make test's size): every schedule of the memory-heavy
scenario on 4 GPUs, bit-exact against numpy, and the system model within the crosscheck's
tolerances of it. ``make crosscheck`` runs every scenario at full size."""

from __future__ import annotations

import functools

import pytest

from tb.common.seeds import derive_seed
from tb.common.stats import add_stats
from tb.gemm_ring.scenarios import SCHEDULES, scenarios

SCENARIO = next(s for s in scenarios("quick") if s.name == "memory_heavy")


@functools.cache
def _run(schedule: str) -> dict:
    from tb.gemm_ring.run import run_scenario

    seed = derive_seed("gemm_ring", SCENARIO.name, schedule)
    print(f"gemm_ring {SCENARIO.label} {schedule}: data seed {seed}")
    figures = run_scenario(SCENARIO, schedule, seed=seed)
    add_stats("gemm_ring (staged GEMM + RS)", runs=1, cycles=figures["total_cycles"] + figures["launch_cycle"],
              words_bit_exact=figures["words_checked"])
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
