"""The fluid DRAM sharing of the sublayer study against the cycle-level channel it stands for.

The study shares each GPU's DRAM as a fluid (``engine.sharing``); the crosscheck serves it
cycle by cycle under the verified arbiter's golden model (``engine.dram_cycle``), which the
RTL holds to within its tolerances. On the paper's headline sublayers both must tell the
same story: T3's and T3-MCA's times within :data:`TOLERANCE` of each other (chosen before the
comparison was run on the whole set: the crosscheck's own tolerance is 10% on totals)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from system_model.describe.models import MODELS, sublayer_gemm
from system_model.describe.presets import PLATFORMS
from system_model.schemes import evaluate
from system_model.studies.study import HEADLINE_SETS, study_points

TOLERANCE = 0.05
CFG = PLATFORMS["t3-paper"].study_config()
HEADLINE = [p for p in study_points() if HEADLINE_SETS["headline"][1](p)]


def test_the_headline_set_is_the_papers():
    assert len(HEADLINE) == 16


@pytest.mark.parametrize("point", HEADLINE, ids=lambda p: f"{p.model}-tp{p.tp}-{p.phase}-{p.sublayer}")
def test_fluid_and_cycle_level_dram_agree(point):
    shape = sublayer_gemm(MODELS[point.model], point.sublayer, CFG.workload.tokens(point.phase), point.tp)
    times = {}
    for mode in ("fluid", "cycle"):
        r = evaluate(replace(CFG, dram_model=mode), shape, point.tp, schemes=("sequential", "t3", "t3_mca"))
        times[mode] = {k: v.time_s for k, v in r.items()}
    for scheme in ("t3", "t3_mca"):
        fluid, cycle = times["fluid"][scheme], times["cycle"][scheme]
        assert fluid == pytest.approx(cycle, rel=TOLERANCE), scheme
        # Both stay between the overlap's ideal and the sequential schedule.
        assert cycle <= times["cycle"]["sequential"] * 1.001
