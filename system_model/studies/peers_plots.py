"""The peers study's heat map: where T3 wins, and by how much over the best software scheme."""

from __future__ import annotations

import math
from pathlib import Path

from ..schemes import SCHEME_LABELS

__all__ = ["plot_heatmap"]


def plot_heatmap(rows: list[dict], stem: Path) -> list[Path]:
    """Two panels over platform x TP: the best T3 variant's layer speedup over the best
    software scheme's (diverging around 1), and the best software scheme's own speedup,
    each cell labelled with the scheme. A cell whose margin is within the model's validated
    error is hatched and says so. Writes ``stem``.png and .svg."""
    import matplotlib.pyplot as plt

    from .figures import ratio_colorbar, ratio_norm, save_figure  # headless, stable SVG ids

    platforms = list(dict.fromkeys(r["platform"] for r in rows))
    tps = sorted({r["tp"] for r in rows})
    by = {(r["platform"], r["tp"]): r for r in rows}

    def grid(key):
        return [[(by[(p, tp)][key] if (p, tp) in by and by[(p, tp)][key] is not None else math.nan) for tp in tps]
                for p in platforms]
    ratio, software = grid("t3_over_software"), grid("software_speedup")
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.55 * len(platforms) + 2.2), constrained_layout=True)
    # Both panels are ratios: a colour scale symmetric around 1.0 in log (white: a tie).
    panels = ((axes[0], ratio, "RdBu", ratio_norm([v for row in ratio for v in row if not math.isnan(v)]),
               "T3 (best variant) over the best software scheme", "t3"),
              (axes[1], software, "RdBu", ratio_norm([v for row in software for v in row if not math.isnan(v)]),
               "Best software scheme over sequential", "software"))
    for ax, data, cmap, nrm, title, label_key in panels:
        image = ax.imshow(data, cmap=cmap, norm=nrm, aspect="auto")
        ax.set_xticks(range(len(tps)), [f"TP {tp}" for tp in tps])
        ax.set_yticks(range(len(platforms)), platforms)
        ax.set_title(title, fontsize=11)
        ax.set_xlabel("tensor-parallel degree (GPUs in the group)", fontsize=9)
        ax.set_ylabel("platform", fontsize=9)
        for i, p in enumerate(platforms):
            for j, tp in enumerate(tps):
                r = by.get((p, tp))
                value = data[i][j]
                if r is None or math.isnan(value):
                    ax.text(j, i, "n/a", ha="center", va="center", fontsize=8, color="grey")
                    continue
                name = SCHEME_LABELS.get(r[label_key] or "", "")
                shade = image.norm(value)
                dark = shade < 0.2 or shade > 0.8
                undecided = label_key == "t3" and r.get("decided") is False
                if undecided:
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", linewidth=0,
                                               edgecolor="grey"))
                note = "\nwithin model error" if undecided else ""
                ax.text(j, i, f"{value:.2f}x\n{name}{note}", ha="center", va="center", fontsize=7 if note else 8,
                        color="white" if dark and not undecided else "black",
                        bbox=dict(facecolor="white", alpha=0.75, linewidth=0, pad=1.0) if undecided else None)
        ratio_colorbar(fig, image, ax, "speedup (x)")
    fig.suptitle("Per-layer speedup (each cell: the geomean over the models, training and prefill, of the Transformer"
                 " layer's speedup)", fontsize=11)
    return save_figure(fig, stem)
