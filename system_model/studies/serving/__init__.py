"""The serving regime: decode and chunked prefill, where the all-reduce is latency-bound
(``python -m system_model peers`` writes ``peers_serving.md`` and ``peers_serving.json``).

In serving, a forward pass has two all-reduce sublayers per Transformer layer (the
attention output projection, OP, and the MLP's down projection, FC-2), each a GEMM of
``tokens`` rows followed by an all-reduce of ``tokens x hidden`` elements. Decode runs one
token per sequence (batch 1 to 256 tokens); chunked prefill runs chunks of 512 to 8,192
tokens. The tensors are small (16 KiB for one token of Llama 3 70B), and the libraries and
serving engines answer with latency-bound algorithms: NCCL's LL and LL128 rings, tree and
NVLS (its own cost model picks, :mod:`system_model.kernels.collectives`), and the load-based
one-shot and two-shot all-reduce of vLLM, TensorRT-LLM and PyTorch
(:mod:`system_model.kernels.custom_allreduce`).

Every scheme that hides only the reduce-scatter (T3, Flux, async-TP, FlashOverlap, the DMA
schemes) runs the fastest all-gather after it, the library's or a load-based one
(``PeerConfig.all_gather = "fastest"``): a serving engine would. T3 runs with the trigger and
DMA start latencies ``make characterize`` measures on the RTL, scaled to the preset's memory
clock (:class:`~system_model.describe.block_timing.BlockTiming`).

A point names a winner only where the margin exceeds the validated error of both schemes'
transports (:func:`.validation.scheme_error`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from ...describe.config import PeerConfig
from ...describe.models import MODELS, WorkloadConfig, sublayer_gemm
from ...describe.presets import DEFAULT_PLATFORMS, PLATFORMS, Platform
from ...schemes import SCHEME_LABELS, SERVING_SCHEMES, SchemeResult, evaluate
from ..peers import DEFAULT_MODELS, SOFTWARE_SCHEMES, T3_SCHEMES, _fits, _margin

__all__ = ["SERVING_TOKENS", "SERVING_TPS", "SERVING_SUBLAYERS", "SERVING_SOFTWARE", "ServingPoint", "run_serving",
           "serving_verdicts", "compare_verdicts", "prefill_layers", "serving_markdown", "write_serving"]

#: Tokens per forward pass: decode (one per sequence, batch 1-256) and chunked prefill.
SERVING_TOKENS = {"decode": (1, 2, 4, 8, 16, 32, 64, 128, 256), "chunked prefill": (512, 1024, 2048, 4096, 8192)}
SERVING_TPS = (4, 8)
#: The sublayers of a forward pass that end in an all-reduce.
SERVING_SUBLAYERS = ("OP", "FC-2")
#: What serving runs today: the peers' software and the load-based all-reduce.
SERVING_SOFTWARE = SOFTWARE_SCHEMES + ("custom_ar",)


@dataclass
class ServingPoint:
    """One (platform, model, TP, tokens): each scheme's OP and FC-2 results."""

    platform: str
    model: str
    tp: int
    regime: str
    tokens: int
    results: dict[str, dict[str, SchemeResult]]     # sublayer -> scheme -> result
    description: Platform | None = None             # the platform run (presets or a hardware file)

    def time_s(self, scheme: str) -> float | None:
        """OP + FC-2; None where the scheme cannot run either."""
        times = [self.results[s][scheme].time_s for s in SERVING_SUBLAYERS]
        return None if any(t is None for t in times) else sum(times)

    def speedup(self, scheme: str) -> float | None:
        t = self.time_s(scheme)
        return None if t is None else self.time_s("sequential") / t

    def best(self, schemes) -> tuple[str | None, float | None]:
        """The fastest of ``schemes`` that can run here, and its time."""
        options = [(t, s) for s in schemes if (t := self.time_s(s)) is not None]
        if not options:
            return None, None
        t, s = min(options)
        return s, t


def run_serving(platforms=None, models=DEFAULT_MODELS, tps=SERVING_TPS, *, dram_model: str = "fluid",
                peer: PeerConfig | None = None) -> list[ServingPoint]:
    """Every serving scheme at every (platform, model, TP, token count) whose TP divides the
    model; ``peer``: the peers' assumed values (default :class:`PeerConfig`'s), with the
    fastest all-gather whatever it says (serving engines run their own)."""
    platforms = [PLATFORMS[n] for n in DEFAULT_PLATFORMS] if platforms is None else list(platforms)
    peer = replace(PeerConfig() if peer is None else peer, all_gather="fastest")
    points = []
    for p in platforms:
        cfg = replace(p.study_config(WorkloadConfig(), dram_model=dram_model), peer=peer)
        for name in models:
            m = MODELS[name]
            for tp in tps:
                if not _fits(m, tp):
                    continue
                for regime, counts in SERVING_TOKENS.items():
                    for tokens in counts:
                        res = {sub: evaluate(cfg, sublayer_gemm(m, sub, tokens, tp), tp, schemes=SERVING_SCHEMES)
                               for sub in SERVING_SUBLAYERS}
                        points.append(ServingPoint(p.name, name, tp, regime, tokens, res, p))
    return points


def serving_verdicts(points: list[ServingPoint], errors: dict[str, float] | None = None) -> list[dict]:
    """Per point: the best T3 variant against the best software, and whether the margin
    exceeds the validated error of both (``errors`` None: every margin counts)."""
    from ..validation import scheme_error

    rows = []
    for q in points:
        t3, t3_s = q.best(T3_SCHEMES)
        sw, sw_s = q.best(SERVING_SOFTWARE)
        ratio = None if t3_s is None or sw_s is None else sw_s / t3_s
        needed = None
        if errors is not None and ratio is not None:
            p = q.description or PLATFORMS[q.platform]
            nvls = bool(p.fabric.switch_reduction and p.transport.nvls_efficiency > 0)
            needed = max(scheme_error(t3, p.transport.library, errors, nvls=nvls),
                         scheme_error(sw, p.transport.library, errors, nvls=nvls))
        if ratio is None:
            verdict = "n/a"
        elif needed is not None and _margin(ratio) <= needed:
            verdict = "within"
        else:
            verdict = "T3" if ratio > 1 else "software"
        rows.append({"platform": q.platform, "model": q.model, "tp": q.tp, "regime": q.regime, "tokens": q.tokens,
                     "t3": t3, "t3_us": None if t3_s is None else t3_s * 1e6, "software": sw,
                     "software_us": None if sw_s is None else sw_s * 1e6,
                     "sequential_us": q.time_s("sequential") * 1e6,
                     "gemm_us": sum(q.results[s]["sequential"].gemm_s for s in SERVING_SUBLAYERS) * 1e6,
                     "t3_over_software": ratio, "model_error": needed, "verdict": verdict})
    return rows


def compare_verdicts(before: list[dict], after: list[dict]) -> dict:
    """Two sets of :func:`serving_verdicts` rows of the same points: the (before, after)
    verdict pairs, the points whose verdict changes, the largest move of T3's ratio to the
    best software (with its point), and the number of points."""
    def key(r):
        return r["platform"], r["model"], r["tp"], r["tokens"]

    later = {key(r): r for r in after}
    pairs, changed, largest = Counter(), [], (0.0, None)
    for a in before:
        b = later[key(a)]
        pairs[(a["verdict"], b["verdict"])] += 1
        if a["verdict"] != b["verdict"]:
            changed.append((key(a), a, b))
        if a["t3_over_software"] is not None and b["t3_over_software"] is not None:
            move = b["t3_over_software"] - a["t3_over_software"]
            if abs(move) > abs(largest[0]):
                largest = (move, key(a))
    return {"pairs": pairs, "changed": changed, "largest_move": largest, "points": len(before)}


def verdict_summary(v: dict, *, points: str = "points", software: bool = False) -> list[str]:
    """The lines that report :func:`compare_verdicts`' ``v``: how many of the ``points`` keep
    their verdict, the pairs, the largest move, then each change (with the best software
    either side where ``software``)."""
    kept = sum(n for (a, b), n in v["pairs"].items() if a == b)
    move, where = v["largest_move"]
    lines = [f"{kept} of {v['points']} {points} keep their verdict; "
             + ", ".join(f"{a} -> {b}: {n}" for (a, b), n in sorted(v["pairs"].items())) + ".",
             f"Largest move of T3 over the best software: {move:+.2f} at {where}.", ""]
    for key, a, b in v["changed"]:
        sa, sb = (f", {a['software']}", f", {b['software']}") if software else ("", "")
        lines.append(f"* {key}: {a['verdict']} ({a['t3_over_software']:.2f}{sa}) -> {b['verdict']} "
                     f"({b['t3_over_software']:.2f}{sb})")
    return lines


def prefill_layers(points: list[ServingPoint], errors: dict[str, float] | None = None) -> list[dict]:
    """Chunked prefill on a reducing switch, one whole layer: T3 and the best software
    sublayers inside the layer's other ops, against TokenWeave, whose overlap crosses the
    sublayers (:mod:`.tokenweave`). A prompt of ``tokens`` (attention over itself)."""
    from ..layer import layer_ops, op_time_s
    from ..validation import scheme_error
    from .tokenweave import TOKENWEAVE_MIN_TOKENS, tokenweave_layer

    rows = []
    for q in points:
        p = q.description or PLATFORMS[q.platform]
        if q.tokens < TOKENWEAVE_MIN_TOKENS or not (p.fabric.switch_reduction and p.transport.nvls_efficiency > 0):
            continue
        if not p.fabric.in_domain(q.tp):
            continue
        cfg = p.study_config(WorkloadConfig())
        m = MODELS[q.model]
        ops = layer_ops(m, "prefill", q.tokens, q.tp, seq_len=q.tokens, bytes_per_element=cfg.kernel.bytes_per_element)
        other = sum(op_time_s(op, cfg) for op in ops if op.kind != "sublayer")
        t3, t3_s = q.best(T3_SCHEMES)
        sw, sw_s = q.best(SERVING_SOFTWARE)
        tw_s = tokenweave_layer(cfg, m, q.tokens, q.tp).tokenweave_s
        best, best_s = (sw, other + sw_s) if other + sw_s <= tw_s else ("tokenweave", tw_s)
        ratio = best_s / (other + t3_s)
        needed = None
        if errors is not None:
            needed = max(scheme_error(t3, p.transport.library, errors, nvls=True),
                         scheme_error(best, p.transport.library, errors, nvls=True))
        verdict = ("within" if needed is not None and _margin(ratio) <= needed else ("T3" if ratio > 1 else "software"))
        rows.append({"platform": q.platform, "model": q.model, "tp": q.tp, "tokens": q.tokens, "t3": t3,
                     "t3_layer_us": (other + t3_s) * 1e6, "software": sw, "software_layer_us": (other + sw_s) * 1e6,
                     "tokenweave_layer_us": tw_s * 1e6, "best": best, "t3_over_best": ratio, "model_error": needed,
                     "verdict": verdict})
    return rows


def _threshold(rows: list[dict]) -> str:
    """The token counts where T3 wins beyond model error, as a range, and what holds below."""
    wins = [r["tokens"] for r in rows if r["verdict"] == "T3"]
    if not wins:
        losses = [r["tokens"] for r in rows if r["verdict"] == "software"]
        return "never" + (f" (software wins at {_counts(losses)})" if losses else "")
    first = min(wins)
    tail = [r for r in rows if r["tokens"] >= first]
    if all(r["verdict"] == "T3" for r in tail):
        return f"from {first} tokens"
    return f"at {_counts(wins)}"


def _counts(values: list[int]) -> str:
    return ", ".join(str(v) for v in sorted(values))


def serving_markdown(points: list[ServingPoint], errors: dict[str, float] | None = None) -> str:
    rows = serving_verdicts(points, errors)
    keys = list(dict.fromkeys((r["platform"], r["model"], r["tp"]) for r in rows))
    lines = ["# T3 in the serving regime: decode and chunked prefill", "",
             "Generated by `python -m system_model peers`. Each point is one forward pass's two all-reduce "
             "sublayers of one Transformer layer (OP and FC-2: a GEMM of `tokens` rows, then an all-reduce of "
             "`tokens x hidden` elements). Software: the GEMM then NCCL's or RCCL's all-reduce (its own choice of "
             "algorithm and protocol: LL, LL128, Simple; ring, tree, NVLS), the GEMM then a one-shot or two-shot "
             "load-based all-reduce (vLLM, TensorRT-LLM, PyTorch SymmetricMemory), and the overlap schemes of "
             "`peers.md`; every scheme that hides only the reduce-scatter runs the fastest all-gather after it. "
             "T3 runs with the trigger and DMA start latencies of the RTL (`make characterize`).", "",
             "A point names a winner only where the margin exceeds the validated error of both schemes' "
             "transports (`peers_validation.md`). Up to 256 tokens on NVIDIA, Triton-distributed's fused "
             "all-reduce runs its layer's 32 x 64 GEMM tile, whose speed is assumed "
             "(`PeerConfig.ll_tile_compute_efficiency`): `python -m system_model.studies.serving.ll_tile` lists "
             "the verdicts that move with it.", "",
             "## Where T3 wins, per platform", "",
             "| platform | model | TP | T3 wins beyond model error | best software at 1 token | at 256 | at 8,192 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for platform, model, tp in keys:
        here = sorted((r for r in rows if (r["platform"], r["model"], r["tp"]) == (platform, model, tp)),
                      key=lambda r: r["tokens"])
        cells = []
        for n in (1, 256, 8192):
            r = next((r for r in here if r["tokens"] == n), None)
            cells.append("-" if r is None or r["software"] is None else SCHEME_LABELS[r["software"]])
        lines.append(f"| {platform} | {model} | {tp} | {_threshold(here)} | " + " | ".join(cells) + " |")
    layers = prefill_layers(points, errors)
    if layers:
        lines += ["", "## Chunked prefill, one whole layer, against TokenWeave", "",
                  "On a reducing switch from 1,024 tokens, TokenWeave splits the prompt in two and hides each half's "
                  "all-reduce (fused with the add and RMSNorm) under the other half's next block, across the "
                  "sublayers; so the comparison is of a whole layer (one prompt of `tokens`, its other ops the same "
                  "for T3 and the software sublayers). Times in microseconds.", "",
                  "| platform | model | TP | tokens | T3 layer | best software sublayers, in the layer | TokenWeave "
                  "layer | best / T3 | verdict |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in layers:
            verdict = {"within": f"within model error (±{(r['model_error'] or 0):.0%})", "T3": "T3 wins",
                       "software": "software wins"}[r["verdict"]]
            lines.append(f"| {r['platform']} | {r['model']} | {r['tp']} | {r['tokens']} | "
                         f"{SCHEME_LABELS[r['t3']]} {r['t3_layer_us']:.1f} | {SCHEME_LABELS[r['software']]} "
                         f"{r['software_layer_us']:.1f} | {r['tokenweave_layer_us']:.1f} | {r['t3_over_best']:.2f} | "
                         f"{verdict} |")
    lines += ["", "## Every point", "",
              "Times are OP + FC-2 of one layer, in microseconds. `T3 / software`: the best software's time over "
              "the best T3 variant's (above 1: T3 faster).", "",
              "| platform | model | TP | tokens | GEMMs | sequential | best software | best T3 | T3 / software | "
              "verdict |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        sw = "n/a" if r["software"] is None else f"{SCHEME_LABELS[r['software']]} {r['software_us']:.1f}"
        t3 = "n/a" if r["t3"] is None else f"{SCHEME_LABELS[r['t3']]} {r['t3_us']:.1f}"
        ratio = "n/a" if r["t3_over_software"] is None else f"{r['t3_over_software']:.2f}"
        verdict = {"within": f"within model error (±{(r['model_error'] or 0):.0%})", "T3": "T3 wins",
                   "software": "software wins", "n/a": "n/a"}[r["verdict"]]
        lines.append(f"| {r['platform']} | {r['model']} | {r['tp']} | {r['tokens']} | {r['gemm_us']:.1f} | "
                     f"{r['sequential_us']:.1f} | {sw} | {t3} | {ratio} | {verdict} |")
    return "\n".join(lines) + "\n"


def plot_serving_heatmap(rows: list[dict], stem: Path) -> list[Path]:
    """Per model at TP 8 (or the largest TP run), platform x tokens: the best T3 variant's time
    over the best software's, inverted to a speedup (above 1: T3 faster); a cell within the
    model's validated error is hatched. Writes ``stem``.png and .svg."""
    import math

    import matplotlib.pyplot as plt

    from ..figures import ratio_colorbar, ratio_norm, save_figure

    models = list(dict.fromkeys(r["model"] for r in rows))
    tp = 8 if any(r["tp"] == 8 for r in rows) else max(r["tp"] for r in rows)
    platforms = list(dict.fromkeys(r["platform"] for r in rows))
    tokens = sorted({r["tokens"] for r in rows})
    by = {(r["model"], r["platform"], r["tokens"]): r for r in rows if r["tp"] == tp}
    values = [r["t3_over_software"] for r in by.values() if r["t3_over_software"] is not None]
    norm = ratio_norm(values)
    fig, axes = plt.subplots(len(models), 1, figsize=(13, max(3.4, 0.45 * len(platforms) + 1.6) * len(models)),
                             constrained_layout=True, squeeze=False)
    for ax, model in zip(axes[:, 0], models, strict=True):
        data = [[(by[(model, p, t)]["t3_over_software"] if (model, p, t) in by
                  and by[(model, p, t)]["t3_over_software"] is not None else math.nan) for t in tokens]
                for p in platforms]
        image = ax.imshow(data, cmap="RdBu", norm=norm, aspect="auto")
        ax.set_xticks(range(len(tokens)), [str(t) for t in tokens])
        ax.set_yticks(range(len(platforms)), platforms)
        ax.set_xlabel("tokens per forward pass (decode: 1-256, chunked prefill: 512-8,192)", fontsize=9)
        ax.set_ylabel("platform", fontsize=9)
        ax.set_title(f"{model}, TP {tp}: best T3 over the best software (OP + FC-2)", fontsize=11)
        for i, p in enumerate(platforms):
            for j, t in enumerate(tokens):
                r = by.get((model, p, t))
                if r is None or math.isnan(data[i][j]):
                    ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color="grey")
                    continue
                if r["verdict"] == "within":
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", linewidth=0,
                                               edgecolor="grey"))
                ax.text(j, i, f"{data[i][j]:.2f}", ha="center", va="center", fontsize=7,
                        bbox=dict(facecolor="white", alpha=0.75, linewidth=0, pad=0.8))
        ratio_colorbar(fig, image, ax, "T3 over best software (x)")
    fig.suptitle("Serving regime (hatched: within the model's validated error)", fontsize=11)
    return save_figure(fig, stem)


def write_serving(points: list[ServingPoint], out: Path, errors: dict[str, float] | None = None,
                  name: str = "peers_serving", *, plots: bool = True) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    md = out / f"{name}.md"
    md.write_text(serving_markdown(points, errors))
    if plots:
        written = plot_serving_heatmap(serving_verdicts(points, errors), out / f"{name}_heatmap")
    else:
        written = []
    js = out / f"{name}.json"
    js.write_text(json.dumps({"points": serving_verdicts(points, errors),
                              "prefill_layers": prefill_layers(points, errors)}, indent=1) + "\n")
    return [md, js, *written]
