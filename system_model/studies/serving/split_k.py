"""What a GEMM library that splits K would change: ``python -m system_model.studies.serving.split_k``.

Every preset's library runs its kernels unsplit (``GemmKernelConfig.max_split_k = 1``). A
library can split K instead where a GEMM's tiles underfill the GPU (cuBLASLt's split-K,
hipBLASLt's GlobalSplitU and Stream-K): a decode step's skinny GEMMs then use every CU.
Whether its heuristics do so for a given shape is not known here, so the split library is a
what-if, held against the two things that can tell:

* **The published points** (:func:`validation_changes`): every point of the validation
  table whose error moves when every preset's library may split K 16 ways.
* **The serving verdicts** (:func:`verdict_changes`): every serving point's verdict (T3,
  software, or within the model's error), unsplit and split, and how far T3's ratio to the
  best software moves.

Nothing is written to ``sim_results/``: the figures are quoted in ``docs/model.md`` with this
command, which takes about a minute on one core.
"""

from __future__ import annotations

import argparse

from ...describe.presets import DEFAULT_PLATFORMS, PLATFORMS
from ..validation import transport_error, validate
from . import compare_verdicts, run_serving, serving_verdicts, verdict_summary

__all__ = ["SPLIT", "validation_changes", "verdict_changes", "split_k_markdown", "main"]

#: The what-if's library: K split in up to 16 parts.
SPLIT = 16


def validation_changes(max_split_k: int = SPLIT) -> tuple[list[dict], dict[str, float], dict[str, float]]:
    """The published points whose model error moves with a splitting library (unsplit, then
    split), and each family's validated error both ways."""
    base, split = validate(), validate(max_split_k=max_split_k)
    rows = [{"name": a.name, "metric": a.metric, "published": a.published, "unsplit": a.model, "split": b.model,
             "unsplit_error": a.error, "split_error": b.error, "unsplit_within": a.within, "split_within": b.within}
            for a, b in zip(base, split, strict=True) if abs(a.error - b.error) > 1e-6]
    return rows, transport_error(base), transport_error(split)


def verdict_changes(errors: dict[str, float], max_split_k: int = SPLIT, platforms=None) -> dict:
    """The serving study's verdicts with each platform's library unsplit and split (judged
    against the same validated ``errors``): how many points keep their verdict, the points
    that change, and the largest move of T3's ratio to the best software."""
    platforms = [PLATFORMS[n] for n in DEFAULT_PLATFORMS] if platforms is None else list(platforms)
    unsplit = serving_verdicts(run_serving(platforms), errors)
    split = serving_verdicts(run_serving([p.with_changes(max_split_k=max_split_k) for p in platforms]), errors)
    result = compare_verdicts(unsplit, split)

    def key(r):
        return r["platform"], r["model"], r["tp"], r["tokens"]

    after = {key(r): r for r in split}
    result["gemm_us"] = {key(r): (r["gemm_us"], after[key(r)]["gemm_us"]) for r in unsplit}
    return result


def split_k_markdown(max_split_k: int = SPLIT) -> str:
    rows, base_err, split_err = validation_changes(max_split_k)
    lines = [f"# A library that splits K up to {max_split_k} ways, against the presets' unsplit one", "",
             "## Published points whose error moves", "",
             "| point | published | model, unsplit | model, split | error, unsplit | error, split |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['published']:.3g} {r['metric']} | {r['unsplit']:.3g} | {r['split']:.3g} | "
                     f"{r['unsplit_error']:+.1%}{'' if r['unsplit_within'] else ' (miss)'} | "
                     f"{r['split_error']:+.1%}{'' if r['split_within'] else ' (miss)'} |")
    moved = {k: (base_err[k], split_err[k]) for k in base_err if abs(base_err[k] - split_err[k]) > 1e-9}
    lines += ["", "Families whose validated error moves: "
              + (", ".join(f"{k} {a:.1%} -> {b:.1%}" for k, (a, b) in moved.items()) or "none"), ""]
    v = verdict_changes(base_err, max_split_k)
    lines += ["## Serving verdicts (judged with the unsplit library's validated errors)", "", *verdict_summary(v)]
    lines += ["", "| platform | decode GEMMs (OP + FC-2), Llama 3 70B, TP 8, 1 token: unsplit -> split (us) |",
              "|---|---|"]
    for (plat, model, tp, tokens), (a, b) in v["gemm_us"].items():
        if model == "llama-3-70b" and tp == 8 and tokens == 1:
            lines.append(f"| {plat} | {a:.1f} -> {b:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m system_model.studies.serving.split_k",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--max-split-k", type=int, default=SPLIT, help="the splitting library's most parts")
    args = parser.parse_args(argv)
    if not 2 <= args.max_split_k <= 16:
        parser.error(f"--max-split-k must be 2..16, not {args.max_split_k}")
    print(split_k_markdown(args.max_split_k), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
