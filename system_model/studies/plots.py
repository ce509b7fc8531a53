"""PNG plots of the study (matplotlib, headless).

* :func:`plot_speedups`: the paper's results figure, a panel per model and TP (sublayers on
  the x axis, a bar per scheme, prefill hatched) and a panel of the sets' geomeans.
* :func:`plot_traffic`: DRAM bytes per scheme, stacked by component (GEMM reads/writes, RS
  reads/writes, AG), per sublayer in the same panels, and the headline set's summary.
* :func:`plot_timeline`: T3 against T3-MCA on one FC sublayer: the DRAM's and the links' use
  over time, from the timeline engine's intervals; a Gantt chart where none was recorded.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display on CI machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .figures import SCHEME_COLOURS, label, save_figure  # noqa: E402
from .study import HEADLINE_SETS, SCHEMES, PointResult, summarise  # noqa: E402
from .traffic import TRAFFIC_LABELS, select, traffic_breakdown, traffic_components, traffic_summary  # noqa: E402

__all__ = ["plot_speedups", "plot_traffic", "plot_timeline"]

TRAFFIC_COLOURS = {"gemm_reads": "#3f007d", "gemm_writes": "#9e9ac8", "rs_reads": "#67000d", "rs_writes": "#fc9272",
                   "ag": "#00441b", "other": "#d9d9d9"}
STREAM_COLOURS = {"gemm": "#3f007d", "communication": "#fc9272", "links": "#00441b"}
PREFILL_HATCH = "////"
#: Display names of the study's sets.
SET_LABELS = {"headline": "headline", "palm_mtnlg": "PaLM / MT-NLG", "all": "all points"}
DPI = 110


def _colour(scheme: str) -> str:
    return SCHEME_COLOURS.get(scheme, "#bbbbbb")


def _facets(results: list[PointResult]) -> dict[tuple[str, int], list[PointResult]]:
    """The points per (model, TP), in study order (training sublayers, then prefill)."""
    facets: dict[tuple[str, int], list[PointResult]] = {}
    for r in results:
        facets.setdefault((r.point.model, r.point.tp), []).append(r)
    return facets


#: Legend entries a row holds per inch of figure width.
_LEGEND_PER_INCH = 0.55


def _grid(panels: int, width: float = 3.3, height: float = 2.0, *, legend: int = 0, title: str = "",
          bottom: float = 0.5):
    """A grid of ``panels`` axes (4 a row), laid out by fixed margins in inches (tight_layout
    costs a draw of the whole figure), with room above for the title and a legend of
    ``legend`` entries wrapped to the figure's width (at least 7 inches wide, so that a
    figure of one panel still holds them)."""
    import textwrap

    cols = min(4, panels)
    rows = math.ceil(panels / cols)
    left, right, gap_w, gap_h = 0.6, 0.15, 0.25, 0.8
    fig_w = max(7.0, left + right + cols * width + (cols - 1) * gap_w)
    # The title wrapped to the figure's width (about 13 characters an inch at 10 points).
    title = "\n".join(textwrap.fill(line, int(fig_w * 13)) for line in title.splitlines())
    title_lines = title.count("\n") + 1
    width = (fig_w - left - right - (cols - 1) * gap_w) / cols
    ncol = max(1, min(legend, int(fig_w * _LEGEND_PER_INCH)))
    legend_rows = math.ceil(legend / ncol) if legend else 0
    top = 0.2 + 0.19 * title_lines + 0.18 * legend_rows + 0.15
    fig_h = top + bottom + rows * height + (rows - 1) * gap_h
    fig, axes = plt.subplots(rows, cols, figsize=(fig_w, fig_h), sharey=True, squeeze=False)
    fig.subplots_adjust(left=left / fig_w, right=1 - right / fig_w, top=1 - top / fig_h, bottom=bottom / fig_h,
                        wspace=gap_w / width, hspace=gap_h / height)
    flat = list(axes.flat)
    for ax in flat[panels:]:
        ax.set_visible(False)
    fig._t3_legend = (ncol, title_lines, title)
    return fig, flat[:panels]


def _bars(ax, xs, heights, width: float, colour: str, *, bottoms=None, hatch: str | None = None) -> None:
    """Bars as one collection (``ax.bar`` makes an artist per bar, which is slow to build)."""
    bottoms = [0.0] * len(xs) if bottoms is None else bottoms
    w = width / 2
    verts = [((x - w, b), (x - w, b + h), (x + w, b + h), (x + w, b))
             for x, h, b in zip(xs, heights, bottoms, strict=True)]
    ax.add_collection(PolyCollection(verts, facecolors=colour, edgecolors="white" if hatch else "none",
                                     linewidths=0, hatch=hatch), autolim=False)


def _legend(fig, handles) -> None:
    """The title, then the legend wrapped into the rows :func:`_grid` made room for."""
    ncol, title_lines, title = fig._t3_legend
    h = fig.get_figheight()
    fig.suptitle(title, fontsize=10, y=1 - 0.08 / h, va="top")
    fig.legend(handles=handles, ncol=ncol, fontsize=7, loc="upper center", frameon=False,
               bbox_to_anchor=(0.5, 1 - (0.14 + 0.19 * title_lines) / h), handlelength=1.5, columnspacing=1.2)


def _sublayer_ticks(ax, facet: list[PointResult]) -> None:
    ax.set_xlim(-0.5, len(facet) - 0.5)
    ax.set_xticks(range(len(facet)),
                  [r.point.sublayer + ("" if r.point.phase == "training" else "\nprefill") for r in facet],
                  fontsize=7)
    phases = [r.point.phase for r in facet]
    for j in range(1, len(facet)):
        if phases[j] != phases[j - 1]:
            ax.axvline(j - 0.5, color="black", linewidth=0.6, linestyle=":")


def _save(fig, path: Path) -> Path:
    """The PNG at ``path`` and an SVG beside it (:func:`.figures.save_figure`); the PNG's path."""
    return save_figure(fig, path.with_suffix(""), dpi=DPI)[0]


def plot_speedups(results: list[PointResult], path: Path) -> Path:
    """Speedup over sequential: a panel per model and TP with the sublayers on the x axis, a
    bar per scheme (prefill hatched) and a dashed line for ideal overlap over each group, and
    a panel of each set's geomean."""
    schemes = [s for s in SCHEMES[1:] if s not in ("ideal_overlap", "ideal_all_reduce")]
    width = 0.8 / len(schemes)
    offsets = [(i - len(schemes) / 2 + 0.5) * width for i in range(len(schemes))]
    facets = _facets(results)
    summaries = [s for name in [*HEADLINE_SETS, "all"] if (s := summarise(results, name))]
    fig, axes = _grid(len(facets) + 1, legend=len(schemes) + 3,
                      title="Sublayer speedup (GEMM + all-reduce) over sequential, per model and TP")
    top = max(1.6, max(r.speedup(s) for r in results for s in [*schemes, "ideal_overlap", "ideal_all_reduce"]) + 0.1)
    for ax, ((model, tp), facet) in zip(axes, facets.items(), strict=False):
        for i, scheme in enumerate(schemes):
            for phase, hatch in (("training", None), ("prefill", PREFILL_HATCH)):
                js = [j for j, r in enumerate(facet) if r.point.phase == phase]
                if js:
                    _bars(ax, [j + offsets[i] for j in js], [facet[j].speedup(scheme) for j in js], width,
                          _colour(scheme), hatch=hatch)
        for bound, style in (("ideal_overlap", "--"), ("ideal_all_reduce", ":")):
            ax.hlines([r.speedup(bound) for r in facet], [j - 0.45 for j in range(len(facet))],
                      [j + 0.45 for j in range(len(facet))], colors="black", linestyles=style, linewidth=1.0)
        _sublayer_ticks(ax, facet)
        ax.set_title(f"{model}, TP {tp}", fontsize=9)
    ax = axes[-1]
    for bound, style in (("ideal_overlap", "--"), ("ideal_all_reduce", ":")):
        ax.hlines([s.speedup_geomean[bound] for s in summaries], [j - 0.45 for j in range(len(summaries))],
                  [j + 0.45 for j in range(len(summaries))], colors="black", linestyles=style, linewidth=1.0)
    for i, scheme in enumerate(schemes):
        _bars(ax, [j + offsets[i] for j in range(len(summaries))], [s.speedup_geomean[scheme] for s in summaries],
              width, _colour(scheme))
    ax.set_xlim(-0.5, len(summaries) - 0.5)
    ax.set_xticks(range(len(summaries)), [f"{SET_LABELS.get(s.name, s.name)}\n({s.points} pts)" for s in summaries],
                  fontsize=7)
    ax.set_title("geomean per set", fontsize=9, fontweight="bold")
    for ax in axes:
        ax.axhline(1.0, color="black", linewidth=0.8)        # as fast as sequential
        ax.set_ylim(0, top)                                   # every bar whole, the slowest too
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", linewidth=0.3, alpha=0.6)
    for ax in axes[::min(4, len(axes))]:
        ax.set_ylabel("speedup over sequential", fontsize=8)
    handles = [Patch(color=_colour(s), label=label(s)) for s in schemes]
    handles.append(Line2D([], [], color="black", linestyle="--", label="Ideal (RS hidden): bounds T3, T3-MCA"))
    handles.append(Line2D([], [], color="black", linestyle=":", label="Ideal (AR hidden): bounds CU sharing too"))
    handles.append(Patch(facecolor="#bbbbbb", edgecolor="white", hatch=PREFILL_HATCH, label="prefill (hatched)"))
    _legend(fig, handles)
    return _save(fig, path)


def plot_traffic(results: list[PointResult], path: Path) -> Path:
    """DRAM bytes per scheme stacked by component, normalised to the sequential scheme's:
    the headline set's summary (bar height: geomean over the set, split by the components' mean
    shares), then a panel per model and TP with a group of scheme bars per sublayer."""
    components = traffic_components(results)
    summary_set = next((n for n in [*HEADLINE_SETS, "all"] if select(results, n)), "all")
    summary = traffic_summary(results, summary_set)
    facets = _facets(results)
    title = ("DRAM data movement per scheme, normalised to sequential\n(bars left to right: "
             + ", ".join(label(s) for s in SCHEMES) + "; the marker names the scheme)")
    # Room below for the summary panel's slanted scheme names.
    fig, axes = _grid(len(facets) + 1, legend=len(components) + len(SCHEMES), title=title, bottom=1.15)
    width = 0.84 / len(SCHEMES)
    offsets = [(i - len(SCHEMES) / 2 + 0.5) * width for i in range(len(SCHEMES))]

    ax = axes[0]
    xs = range(len(SCHEMES))
    bottom = [0.0] * len(SCHEMES)
    for c in components:
        heights = [summary[s]["vs_sequential_geomean"] * summary[s]["share"][c] for s in SCHEMES]
        _bars(ax, list(xs), heights, 0.7, TRAFFIC_COLOURS[c], bottoms=bottom)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    for x, b in zip(xs, bottom, strict=True):
        ax.text(x, b + 0.02, f"{b:.2f}", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(list(xs), [label(s) for s in SCHEMES], fontsize=7, rotation=45, ha="right")
    ax.set_xlim(-0.5, len(SCHEMES) - 0.5)
    ax.set_title(f"{SET_LABELS.get(summary_set, summary_set)}: geomean ({len(select(results, summary_set))} pts)",
                 fontsize=9,
                 fontweight="bold")

    for ax, ((model, tp), facet) in zip(axes[1:], facets.items(), strict=True):
        for i, scheme in enumerate(SCHEMES):
            xs = [j + offsets[i] for j in range(len(facet))]
            parts = [traffic_breakdown(r.schemes[scheme]) for r in facet]
            base = [r.schemes["sequential"].dram_bytes for r in facet]
            bottom = [0.0] * len(facet)
            for c in components:
                heights = [p.get(c, 0.0) / b for p, b in zip(parts, base, strict=True)]
                _bars(ax, xs, heights, width, TRAFFIC_COLOURS[c], bottoms=bottom)
                bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
            ax.scatter(xs, [b + 0.03 for b in bottom], s=7, marker="v", color=_colour(scheme), linewidths=0)
        _sublayer_ticks(ax, facet)
        ax.set_title(f"{model}, TP {tp}", fontsize=9)
    # Every bar whole: the axis reaches the most traffic any scheme moves (T3's staged GEMM at
    # TP 32 re-reads operands: well above the sequential scheme's bytes).
    most = max([1.0] + [r.schemes[s].dram_bytes / r.schemes["sequential"].dram_bytes for r in results
                        for s in SCHEMES if r.schemes["sequential"].dram_bytes > 0])
    for ax in axes:
        ax.set_ylim(0, 1.12 * most + 0.08)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", linewidth=0.3, alpha=0.6)
    for ax in axes[::min(4, len(axes))]:
        ax.set_ylabel("DRAM bytes / sequential", fontsize=8)
    handles = [Patch(color=TRAFFIC_COLOURS[c], label=TRAFFIC_LABELS[c]) for c in components]
    handles += [Line2D([], [], marker="v", linestyle="", color=_colour(s), label=label(s)) for s in SCHEMES]
    _legend(fig, handles)
    return _save(fig, path)


def _fc_point(results: list[PointResult]) -> PointResult:
    for sublayer in ("FC-2", "FC-1"):
        for phase in ("training", "prefill"):
            for r in results:
                if r.point.sublayer == sublayer and r.point.phase == phase:
                    return r
    return results[0]


def plot_timeline(results: list[PointResult], path: Path, *, cfg=None) -> Path:
    """T3 against T3-MCA on one FC sublayer (FC-2 training if studied), from the timeline
    engine's record: per scheme, the DRAM's use over time split into the GEMM's and the
    communication's, and the links' use. Where a resource is below 100% nobody waits for it;
    the arbiter (round robin or compute first) only decides anything where the DRAM is full.
    Falls back to a Gantt chart where no scheme kept its record."""
    chosen = _fc_point(results)
    if cfg is not None and not any(chosen.schemes[s].intervals for s in ("t3", "t3_mca") if s in chosen.schemes):
        # The study runs without recording (and from the result cache); this point is run
        # again with its intervals kept.
        from ..schemes import evaluate
        from .study import PointResult
        schemes = tuple(chosen.schemes)
        chosen = PointResult(chosen.point, chosen.shape,
                             evaluate(cfg, chosen.shape, chosen.point.tp, schemes=schemes, record=True))
    recorded = [s for s in ("t3", "t3_mca") if s in chosen.schemes and chosen.schemes[s].intervals]
    if not recorded:
        return _plot_gantt(chosen, path)
    fig, axes = plt.subplots(2, len(recorded), figsize=(5.5 * len(recorded), 4.6), sharex="col", sharey="row",
                             squeeze=False)
    for col, scheme in enumerate(recorded):
        res = chosen.schemes[scheme]
        iv = res.intervals
        edges = [a * 1e6 for a, *_ in iv] + [iv[-1][1] * 1e6]
        dram, link = axes[0][col], axes[1][col]
        gemm = [x[4].get("GEMM", 0.0) for x in iv]
        comm = [sum(v for k, v in x[4].items() if k != "GEMM") for x in iv]
        dram.stairs(gemm, edges, fill=True, color=STREAM_COLOURS["gemm"], label="GEMM")
        dram.stairs([g + c for g, c in zip(gemm, comm, strict=True)], edges, baseline=gemm, fill=True,
                    color=STREAM_COLOURS["communication"], label="communication")
        dram.axhline(1.0, color="black", linestyle="--", linewidth=0.7)
        dram.set_ylim(0, 1.15)
        dram.set_title(f"{label(scheme)}: {res.time_s * 1e6:.0f} us (GEMM ends at {res.gemm_s * 1e6:.0f} us)",
                       fontsize=9)
        end = res.time_s * 1e6
        dram.set_xlim(0, end)
        dram.legend(fontsize=7, loc="lower right")
        link.stairs([x[3].get("link", 0.0) for x in iv], edges, fill=True, color=STREAM_COLOURS["links"],
                    label="links")
        if any("reducers" in x[3] for x in iv):
            link.stairs([x[3].get("reducers", 0.0) for x in iv], edges, color="black", linewidth=0.8,
                        label="near-memory reducers")
        link.axhline(1.0, color="black", linestyle="--", linewidth=0.7)
        link.set_ylim(0, 1.15)
        link.legend(fontsize=7, loc="lower right")
        if end > edges[-1] * 1.001:
            # What follows the overlapped interval (the all-gather) is a closed form, not intervals.
            for ax in (dram, link):
                ax.axvspan(edges[-1], end, color="#eeeeee", zorder=0)
            link.text((edges[-1] + end) / 2, 0.5, "all-gather\n(after the\nreduce-scatter)", ha="center",
                      va="center", fontsize=7, color="#555555")
        link.set_xlabel(f"time (us): the whole sublayer, 0 to {end:.0f} us", fontsize=8)
        for ax in (dram, link):
            ax.tick_params(labelsize=7)
            ax.grid(linewidth=0.3, alpha=0.6)
    axes[0][0].set_ylabel("DRAM, share of its bandwidth", fontsize=8)
    axes[1][0].set_ylabel("link / reducers, share", fontsize=8)
    p = chosen.point
    fig.suptitle(f"{p.model} TP{p.tp} {p.sublayer} ({p.phase}): who uses the DRAM and the links\n"
                 "(the timeline engine's intervals, from start to end)", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def _plot_gantt(chosen: PointResult, path: Path) -> Path:
    """Gantt chart of one sublayer under sequential, T3 and T3-MCA (the schemes present)."""
    schemes = [s for s in ("sequential", "t3", "t3_mca") if s in chosen.schemes]
    fig, axes = plt.subplots(len(schemes), 1, figsize=(10, 1.6 * len(schemes) + 0.6), sharex=True, squeeze=False)
    lanes = {"GEMM": 2, "link": 1, "AG": 0}
    colours = {"GEMM": STREAM_COLOURS["gemm"], "link": STREAM_COLOURS["links"], "AG": TRAFFIC_COLOURS["ag"]}
    for ax, scheme in zip(axes[:, 0], schemes, strict=True):
        for lane, what, start, end in chosen.schemes[scheme].timeline:
            y = lanes.setdefault(lane, len(lanes))
            ax.barh(y, (end - start) * 1e6, left=start * 1e6, height=0.6, color=colours.get(lane, "#888888"),
                    edgecolor="white", linewidth=0.5)
            if (end - start) / chosen.schemes["sequential"].time_s > 0.04:
                ax.text((start + end) / 2 * 1e6, y, what, ha="center", va="center", fontsize=6, color="white")
        ax.set_yticks(list(lanes.values()), [{"link": "RS (link)"}.get(k, k) for k in lanes], fontsize=7)
        ax.set_title(f"{label(scheme)}: {chosen.schemes[scheme].time_s * 1e6:.0f} us", fontsize=9)
    axes[-1, 0].set_xlabel("time (us)")
    p = chosen.point
    fig.suptitle(f"{p.model} TP{p.tp} {p.sublayer} ({p.phase})", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
