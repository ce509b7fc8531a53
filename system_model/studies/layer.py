"""End to end: every op of one Transformer layer per GPU under Megatron TP, timed per scheme.

The sublayer study times the four GEMMs that end in an all-reduce. A layer also runs the
attention core, softmax, layernorms, the activation, dropout and residual adds, and the
other GEMMs; those take the same time in every scheme, so T3's end-to-end gain is its
sublayer gain diluted by them (Amdahl). This module lists the ops, times them and reports
the speedup of every scheme on a whole layer, and on the model (``layers`` x a layer).

The layer is GPT-style (pre-layernorm, serial attention then MLP, GeLU, biases), Megatron
tensor parallelism of degree ``tp`` without sequence parallelism:

* **forward** (training and prefill): layernorm 1; QKV GEMM ``(tokens, qkv_width/tp, hidden)``
  (column-parallel); attention scores ``Q K^T``; scale + causal mask + softmax; attention
  dropout (training); attention context ``P V``; the ``OP`` sublayer (row-parallel, ends in
  the all-reduce); bias + dropout + residual add; layernorm 2; FC-1 GEMM
  ``(tokens, ffn/tp, hidden)``; bias + GeLU; the ``FC-2`` sublayer; bias + dropout + residual add.
* **backward** (training only), in reverse: every forward GEMM ``Y[m x n] = X[m x k] W[k x n]``
  has a data-gradient GEMM ``dX = dY W^T`` ``(m, k, n)`` and a weight-gradient GEMM
  ``dW = X^T dY`` ``(k, n, m)``, twice its flops together. The data gradients of the two
  column-parallel GEMMs are the backward all-reduce sublayers: ``FC-1`` and ``IP`` (of QKV).
  For the attention GEMMs the "weight" operand is K (scores) and V (context). Elementwise
  backward ops and bias gradients are listed with their bytes in :func:`layer_ops`.

Modelling choices (what the issue leaves open):

* **Sequences.** ``batch = tokens / seq_len`` sequences of ``seq_len`` (2048) tokens; the
  attention core works per sequence and local head.
* **Heads.** ``head_dim = hidden / heads``. A GPU holds ``ceil(heads / tp)`` query heads:
  Megatron itself requires ``tp | heads``, which the paper's T-NLG (28 heads, TP 8 and 16)
  and PaLM (48 heads, TP 32) points do not meet, so the heads are split as evenly as they
  can be and the GPU with the most sets the pace (the next all-reduce waits for every GPU).
  The linear GEMMs keep the even ``dim / tp`` split of the sublayer study. Key/value heads
  per GPU: ``min(local heads, ceil(kv_heads / tp))``; PaLM's single multi-query KV head is
  replicated on every GPU, not split.
* **Causal attention** counts the full ``seq_len x seq_len`` square, as unfused Megatron does
  (its batched GEMMs compute the masked half and the softmax masks it).
* **Batched attention GEMMs** are timed as one GEMM with the problems stacked along ``m``
  (``batch x local heads x seq_len`` rows): that gives the tile count and wave quantisation
  of a strided-batched kernel, whose problems share the CUs. Stacking shares the second
  operand (one head's K or V) across the batch, so the wave model under-counts its reads;
  the time is therefore at least the compulsory traffic (every operand read once, the output
  written once) over the DRAM bandwidth. Queries that share a multi-query KV head do share
  it, so for PaLM the stacking is exact. The key/value gradients of a shared KV head sum over
  its query heads: their GEMM has ``k = (query heads per KV head) x seq_len``.
* **Elementwise ops** (layernorm, softmax, dropout, GeLU, residual adds, bias gradients):
  a roofline, ``(bytes read + bytes written) / gpu.dram_bytes_per_s`` (no launch overhead,
  no L2 hits); the QKV bias is fused into its GEMM's epilogue, the other biases into the
  GeLU and dropout-add kernels, the scale and the causal mask into the softmax, as in
  Megatron's fused kernels. Activations are fp16
  (``kernel.bytes_per_element``), a dropout mask 1 byte per element; layernorm statistics
  and the weights of layernorm and biases are negligible and not counted.
* **GEMMs outside the sublayers** run alone on all CUs as one stage, timed by the model
  that times the sequential scheme's GEMM (:func:`gemm_alone_s`).
* **Dropout** (hidden and attention, Megatron's defaults) in training only; prefill
  inference has none. No activation recomputation.
* **Sublayers.** The four sliced sublayers take their time, GEMM plus all-reduce, from
  :func:`system_model.schemes.evaluate` with the shapes of :func:`models.sublayer_gemm`
  (the sublayer study's); every other op runs alone on the GPU, the same in every scheme.
  Ops run one after another: Megatron can overlap the backward all-reduce with the weight-
  gradient GEMM, which this model, like the paper's, does not give the baseline.
* A model with a gated MLP (Llama 3's SwiGLU) has an FC-1 of ``2 x ffn`` outputs (gate and
  up), a SwiGLU activation (reads both, writes their product; its gradient reads ``dY``,
  gate and up and writes both gradients) and an FC-1 data gradient that reduces over
  ``2 x ffn``; a model without biases or dropout (Llama 3) has no bias-gradient or dropout
  ops. PaLM's parallel attention/MLP block and its SwiGLU are not modelled: the paper's five
  models are the GPT-style block with ``ffn = 4 x hidden``, as in the sublayer study.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..describe.config import StudyConfig
from ..describe.models import MAX_LAYERS, MODELS, PHASES, SUBLAYERS, GemmShape, TransformerModel, sublayer_gemm
from ..describe.units import check_int_range, check_positive, check_range
from ..kernels.gemm import choose_kernel, gemm_timing
from ..kernels.gemm import gemm_alone_s as _gemm_alone_s
from ..schemes import evaluate
from .study import OTHER_TP, PAPER_TP, SCHEMES, geomean

__all__ = ["SEQ_LEN", "MASK_BYTES", "KINDS", "LayerOp", "layer_ops", "tp_fits", "op_time_s", "gemm_alone_s",
           "LayerResult", "layer_timing", "layer_study", "layer_geomeans", "layer_table", "layer_markdown"]

#: Tokens per sequence (the attention core works per sequence).
SEQ_LEN = 2048
#: Bytes per element of a dropout mask (a PyTorch bool tensor).
MASK_BYTES = 1
#: Kinds of op: a GEMM timed by the wave model, a batched attention GEMM (stacked along m),
#: a memory-bound elementwise op, or one of the sliced all-reduce sublayers.
KINDS = ("gemm", "attention", "elementwise", "sublayer")
_DIRECTIONS = ("forward", "backward")
_MAX_BYTES = 1e24


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")


@dataclass(frozen=True)
class LayerOp:
    """One op of a layer on one GPU.

    Attributes
    ----------
    name : str
        E.g. ``"QKV fwd"``, ``"FC-1 dgrad"``, ``"softmax"``, ``"softmax bwd"``.
    kind : str
        One of :data:`KINDS`.
    direction : str
        ``"forward"`` or ``"backward"``.
    read_bytes, write_bytes : float
        Compulsory DRAM traffic: every input read once, the output written once. It times
        elementwise ops and bounds attention GEMMs from below.
    shape : GemmShape or None
        The GEMM timed (attention: the problems stacked along ``m``); None for elementwise ops.
    sublayer : str or None
        For ``kind == "sublayer"``: which of ``OP``, ``FC-2``, ``FC-1``, ``IP``.
    grad_of : str or None
        For a backward GEMM: the name of the forward GEMM it is a gradient of.
    """

    name: str
    kind: str
    direction: str
    read_bytes: float
    write_bytes: float
    shape: GemmShape | None = None
    sublayer: str | None = None
    grad_of: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, not {self.name!r}")
        _check_choice("kind", self.kind, KINDS)
        _check_choice("direction", self.direction, _DIRECTIONS)
        check_range("read_bytes", self.read_bytes, 0, _MAX_BYTES)
        check_range("write_bytes", self.write_bytes, 0, _MAX_BYTES)
        if (self.shape is None) != (self.kind == "elementwise"):
            raise ValueError(f"shape must be given exactly for GEMM kinds, not for {self.kind!r} op {self.name!r}")
        if self.kind == "sublayer":
            _check_choice("sublayer", self.sublayer, tuple(SUBLAYERS))
            if SUBLAYERS[self.sublayer] != self.direction:
                raise ValueError(f"direction of sublayer {self.sublayer} must be {SUBLAYERS[self.sublayer]}, "
                                 f"not {self.direction!r}")
        elif self.sublayer is not None:
            raise ValueError(f"sublayer must be None for {self.kind!r} op {self.name!r}, not {self.sublayer!r}")
        if self.grad_of is not None and (self.shape is None or self.direction != "backward"):
            raise ValueError(f"grad_of must be None for op {self.name!r}, which is not a backward GEMM")

    @property
    def flops(self) -> float:
        """Matrix flops (``2 m n k``); elementwise ops count none."""
        s = self.shape
        return 0.0 if s is None else 2.0 * s.m * s.n * s.k

    @property
    def dram_bytes(self) -> float:
        return self.read_bytes + self.write_bytes


def tp_fits(m: TransformerModel, tp: int) -> bool:
    """Whether ``tp`` divides the dims the linear GEMMs split (hidden, ffn, qkv_width), as
    :func:`models.sublayer_gemm` requires. Heads need not divide (see the module docstring)."""
    return all(dim % tp == 0 for dim in (m.hidden, m.ffn, m.qkv_width))


def _local_heads(m: TransformerModel, tp: int) -> tuple[int, int]:
    """(query heads, key/value heads) on the busiest GPU."""
    q = math.ceil(m.heads / tp)
    kv = q if m.kv_heads is None else min(q, math.ceil(m.kv_heads / tp))
    return q, kv


def layer_ops(m: TransformerModel, phase: str, tokens: int, tp: int, *, seq_len: int = SEQ_LEN,
              bytes_per_element: int = 2) -> tuple[LayerOp, ...]:
    """Every op of one layer on one GPU, in execution order.

    Bytes per elementwise op (``T`` tokens, ``h`` hidden, ``f = ffn / tp``, ``q = qkv_width / tp``,
    ``A = batch x local heads x seq_len^2`` attention scores, ``e`` bytes per element, mask 1 byte):

    ========================  =========================  ============================
    op                        reads                      writes
    ========================  =========================  ============================
    layernorm-1/2             ``T h e``                  ``T h e``
    softmax                   ``A e``                    ``A e``
    attention dropout         ``A e``                    ``A (e + 1)`` (probs, mask)
    residual-add-1/2          ``2 T h e`` (branch, res)  ``T h e``, + ``T h`` mask in training
    GeLU                      ``T f e``                  ``T f e``
    dropout-add-1/2 bwd       ``T h (e + 1)``            ``T h e``
    OP/FC-2 bias grad         ``T h e``                  ``h e``
    QKV/FC-1 bias grad        ``T q e`` / ``T f e``      ``q e`` / ``f e``
    GeLU bwd                  ``2 T f e`` (dY, input)    ``T f e``
    attention dropout bwd     ``A (e + 1)``              ``A e``
    softmax bwd               ``2 A e`` (P, dP)          ``A e``
    layernorm-1/2 bwd         ``2 T h e`` (dY, input)    ``T h e``
    residual grad add-1/2     ``2 T h e``                ``T h e``
    ========================  =========================  ============================
    """
    _check_choice("phase", phase, tuple(PHASES))
    check_int_range("tokens", tokens, 1, 1 << 24)
    check_int_range("tp", tp, 2, 1024)
    check_int_range("seq_len", seq_len, 1, 1 << 20)
    check_int_range("bytes_per_element", bytes_per_element, 1, 8)
    if tokens % seq_len:
        raise ValueError(f"tokens must be a multiple of seq_len {seq_len}, not {tokens}")
    if m.hidden % m.heads:
        raise ValueError(f"heads must divide hidden {m.hidden}, not {m.heads}")
    for dim_name in ("hidden", "ffn", "qkv_width"):
        dim = getattr(m, dim_name)
        if dim % tp:
            raise ValueError(f"tp must divide {dim_name} {dim}, not {tp}")

    e, T, h, s = bytes_per_element, tokens, m.hidden, seq_len
    f, q, d = m.ffn // tp, m.qkv_width // tp, m.hidden // m.heads
    g = m.fc1_width // tp                  # FC-1's output: f, or gate and up (2 f) for SwiGLU
    batch = tokens // seq_len
    heads, kv = _local_heads(m, tp)
    group = math.ceil(heads / kv)          # query heads per key/value head
    A = batch * heads * s * s              # attention scores per GPU
    qkv_act = batch * heads * s * d        # Q (or the context) of the local heads
    kv_act = batch * kv * s * d            # K (or V) of the local KV heads
    training = phase == "training"
    dropout = training and m.dropout
    mask = MASK_BYTES if dropout else 0

    ops: list[LayerOp] = []

    def ew(name, direction, reads, writes):
        ops.append(LayerOp(name, "elementwise", direction, reads, writes))

    def gemm(name, direction, mm, nn, kk, *, kind="gemm", sublayer=None, grad_of=None, reads=None, writes=None):
        shape = GemmShape(mm, nn, kk) if sublayer is None else sublayer_gemm(m, sublayer, tokens, tp)
        if sublayer is not None:
            assert (shape.m, shape.n, shape.k) == (mm, nn, kk), (name, shape)
            kind = "sublayer"
        if reads is None:
            reads, writes = (mm * kk + kk * nn) * e, mm * nn * e
        ops.append(LayerOp(name, kind, direction, reads, writes, shape, sublayer, grad_of))

    # -- forward --------------------------------------------------------------------------
    ew("layernorm-1", "forward", T * h * e, T * h * e)
    gemm("QKV fwd", "forward", T, q, h)
    gemm("attn scores fwd", "forward", batch * heads * s, s, d, kind="attention",
         reads=(qkv_act + kv_act) * e, writes=A * e)
    ew("softmax", "forward", A * e, A * e)
    if dropout:
        ew("attention dropout", "forward", A * e, A * (e + MASK_BYTES))
    gemm("attn context fwd", "forward", batch * heads * s, d, s, kind="attention",
         reads=(A + kv_act) * e, writes=qkv_act * e)
    gemm("OP fwd", "forward", T, h, h // tp, sublayer="OP")
    ew("residual-add-1", "forward", 2 * T * h * e, T * h * (e + mask))
    ew("layernorm-2", "forward", T * h * e, T * h * e)
    gemm("FC-1 fwd", "forward", T, g, h)
    if m.gated_mlp:
        ew("SwiGLU", "forward", T * g * e, T * f * e)          # reads gate and up, writes their product
    else:
        ew("GeLU", "forward", T * f * e, T * f * e)
    gemm("FC-2 fwd", "forward", T, h, f, sublayer="FC-2")
    ew("residual-add-2", "forward", 2 * T * h * e, T * h * (e + mask))
    if not training:
        return tuple(ops)

    # -- backward -------------------------------------------------------------------------
    def linear_grads(base, mm, nn, kk, *, sublayer=None):
        """dgrad (m, k, n) and wgrad (k, n, m) of the forward GEMM (m, n, k)."""
        gemm(f"{base} dgrad", "backward", mm, kk, nn, sublayer=sublayer, grad_of=f"{base} fwd")
        gemm(f"{base} wgrad", "backward", kk, nn, mm, grad_of=f"{base} fwd")

    def residual_bwd(j, block):
        """Gradient through ``block``'s bias + dropout + residual add (residual ``j``); without
        dropout the residual passes the gradient through, without bias there is none to sum."""
        if m.dropout:
            ew(f"dropout-add-{j} bwd", "backward", T * h * (e + MASK_BYTES), T * h * e)
        if m.biases:
            ew(f"{block} bias grad", "backward", T * h * e, h * e)

    def layernorm_bwd(j):
        ew(f"layernorm-{j} bwd", "backward", 2 * T * h * e, T * h * e)
        # The gradient of the block's input: the residual's plus the layernorm's.
        ew(f"residual grad add-{j}", "backward", 2 * T * h * e, T * h * e)

    # MLP block.
    residual_bwd(2, "FC-2")
    linear_grads("FC-2", T, h, f)
    if m.gated_mlp:
        ew("SwiGLU bwd", "backward", (T * f + T * g) * e, T * g * e)   # dY, gate, up -> dgate, dup
    else:
        ew("GeLU bwd", "backward", 2 * T * f * e, T * f * e)
    if m.biases:
        ew("FC-1 bias grad", "backward", T * g * e, g * e)
    linear_grads("FC-1", T, g, h, sublayer="FC-1")
    layernorm_bwd(2)
    # Attention block.
    residual_bwd(1, "OP")
    linear_grads("OP", T, h, h // tp)
    # dP = dO V^T (data gradient of P V) and dV = P^T dO (its "weight" gradient), the
    # latter summed over the query heads that share a KV head.
    gemm("attn context dgrad", "backward", batch * heads * s, s, d, kind="attention", grad_of="attn context fwd",
         reads=(qkv_act + kv_act) * e, writes=A * e)
    gemm("attn context wgrad", "backward", batch * kv * s, d, group * s, kind="attention",
         grad_of="attn context fwd", reads=(A + qkv_act) * e, writes=kv_act * e)
    if m.dropout:
        ew("attention dropout bwd", "backward", A * (e + MASK_BYTES), A * e)
    ew("softmax bwd", "backward", 2 * A * e, A * e)
    # dQ = dS K and dK = dS^T Q.
    gemm("attn scores dgrad", "backward", batch * heads * s, d, s, kind="attention", grad_of="attn scores fwd",
         reads=(A + kv_act) * e, writes=qkv_act * e)
    gemm("attn scores wgrad", "backward", batch * kv * s, d, group * s, kind="attention",
         grad_of="attn scores fwd", reads=(A + qkv_act) * e, writes=kv_act * e)
    if m.biases:
        ew("QKV bias grad", "backward", T * q * e, q * e)
    linear_grads("QKV", T, q, h, sublayer="IP")
    layernorm_bwd(1)
    return tuple(ops)


def op_time_s(op: LayerOp, cfg: StudyConfig) -> float:
    """Time of an op that runs alone on the GPU (not a sliced sublayer)."""
    gpu = cfg.system.gpu
    if op.kind == "sublayer":
        raise ValueError(f"op {op.name!r} is a sliced sublayer: its time comes from schemes.evaluate")
    roofline = op.dram_bytes / gpu.dram_bytes_per_s
    if op.kind == "elementwise":
        return roofline
    t = gemm_alone_s(op.shape, cfg)
    return max(t, roofline) if op.kind == "attention" else t


def gemm_alone_s(shape: GemmShape, cfg: StudyConfig) -> float:
    """A GEMM alone on the GPU (all CUs, one stage, the library's kernel by modelled time),
    timed as the sublayer study times the sequential scheme's GEMM, so that sliced and
    non-sliced GEMMs share one model."""
    gpu = cfg.system.gpu
    kernel = choose_kernel(shape, gpu, cfg.kernels)
    return _gemm_alone_s(gemm_timing(shape, gpu, kernel, stages=1), gpu)


@dataclass(frozen=True)
class LayerResult:
    """One layer of ``model`` at ``tp`` in ``phase``, per scheme.

    Attributes
    ----------
    tokens : int
        Tokens per layer pass (the GEMMs' ``m``).
    layers : int
        The model's layer count; :meth:`model_time_s` is ``layers`` x :meth:`layer_time_s`.
    local_heads : int
        Query heads on the busiest GPU (``ceil(heads / tp)``).
    op_times_s : dict[str, float]
        Time of every op outside the sliced sublayers, by name; the same in every scheme.
    sublayer_times_s : dict[str, dict[str, float]]
        Per scheme, the time of each sliced sublayer (its GEMM and all-reduce).
    """

    model: str
    tp: int
    phase: str
    tokens: int
    layers: int
    local_heads: int
    op_times_s: dict[str, float]
    sublayer_times_s: dict[str, dict[str, float]]

    def __post_init__(self):
        _check_choice("phase", self.phase, tuple(PHASES))
        check_int_range("tp", self.tp, 2, 1024)
        check_int_range("tokens", self.tokens, 1, 1 << 24)
        check_int_range("layers", self.layers, 1, MAX_LAYERS)
        check_int_range("local_heads", self.local_heads, 1, 1 << 16)
        if not self.op_times_s:
            raise ValueError("op_times_s must not be empty")
        for name, t in self.op_times_s.items():
            check_positive(f"op_times_s[{name!r}]", t)
        if SCHEMES[0] not in self.sublayer_times_s:
            raise ValueError(f"sublayer_times_s must hold {SCHEMES[0]!r}, not only {', '.join(self.sublayer_times_s)}")
        expected = set(PHASES[self.phase])
        for scheme, times in self.sublayer_times_s.items():
            if set(times) != expected:
                raise ValueError(f"sublayer_times_s[{scheme!r}] must hold the sublayers "
                                 f"{', '.join(PHASES[self.phase])}, not {', '.join(times)}")
            for sub, t in times.items():
                check_positive(f"sublayer_times_s[{scheme!r}][{sub!r}]", t)

    @property
    def schemes(self) -> tuple[str, ...]:
        return tuple(self.sublayer_times_s)

    @property
    def other_s(self) -> float:
        """Time of the ops outside the sliced sublayers (every scheme)."""
        return sum(self.op_times_s.values())

    def _times(self, scheme: str) -> dict[str, float]:
        if scheme not in self.sublayer_times_s:
            raise ValueError(f"scheme must be one of {', '.join(self.sublayer_times_s)}, not {scheme!r}")
        return self.sublayer_times_s[scheme]

    def sublayer_s(self, scheme: str) -> float:
        """Time of the sliced sublayers together under ``scheme``."""
        return sum(self._times(scheme).values())

    def layer_time_s(self, scheme: str) -> float:
        return self.other_s + self.sublayer_s(scheme)

    def sublayer_share(self, scheme: str) -> float:
        """Fraction of the layer spent in the all-reduce sublayers under ``scheme``."""
        return self.sublayer_s(scheme) / self.layer_time_s(scheme)

    def speedup(self, scheme: str) -> float:
        """End-to-end speedup of ``scheme`` over sequential on the layer (and the model)."""
        return self.layer_time_s(SCHEMES[0]) / self.layer_time_s(scheme)

    def sublayer_speedup(self, scheme: str) -> float:
        """Speedup of ``scheme`` on the sliced sublayers alone."""
        return self.sublayer_s(SCHEMES[0]) / self.sublayer_s(scheme)

    def model_time_s(self, scheme: str) -> float:
        """One pass of the whole model: ``layers`` x the layer time."""
        return self.layers * self.layer_time_s(scheme)


def _model(model: str | TransformerModel) -> TransformerModel:
    if isinstance(model, TransformerModel):
        return model
    _check_choice("model", model, tuple(MODELS))
    return MODELS[model]


def layer_timing(cfg: StudyConfig, model: str | TransformerModel, tp: int, phase: str, *,
                 seq_len: int = SEQ_LEN) -> LayerResult:
    """Time one layer of ``model`` (a name of :data:`MODELS` or a model) at ``tp`` in ``phase``."""
    m = _model(model)
    tokens = cfg.workload.tokens(phase) if phase in PHASES else 0
    ops = layer_ops(m, phase, tokens, tp, seq_len=seq_len, bytes_per_element=cfg.kernel.bytes_per_element)
    op_times = {op.name: op_time_s(op, cfg) for op in ops if op.kind != "sublayer"}
    per_sublayer = {op.sublayer: evaluate(cfg, op.shape, tp, schemes=SCHEMES) for op in ops if op.kind == "sublayer"}
    sublayer_times = {scheme: {sub: res[scheme].time_s for sub, res in per_sublayer.items()} for scheme in SCHEMES}
    return LayerResult(m.name, tp, phase, tokens, m.layers, _local_heads(m, tp)[0], op_times, sublayer_times)


def layer_study(cfg: StudyConfig, models: Iterable[str] | None = None, tps: Iterable[int] | None = None,
                phases: Iterable[str] = ("training", "prefill"), *, seq_len: int = SEQ_LEN) -> list[LayerResult]:
    """Every (model, TP, phase) of the paper (:data:`study.PAPER_TP`), optionally restricted;
    ``tps`` replaces the paper's degrees, and a degree that does not divide a model's hidden,
    ffn or qkv_width (:func:`tp_fits`) is skipped for that model."""
    models = list(PAPER_TP) if models is None else list(models)
    for name in models:
        _check_choice("model", name, tuple(MODELS))
    phases = list(phases)
    for phase in phases:
        _check_choice("phase", phase, tuple(PHASES))
    if tps is not None:
        tps = list(tps)
        for tp in tps:
            check_int_range("tp", tp, 2, 1024)
    results = []
    for name in models:
        for tp in (PAPER_TP.get(name, OTHER_TP) if tps is None else tps):
            if not tp_fits(MODELS[name], tp):
                continue
            for phase in phases:
                results.append(layer_timing(cfg, name, tp, phase, seq_len=seq_len))
    return results


def layer_geomeans(results: list[LayerResult]) -> dict[str, dict[str, float]]:
    """Per phase present, the geomean over the results of each scheme's end-to-end speedup."""
    out: dict[str, dict[str, float]] = {}
    for phase in PHASES:
        chosen = [r for r in results if r.phase == phase]
        if chosen:
            out[phase] = {s: geomean(r.speedup(s) for r in chosen) for s in chosen[0].schemes}
    return out


def _table_schemes(results: list[LayerResult]) -> tuple[str, ...]:
    schemes = results[0].schemes if results else SCHEMES
    for r in results:
        if r.schemes != schemes:
            raise ValueError(f"results must all hold the schemes {', '.join(schemes)}, not {', '.join(r.schemes)}")
    return schemes


def layer_table(results: list[LayerResult]) -> str:
    """Plain-text table: per point the sequential layer time, the all-reduce sublayers' share
    of it, the end-to-end speedup of every scheme and the model time; geomeans per phase."""
    schemes = _table_schemes(results)
    width = max(8, *(len(s) for s in schemes[1:])) if len(schemes) > 1 else 8
    header = (f"{'model':<11} {'TP':>3} {'phase':<8} {'heads':>5} {'seq us':>9} {'AR share':>8} "
              + " ".join(f"{s:>{width}}" for s in schemes[1:]) + f" {'model ms':>9}")
    lines = [header, "-" * len(header)]
    for r in results:
        seq = schemes[0]
        lines.append(f"{r.model:<11} {r.tp:>3} {r.phase:<8} {r.local_heads:>5} {r.layer_time_s(seq) * 1e6:>9.1f} "
                     f"{r.sublayer_share(seq) * 100:>7.1f}% "
                     + " ".join(f"{r.speedup(s):>{width - 1}.3f}x" for s in schemes[1:])
                     + f" {r.model_time_s(seq) * 1e3:>9.2f}")
    lines.append("-" * len(header))
    for phase, means in layer_geomeans(results).items():
        n = sum(r.phase == phase for r in results)
        label = f"geomean {phase} ({n} points)"
        lines.append(f"{label:<56} " + " ".join(f"{means[s]:>{width - 1}.3f}x" for s in schemes[1:]))
    lines.append("")
    lines.append("heads: query heads on the busiest GPU; seq us: layer time under sequential; AR share: its "
                 "fraction in the all-reduce sublayers; speedups: end to end over sequential; model ms: "
                 "layers x layer time, sequential")
    return "\n".join(lines)


def layer_markdown(results: list[LayerResult]) -> str:
    """Markdown table: model, TP, phase, sequential layer time (us), the end-to-end speedup
    of every scheme, and the fraction of the (sequential) layer in the all-reduce sublayers;
    then the geomean of each scheme per phase."""
    schemes = _table_schemes(results)
    seq = schemes[0]
    lines = ["| model | TP | phase | layer time, sequential (us) | "
             + " | ".join(schemes[1:]) + " | all-reduce sublayers, share of layer (sequential) |",
             "| --- | ---: | --- | ---: | " + " | ".join("---:" for _ in schemes[1:]) + " | ---: |"]
    for r in results:
        lines.append(f"| {r.model} | {r.tp} | {r.phase} | {r.layer_time_s(seq) * 1e6:.1f} | "
                     + " | ".join(f"{r.speedup(s):.3f}x" for s in schemes[1:])
                     + f" | {r.sublayer_share(seq) * 100:.1f}% |")
    for phase, means in layer_geomeans(results).items():
        lines.append(f"| **geomean** | | {phase} | | " + " | ".join(f"**{means[s]:.3f}x**" for s in schemes[1:])
                     + " | |")
    return "\n".join(lines)
