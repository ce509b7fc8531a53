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

from ..schemes import SCHEME_LABELS  # noqa: E402

__all__ = ["save_figure", "plot_sweep_heatmap", "plot_tornado", "SCHEME_COLOURS", "label", "layout_problems",
           "ratio_norm", "ratio_colorbar"]

HEATMAP_SCHEMES = ("ideal_overlap", "t3", "t3_mca", "cu_sharing")

#: One colour per scheme, in every figure (the traffic components' colours are of another
#: family: tests/test_figures.py checks they never meet).
SCHEME_COLOURS = {
    "sequential": "#7f7f7f", "ideal_overlap": "#2ca02c", "ideal_all_reduce": "#17becf", "ideal_rs_nmc": "#98df8a",
    "t3": "#1f77b4", "t3_mca": "#d62728", "cu_sharing": "#ff7f0e", "t3_ring": "#9467bd", "t3_direct": "#8c564b",
    "flux": "#e377c2", "async_tp": "#bcbd22", "flashoverlap": "#393b79", "dma_collective": "#ffbb78",
    "dma_nmc": "#c49c94", "nvls": "#000000", "custom_ar": "#aec7e8", "triton_dist_rs": "#637939",
    "triton_dist_ar": "#e6550d", "ficco": "#31a354",
}

#: Axis titles of the swept fields the figures name (the field, its meaning and unit).
FIELD_LABELS = {"link_bw_GBps_per_link": "link bandwidth, one link (GB/s)", "hbm_GBps": "HBM bandwidth (GB/s)",
                "scale_out_GBps_per_gpu": "NIC bandwidth per GPU (GB/s)", "l2_MB": "L2 (MB)",
                "dram_latency_ns": "DRAM latency (ns)", "link_latency_ns": "link latency (ns)", "cus": "CUs"}


def label(scheme: str) -> str:
    """A scheme's display name (its code name where it has none)."""
    return SCHEME_LABELS.get(scheme, scheme)


def field_label(name: str) -> str:
    return FIELD_LABELS.get(name, name.replace("_", " "))


def ratio_norm(values, *, at_least: float = 1.05):
    """A colour scale for ratios, symmetric around 1.0 in log (0.5x as far below as 2x above)."""
    from matplotlib.colors import LogNorm

    finite = [v for v in values if v > 0 and math.isfinite(v)] or [1.0]
    span = max(at_least, max(finite), 1 / min(finite))
    return LogNorm(vmin=1 / span, vmax=span)


def ratio_colorbar(fig, image, axes, label_text: str):
    """A colour bar for :func:`ratio_norm`: ticks as plain ratios (0.8x, 1x, 1.25x), a line at 1."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    bar = fig.colorbar(image, ax=axes, shrink=0.85, label=label_text)
    low, high = image.norm.vmin, image.norm.vmax
    candidates = [0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0]
    bar.ax.yaxis.set_major_locator(FixedLocator([t for t in candidates if low <= t <= high]))
    bar.ax.yaxis.set_minor_locator(NullLocator())
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    bar.ax.axhline(1.0, color="black", linewidth=1.0)
    return bar


def layout_problems(fig) -> list[str]:
    """What a reader would miss: text or a legend outside the canvas, a bar outside its
    axes' range. Empty when the figure is sound (``tests/test_figures.py`` renders every figure
    through this)."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Rectangle

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    problems = []

    def outside(artist) -> bool:
        box = artist.get_window_extent(renderer)
        return box.width > 0 and (box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1 or box.x1 > canvas.x1 + 1
                                  or box.y1 > canvas.y1 + 1)
    texts = [*fig.texts, *fig.legends]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        for axis in (ax.xaxis, ax.yaxis):                 # the tick labels matplotlib draws (in view)
            low, high = sorted(axis.get_view_interval())
            texts += [t.label1 for t in axis.get_major_ticks()
                      if t.label1.get_visible() and low - 1e-9 <= t.get_loc() <= high + 1e-9]
        if ax.get_legend() is not None:
            texts.append(ax.get_legend())
        y0, y1 = sorted(ax.get_ylim())
        x0, x1 = sorted(ax.get_xlim())
        for c in ax.collections:
            if isinstance(c, PolyCollection):
                for path in c.get_paths():
                    ys = path.vertices[:, 1]
                    if len(ys) and (ys.max() > y1 + 1e-9 * max(1, abs(y1)) or ys.min() < y0 - 1e-9 * max(1, abs(y0))):
                        problems.append(f"{ax.get_title()!r}: a bar reaches {ys.max() if ys.max() > y1 else ys.min():g}"
                                        f", outside the axis ({y0:g}, {y1:g})")
                        break
        for patch in ax.patches:
            if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_width() and patch.get_height():
                px = sorted((patch.get_x(), patch.get_x() + patch.get_width()))
                py = sorted((patch.get_y(), patch.get_y() + patch.get_height()))
                if px[0] < x0 - 1e-9 or px[1] > x1 + 1e-9 or py[0] < y0 - 1e-9 or py[1] > y1 + 1e-9:
                    problems.append(f"{ax.get_title()!r}: a bar spans x {px}, y {py}, outside the axis")
    for t in texts:
        if t is not None and t.get_visible() and (getattr(t, "get_text", lambda: "x")() != "") and outside(t):
            name = t.get_text() if hasattr(t, "get_text") else type(t).__name__
            problems.append(f"{name[:60]!r} is outside the canvas")
    return problems


def save_figure(fig, stem: Path, dpi: int = 130) -> list[Path]:
    """``stem``.png and ``stem``.svg (no date in the SVG, so it is reproducible). With
    ``T3_CHECK_FIGURES=1`` (the figure tests) a figure with :func:`layout_problems` is refused."""
    import os

    if os.environ.get("T3_CHECK_FIGURES") == "1" and (problems := layout_problems(fig)):
        plt.close(fig)
        raise ValueError(f"figure {stem.name}: " + "; ".join(problems))
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
    """The geomean speedup (over every model, TP, phase and sublayer of the sweep, and every
    value of any further axis) per value pair of the sweep's first two hardware axes, a panel
    per scheme, on a colour scale symmetric around 1.0 (white: as fast as sequential)."""
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
    fig, panels = plt.subplots(1, len(schemes), figsize=(3.6 * len(schemes) + 1.2, 3.9), squeeze=False,
                               constrained_layout=True)
    grids, counts = {}, set()
    for s in schemes:
        cells = {}
        for r in rows:
            cells.setdefault((float(r[x_name]), float(r[y_name])), []).append(float(r[f"speedup_{s}"]))
        counts |= {len(v) for v in cells.values()}
        grids[s] = [[_geomean(cells[(x, y)]) if (x, y) in cells else math.nan for x in xs] for y in ys]
    norm = ratio_norm([v for g in grids.values() for row in g for v in row if not math.isnan(v)])
    for ax, s in zip(panels[0], schemes, strict=True):
        image = ax.imshow(grids[s], origin="lower", aspect="auto", cmap="RdBu", norm=norm)
        ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs], fontsize=7, rotation=45)
        ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys], fontsize=7)
        ax.set_xlabel(field_label(x_name), fontsize=8)
        ax.set_title(label(s), fontsize=10)
        if len(xs) * len(ys) <= 100:
            for i, row in enumerate(grids[s]):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        shade = norm(v)
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                                color="white" if shade < 0.2 or shade > 0.8 else "black")
    panels[0][0].set_ylabel(field_label(y_name), fontsize=8)
    ratio_colorbar(fig, image, panels[0].tolist(), "speedup over sequential (geomean)")
    models = sorted({r["model"] for r in rows})
    tps = sorted({int(r["tp"]) for r in rows})
    hardware = csv_path.stem.removeprefix("sweep_").split("_")[0]
    per_cell = "/".join(str(c) for c in sorted(counts))
    fig.suptitle(f"{hardware}: sublayer speedup over sequential, {', '.join(models)}, TP {'/'.join(map(str, tps))}"
                 f"\neach cell: the geomean of its {per_cell} points (every model, TP, phase and sublayer"
                 f"{', and every value of the other axes' if len(axes_cols) > 2 else ''}); 1.0 is white",
                 fontsize=9)
    return save_figure(fig, stem)


def plot_tornado(sensitivity, stem: Path, *, set_name: str = "headline",
                 figure: str = "speedup_geomean") -> list[Path]:
    """Each calibrated value at -step and +step: the change of ``figure`` on ``set_name``, the
    two moves as two bars side by side (so that neither hides the other), sorted by the larger;
    a move that changed nothing is a tick at 0, and a move the configuration refuses a note
    saying so."""
    base = sensitivity.base[set_name][figure]
    bars = []
    for row in sensitivity.rows:
        moves = list(row.moves) + [None] * (2 - len(row.moves))
        down, up = moves[:2]
        delta = [None if m is None or m.figures is None else sensitivity.delta(m, set_name, figure) for m in moves[:2]]
        refused = [None if m is None else m.skipped or None for m in (down, up)]
        bars.append((row.calibrated.name, delta[0], delta[1], refused))
    bars.sort(key=lambda b: max(abs(b[1] or 0.0), abs(b[2] or 0.0)))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(bars) + 1.6), constrained_layout=True)
    step = sensitivity.step
    extent = max([abs(v) for b in bars for v in b[1:3] if v is not None] + [1e-3])
    for i, (_, down, up, refused) in enumerate(bars):
        for value, offset, colour, note in ((down, -0.18, "#1f77b4", refused[0]), (up, 0.18, "#d62728", refused[1])):
            if value is not None:
                ax.barh(i + offset, value, color=colour, height=0.34)
                if abs(value) < 0.004 * extent:               # ran, and moved nothing: say so
                    ax.plot([0], [i + offset], marker="|", markersize=7, color=colour)
            elif note:
                ax.text(0, i + offset, f" {'-' if offset < 0 else '+'}{step:.0%} refused: {note[:50]}",
                        va="center", ha="left", fontsize=6, color="#555555")
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.set_ylim(-0.6, len(bars) - 0.4)
    ax.set_xlim(-1.25 * extent, 1.25 * extent)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"change of the {set_name} {figure.replace('_', ' ')} (base {base:.3f})", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", linewidth=0.3, alpha=0.6)
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color="#1f77b4"), plt.Rectangle((0, 0), 1, 1, color="#d62728")],
              labels=[f"value -{step:.0%}", f"value +{step:.0%}"], fontsize=7, loc="lower right")
    ax.set_title(f"Sensitivity of the {set_name} speedup to each calibrated value", fontsize=10)
    return save_figure(fig, stem)
