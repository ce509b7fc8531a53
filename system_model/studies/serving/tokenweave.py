"""TokenWeave (Gond et al., MLSys'26, arXiv 2505.11329; github.com/microsoft/tokenweave): a
prefill's tokens split in two, each half's all-reduce hidden under the other half's compute,
the all-reduce fused with the residual add and RMSNorm on NVLS multimem, at the level of a
whole Transformer layer (its overlap crosses the sublayers, so it has no sublayer-level
time of its own).

What its code does (``vllm/model_executor/models/tokenweave_utils.py``,
``csrc/tokenweave_fused_kernels.cu``, ``docs/AddTokenWeave.md``):

* from 1,024 tokens (``is_tokenweave = num_tokens >= 1024``) the batch is split at
  ``round_up(tokens, 256) / 2`` plus a per-model offset (0 or 256 tokens for Llama 3 70B);
* the offset and the CTAs of its fused kernel after the attention blocks and after the MLP
  blocks come from a per-model, per-TP table, looked up at the token count nearest the
  batch's (``llama.py``: ``closest_len``; :data:`SHIPPED_CONFIGS`, and the tables its prefill
  figures ran, :data:`PREFILL_FIGURE_CONFIGS`). Its Llama code loads its Llama tables for
  every Llama model (``llama_config_{world_size}.json``), Llama 3 405B included; a model
  family it has no table for is taken at :data:`DEFAULT_CONFIG`;
* each half's attention block and MLP block run in turn; the fused all-reduce + add +
  RMSNorm of one half runs on a high-priority stream on 2 to 8 CTAs while the other half's
  next block computes: ``A1; [AR(A1) | A2]; [AR(A2) | M1]; [AR(M1) | M2]; [AR(M2) | next A1]``;
* the fused kernel is a multimem all-reduce (``multimem.ld_reduce`` then ``multimem.st``)
  that adds the residual and normalises on the way: its own measurements put it within 1%
  of the multimem all-reduce alone from 1K tokens at its best CTA count, so the add and
  RMSNorm are free; on the 2 to 8 CTAs it overlaps with, it is slower (its figure 10: 3.2x,
  1.8x and 1.1x the 16-CTA time on 2, 4 and 8 CTAs at 32K tokens);
* below 1,024 tokens it does not split and runs the fused kernel after each block.

Its baseline (``vllm-Multimem``) is vLLM with PyTorch's multimem all-reduce on 8 CTAs, then
a separate add + RMSNorm; ``nocomm`` is the same with the all-reduce removed.

The model, per layer in steady state (nothing fitted):

* a block's time at ``t`` tokens is the sum of its ops alone (:func:`.layer.op_time_s`; the
  sublayer GEMMs as the library's GEMM alone);
* a block that overlaps an all-reduce runs on the SMs the fused kernel leaves, its time
  scaled by ``cus / (cus - ctas)``: the attention blocks beside kernels of the attention
  CTAs, the MLP blocks beside kernels of the MLP CTAs (``tokenweave_overlap``);
* each overlapped pair costs the longer of the two;
* the multimem all-reduce alone is :func:`multimem_all_reduce_s`; its fused kernel on few
  CTAs runs at the CTAs' own pace where that is slower (:func:`fused_all_reduce_s`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...describe.config import StudyConfig
from ...describe.models import TransformerModel
from ...describe.units import check_int_range
from ...kernels.collectives import plan
from ...kernels.custom_allreduce import barrier_s
from ..layer import layer_ops, op_time_s

__all__ = ["TOKENWEAVE_MIN_TOKENS", "TokenWeaveConfig", "DEFAULT_CONFIG", "SHIPPED_CONFIGS",
           "PREFILL_FIGURE_CONFIGS", "tokenweave_config", "multimem_all_reduce_s", "TokenWeaveLayer",
           "tokenweave_layer", "split_tokens", "fused_all_reduce_s", "PROFILE_TOKENS"]

#: Tokens from which it splits the batch (``is_tokenweave = num_tokens >= 1024``).
TOKENWEAVE_MIN_TOKENS = 1024
#: The batch its runner's profile run loads a table row for before any request
#: (``--max-num-batched-tokens 65536`` in its prefill figures): below 1,024 tokens, where it
#: only fuses, its kernel keeps that row's CTAs, capped at the tokens per rank
#: (``MAX_CTAS=min(MAX_CTAS, num_tokens_per_rank)``).
PROFILE_TOKENS = 65536


@dataclass(frozen=True)
class TokenWeaveConfig:
    """One row of its configuration: the CTAs of its fused all-reduce + add + RMSNorm kernel
    after the attention blocks and after the MLP blocks, and the split's offset."""

    attention_ctas: int
    mlp_ctas: int
    split_offset_tokens: int = 0

    def __post_init__(self):
        check_int_range("attention_ctas", self.attention_ctas, 1, 1024)
        check_int_range("mlp_ctas", self.mlp_ctas, 1, 1024)
        check_int_range("split_offset_tokens", self.split_offset_tokens, 0, 1 << 20)


#: Where it has no table: 4 CTAs (its tables use 2 to 8; 4 is within 3% of the multimem
#: all-reduce's best CTA count, its figure_7.csv) and no offset.
DEFAULT_CONFIG = TokenWeaveConfig(4, 4, 0)


def _table(rows) -> dict[int, TokenWeaveConfig]:
    return {tokens: TokenWeaveConfig(*row) for tokens, *row in rows}


#: What it ships (``vllm/tokenweave_configs/llama_config_{8,4}.json``, commit f483d1c):
#: Llama-3.3-70B's, which its Llama code loads for every Llama model; keyed by family and
#: TP; (tokens, attention CTAs, MLP CTAs, offset).
SHIPPED_CONFIGS: dict[tuple[str, int], dict[int, TokenWeaveConfig]] = {
    ("llama", 8): _table(((1024, 4, 4, 0), (2048, 8, 8, 0), (4096, 4, 4, 0), (8192, 8, 4, 256),
                          (16384, 8, 8, 256), (32768, 8, 4, 0), (65536, 4, 4, 0))),
    ("llama", 4): _table(((1024, 8, 8, 0), (2048, 8, 8, 0), (4096, 8, 8, 0), (8192, 8, 4, 0),
                          (16384, 8, 4, 256), (32768, 4, 8, 0), (65536, 4, 2, 0))),
}
#: What its prefill figures ran (``artifact/figure_2_11/prefill_configs/llama_config_{8,4}.json``,
#: copied over the shipped tables by its ``run.sh``): the validation points' configuration.
PREFILL_FIGURE_CONFIGS: dict[tuple[str, int], dict[int, TokenWeaveConfig]] = {
    ("llama", 8): _table(((1024, 4, 2, 0), (2048, 4, 4, 0), (4096, 4, 4, 0), (8192, 8, 4, 256),
                          (16384, 8, 8, 256), (32768, 8, 4, 0), (65536, 4, 4, 0))),
    ("llama", 4): SHIPPED_CONFIGS[("llama", 4)],
}


def _family(model: str) -> str:
    """The table a model's code loads: every Llama model runs its Llama code and tables."""
    return "llama" if model.startswith("llama-") else model


def tokenweave_config(model: str, tp: int, tokens: int, tables=None) -> TokenWeaveConfig:
    """Its configuration for ``tokens`` of ``model`` at ``tp``: the row of the nearest token
    count in its family's table in ``tables`` (default :data:`SHIPPED_CONFIGS`; on a tie the
    smaller, as Python's ``min`` over its keys in order), or :data:`DEFAULT_CONFIG` where it
    has none."""
    table = (SHIPPED_CONFIGS if tables is None else tables).get((_family(model), tp))
    if not table:
        return DEFAULT_CONFIG
    return table[min(table, key=lambda k: abs(k - tokens))]


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


def fused_all_reduce_s(nbytes: float, n: int, ctas: int, cfg: StudyConfig) -> float:
    """Its fused all-reduce + add + RMSNorm kernel of an ``nbytes`` tensor on ``ctas`` CTAs:
    the multimem all-reduce, or, on few CTAs, the CTAs' own pace through this GPU's slice
    (``peer.tokenweave_slice_GBps_per_cta``), whichever is longer. Its figure 10 has the
    kernel 1.8x slower on 4 CTAs than on 16 at 32K tokens, where the all-reduce alone is
    within 3%; measured on 8 x H100 at hidden 8,192, the pace is taken for every platform,
    group size and hidden size (its kernel's block is ``min(1024, hidden / 8)`` threads)."""
    check_int_range("ctas", ctas, 1, 1 << 16)
    pace = nbytes / n / (ctas * cfg.peer.tokenweave_slice_GBps_per_cta * 1e9)
    return max(multimem_all_reduce_s(nbytes, n, cfg), pace)


def split_tokens(tokens: int, offset: int = 0) -> tuple[int, int]:
    """The two halves TokenWeave runs: ``round_up(tokens, 256) / 2 + offset`` tokens first."""
    first = ((tokens + 255) // 256 * 256) // 2 + offset
    if not 0 < first < tokens:
        raise ValueError(f"offset must leave tokens in both halves of {tokens}, not {offset}")
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
                     config: TokenWeaveConfig | None = None) -> TokenWeaveLayer:
    """One layer of a single prompt of ``tokens`` (attention over the prompt itself), with
    ``config`` (default: :func:`tokenweave_config`'s, the shipped tables; below 1,024 tokens
    the row its profile run loaded, :data:`PROFILE_TOKENS`).

    The runner pads the batch to a multiple of 256 and gives the second half the padding;
    the model runs the halves on the actual tokens (every token count of the study is a
    multiple of 256)."""
    if config is None:
        config = tokenweave_config(m.name, tp, PROFILE_TOKENS if tokens < TOKENWEAVE_MIN_TOKENS else tokens)
    e = cfg.kernel.bytes_per_element
    attention, mlp, attention_norm, mlp_norm = _blocks(m, tokens, tp, cfg)
    ar = multimem_all_reduce_s(tokens * m.hidden * e, tp, cfg)
    nocomm = attention + mlp + attention_norm + mlp_norm
    baseline = nocomm + 2 * ar
    if tokens < TOKENWEAVE_MIN_TOKENS:
        # No split: the fused kernel after each block, the add and RMSNorm inside it.
        per_rank = -(-tokens // tp)
        ca, cm = min(config.attention_ctas, per_rank), min(config.mlp_ctas, per_rank)
        fused = fused_all_reduce_s(tokens * m.hidden * e, tp, ca, cfg) + fused_all_reduce_s(
            tokens * m.hidden * e, tp, cm, cfg)
        return TokenWeaveLayer(tokens, baseline, nocomm, attention + mlp + fused)
    cus = cfg.system.gpu.cus
    if max(config.attention_ctas, config.mlp_ctas) >= cus:
        raise ValueError(f"its kernel's CTAs must leave SMs of the {cus} to the compute, not {config}")
    slow_attention, slow_mlp = cus / (cus - config.attention_ctas), cus / (cus - config.mlp_ctas)
    halves = []
    for t in split_tokens(tokens, config.split_offset_tokens):
        a, b, _, _ = _blocks(m, t, tp, cfg, of=tokens)
        halves.append((a, b, t * m.hidden * e))
    (a1, m1, bytes1), (a2, m2, bytes2) = halves

    def fused(nbytes: float, ctas: int) -> float:
        return fused_all_reduce_s(nbytes, tp, ctas, cfg)

    # A1 | AR(M2 of the previous layer); A2 | AR(A1); M1 | AR(A2); M2 | AR(M1); its code runs
    # the first two kernels on the attention CTAs and the last two on the MLP CTAs.
    ca, cm = config.attention_ctas, config.mlp_ctas
    tokenweave = (max(a1 * slow_attention, fused(bytes2, ca)) + max(a2 * slow_attention, fused(bytes1, ca))
                  + max(m1 * slow_mlp, fused(bytes2, cm)) + max(m2 * slow_mlp, fused(bytes1, cm)))
    return TokenWeaveLayer(tokens, baseline, nocomm, tokenweave)
