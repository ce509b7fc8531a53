"""TokenWeave (Gond et al., MLSys'26, arXiv 2505.11329; github.com/microsoft/tokenweave): a
prefill's tokens split in two, each half's all-reduce hidden under the other half's compute,
the all-reduce fused with the residual add and RMSNorm on NVLS multimem, at the level of a
whole Transformer layer (its overlap crosses the sublayers, so it has no sublayer-level
time of its own).

What its code does (``vllm/model_executor/models/tokenweave_utils.py``,
``csrc/tokenweave_fused_kernels.cu``, ``docs/AddTokenWeave.md``):

* from 1,024 tokens (``is_tokenweave = num_tokens >= 1024``) the batch is split at
  ``round_up(tokens, 256) / 2`` (plus a per-model offset of 0, 128 or 256 tokens, taken
  here as 0);
* each half's attention block and MLP block run in turn; the fused all-reduce + add +
  RMSNorm of one half runs on a high-priority stream on 2 to 8 CTAs while the other half's
  next block computes: ``A1; [AR(A1) | A2]; [AR(A2) | M1]; [AR(M1) | M2]; [AR(M2) | next A1]``;
* the fused kernel is a multimem all-reduce (``multimem.ld_reduce`` then ``multimem.st``)
  that adds the residual and normalises on the way: its own measurements put it within 1%
  of the multimem all-reduce alone from 1K tokens, so the add and RMSNorm are free;
* below 1,024 tokens it does not split and runs the fused kernel after each block.

Its baseline (``vllm-Multimem``) is vLLM with PyTorch's multimem all-reduce on 8 CTAs, then
a separate add + RMSNorm; ``nocomm`` is the same with the all-reduce removed.

The model, per layer in steady state (nothing fitted):

* a block's time at ``t`` tokens is the sum of its ops alone (:func:`.layer.op_time_s`; the
  sublayer GEMMs as the library's GEMM alone);
* a block that overlaps an all-reduce runs on the SMs the fused kernel leaves, its time
  scaled by ``cus / (cus - ctas)``;
* each overlapped pair costs the longer of the two;
* the multimem all-reduce alone is :func:`multimem_all_reduce_s`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...describe.config import StudyConfig
from ...describe.models import TransformerModel
from ...kernels.collectives import plan
from ...kernels.custom_allreduce import barrier_s
from ..layer import layer_ops, op_time_s

__all__ = ["TOKENWEAVE_MIN_TOKENS", "TOKENWEAVE_CTAS", "multimem_all_reduce_s", "TokenWeaveLayer", "tokenweave_layer",
           "split_tokens"]

#: Tokens from which it splits the batch (``is_tokenweave = num_tokens >= 1024``).
TOKENWEAVE_MIN_TOKENS = 1024
#: CTAs of its fused kernel while it overlaps (its 8 x H100 configurations use 4 or 8; 4 is
#: within 3% of the multimem all-reduce's best CTA count, its figure_7.csv).
TOKENWEAVE_CTAS = 4


def multimem_all_reduce_s(nbytes: float, n: int, cfg: StudyConfig) -> float:
    """A multimem (NVLS) all-reduce kernel of ``nbytes`` on ``n`` GPUs: a barrier, each GPU's
    slice reduced through the switch (``multimem.ld_reduce``) and multicast back
    (``multimem.st``) at NCCL's NVLS rate, a barrier. Its latency is the kernel's own (two
    flag exchanges and one switch round trip), not NCCL's launch-inclusive constant."""
    s = cfg.system
    f, t, g = s.fabric, s.transport, s.gpu
    if not (f.switch_reduction and t.nvls_efficiency > 0 and f.in_domain(n)):
        raise ValueError(f"a multimem all-reduce needs a reducing switch spanning the {n} GPUs")
    p = plan("all_reduce", nbytes, n, f, t, algorithm="nvls")
    latency = 2 * barrier_s(f, n, g.dram_latency_ns) + 2 * f.hop_latency_s(n) + f.switch_reduce_latency_ns * 1e-9
    return latency + p.transfer_s


def split_tokens(tokens: int) -> tuple[int, int]:
    """The two halves TokenWeave runs (offset 0)."""
    first = ((tokens + 255) // 256 * 256) // 2
    return first, tokens - first


@dataclass(frozen=True)
class TokenWeaveLayer:
    """One layer's time (seconds) with TokenWeave, its multimem baseline, and without the
    all-reduce."""

    tokens: int
    baseline_s: float
    nocomm_s: float
    tokenweave_s: float


def _blocks(m: TransformerModel, tokens: int, tp: int, cfg: StudyConfig, *, of: int | None = None
            ) -> tuple[float, float, float, float]:
    """(attention block, MLP block, their add + RMSNorm ops) for ``tokens`` query rows of a
    prompt of ``of`` tokens (default: the whole prompt). A block is its ops up to and
    including its sublayer's GEMM; the norm ops are the residual adds and the layernorms,
    which the fused kernel absorbs. A half's attention core (scores, softmax, context) is
    its rows' share of the whole prompt's: its queries attend to the prompt's keys."""
    whole = tokens if of is None else of
    share = tokens / whole
    core = sum(_op_s(op, cfg) for op in _ops(m, whole, tp, cfg) if _core(op))
    attention, mlp, attention_norm, mlp_norm = core * share, 0.0, 0.0, 0.0
    in_mlp = False
    for op in _ops(m, tokens, tp, cfg):
        if _core(op):
            continue
        t = _op_s(op, cfg)
        if op.name.startswith("layernorm-2"):
            in_mlp = True
        if op.name.startswith(("layernorm", "residual-add")):
            if in_mlp:
                mlp_norm += t
            else:
                attention_norm += t
        elif in_mlp:
            mlp += t
        else:
            attention += t
    return attention, mlp, attention_norm, mlp_norm


def _ops(m: TransformerModel, tokens: int, tp: int, cfg: StudyConfig):
    return layer_ops(m, "prefill", tokens, tp, seq_len=tokens, bytes_per_element=cfg.kernel.bytes_per_element)


def _core(op) -> bool:
    return op.kind == "attention" or op.name == "softmax"


def _op_s(op, cfg: StudyConfig) -> float:
    if op.kind == "sublayer":
        from ..layer import gemm_alone_s
        return gemm_alone_s(op.shape, cfg)
    return op_time_s(op, cfg)


def tokenweave_layer(cfg: StudyConfig, m: TransformerModel, tokens: int, tp: int, *,
                     ctas: int = TOKENWEAVE_CTAS) -> TokenWeaveLayer:
    """One layer of a single prompt of ``tokens`` (attention over the prompt itself)."""
    e = cfg.kernel.bytes_per_element
    attention, mlp, attention_norm, mlp_norm = _blocks(m, tokens, tp, cfg)
    ar = multimem_all_reduce_s(tokens * m.hidden * e, tp, cfg)
    nocomm = attention + mlp + attention_norm + mlp_norm
    baseline = nocomm + 2 * ar
    if tokens < TOKENWEAVE_MIN_TOKENS:
        # No split: the fused kernel after each block, the add and RMSNorm inside it.
        return TokenWeaveLayer(tokens, baseline, nocomm, attention + mlp + 2 * ar)
    cus = cfg.system.gpu.cus
    slow = cus / (cus - ctas)
    halves = []
    for t in split_tokens(tokens):
        a, b, _, _ = _blocks(m, t, tp, cfg, of=tokens)
        halves.append((a, b, multimem_all_reduce_s(t * m.hidden * e, tp, cfg)))
    (a1, m1, r1), (a2, m2, r2) = halves
    # A1 | AR(M2 of the previous layer); A2 | AR(A1); M1 | AR(A2); M2 | AR(M1).
    tokenweave = (max(a1 * slow, r2) + max(a2 * slow, r1) + max(m1 * slow, r2) + max(m2 * slow, r1))
    return TokenWeaveLayer(tokens, baseline, nocomm, tokenweave)
