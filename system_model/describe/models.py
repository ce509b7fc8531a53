"""Transformer model zoo and the GEMM of each all-reduce-ending sublayer under Megatron TP.

Under Megatron-style tensor parallelism with degree ``tp``, four GEMMs per layer end in an
all-reduce of a ``tokens x hidden`` fp16 activation (their outputs are partial sums across
the GPUs):

* ``OP``  (forward):  attention output projection, ``K = hidden / tp``
* ``FC-2`` (forward): second MLP GEMM, ``K = ffn / tp``
* ``FC-1`` (backward): data gradient of the first MLP GEMM, ``K = ffn / tp`` (``2 ffn / tp``
  for a gated MLP: SwiGLU's gate and up projections)
* ``IP``  (backward): data gradient of the QKV input projection, ``K = qkv_width / tp``

Training runs all four; prompt-phase (prefill) inference runs the forward two.
"""

from __future__ import annotations

from dataclasses import dataclass

from .units import check_int_range

#: Transformer layers a model may have (the largest published dense models have about 100-200).
MAX_LAYERS = 10_000

__all__ = ["TransformerModel", "MAX_LAYERS", "MODELS", "SUBLAYERS", "PHASES", "WorkloadConfig", "GemmShape",
           "sublayer_gemm", "model"]


@dataclass(frozen=True)
class TransformerModel:
    """Public architecture of a model.

    Attributes
    ----------
    hidden : int
        Model width ``d_model``.
    heads : int
        Attention heads.
    layers : int
        Transformer layers.
    ffn_multiplier : int
        ``ffn = ffn_multiplier * hidden`` (4 for the paper's five models) unless ``ffn_dim``.
    kv_heads : int or None
        Key/value heads when attention is multi-query (PaLM: 1) or grouped-query (Llama 3:
        8); None means ``heads``.
    ffn_dim : int or None
        The MLP's inner width when it is not a multiple of ``hidden`` (Llama 3).
    gated_mlp : bool
        SwiGLU: FC-1 computes a gate and an up projection, ``2 x ffn`` wide, and the
        activation multiplies them; FC-1's data gradient then reduces over ``2 x ffn``.
    biases, dropout : bool
        Whether the linear layers have biases and training applies dropout (GPT-style:
        both; Llama 3: neither), which the layer model counts as elementwise ops.
    """

    name: str
    params_B: float
    hidden: int
    heads: int
    layers: int
    ffn_multiplier: int = 4
    kv_heads: int | None = None
    source: str = ""
    ffn_dim: int | None = None
    gated_mlp: bool = False
    biases: bool = True
    dropout: bool = True

    def __post_init__(self):
        for name in ("hidden", "heads", "ffn_multiplier"):
            check_int_range(name, getattr(self, name), 1, 1 << 20)
        check_int_range("layers", self.layers, 1, MAX_LAYERS)
        if self.kv_heads is not None:
            check_int_range("kv_heads", self.kv_heads, 1, self.heads)
        if self.ffn_dim is not None:
            check_int_range("ffn_dim", self.ffn_dim, 1, 1 << 24)

    @property
    def ffn(self) -> int:
        return self.ffn_multiplier * self.hidden if self.ffn_dim is None else self.ffn_dim

    @property
    def fc1_width(self) -> int:
        """FC-1's output width: ``ffn``, or ``2 x ffn`` for a gated MLP (gate and up)."""
        return 2 * self.ffn if self.gated_mlp else self.ffn

    @property
    def qkv_width(self) -> int:
        head_dim = self.hidden // self.heads
        kv = self.heads if self.kv_heads is None else self.kv_heads
        return self.hidden + 2 * kv * head_dim


MODELS: dict[str, TransformerModel] = {m.name: m for m in [
    TransformerModel("mega-gpt-2", 8.3, 3072, 32, 72, source="Shoeybi et al. 2019 (Megatron-LM), Table 1"),
    TransformerModel("t-nlg", 17.2, 4256, 28, 78, source="Microsoft Turing-NLG blog, Feb 2020"),
    TransformerModel("gpt-3", 175, 12288, 96, 96, source="Brown et al. 2020, Table 2.1"),
    TransformerModel("palm", 540, 18432, 48, 118, kv_heads=1, source="Chowdhery et al. 2022, Table 1"),
    TransformerModel("mt-nlg", 530, 20480, 128, 105, source="Smith et al. 2022, Section 2"),
    # Grattafiori et al. 2024 ("The Llama 3 Herd of Models", arXiv 2407.21783), Table 3:
    # layers, model dimension, FFN dimension, attention heads, key/value heads (GQA);
    # SwiGLU, no biases, no dropout (Touvron et al. 2023, the Llama architecture).
    TransformerModel("llama-3-8b", 8, 4096, 32, 32, kv_heads=8, ffn_dim=14336, gated_mlp=True, biases=False,
                     dropout=False, source="Llama 3 Herd of Models (arXiv 2407.21783), Table 3"),
    TransformerModel("llama-3-70b", 70, 8192, 64, 80, kv_heads=8, ffn_dim=28672, gated_mlp=True, biases=False,
                     dropout=False, source="Llama 3 Herd of Models (arXiv 2407.21783), Table 3"),
    TransformerModel("llama-3-405b", 405, 16384, 128, 126, kv_heads=8, ffn_dim=53248, gated_mlp=True, biases=False,
                     dropout=False, source="Llama 3 Herd of Models (arXiv 2407.21783), Table 3"),
]}

#: Sublayer -> (phase it belongs to, direction of the GEMM).
SUBLAYERS = {"OP": "forward", "FC-2": "forward", "FC-1": "backward", "IP": "backward"}
PHASES = {"training": ("OP", "FC-2", "FC-1", "IP"), "prefill": ("OP", "FC-2")}


@dataclass(frozen=True)
class WorkloadConfig:
    """Tokens per GEMM (the M dimension). The paper gives none; chosen values:

    * training: a 2048-token sequence x micro-batch 4 = 8192 tokens (Megatron-style);
    * prefill: one 2048-token prompt.

    The compute-to-communication ratio of a sublayer does not depend on M (both scale with
    it); M only changes the tile quantisation of the GEMM.
    """

    training_tokens: int = 8192
    prefill_tokens: int = 2048

    def __post_init__(self):
        check_int_range("training_tokens", self.training_tokens, 1, 1 << 24)
        check_int_range("prefill_tokens", self.prefill_tokens, 1, 1 << 24)

    def tokens(self, phase: str) -> int:
        return self.training_tokens if phase == "training" else self.prefill_tokens


@dataclass(frozen=True)
class GemmShape:
    """``C[m x n] = A[m x k] @ B[k x n]``; C is the all-reduced tensor."""

    m: int
    n: int
    k: int

    def __post_init__(self):
        for name in ("m", "n", "k"):
            check_int_range(name, getattr(self, name), 1, 1 << 30)


def model(name: str) -> TransformerModel:
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, not {name!r}")
    return MODELS[name]


def sublayer_gemm(m: TransformerModel, sublayer: str, tokens: int, tp: int) -> GemmShape:
    """The per-GPU GEMM of ``sublayer`` under tensor parallelism ``tp``."""
    if sublayer not in SUBLAYERS:
        raise ValueError(f"sublayer must be one of {', '.join(SUBLAYERS)}, not {sublayer!r}")
    check_int_range("tp", tp, 2, 1024)
    reduced = {"OP": m.hidden, "FC-2": m.ffn, "FC-1": m.fc1_width, "IP": m.qkv_width}[sublayer]
    if reduced % tp:
        raise ValueError(f"tp must divide {sublayer}'s reduced dimension {reduced}, not {tp}")
    return GemmShape(m=tokens, n=m.hidden, k=reduced // tp)
