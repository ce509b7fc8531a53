"""Figures of the sweep and of the sensitivity study (PNG and SVG, readable at default size).

* :func:`plot_sweep_heatmap`: one panel per scheme, the geomean sublayer speedup over the
  sweep's two first numeric axes (link x HBM bandwidth by default), each cell labelled.
* :func:`plot_tornado`: each calibrated value moved down and up: how far the headline
  speedup geomean moves, the largest mover on top.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "t3"     # stable ids: an SVG changes only with its data
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["save_figure", "plot_sweep_heatmap", "plot_tornado"]

HEATMAP_SCHEMES = ("ideal_overlap", "t3", "t3_mca", "cu_sharing")


def save_figure(fig, stem: Path, dpi: int = 130) -> list[Path]:
    """``stem``.png and ``stem``.svg (no date in the SVG, so it is reproducible)."""
    paths = []
    for ext in ("png", "svg"):
        path = stem.with_name(f"{stem.name}.{ext}")       # appended: a name may hold dots
        fig.savefig(path, dpi=dpi, metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    plt.close(fig)
    return paths


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def plot_sweep_heatmap(csv_path: Path, stem: Path) -> list[Path]:
    """The geomean speedup (over every model, TP, phase and sublayer of the sweep) per
    value pair of the sweep's first two hardware axes, a panel per scheme."""
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{csv_path}: no results to plot")
    columns = list(rows[0])
    axes_cols = columns[1:columns.index("model")]
    if len(axes_cols) < 2:
        raise ValueError(f"{csv_path}: a heat map needs two swept hardware axes, not {len(axes_cols)}")
    x_name, y_name = axes_cols[0], axes_cols[1]
    xs = sorted({float(r[x_name]) for r in rows})
    ys = sorted({float(r[y_name]) for r in rows})
    schemes = [s for s in HEATMAP_SCHEMES if f"speedup_{s}" in columns]
    fig, panels = plt.subplots(1, len(schemes), figsize=(3.6 * len(schemes) + 1, 3.4), squeeze=False,
                               constrained_layout=True)
    grids = {}
    for s in schemes:
        cells = {}
        for r in rows:
            cells.setdefault((float(r[x_name]), float(r[y_name])), []).append(float(r[f"speedup_{s}"]))
        grids[s] = [[_geomean(cells[(x, y)]) if (x, y) in cells else math.nan for x in xs] for y in ys]
    finite = [v for g in grids.values() for row in g for v in row if not math.isnan(v)]
    vmin, vmax = min(finite), max(finite)
    for ax, s in zip(panels[0], schemes, strict=True):
        image = ax.imshow(grids[s], origin="lower", aspect="auto", cmap="viridis", vmin=vmin, vmax=vmax)
        ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs], fontsize=7, rotation=45)
        ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys], fontsize=7)
        ax.set_xlabel(x_name, fontsize=8)
        ax.set_title(s, fontsize=10)
        if len(xs) * len(ys) <= 100:
            for i, row in enumerate(grids[s]):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        shade = (v - vmin) / (vmax - vmin) if vmax > vmin else 0.5
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                                color="black" if shade > 0.5 else "white")
    panels[0][0].set_ylabel(y_name, fontsize=8)
    fig.colorbar(image, ax=panels[0].tolist(), shrink=0.85, label="speedup over sequential (geomean)")
    fig.suptitle(f"Sweep: geomean sublayer speedup over {x_name} x {y_name}", fontsize=11)
    return save_figure(fig, stem)


def plot_tornado(sensitivity, stem: Path, *, set_name: str = "headline",
                 figure: str = "speedup_geomean") -> list[Path]:
    """Each calibrated value at -step and +step: the change of ``figure`` on ``set_name``,
    one bar each way, sorted by the larger of the two (a missing move: a value the
    configuration refuses)."""
    base = sensitivity.base[set_name][figure]
    bars = []
    for row in sensitivity.rows:
        deltas = [sensitivity.delta(m, set_name, figure) for m in row.moves]
        down, up = (deltas + [None, None])[:2]
        bars.append((row.calibrated.name, down, up))
    bars.sort(key=lambda b: max(abs(b[1] or 0.0), abs(b[2] or 0.0)))
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(bars) + 1.4), constrained_layout=True)
    names = [b[0] for b in bars]
    for i, (_, down, up) in enumerate(bars):
        if down is not None:
            ax.barh(i, down, color="#1f77b4", height=0.6)
        if up is not None:
            ax.barh(i, up, color="#d62728", height=0.6)
    ax.set_yticks(range(len(bars)), names, fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"change of the {set_name} {figure.replace('_', ' ')} (base {base:.3f})", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", linewidth=0.3, alpha=0.6)
    step = sensitivity.step
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color="#1f77b4"), plt.Rectangle((0, 0), 1, 1, color="#d62728")],
              labels=[f"value -{step:.0%}", f"value +{step:.0%}"], fontsize=7, loc="lower right")
    ax.set_title(f"Sensitivity of the {set_name} speedup to each calibrated value", fontsize=10)
    return save_figure(fig, stem)
