"""The peers study: every scheme on every platform x TP x model x phase, per sublayer and
per layer, and who wins where (``python -m system_model peers``).

A scheme is called the winner of a cell only where its margin over the runner-up exceeds
the model's validated error for the transports both involve
(:func:`.validation.scheme_error`); elsewhere the cell says "within model error".
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from ..describe.config import PeerConfig
from ..describe.models import MODELS, PHASES, WorkloadConfig, sublayer_gemm
from ..describe.presets import DEFAULT_PLATFORMS, PLATFORMS, Platform
from ..schemes import PEER_SCHEMES, SCHEME_LABELS, SchemeResult, evaluate
from .layer import layer_ops, op_time_s
from .study import geomean

__all__ = ["DEFAULT_MODELS", "DEFAULT_TPS", "T3_SCHEMES", "SOFTWARE_SCHEMES", "PeerPoint", "PeerLayer", "run_peers",
           "winners", "peers_markdown", "write_peers"]

DEFAULT_MODELS = ("llama-3-70b", "llama-3-405b")

DEFAULT_TPS = (4, 8, 16, 32)
#: T3's two variants, and what runs on today's GPUs: the peers and the sequential baseline
#: itself (where every overlap loses, a user keeps the baseline).
T3_SCHEMES = ("t3_ring", "t3_direct")
SOFTWARE_SCHEMES = ("sequential", "flux", "async_tp", "flashoverlap", "triton_dist_rs", "triton_dist_ar", "ficco",
                    "dma_collective", "nvls")
BOUND_SCHEMES = ("ideal_overlap", "ideal_all_reduce")


@dataclass
class PeerPoint:
    """One sublayer on one platform: every scheme's result."""

    platform: str
    model: str
    tp: int
    phase: str
    sublayer: str
    results: dict[str, SchemeResult]

    def speedup(self, scheme: str) -> float | None:
        r = self.results[scheme]
        return self.results["sequential"].time_s / r.time_s if r.available else None


@dataclass
class PeerLayer:
    """One Transformer layer on one platform: the ops outside the sublayers (the same in
    every scheme) and, per scheme, its sublayers; None where a sublayer's scheme is n/a."""

    platform: str
    model: str
    tp: int
    phase: str
    other_s: float
    sublayer_s: dict[str, float | None]

    def time_s(self, scheme: str) -> float | None:
        s = self.sublayer_s[scheme]
        return None if s is None else self.other_s + s

    def speedup(self, scheme: str) -> float | None:
        t = self.time_s(scheme)
        return None if t is None else self.time_s("sequential") / t


def _fits(model, tp: int) -> bool:
    return all(dim % tp == 0 for dim in (model.hidden, model.ffn, model.fc1_width, model.qkv_width))


def run_peers(platforms: Iterable[Platform] | None = None, models: Iterable[str] = DEFAULT_MODELS,
              tps: Iterable[int] = DEFAULT_TPS, phases: Iterable[str] = tuple(PHASES), *,
              peer: PeerConfig | None = None, workload: WorkloadConfig | None = None, dram_model: str = "fluid"
              ) -> tuple[list[PeerPoint], list[PeerLayer]]:
    """Every scheme at every (platform, model, TP, phase) point whose TP divides the model."""
    return _run_peers(platforms, models, tps, phases, peer=peer, workload=workload, dram_model=dram_model)


def _run_peers(platforms, models, tps, phases, *, peer, workload, dram_model="fluid"
               ) -> tuple[list[PeerPoint], list[PeerLayer]]:
    platforms = [PLATFORMS[n] for n in DEFAULT_PLATFORMS] if platforms is None else list(platforms)
    workload = workload or WorkloadConfig()
    for name in models:
        if name not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, not {name!r}")
    for phase in phases:
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, not {phase!r}")
    points, layers = [], []
    for p in platforms:
        cfg = p.study_config(workload, dram_model=dram_model)
        if peer is not None:
            cfg = replace(cfg, peer=peer)
        for name in models:
            m = MODELS[name]
            for tp in tps:
                if not _fits(m, tp):
                    continue
                for phase in phases:
                    tokens = workload.tokens(phase)
                    ops = layer_ops(m, phase, tokens, tp, bytes_per_element=cfg.kernel.bytes_per_element)
                    other = sum(op_time_s(op, cfg) for op in ops if op.kind != "sublayer")
                    here = []
                    for sub in PHASES[phase]:
                        res = evaluate(cfg, sublayer_gemm(m, sub, tokens, tp), tp, schemes=PEER_SCHEMES)
                        here.append(PeerPoint(p.name, name, tp, phase, sub, res))
                    points += here
                    layers.append(PeerLayer(p.name, name, tp, phase, other, {
                        s: (None if any(not q.results[s].available for q in here)
                            else sum(q.results[s].time_s for q in here)) for s in PEER_SCHEMES}))
    return points, layers


def _best(layers: list[PeerLayer], schemes) -> tuple[str | None, float | None]:
    """The scheme of ``schemes`` with the highest geomean layer speedup over ``layers``
    (a scheme n/a on any of them is out)."""
    best = (None, None)
    for s in schemes:
        values = [layer.speedup(s) for layer in layers]
        if not values or any(v is None for v in values):
            continue
        g = geomean(values)
        if best[1] is None or g > best[1]:
            best = (s, g)
    return best


def _margin(ratio: float) -> float:
    """How much faster the faster of two schemes is (their time ratio's distance from 1, the
    same for either direction: a 1.37x lead is a 0.37 margin whichever scheme has it)."""
    return max(ratio, 1 / ratio) - 1


def winners(layers: list[PeerLayer], errors: dict[str, float] | None = None) -> list[dict]:
    """Per (platform, TP): the best T3 variant and the best software scheme (geomean layer
    speedup over the models and phases), their ratio, and whether the margin exceeds the
    model's validated error for both (``errors``: per transport, :func:`.validation.transport_error`;
    None: every margin counts)."""
    from .validation import scheme_error

    rows = []
    keys = dict.fromkeys((layer.platform, layer.tp) for layer in layers)
    for platform, tp in keys:
        here = [layer for layer in layers if layer.platform == platform and layer.tp == tp]
        t3, t3_x = _best(here, T3_SCHEMES)
        sw, sw_x = _best(here, SOFTWARE_SCHEMES)
        ratio = (t3_x / sw_x) if t3_x and sw_x else None
        margin_needed = None
        if errors is not None and ratio is not None:
            p = PLATFORMS[platform] if platform in PLATFORMS else None
            library = p.transport.library if p else "nccl"
            nvls = bool(p and p.fabric.switch_reduction and p.transport.nvls_efficiency > 0)
            margin_needed = max(scheme_error(t3, library, errors, nvls=nvls),
                                scheme_error(sw, library, errors, nvls=nvls))
        decided = None if ratio is None else (margin_needed is None or _margin(ratio) > margin_needed)
        rows.append({"platform": platform, "tp": tp, "t3": t3, "t3_speedup": t3_x, "software": sw,
                     "software_speedup": sw_x, "ideal_rs_speedup": _best(here, ("ideal_overlap",))[1],
                     "ideal_ar_speedup": _best(here, ("ideal_all_reduce",))[1],
                     "t3_over_software": ratio, "model_error": margin_needed, "decided": decided})
    return rows


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def _verdict(r: dict) -> str:
    if r["t3_over_software"] is None:
        return ""
    if not r["decided"]:
        return f" (within model error, ±{r['model_error']:.0%})"
    return " (T3 wins)" if r["t3_over_software"] > 1 else " (software wins)"


def peers_markdown(points: list[PeerPoint], layers: list[PeerLayer], errors: dict[str, float] | None = None) -> str:
    rows = winners(layers, errors)
    platforms = list(dict.fromkeys(r["platform"] for r in rows))
    tps = sorted({r["tp"] for r in rows})
    lines = ["# T3 against today's software overlap", "",
             "Generated by `python -m system_model peers`. Speedups are over the sequential scheme (the GEMM, then "
             "the library's all-reduce, NCCL's or RCCL's own choice of algorithm and protocol), per Transformer "
             "layer (every op; the four sublayers in training, two in prefill), geomean over the models and "
             "phases. Two bounds: `Ideal (RS hidden)` bounds every scheme that runs the all-gather after the "
             "reduce-scatter (T3, Flux, async-TP, FlashOverlap, DMA collectives); `Ideal (AR hidden)` bounds "
             "every scheme.", "",
             "## Who wins where", "",
             "Each cell: the best software scheme (the baseline included) and its speedup / the best T3 variant's "
             "speedup. A cell names a winner only where the margin exceeds the model's validated error for both "
             "schemes' transports (`peers_validation.md`); otherwise it says *within model error*.", "",
             "| platform | " + " | ".join(f"TP {tp}" for tp in tps) + " |",
             "| --- | " + " | ".join("---" for _ in tps) + " |"]
    for p in platforms:
        cells = []
        for tp in tps:
            r = next((r for r in rows if r["platform"] == p and r["tp"] == tp), None)
            if r is None:
                cells.append("-")
                continue
            sw = SCHEME_LABELS[r["software"]] if r["software"] else "none"
            t3 = SCHEME_LABELS[r["t3"]] if r["t3"] else "T3"
            cells.append(f"{sw} {_x(r['software_speedup'])} / {t3} {_x(r['t3_speedup'])}{_verdict(r)}")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines += ["", "## Layer speedup per scheme", "",
              "| platform | TP | " + " | ".join(SCHEME_LABELS[s] for s in PEER_SCHEMES if s != "sequential") + " |",
              "| --- | --- | " + " | ".join("---" for s in PEER_SCHEMES if s != "sequential") + " |"]
    for p in platforms:
        for tp in tps:
            here = [layer for layer in layers if layer.platform == p and layer.tp == tp]
            if not here:
                continue
            cells = []
            for s in PEER_SCHEMES:
                if s == "sequential":
                    continue
                values = [layer.speedup(s) for layer in here]
                cells.append("n/a" if any(v is None for v in values) else _x(geomean(values)))
            lines.append(f"| {p} | {tp} | " + " | ".join(cells) + " |")
    lines += ["", "## Why a scheme is n/a", ""]
    reasons = {}
    for q in points:
        for s, r in q.results.items():
            if not r.available:
                reasons.setdefault((q.platform, s, r.reason), set()).add(q.tp)
    for (p, s, reason), tps_na in sorted(reasons.items()):
        lines.append(f"- {p}, {SCHEME_LABELS[s]} (TP {', '.join(map(str, sorted(tps_na)))}): {reason}")
    return "\n".join(lines) + "\n"


def _csv_rows(points: list[PeerPoint]) -> list[dict]:
    rows = []
    for q in points:
        for s, r in q.results.items():
            rows.append({"platform": q.platform, "model": q.model, "tp": q.tp, "phase": q.phase,
                         "sublayer": q.sublayer, "scheme": s,
                         "time_us": "" if r.time_s is None else f"{r.time_s * 1e6:.3f}",
                         "gemm_us": "" if r.time_s is None else f"{r.gemm_s * 1e6:.3f}",
                         "speedup": "" if r.time_s is None else f"{q.speedup(s):.4f}", "na_reason": r.reason})
    return rows


def write_peers(points: list[PeerPoint], layers: list[PeerLayer], out: Path, *, plots: bool = True,
                validation: str | None = None, fmt: str = "csv", errors: dict[str, float] | None = None,
                name: str = "peers") -> list[Path]:
    """Write <name>.md, .csv, .json, the heat map and the validation table (``name``: ``peers``,
    and the CLI adds the platforms, models and TPs where a run chose them)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    md = out / f"{name}.md"
    md.write_text(peers_markdown(points, layers, errors))
    written.append(md)
    rows = _csv_rows(points)
    path = out / f"{name}.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    written.append(path)
    from .sweep import write_table
    if (table := write_table(rows, out / name, fmt)) is not None:      # --format json|parquet
        written.append(table)
    path = out / f"{name}.json"
    path.write_text(json.dumps({
        "winners": winners(layers, errors),
        "layers": [{"platform": la.platform, "model": la.model, "tp": la.tp, "phase": la.phase,
                    "speedup": {s: la.speedup(s) for s in PEER_SCHEMES}} for la in layers],
    }, indent=1) + "\n")
    written.append(path)
    if validation is not None:
        path = out / "peers_validation.md"
        path.write_text(validation)
        written.append(path)
    if plots:
        written += plot_heatmap(winners(layers, errors), out / f"{name}_heatmap")
    return written

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
