"""The sublayer study: every (model, TP, phase, sublayer) point under every scheme, and the
summary figures compared with the paper's."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..describe.config import StudyConfig
from ..describe.models import MODELS, PHASES, GemmShape, sublayer_gemm
from ..schemes import PAPER_SCHEMES, SchemeResult, evaluate

#: The schemes of the paper's study.
SCHEMES = PAPER_SCHEMES

__all__ = ["PAPER_TP", "OTHER_TP", "Point", "PointResult", "study_points", "run_study", "Summary", "summarise",
           "HEADLINE_SETS", "PAPER_FIGURES", "geomean", "SCHEMES"]

#: Tensor-parallel degrees the paper evaluates per model.
PAPER_TP = {"mega-gpt-2": (8, 16), "t-nlg": (8, 16), "gpt-3": (32,), "palm": (32,), "mt-nlg": (32,)}
#: TP degrees of the models the paper does not study, when ``--tp`` is not given: one
#: 8-GPU node (every Llama 3 model is served and trained with TP 8 within a node).
OTHER_TP = (8,)


@dataclass(frozen=True)
class Point:
    model: str
    tp: int
    phase: str
    sublayer: str


@dataclass
class PointResult:
    point: Point
    shape: GemmShape
    schemes: dict[str, SchemeResult]

    def speedup(self, scheme: str) -> float:
        return self.schemes["sequential"].time_s / self.schemes[scheme].time_s

    def dram_cut(self, scheme: str) -> float:
        """Fraction of the sequential scheme's DRAM bytes that ``scheme`` saves."""
        return 1.0 - self.schemes[scheme].dram_bytes / self.schemes["sequential"].dram_bytes


def study_points(models: Iterable[str] | None = None, tps: Iterable[int] | None = None,
                 phases: Iterable[str] = ("training", "prefill")) -> list[Point]:
    """The paper's points, optionally restricted; ``tps`` replaces the paper's TP degrees."""
    models = list(PAPER_TP) if models is None else list(models)
    for name in models:
        if name not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, not {name!r}")
    phases = list(phases)
    for phase in phases:
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, not {phase!r}")
    points = []
    for name in models:
        for tp in (PAPER_TP.get(name, OTHER_TP) if tps is None else tps):
            for phase in phases:
                for sublayer in PHASES[phase]:
                    points.append(Point(name, tp, phase, sublayer))
    return points


def run_study(cfg: StudyConfig, points: Iterable[Point], *, timeline: bool = True) -> list[PointResult]:
    """Every point under every scheme of the study (``timeline``: keep the timelines for plots)."""
    results = []
    for p in points:
        shape = sublayer_gemm(MODELS[p.model], p.sublayer, cfg.workload.tokens(p.phase), p.tp)
        results.append(PointResult(p, shape, evaluate(cfg, shape, p.tp, schemes=SCHEMES, record=timeline)))
    return results


def geomean(values: Iterable[float]) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


#: Sets of points the paper's summary figures run over (our reading of the paper).
HEADLINE_SETS: dict[str, tuple[str, Callable[[Point], bool]]] = {
    "headline": ("training sublayers (OP, FC-2, FC-1, IP) of Mega-GPT-2 and T-NLG at TP 8 and 16",
                 lambda p: p.phase == "training" and p.model in ("mega-gpt-2", "t-nlg")),
    "palm_mtnlg": ("training sublayers of PALM and MT-NLG at TP 32",
                   lambda p: p.phase == "training" and p.model in ("palm", "mt-nlg")),
}

#: The paper's published figures (T3-MCA against sequential) and the tolerances we hold to.
PAPER_FIGURES = {
    "speedup_geomean": ("headline", 1.30, 0.03),
    "speedup_max": ("headline", 1.47, 0.05),
    "dram_cut_geomean": ("headline", 0.22, 0.04),
    "dram_cut_max": ("headline", 0.36, 0.05),
    "palm_mtnlg_speedup_geomean": ("palm_mtnlg", 1.29, 0.04),
}


@dataclass(frozen=True)
class Summary:
    """Geomean and max of T3-MCA's speedup and DRAM cut over a set of points, per scheme."""

    name: str
    description: str
    points: int
    speedup_geomean: dict[str, float]
    speedup_max: dict[str, float]
    dram_cut_geomean: dict[str, float]
    dram_cut_max: dict[str, float]


def summarise(results: list[PointResult], name: str) -> Summary | None:
    description, select = HEADLINE_SETS[name] if name in HEADLINE_SETS else ("all points", lambda p: True)
    chosen = [r for r in results if select(r.point)]
    if not chosen:
        return None
    return Summary(
        name, description, len(chosen),
        {s: geomean(r.speedup(s) for r in chosen) for s in SCHEMES},
        {s: max(r.speedup(s) for r in chosen) for s in SCHEMES},
        # The geomean of the kept fractions, as a cut.
        {s: 1 - geomean(1 - r.dram_cut(s) for r in chosen) for s in SCHEMES},
        {s: max(r.dram_cut(s) for r in chosen) for s in SCHEMES},
    )
