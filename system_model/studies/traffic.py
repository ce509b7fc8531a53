"""The study's points by set, and their DRAM traffic by stream: shared by the report's tables
and its plots."""

from __future__ import annotations

from ..schemes import SchemeResult
from .study import HEADLINE_SETS, SCHEMES, PointResult, geomean

__all__ = ["SHORT", "short", "select", "TRAFFIC_COMPONENTS", "TRAFFIC_LABELS", "traffic_breakdown",
           "traffic_components", "traffic_summary"]

SHORT = {"sequential": "seq", "ideal_overlap": "ideal-rs", "ideal_all_reduce": "ideal-ar", "ideal_rs_nmc": "rs+nmc",
         "t3": "t3", "t3_mca": "t3-mca", "cu_sharing": "cu-share"}

#: The traffic breakdown the report shows: the model's six streams, the all-gather's two summed.
TRAFFIC_COMPONENTS = ("gemm_reads", "gemm_writes", "rs_reads", "rs_writes", "ag")
TRAFFIC_LABELS = {"gemm_reads": "GEMM reads", "gemm_writes": "GEMM writes", "rs_reads": "RS reads",
                  "rs_writes": "RS writes", "ag": "AG", "other": "other"}


def short(scheme: str) -> str:
    return SHORT.get(scheme, scheme)


def select(results: list[PointResult], name: str) -> list[PointResult]:
    """The points of a set of :data:`~system_model.study.HEADLINE_SETS`, or all of them for "all"."""
    if name not in HEADLINE_SETS:
        return list(results)
    return [r for r in results if HEADLINE_SETS[name][1](r.point)]


# -- traffic ----------------------------------------------------------------------------------


def traffic_breakdown(result: SchemeResult) -> dict[str, float]:
    """DRAM bytes of one scheme as GEMM reads, GEMM writes, RS reads, RS writes and AG (reads +
    writes); any stream the model adds beyond these is summed into "other" (present only then)."""
    t = result.traffic
    parts = {k: float(t.get(k, 0.0)) for k in TRAFFIC_COMPONENTS[:4]}
    parts["ag"] = float(t.get("ag_reads", 0.0)) + float(t.get("ag_writes", 0.0))
    known = {*TRAFFIC_COMPONENTS[:4], "ag_reads", "ag_writes"}
    other = sum(float(v) for k, v in t.items() if k not in known)
    if other:
        parts["other"] = other
    return parts


def traffic_components(results: list[PointResult]) -> list[str]:
    """:data:`TRAFFIC_COMPONENTS`, plus "other" if any scheme of any point has such traffic."""
    has_other = any("other" in traffic_breakdown(res) for r in results for res in r.schemes.values())
    return [*TRAFFIC_COMPONENTS, *(["other"] if has_other else [])]


def traffic_summary(results: list[PointResult], name: str) -> dict[str, dict] | None:
    """Per scheme over a set: the mean bytes per point of each component, their total, the
    geomean of (scheme bytes / sequential bytes) (= 1 - the DRAM cut geomean) and each
    component's mean share of the scheme's bytes."""
    chosen = select(results, name)
    if not chosen:
        return None
    components = traffic_components(results)
    out = {}
    for scheme in SCHEMES:
        parts = [traffic_breakdown(r.schemes[scheme]) for r in chosen]
        mean = {c: sum(p.get(c, 0.0) for p in parts) / len(parts) for c in components}
        shares = {c: sum(p.get(c, 0.0) / max(sum(p.values()), 1e-30) for p in parts) / len(parts)
                  for c in components}
        out[scheme] = {"mean_bytes": mean, "total_bytes": sum(mean.values()),
                       "vs_sequential_geomean": geomean(1 - r.dram_cut(scheme) for r in chosen),
                       "share": shares}
    return out
