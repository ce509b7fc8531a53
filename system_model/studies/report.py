"""Tables, files and plots of the sublayer study."""

from __future__ import annotations

import csv
import json
import subprocess
from dataclasses import asdict
from pathlib import Path

from ..describe.config import StudyConfig
from ..schemes import SchemeResult
from .study import HEADLINE_SETS, PAPER_FIGURES, SCHEMES, PointResult, Summary, geomean, summarise
from .traffic import (  # noqa: F401
    SHORT,
    TRAFFIC_COMPONENTS,
    TRAFFIC_LABELS,
    select,
    short,
    traffic_breakdown,
    traffic_components,
    traffic_summary,
)

__all__ = ["format_table", "write_outputs", "paper_comparison", "TRAFFIC_COMPONENTS", "traffic_breakdown",
           "traffic_summary", "slowdown_schemes", "slowdown_summary", "select", "short"]

def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _summaries(results: list[PointResult]) -> dict[str, Summary]:
    return {name: s for name in [*HEADLINE_SETS, "all"] if (s := summarise(results, name))}


# -- overlap slowdowns ------------------------------------------------------------------------


def _slowdowns(result: SchemeResult) -> dict[str, float]:
    return getattr(result, "slowdowns", None) or {}


def slowdown_schemes(results: list[PointResult]) -> list[str]:
    """``cu_sharing`` (if a scheme) and every scheme that reports overlap slowdowns at some point."""
    return [s for s in SCHEMES
            if s == "cu_sharing" or any(_slowdowns(r.schemes[s]) for r in results if s in r.schemes)]


def slowdown_summary(results: list[PointResult], name: str) -> dict[str, dict[str, float | None]] | None:
    """Per scheme of :func:`slowdown_schemes`, the geomeans over a set of the GEMM's slowdown,
    the collective's slowdown (None where the model reports none) and the net speedup."""
    chosen = select(results, name)
    if not chosen:
        return None
    out = {}
    for scheme in slowdown_schemes(results):
        row: dict[str, float | None] = {}
        for part in ("gemm", "collective"):
            values = [v for r in chosen if (v := _slowdowns(r.schemes[scheme]).get(part)) is not None]
            row[part] = geomean(values) if values else None
        row["speedup"] = geomean(r.speedup(scheme) for r in chosen)
        out[scheme] = row
    return out


def _x(value: float | None, width: int = 0) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{max(width - 1, 0)}.2f}x"


def _slowdown_lines(results: list[PointResult]) -> list[str]:
    schemes = slowdown_schemes(results)
    if not schemes:
        return []

    def cells(values) -> str:
        return "".join(f" | {_x(g, 7)} {_x(c, 7)} {_x(n, 7)}" for g, c, n in values)

    first = f"{'':<34}" + "".join(f" | {short(s):<23}" for s in schemes)
    head = f"{'model':<11} {'TP':>3} {'phase':<8} {'sublayer':<9}" + "".join(
        f" | {'GEMM':>7} {'coll':>7} {'net':>7}" for _ in schemes)
    lines = ["Overlap: GEMM and collective slowdowns (time in the scheme / alone, as SchemeResult.slowdowns "
             "defines them; '-': not reported) and net speedup over sequential", first, head, "-" * len(head)]
    for r in results:
        p = r.point
        lines.append(f"{p.model:<11} {p.tp:>3} {p.phase:<8} {p.sublayer:<9}" + cells(
            (_slowdowns(r.schemes[s]).get("gemm"), _slowdowns(r.schemes[s]).get("collective"), r.speedup(s))
            for s in schemes))
    lines.append("-" * len(head))
    for name in [*HEADLINE_SETS, "all"]:
        if summary := slowdown_summary(results, name):
            lines.append(f"{'geomean ' + name:<34}" + cells(
                (summary[s]["gemm"], summary[s]["collective"], summary[s]["speedup"]) for s in schemes))
    return lines


# -- tables -----------------------------------------------------------------------------------


def paper_comparison(summaries: dict[str, Summary]) -> list[dict]:
    """Our T3-MCA figures next to the paper's, with the tolerance and whether we are inside it."""
    rows = []
    for figure, (set_name, paper, tolerance) in PAPER_FIGURES.items():
        s = summaries.get(set_name)
        if s is None:
            continue
        metric = figure.removeprefix("palm_mtnlg_")
        ours = getattr(s, metric)["t3_mca"]
        rows.append({"figure": figure, "set": set_name, "paper": paper, "ours": ours, "tolerance": tolerance,
                     "within": abs(ours - paper) <= tolerance})
    return rows


def format_table(results: list[PointResult], summaries: dict[str, Summary]) -> str:
    header = (f"{'model':<11} {'TP':>3} {'phase':<8} {'sublayer':<8} {'GEMM us':>8} {'seq us':>8} "
              + " ".join(f"{short(s):>8}" for s in SCHEMES[1:]) + f" {'DRAM cut':>9}")
    lines = [header, "-" * len(header)]
    for r in results:
        p, seq = r.point, r.schemes["sequential"]
        lines.append(f"{p.model:<11} {p.tp:>3} {p.phase:<8} {p.sublayer:<8} {seq.gemm_s * 1e6:>8.1f} "
                     f"{seq.time_s * 1e6:>8.1f} " + " ".join(f"{r.speedup(s):>7.2f}x" for s in SCHEMES[1:])
                     + f" {r.dram_cut('t3_mca') * 100:>8.1f}%")
    lines.append("-" * len(header))
    for s in summaries.values():
        for label, speed, cut in (("geomean", s.speedup_geomean, s.dram_cut_geomean),
                                  ("max", s.speedup_max, s.dram_cut_max)):
            lines.append(f"{label + ' ' + s.name:<43} {'':>8} " + " ".join(f"{speed[x]:>7.2f}x" for x in SCHEMES[1:])
                         + f" {cut['t3_mca'] * 100:>8.1f}%")
    lines.append("")
    for s in summaries.values():
        lines.append(f"{s.name}: {s.description} ({s.points} points)")
    slowdowns = _slowdown_lines(results)
    if slowdowns:
        lines += ["", *slowdowns]
    comparison = paper_comparison(summaries)
    if comparison:
        lines.append("")
        lines.append("T3-MCA vs the paper:")
        for c in comparison:
            unit = "x" if "speedup" in c["figure"] else ""
            lines.append(f"  {c['figure']:<28} ours {c['ours']:.3f}{unit}  paper {c['paper']:.2f}{unit}  "
                         f"(+-{c['tolerance']:.2f}: {'within' if c['within'] else 'OUTSIDE'})")
    return "\n".join(lines)


def _rows(results: list[PointResult]) -> list[dict]:
    rows = []
    for r in results:
        for scheme in SCHEMES:
            res = r.schemes[scheme]
            slow = _slowdowns(res)
            rows.append({
                "model": r.point.model, "tp": r.point.tp, "phase": r.point.phase, "sublayer": r.point.sublayer,
                "gemm_m": r.shape.m, "gemm_n": r.shape.n, "gemm_k": r.shape.k, "scheme": scheme,
                "time_us": res.time_s * 1e6, "gemm_us": res.gemm_s * 1e6, "speedup": r.speedup(scheme),
                "dram_MB": res.dram_bytes / 1e6, "dram_cut": r.dram_cut(scheme),
                **{f"{k}_MB": v / 1e6 for k, v in res.traffic.items()},
                "ag_MB": traffic_breakdown(res)["ag"] / 1e6,
                "slowdown_gemm": slow.get("gemm"), "slowdown_collective": slow.get("collective"),
            })
    return rows


#: CUs given to the collective in the CU-sharing study (the paper's motivation study on 80 CUs).
CU_SHARING_STUDY_CUS = (8, 16)


def cu_sharing_study(cfg: StudyConfig, results: list[PointResult], ks=CU_SHARING_STUDY_CUS) -> dict[int, dict]:
    """Per ``k``: the GEMM's and the collective's slowdowns and the net speedup of
    ``cu_sharing`` on the headline points, geomeans over them (the motivation study)."""
    from dataclasses import replace

    from .study import run_study

    chosen = select(results, "headline") or results
    out = {}
    for k in ks:
        if not 1 <= k < cfg.system.gpu.cus:
            continue
        runs = run_study(replace(cfg, cu_sharing_cus=k), [r.point for r in chosen], timeline=False)
        sh = [r.schemes["cu_sharing"] for r in runs]
        out[k] = {"points": len(runs),
                  "gemm_slowdown": geomean(x.slowdowns["gemm"] for x in sh),
                  "collective_slowdown": geomean(x.slowdowns["collective"] for x in sh),
                  "speedup": geomean(r.speedup("cu_sharing") for r in runs)}
    return out


def format_cu_sharing(study: dict[int, dict]) -> str:
    lines = ["CU sharing (headline points, geomeans): k CUs to the collective, the rest to the GEMM",
             f"{'k':>4} {'GEMM slowdown':>14} {'collective slowdown':>20} {'net speedup':>12}"]
    for k, v in study.items():
        lines.append(f"{k:>4} {v['gemm_slowdown']:>13.3f}x {v['collective_slowdown']:>19.3f}x {v['speedup']:>11.3f}x")
    return "\n".join(lines)


def write_outputs(results: list[PointResult], cfg: StudyConfig, out: Path, *, plots: bool = True,
                  layers: list | None = None, cu_sharing: dict[int, dict] | None = None,
                  fmt: str = "csv", name: str | None = None) -> list[Path]:
    """Write CSV, JSON and Markdown (and PNG plots) named after ``name`` (default: the
    preset's name; the CLI adds the models and TPs where a run chose them); return the paths.

    ``layers`` (:func:`system_model.layer.layer_study`) and ``cu_sharing``
    (:func:`cu_sharing_study`) add the end-to-end and CU-sharing sections when given."""
    out.mkdir(parents=True, exist_ok=True)
    name = name or cfg.system.name
    stem = f"report_{name}"
    summaries = _summaries(results)
    rows = _rows(results)
    paths = []

    csv_path = out / f"{stem}.csv"
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    paths.append(csv_path)
    from .sweep import write_table
    if (table := write_table(rows, out / stem, fmt)) is not None:       # --format json|parquet
        paths.append(table)

    json_path = out / f"{stem}.json"
    sets = [*summaries]
    json_path.write_text(json.dumps({
        "preset": cfg.system.name,           # no commit stamp: the file is a pure function of the inputs
        "config": {"gpu": asdict(cfg.system.gpu), "fabric": asdict(cfg.system.fabric),
                   "transport": asdict(cfg.system.transport), "kernels": [asdict(k) for k in cfg.kernels],
                   "workload": asdict(cfg.workload), "arbiter": asdict(cfg.arbiter),
                   "cu_sharing_cus": cfg.cu_sharing_cus, "block_timing": asdict(cfg.block)},
        "summaries": {k: asdict(v) for k, v in summaries.items()},
        "traffic": {name: traffic_summary(results, name) for name in sets},
        "slowdowns": {name: slowdown_summary(results, name) for name in sets},
        "paper_comparison": paper_comparison(summaries),
        "cu_sharing": {str(k): v for k, v in (cu_sharing or {}).items()},
        "end_to_end": _layer_json(layers),
        "rows": rows,
    }, indent=1))
    paths.append(json_path)

    md_path = out / f"{stem}.md"
    md = _markdown(results, summaries, cfg)
    if cu_sharing:
        md += ("\n## CU sharing (the motivation study)\n\nHeadline points, geomeans; k CUs run RCCL's RS and AG "
               "beside the GEMM on the others.\n\n| k | GEMM slowdown | collective slowdown | net speedup |\n"
               "|---:|---:|---:|---:|\n"
               + "".join(f"| {k} | {v['gemm_slowdown']:.3f}x | {v['collective_slowdown']:.3f}x | "
                         f"{v['speedup']:.3f}x |\n" for k, v in cu_sharing.items()))
    if layers:
        from .layer import layer_markdown

        md += ("\n## End to end: one Transformer layer (`system_model/layer.py`)\n\nTraining is forward + "
               "backward, prefill forward only; every op outside the four all-reduce sublayers takes the same "
               "time in every scheme.\n\n" + layer_markdown(layers) + "\n")
    md_path.write_text(md)
    paths.append(md_path)

    if plots:
        from .plots import plot_speedups, plot_timeline, plot_traffic

        paths.append(plot_speedups(results, out / f"speedup_{name}.png"))
        paths.append(plot_traffic(results, out / f"traffic_{name}.png"))
        paths.append(plot_timeline(results, out / f"timeline_fc2_{name}.png", cfg=cfg))
    return paths


def _layer_json(layers) -> list[dict] | None:
    if not layers:
        return None
    return [{"model": r.model, "tp": r.tp, "phase": r.phase, "layers": r.layers,
             "layer_time_us": {s: r.layer_time_s(s) * 1e6 for s in r.schemes},
             "speedup": {s: r.speedup(s) for s in r.schemes},
             "all_reduce_share_sequential": r.sublayer_share(r.schemes[0])} for r in layers]


def _md_x(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}x"


def _markdown(results: list[PointResult], summaries: dict[str, Summary], cfg: StudyConfig) -> str:
    head = "| model | TP | phase | sublayer | GEMM (us) | sequential (us) | " + " | ".join(SCHEMES[1:]) + \
        " | DRAM cut (T3-MCA) |"
    lines = [f"# Sublayer study, preset `{cfg.system.name}`", "",
             f"Block timing source: {cfg.block.source}; its cycles are memory-controller cycles at "
             f"{cfg.system.gpu.mc_clock_GHz:g} GHz (the preset's controller clock).", "", head,
             "|" + "---|" * (7 + len(SCHEMES) - 1)]
    for r in results:
        p, seq = r.point, r.schemes["sequential"]
        lines.append(f"| {p.model} | {p.tp} | {p.phase} | {p.sublayer} | {seq.gemm_s * 1e6:.1f} | "
                     f"{seq.time_s * 1e6:.1f} | " + " | ".join(f"{r.speedup(s):.2f}x" for s in SCHEMES[1:])
                     + f" | {r.dram_cut('t3_mca') * 100:.1f}% |")
    lines += ["", "| set | points | " + " | ".join(f"{s} geomean" for s in SCHEMES[1:]) +
              " | T3-MCA max | DRAM cut geomean | DRAM cut max |", "|" + "---|" * (len(SCHEMES) + 4)]
    for s in summaries.values():
        lines.append(f"| {s.name} | {s.points} | " + " | ".join(f"{s.speedup_geomean[x]:.3f}x" for x in SCHEMES[1:])
                     + f" | {s.speedup_max['t3_mca']:.3f}x | {s.dram_cut_geomean['t3_mca'] * 100:.1f}% | "
                     f"{s.dram_cut_max['t3_mca'] * 100:.1f}% |")
    lines += ["", "| figure (T3-MCA) | ours | paper | tolerance | within |", "|---|---|---|---|---|"]
    for c in paper_comparison(summaries):
        lines.append(f"| {c['figure']} | {c['ours']:.3f} | {c['paper']:.2f} | ±{c['tolerance']:.2f} | "
                     f"{'yes' if c['within'] else 'no'} |")
    lines += _markdown_slowdowns(results, summaries)
    lines += _markdown_traffic(results, summaries)
    return "\n".join(lines) + "\n"


def _markdown_slowdowns(results: list[PointResult], summaries: dict[str, Summary]) -> list[str]:
    schemes = slowdown_schemes(results)
    if not schemes:
        return []
    lines = ["", "## Overlap: slowdowns and net speedup", "",
             "GEMM slowdown = the GEMM's time in the scheme / the GEMM alone; collective slowdown = the "
             "collective's time in the scheme / alone (the model's definitions: `SchemeResult.slowdowns`); "
             "net = speedup over sequential. '–': not reported by the model.",
             "", "| model | TP | phase | sublayer | " + " | ".join(
                 f"{s} GEMM slowdown | {s} collective slowdown | {s} net speedup" for s in schemes) + " |",
             "|" + "---|" * (4 + 3 * len(schemes))]
    for r in results:
        p = r.point
        lines.append(f"| {p.model} | {p.tp} | {p.phase} | {p.sublayer} | " + " | ".join(
            f"{_md_x(_slowdowns(r.schemes[s]).get('gemm'))} | {_md_x(_slowdowns(r.schemes[s]).get('collective'))} "
            f"| {_md_x(r.speedup(s))}" for s in schemes) + " |")
    for name in summaries:
        summary = slowdown_summary(results, name)
        lines.append(f"| **geomean {name}** | | | | " + " | ".join(
            f"{_md_x(summary[s]['gemm'])} | {_md_x(summary[s]['collective'])} | {_md_x(summary[s]['speedup'])}"
            for s in schemes) + " |")
    return lines


def _markdown_traffic(results: list[PointResult], summaries: dict[str, Summary]) -> list[str]:
    components = traffic_components(results)
    labels = [TRAFFIC_LABELS[c] for c in components]
    lines = ["", "## DRAM traffic per scheme", "",
             "Per set: mean MB per point of each component (AG = the all-gather's reads + writes) and the geomean "
             "of the scheme's bytes over the sequential scheme's (1 - the DRAM cut geomean)."]
    for name, s in summaries.items():
        summary = traffic_summary(results, name)
        lines += ["", f"**{name}** ({s.description}, {s.points} points)", "",
                  "| scheme | " + " | ".join(f"{label} (MB)" for label in labels) + " | total (MB) | vs sequential |",
                  "|" + "---|" * (len(components) + 3)]
        for scheme, row in summary.items():
            lines.append(f"| {scheme} | " + " | ".join(f"{row['mean_bytes'][c] / 1e6:.1f}" for c in components)
                         + f" | {row['total_bytes'] / 1e6:.1f} | {row['vs_sequential_geomean']:.3f}x |")
    lines += ["", "Per point (MB):", "",
              "| model | TP | phase | sublayer | scheme | " + " | ".join(labels) + " | total | cut |",
              "|" + "---|" * (len(components) + 7)]
    for r in results:
        p = r.point
        for scheme in SCHEMES:
            parts = traffic_breakdown(r.schemes[scheme])
            lines.append(f"| {p.model} | {p.tp} | {p.phase} | {p.sublayer} | {scheme} | "
                         + " | ".join(f"{parts.get(c, 0.0) / 1e6:.1f}" for c in components)
                         + f" | {sum(parts.values()) / 1e6:.1f} | {r.dram_cut(scheme) * 100:.1f}% |")
    return lines
