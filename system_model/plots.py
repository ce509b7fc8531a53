"""PNG plots of the study (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display on CI machines
import matplotlib.pyplot as plt  # noqa: E402

from .schemes import SCHEMES  # noqa: E402
from .study import PointResult  # noqa: E402

__all__ = ["plot_speedups", "plot_traffic", "plot_timeline"]

COLOURS = {"sequential": "#888888", "ideal_overlap": "#2ca02c", "ideal_rs_nmc": "#98df8a", "t3": "#1f77b4",
           "t3_mca": "#d62728", "cu_sharing": "#ff7f0e"}
TRAFFIC = ["gemm_reads", "gemm_writes", "rs_reads", "rs_writes", "ag_reads", "ag_writes"]


def _label(r: PointResult) -> str:
    p = r.point
    return f"{p.model}\nTP{p.tp} {p.sublayer}{'' if p.phase == 'training' else ' (pf)'}"


def plot_speedups(results: list[PointResult], path: Path) -> Path:
    """Speedup over sequential per sublayer and scheme, in the style of the paper's results figure."""
    schemes = SCHEMES[1:]
    width = 0.8 / len(schemes)
    fig, ax = plt.subplots(figsize=(max(10, 0.55 * len(results)), 4.5))
    for i, scheme in enumerate(schemes):
        xs = [j + (i - len(schemes) / 2 + 0.5) * width for j in range(len(results))]
        ax.bar(xs, [r.speedup(scheme) for r in results], width, label=scheme, color=COLOURS[scheme])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(results)), [_label(r) for r in results], fontsize=6, rotation=90)
    ax.set_ylabel("speedup over sequential")
    ax.set_ylim(0.5, max(1.6, max(r.speedup("ideal_overlap") for r in results) + 0.1))
    ax.legend(ncol=len(schemes), fontsize=7, loc="upper left")
    ax.set_title("Sublayer speedup (GEMM + all-reduce)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_traffic(results: list[PointResult], path: Path) -> Path:
    """Stacked DRAM bytes per sublayer: sequential (left) and T3-MCA (right), normalised to sequential."""
    fig, ax = plt.subplots(figsize=(max(10, 0.55 * len(results)), 4.5))
    colours = plt.get_cmap("tab20").colors
    for j, r in enumerate(results):
        base = r.schemes["sequential"].dram_bytes
        for offset, scheme in ((-0.2, "sequential"), (0.2, "t3_mca")):
            bottom = 0.0
            for k, part in enumerate(TRAFFIC):
                value = r.schemes[scheme].traffic[part] / base
                ax.bar(j + offset, value, 0.38, bottom=bottom, color=colours[k * 2 + (scheme == "t3_mca")],
                       label=f"{part} ({scheme})" if j == 0 else None)
                bottom += value
    ax.set_xticks(range(len(results)), [_label(r) for r in results], fontsize=6, rotation=90)
    ax.set_ylabel("DRAM bytes / sequential")
    ax.legend(ncol=4, fontsize=6, loc="upper right")
    ax.set_title("DRAM data movement: sequential (left bar) vs T3-MCA (right bar)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_timeline(results: list[PointResult], path: Path) -> Path:
    """Gantt chart of one FC-2 sublayer under sequential and T3-MCA."""
    chosen = next((r for r in results if r.point.sublayer == "FC-2" and r.point.phase == "training"),
                  next(r for r in results if r.point.sublayer == "FC-2"))
    fig, axes = plt.subplots(2, 1, figsize=(10, 4), sharex=True)
    lanes = {"GEMM": 2, "link": 1, "AG": 0}
    colours = {"GEMM": "#1f77b4", "link": "#d62728", "AG": "#2ca02c"}
    for ax, scheme in zip(axes, ("sequential", "t3_mca"), strict=True):
        for lane, label, start, end in chosen.schemes[scheme].timeline:
            ax.barh(lanes[lane], (end - start) * 1e6, left=start * 1e6, height=0.6, color=colours[lane],
                    edgecolor="white", linewidth=0.5)
            if (end - start) / chosen.schemes["sequential"].time_s > 0.04:
                ax.text((start + end) / 2 * 1e6, lanes[lane], label, ha="center", va="center", fontsize=6,
                        color="white")
        ax.set_yticks(list(lanes.values()), ["GEMM", "RS (link)", "AG"])
        ax.set_title(f"{scheme}: {chosen.schemes[scheme].time_s * 1e6:.0f} us", fontsize=9)
    axes[-1].set_xlabel("time (us)")
    p = chosen.point
    fig.suptitle(f"{p.model} TP{p.tp} {p.sublayer} ({p.phase})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
