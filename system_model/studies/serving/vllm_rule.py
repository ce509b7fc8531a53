"""vLLM's own choice of one-shot or two-shot against the model's faster one:
``python -m system_model.studies.serving.vllm_rule``.

The serving study's load-based all-reduce (``custom_ar``) runs the faster of one-shot and
two-shot at every size, which makes it the best a load-based library could do on the modelled
platform. vLLM picks by a fixed size rule instead, the same on every GPU, and hands tensors of
8 MiB or more to NCCL (:func:`~system_model.kernels.custom_allreduce.vllm_algorithm`). This
holds the one against the other at every all-reduce of the serving study (every platform whose
domain takes a load-based all-reduce, TP 4 and 8, Llama 3 70B and 405B, every token count):

* where vLLM runs its custom all-reduce, whether its rule picks the modelled faster algorithm,
  and how much slower the all-reduce is where it does not;
* where the tensor is 8 MiB or more, or on a GPU where vLLM does not enable its custom
  all-reduce (:data:`VLLM_CUSTOM_AR_OFF`), vLLM calls NCCL or RCCL: the study's NCCL scheme
  covers those points, and ``custom_ar`` there is TensorRT-LLM's and PyTorch
  SymmetricMemory's, not vLLM's.

The rule is that of vLLM's custom all-reduce kernel with its own 8 MiB limit. Recent vLLM
also turns on PyTorch's symmetric-memory all-reduce by default
(``VLLM_ALLREDUCE_USE_SYMM_MEM``), which lowers the custom kernel's limit per GPU and group
size (``CUSTOM_ALL_REDUCE_MAX_SIZES``) and sends the larger tensors to the symmetric-memory
one-shot or two-shot, a load-based all-reduce that ``custom_ar`` models as it is.

The model's faster pick is an upper bound on a load-based library, so the study's verdicts do
not flatter T3 by it; this says by how much vLLM itself trails that bound, and whether any
serving verdict (:func:`verdict_changes`) moves when the load-based option is vLLM's. Nothing is
written to ``sim_results/``: the figures are quoted in ``docs/peers.md`` with this command
(about a minute on one core).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

from ...describe.models import MODELS, sublayer_gemm
from ...describe.presets import DEFAULT_PLATFORMS, PLATFORMS
from ...kernels.custom_allreduce import custom_all_reduce, vllm_algorithm
from ...schemes.context import Sublayer
from ..peers import DEFAULT_MODELS, _fits
from ..validation import transport_error, validate
from . import (
    SERVING_SUBLAYERS,
    SERVING_TOKENS,
    SERVING_TPS,
    ServingPoint,
    compare_verdicts,
    run_serving,
    serving_verdicts,
)

__all__ = ["RuleCase", "VLLM_CUSTOM_AR_OFF", "rule_cases", "rule_summary", "vllm_points", "verdict_changes",
           "rule_markdown", "main"]

#: Presets on which vLLM does not enable its custom all-reduce at all, and why: it calls
#: NCCL or RCCL for every size there.
VLLM_CUSTOM_AR_OFF = {
    "mi210": "vLLM enables its custom all-reduce on ROCm only for MI300-class GPUs (gfx94x, gfx95x: "
             "vllm/platforms/rocm.py, use_custom_allreduce); MI210 is gfx90a",
}


@dataclass(frozen=True)
class RuleCase:
    """One all-reduce of the serving study: the model's faster algorithm and vLLM's."""

    platform: str
    model: str
    tp: int
    tokens: int
    bytes: float
    fastest: str
    fastest_s: float
    vllm: str | None          # None: vLLM calls NCCL or RCCL here
    vllm_s: float | None

    @property
    def slowdown(self) -> float | None:
        """vLLM's all-reduce time over the faster one's (1.0 where they agree)."""
        return None if self.vllm_s is None else self.vllm_s / self.fastest_s


def rule_cases(platforms=None, models=DEFAULT_MODELS, tps=SERVING_TPS) -> list[RuleCase]:
    """Every serving all-reduce a load-based library can run (one per platform, model, TP and
    token count: the study's OP and FC-2 reduce the same ``tokens x hidden`` tensor), from the
    study's own sublayer (its tensor and its faster load-based all-reduce)."""
    platforms = [PLATFORMS[n] for n in DEFAULT_PLATFORMS] if platforms is None else list(platforms)
    cases = []
    for p in platforms:
        cfg = p.study_config()
        for name in models:
            m = MODELS[name]
            for tp in tps:
                if not _fits(m, tp):
                    continue
                for counts in SERVING_TOKENS.values():
                    for tokens in counts:
                        subs = [Sublayer(cfg, sublayer_gemm(m, s, tokens, tp), tp) for s in SERVING_SUBLAYERS]
                        if len({sub.total for sub in subs}) != 1:
                            raise AssertionError(f"{name}: the sublayers' all-reduces differ")
                        best = subs[0].custom_all_reduce
                        if best is None:           # no load-based all-reduce on this fabric at this TP
                            continue
                        nbytes = subs[0].total
                        rule = None if p.name in VLLM_CUSTOM_AR_OFF else vllm_algorithm(nbytes, tp)
                        ran = None if rule is None else custom_all_reduce(
                            nbytes, tp, p.fabric, p.transport, p.gpu.dram_latency_ns, algorithm=rule)
                        cases.append(RuleCase(p.name, name, tp, tokens, nbytes, best.algorithm, best.time_s, rule,
                                              None if ran is None else ran.time_s))
    return cases


def rule_summary(cases: list[RuleCase]) -> dict:
    """Counts: cases, those vLLM hands to NCCL, those where its rule picks the faster
    algorithm, and the worst slowdown where it does not (with its case)."""
    ran = [c for c in cases if c.vllm is not None]
    missed = [c for c in ran if c.vllm != c.fastest]
    worst = max(missed, key=lambda c: c.slowdown, default=None)
    return {"cases": len(cases), "nccl": len(cases) - len(ran), "vllm": len(ran), "agree": len(ran) - len(missed),
            "missed": missed, "worst": worst}


def vllm_points(points: list[ServingPoint], cases: list[RuleCase]) -> list[ServingPoint]:
    """``points`` with the load-based all-reduce as vLLM runs it: by its rule, and not at all
    where it calls NCCL (the study's NCCL scheme is there already)."""
    by_key = {(c.platform, c.model, c.tp, c.tokens): c for c in cases}
    out = []
    for q in points:
        c = by_key.get((q.platform, q.model, q.tp, q.tokens))
        if c is None:                  # no load-based all-reduce here (custom_ar is n/a)
            out.append(q)
            continue
        results = {}
        for sub, schemes in q.results.items():
            r = schemes["custom_ar"]
            if r.time_s is not None:
                if c.vllm is None:
                    r = replace(r, time_s=None, reason="vLLM calls NCCL for a tensor of 8 MiB or more")
                else:
                    r = replace(r, time_s=r.time_s + c.vllm_s - c.fastest_s)
            results[sub] = {**schemes, "custom_ar": r}
        out.append(replace(q, results=results))
    return out


def verdict_changes(cases: list[RuleCase], errors: dict[str, float] | None = None, platforms=None) -> dict:
    """The serving verdicts with the faster load-based all-reduce (the study's) and with vLLM's
    (:func:`vllm_points`), judged against the same validated ``errors``: verdict pairs, the
    points that change, and the largest move of T3's ratio to the best software."""
    errors = transport_error(validate()) if errors is None else errors
    points = run_serving(platforms)
    return compare_verdicts(serving_verdicts(points, errors), serving_verdicts(vllm_points(points, cases), errors))


def rule_markdown(cases: list[RuleCase], verdicts: dict | None = None) -> str:
    s = rule_summary(cases)
    off = ", ".join(VLLM_CUSTOM_AR_OFF)
    lines = [f"{s['cases']} serving all-reduces a load-based library can run; vLLM hands {s['nccl']} to NCCL or "
             f"RCCL (8 MiB or more, or on {off}) and runs {s['vllm']}, of which its rule picks the modelled faster "
             f"algorithm in {s['agree']}.", ""]
    if s["missed"]:
        lines += ["| platform | model | TP | tokens | tensor (KiB) | faster (us) | vLLM's pick (us) | slower by |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in sorted(s["missed"], key=lambda c: -c.slowdown):
            lines.append(f"| {c.platform} | {c.model} | {c.tp} | {c.tokens} | {c.bytes / 1024:.0f} | "
                         f"{c.fastest} {c.fastest_s * 1e6:.2f} | {c.vllm} {c.vllm_s * 1e6:.2f} | "
                         f"{(c.slowdown - 1) * 100:.1f}% |")
    if verdicts is not None:
        kept = sum(n for (a, b), n in verdicts["pairs"].items() if a == b)
        move, key = verdicts["largest_move"]
        lines += ["", f"Serving verdicts with vLLM's custom all-reduce as the load-based option: {kept} of "
                  f"{verdicts['points']} keep theirs; "
                  + ", ".join(f"{a} -> {b}: {n}" for (a, b), n in sorted(verdicts["pairs"].items())) + ". "
                  + (f"Largest move of T3 over the best software: {move:+.3f} at {key}." if key else
                     "T3 over the best software moves nowhere.")]
        for key, a, b in verdicts["changed"]:
            lines.append(f"* {key}: {a['verdict']} ({a['t3_over_software']:.2f}) -> {b['verdict']} "
                         f"({b['t3_over_software']:.2f})")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m system_model.studies.serving.vllm_rule",
                                     description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    cases = rule_cases()
    print(rule_markdown(cases, verdict_changes(cases)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
