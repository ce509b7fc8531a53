"""Tables, files and plots of the sublayer study."""

from __future__ import annotations

import csv
import json
import subprocess
from dataclasses import asdict
from pathlib import Path

from .schemes import SCHEMES, StudyConfig
from .study import HEADLINE_SETS, PAPER_FIGURES, PointResult, Summary, summarise

__all__ = ["format_table", "write_outputs", "paper_comparison"]

SHORT = {"sequential": "seq", "ideal_overlap": "ideal", "ideal_rs_nmc": "rs+nmc", "t3": "t3",
         "t3_mca": "t3-mca", "cu_sharing": "cu-share"}


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


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
              + " ".join(f"{SHORT[s]:>8}" for s in SCHEMES[1:]) + f" {'DRAM cut':>9}")
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
            rows.append({
                "model": r.point.model, "tp": r.point.tp, "phase": r.point.phase, "sublayer": r.point.sublayer,
                "gemm_m": r.shape.m, "gemm_n": r.shape.n, "gemm_k": r.shape.k, "scheme": scheme,
                "time_us": res.time_s * 1e6, "gemm_us": res.gemm_s * 1e6, "speedup": r.speedup(scheme),
                "dram_MB": res.dram_bytes / 1e6, "dram_cut": r.dram_cut(scheme),
                **{f"{k}_MB": v / 1e6 for k, v in res.traffic.items()},
            })
    return rows


def write_outputs(results: list[PointResult], cfg: StudyConfig, out: Path, *, plots: bool = True) -> list[Path]:
    """Write CSV, JSON and Markdown (and PNG plots) named after the preset; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    stem = f"report_{cfg.system.name}"
    summaries = {name: s for name in [*HEADLINE_SETS, "all"] if (s := summarise(results, name))}
    rows = _rows(results)
    paths = []

    csv_path = out / f"{stem}.csv"
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    paths.append(csv_path)

    json_path = out / f"{stem}.json"
    json_path.write_text(json.dumps({
        "preset": cfg.system.name, "commit": _git_commit(),
        "config": {"gpu": asdict(cfg.system.gpu), "link": asdict(cfg.system.link), "kernel": asdict(cfg.kernel),
                   "workload": asdict(cfg.workload), "arbiter": asdict(cfg.arbiter),
                   "cu_sharing_cus": cfg.cu_sharing_cus, "block_timing": asdict(cfg.block)},
        "summaries": {k: asdict(v) for k, v in summaries.items()},
        "paper_comparison": paper_comparison(summaries),
        "rows": rows,
    }, indent=1))
    paths.append(json_path)

    md_path = out / f"{stem}.md"
    md_path.write_text(_markdown(results, summaries, cfg))
    paths.append(md_path)

    if plots:
        from .plots import plot_speedups, plot_timeline, plot_traffic

        paths.append(plot_speedups(results, out / f"speedup_{cfg.system.name}.png"))
        paths.append(plot_traffic(results, out / f"traffic_{cfg.system.name}.png"))
        paths.append(plot_timeline(results, out / f"timeline_fc2_{cfg.system.name}.png"))
    return paths


def _markdown(results: list[PointResult], summaries: dict[str, Summary], cfg: StudyConfig) -> str:
    head = "| model | TP | phase | sublayer | GEMM (us) | sequential (us) | " + " | ".join(SCHEMES[1:]) + \
        " | DRAM cut (T3-MCA) |"
    lines = [f"# Sublayer study, preset `{cfg.system.name}`", "",
             f"Block timing source: {cfg.block.source}.", "", head,
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
    return "\n".join(lines) + "\n"
