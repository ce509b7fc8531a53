"""Llama 3 in the model zoo: grouped-query attention and SwiGLU in the sublayer GEMMs and
the layer model (issue "peers on today's hardware", its model part)."""

from __future__ import annotations

import pytest

from system_model.describe.models import MODELS, PHASES, TransformerModel, sublayer_gemm
from system_model.describe.presets import DESCRIPTIONS
from system_model.schemes import BOUNDS
from system_model.studies.layer import layer_ops
from system_model.studies.study import run_study, study_points

# Grattafiori et al. 2024, "The Llama 3 Herd of Models", Table 3:
# (layers, model dimension, FFN dimension, heads, KV heads).
TABLE_3 = {"llama-3-8b": (32, 4096, 14336, 32, 8), "llama-3-70b": (80, 8192, 28672, 64, 8),
           "llama-3-405b": (126, 16384, 53248, 128, 8)}


@pytest.mark.parametrize("name", list(TABLE_3))
def test_llama_3_shapes(name):
    layers, dim, ffn, heads, kv = TABLE_3[name]
    m = MODELS[name]
    assert (m.layers, m.hidden, m.ffn, m.heads, m.kv_heads) == (layers, dim, ffn, heads, kv)
    head_dim = dim // heads
    assert m.qkv_width == dim + 2 * kv * head_dim            # GQA: the QKV projection's real size
    tp = 8
    tokens = 8192
    assert sublayer_gemm(m, "OP", tokens, tp).k == dim // tp
    assert sublayer_gemm(m, "FC-2", tokens, tp).k == ffn // tp
    assert sublayer_gemm(m, "FC-1", tokens, tp).k == 2 * ffn // tp      # SwiGLU: gate and up
    assert sublayer_gemm(m, "IP", tokens, tp).k == (dim + 2 * kv * head_dim) // tp


def test_layer_of_a_gated_model_has_swiglu_and_no_bias_or_dropout():
    m, tp, tokens = MODELS["llama-3-70b"], 8, 8192
    ops = {op.name: op for op in layer_ops(m, "training", tokens, tp)}
    f = m.ffn // tp
    assert ops["FC-1 fwd"].shape.n == 2 * f
    assert (ops["SwiGLU"].read_bytes, ops["SwiGLU"].write_bytes) == (tokens * 2 * f * 2, tokens * f * 2)
    assert (ops["SwiGLU bwd"].read_bytes, ops["SwiGLU bwd"].write_bytes) == (tokens * 3 * f * 2, tokens * 2 * f * 2)
    assert ops["FC-1 dgrad"].shape == sublayer_gemm(m, "FC-1", tokens, tp)
    assert not [n for n in ops if "bias" in n or "dropout" in n or "GeLU" in n]
    # The paper's GPT-style models keep GeLU, their biases and dropout.
    gpt = {op.name for op in layer_ops(MODELS["gpt-3"], "training", tokens, 32)}
    assert {"GeLU", "GeLU bwd", "FC-1 bias grad", "attention dropout"} <= gpt and "SwiGLU" not in gpt


def test_llama_runs_at_tp_8_and_t3_sits_between_sequential_and_ideal():
    points = study_points(["llama-3-70b", "llama-3-405b"])
    assert {p.tp for p in points} == {8}
    assert len(points) == 2 * (len(PHASES["training"]) + len(PHASES["prefill"]))
    assert all(p.model not in TABLE_3 for p in study_points())     # the paper's study is unchanged
    for r in run_study(DESCRIPTIONS["t3-paper"].study_config(), points, timeline=False):
        assert BOUNDS[r.schemes["t3_mca"].bound] == "ideal_overlap"    # T3 runs the all-gather after its RS
        ideal, mca, seq = (r.schemes[s].time_s for s in ("ideal_overlap", "t3_mca", "sequential"))
        assert ideal <= mca * (1 + 1e-9) and mca < seq, r.point


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kv_heads": 9}, "kv_heads must be between 1 and 8, not 9"),
    ({"ffn_dim": 0}, "ffn_dim must be between 1 and 16777216, not 0"),
    ({"heads": 0}, "heads must be between 1 and 1048576, not 0"),
])
def test_bad_model_fields(kwargs, message):
    fields = {"name": "x", "params_B": 1, "hidden": 64, "heads": 8, "layers": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        TransformerModel(**fields)
