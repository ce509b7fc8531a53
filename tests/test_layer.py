"""End-to-end Transformer layer (system_model.studies.layer): op inventory, hand-computed op times,
Amdahl bounds of the end-to-end speedup, argument checks and the tables."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from system_model.describe.models import MODELS, GemmShape, TransformerModel, sublayer_gemm
from system_model.describe.presets import DESCRIPTIONS
from system_model.schemes import evaluate
from system_model.studies.layer import (
    LayerOp,
    LayerResult,
    gemm_alone_s,
    layer_geomeans,
    layer_markdown,
    layer_ops,
    layer_study,
    layer_table,
    layer_timing,
    op_time_s,
)
from system_model.studies.study import PAPER_TP, SCHEMES

# Explicit HBM figures, so that the hand-computed times below do not follow preset edits.
HBM_BYTES_PER_S = 1000e9 * 0.85
TINY = TransformerModel("tiny", 0.01, hidden=256, heads=4, layers=3)


@pytest.fixture(scope="module")
def cfg():
    cfg = DESCRIPTIONS["t3-paper"].study_config()
    return replace(cfg, system=cfg.system.with_changes(hbm_GBps=1000, hbm_efficiency=0.85))


@pytest.fixture(scope="module")
def study(cfg):
    return layer_study(cfg)


def _paper_points():
    return [(name, tp) for name, tps in PAPER_TP.items() for tp in tps]


# -- op inventory -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "tp"), _paper_points())
def test_sliced_sublayers_are_the_study_s(name, tp):
    m = MODELS[name]
    for phase, tokens, expected in (("training", 8192, ["OP", "FC-2", "FC-1", "IP"]),
                                    ("prefill", 2048, ["OP", "FC-2"])):
        ops = layer_ops(m, phase, tokens, tp)
        sliced = [op for op in ops if op.kind == "sublayer"]
        assert [op.sublayer for op in sliced] == expected
        for op in sliced:
            assert op.shape == sublayer_gemm(m, op.sublayer, tokens, tp)
    assert all(op.direction == "forward" for op in layer_ops(m, "prefill", 2048, tp))


@pytest.mark.parametrize(("name", "tp"), _paper_points())
def test_every_forward_gemm_has_two_gradients_of_twice_its_flops(name, tp):
    ops = layer_ops(MODELS[name], "training", 8192, tp)
    forward = [op for op in ops if op.direction == "forward" and op.shape is not None]
    backward = [op for op in ops if op.direction == "backward" and op.shape is not None]
    assert len(forward) == 6 and len(backward) == 12
    for f in forward:
        grads = [b for b in backward if b.grad_of == f.name]
        assert len(grads) == 2, f.name
        assert sum(g.flops for g in grads) == 2 * f.flops, f.name
    assert {b.grad_of for b in backward} == {f.name for f in forward}


def test_forward_flops_by_hand():
    # GPT-3 at TP 32, one 2048-token prompt: 3 heads of 128 per GPU.
    h, T, tp, s, d, heads = 12288, 2048, 32, 2048, 128, 3
    linear = 2 * T * (h * 3 * h + h * h + 2 * h * 4 * h) // tp     # QKV, OP, FC-1, FC-2
    attention = 2 * (2 * heads * s * s * d)                          # Q K^T and P V
    ops = layer_ops(MODELS["gpt-3"], "prefill", T, tp)
    assert sum(op.flops for op in ops) == linear + attention
    training = layer_ops(MODELS["gpt-3"], "training", 4 * T, tp)
    assert sum(op.flops for op in training) == 3 * 4 * (linear + attention)


def test_uneven_heads_and_replicated_multi_query_head():
    # T-NLG's 28 heads over 8 GPUs: the busiest holds 4.
    scores = next(op for op in layer_ops(MODELS["t-nlg"], "prefill", 2048, 8) if op.name == "attn scores fwd")
    assert scores.shape == GemmShape(4 * 2048, 2048, 4256 // 28)
    # PaLM at TP 32: 2 query heads share the one KV head, kept whole on every GPU.
    ops = {op.name: op for op in layer_ops(MODELS["palm"], "training", 8192, 32)}
    assert ops["attn scores fwd"].shape == GemmShape(4 * 2 * 2048, 2048, 384)
    assert ops["attn scores wgrad"].shape == GemmShape(4 * 1 * 2048, 384, 2 * 2048)
    # Q of 2 heads and K of 1 head read, the 2 heads' scores written.
    assert ops["attn scores fwd"].read_bytes == (4 * 2 * 2048 * 384 + 4 * 1 * 2048 * 384) * 2
    assert ops["attn scores fwd"].write_bytes == 4 * 2 * 2048 * 2048 * 2


def test_dropout_only_in_training():
    train = {op.name: op for op in layer_ops(TINY, "training", 512, 2, seq_len=256)}
    infer = {op.name: op for op in layer_ops(TINY, "prefill", 512, 2, seq_len=256)}
    assert "attention dropout" in train and "attention dropout" not in infer
    # The training residual add also writes the dropout mask (1 byte per element).
    assert train["residual-add-1"].write_bytes - infer["residual-add-1"].write_bytes == 512 * 256


# -- op times by hand -------------------------------------------------------------------------


def test_elementwise_times_by_hand(cfg):
    # 2 sequences of 256 tokens, 2 of the 4 heads per GPU: 2 * 2 * 256 * 256 fp16 scores.
    ops = {op.name: op for op in layer_ops(TINY, "training", 512, 2, seq_len=256)}
    assert op_time_s(ops["softmax"], cfg) == pytest.approx(2 * 262144 * 2 / HBM_BYTES_PER_S)
    # Reads the probabilities, writes the dropped ones and the mask.
    assert op_time_s(ops["attention dropout"], cfg) == pytest.approx(262144 * (2 + 2 + 1) / HBM_BYTES_PER_S)
    assert op_time_s(ops["softmax bwd"], cfg) == pytest.approx(3 * 262144 * 2 / HBM_BYTES_PER_S)
    assert op_time_s(ops["layernorm-1"], cfg) == pytest.approx(2 * 512 * 256 * 2 / HBM_BYTES_PER_S)
    assert op_time_s(ops["GeLU"], cfg) == pytest.approx(2 * 512 * 512 * 2 / HBM_BYTES_PER_S)


def test_single_wave_gemm_by_hand(cfg):
    # OP's data gradient (512 x 128 x 256): 4 tiles, one wave, compute-bound (0.5 MB of DRAM),
    # with a library that never splits K (the presets'; split: the next test).
    op = next(op for op in layer_ops(TINY, "training", 512, 2, seq_len=256) if op.name == "OP dgrad")
    assert op.shape == GemmShape(512, 128, 256)
    tile_s = 2 * 128 * 128 * 256 / (1.4e9 * 1024 * 0.8)              # 7.31 us
    traffic_s = (512 * 256 + 256 * 128 + 512 * 128) * 2 / HBM_BYTES_PER_S  # 0.54 us
    # The wave's compute, plus at most one pipeline fill (a DRAM latency) and its own traffic.
    fill_s = cfg.system.gpu.dram_latency_ns * 1e-9
    t = op_time_s(op, cfg)
    assert tile_s * (1 - 1e-12) <= t <= tile_s + fill_s + traffic_s
    # Exactly: a wave lasts at least its compute and the first operands' latency (Tc + L), and
    # its k-slices' latency over the prefetch depth (L x 256 / (32 x 1) = 3.2 us, less); the
    # DRAM serves its 0.54 us of traffic within that.
    assert cfg.system.gpu.dram_latency_ns * 1e-9 * 256 / 32 < tile_s + fill_s
    assert t == pytest.approx(tile_s + fill_s)


def test_single_wave_gemm_split_by_hand(cfg):
    # The same GEMM with a library that splits K: 4 tiles leave all but 4 CUs idle, so it may
    # split K in up to 16 parts (64 parts at most, one wave). A part computes at least a 16th of a
    # tile, so the GEMM takes at least that and a DRAM latency; the chooser keeps the
    # fastest, so it takes no longer than two parts would: half a tile's compute, the
    # latency, and the DRAM time of the operands and of the workspace (one fp32 partial
    # tile per tile, written and read back) with the output.
    op = next(op for op in layer_ops(TINY, "training", 512, 2, seq_len=256) if op.name == "OP dgrad")
    unsplit = op_time_s(op, cfg)
    cfg = replace(cfg, kernels=tuple(replace(k, max_split_k=16) for k in cfg.kernels))
    fill_s = cfg.system.gpu.dram_latency_ns * 1e-9
    part_s = 2 * 128 * 128 * 16 / (1.4e9 * 1024 * 0.8)                  # 0.46 us
    traffic_s = (512 * 256 + 256 * 128 + 512 * 128) * 2 / HBM_BYTES_PER_S
    half_s = 2 * 128 * 128 * 128 / (1.4e9 * 1024 * 0.8) + fill_s + traffic_s + 2 * 4 * 128 * 128 * 4 / HBM_BYTES_PER_S
    t = op_time_s(op, cfg)
    assert cfg.system.gpu.cus >= 64
    assert part_s + fill_s <= t * (1 + 1e-12)
    assert t <= half_s * (1 + 1e-9) < unsplit


@pytest.mark.parametrize("name", ["mega-gpt-2", "palm"])
def test_attention_gemm_at_least_its_compulsory_traffic(cfg, name):
    for op in layer_ops(MODELS[name], "training", 8192, PAPER_TP[name][0]):
        if op.kind == "attention":
            t = op_time_s(op, cfg)
            assert t >= op.dram_bytes / HBM_BYTES_PER_S * (1 - 1e-12)
            assert t >= gemm_alone_s(op.shape, cfg)


def test_attention_floor_applies_to_attention_only(cfg):
    # One single-tile GEMM that claims 1 GB of compulsory traffic: an attention op takes the
    # traffic's time, a plain GEMM the wave model's.
    shape = GemmShape(128, 128, 128)
    attention = LayerOp("a", "attention", "forward", 1e9, 0, shape)
    plain = LayerOp("g", "gemm", "forward", 1e9, 0, shape)
    assert op_time_s(attention, cfg) == pytest.approx(1e9 / HBM_BYTES_PER_S)
    assert op_time_s(plain, cfg) == gemm_alone_s(shape, cfg) < 1e9 / HBM_BYTES_PER_S / 100


# -- end to end -------------------------------------------------------------------------------


def test_study_covers_the_paper_points(study):
    got = [(r.model, r.tp, r.phase) for r in study]
    assert got == [(n, tp, ph) for n, tp in _paper_points() for ph in ("training", "prefill")]


def test_sublayer_times_come_from_evaluate(cfg, study):
    r = next(r for r in study if (r.model, r.tp, r.phase) == ("t-nlg", 16, "training"))
    for sub in ("OP", "FC-2", "FC-1", "IP"):
        res = evaluate(cfg, sublayer_gemm(MODELS["t-nlg"], sub, 8192, 16), 16, schemes=SCHEMES)
        for scheme in SCHEMES:
            assert r.sublayer_times_s[scheme][sub] == res[scheme].time_s


def test_speedups_positive_and_within_amdahl(study):
    for r in study:
        assert 0 < r.sublayer_share("sequential") < 1
        assert r.speedup("sequential") == 1.0
        for scheme in SCHEMES:
            e2e, sub = r.speedup(scheme), r.sublayer_speedup(scheme)
            assert e2e > 0
            if sub >= 1:
                assert 1 <= e2e <= sub, (r.model, r.tp, r.phase, scheme)
                if sub > 1:
                    assert e2e < sub  # the other ops dilute it
            else:
                assert sub <= e2e <= 1
            share = r.sublayer_share("sequential")
            assert e2e == pytest.approx(1 / ((1 - share) + share / sub))


def test_only_the_sublayers_change_between_schemes(study):
    for r in study:
        for scheme in SCHEMES:
            assert r.layer_time_s(scheme) - r.sublayer_s(scheme) == pytest.approx(r.other_s)


def test_model_time_is_layers_times_layer_time(study):
    gpt3 = [r for r in study if r.model == "gpt-3"]
    assert gpt3
    for r in gpt3:
        assert r.layers == 96
        for scheme in SCHEMES:
            assert r.model_time_s(scheme) == pytest.approx(96 * r.layer_time_s(scheme))


def test_training_layer_slower_than_prefill(study):
    by_point = {(r.model, r.tp, r.phase): r for r in study}
    for name, tp in _paper_points():
        train, prefill = by_point[name, tp, "training"], by_point[name, tp, "prefill"]
        # 4x the tokens and a backward pass of twice the forward work.
        assert train.layer_time_s("sequential") > 4 * prefill.layer_time_s("sequential")


def test_study_skips_tp_that_does_not_divide(cfg):
    results = layer_study(cfg, models=["mega-gpt-2"], tps=[5, 8], phases=["prefill"])
    assert [(r.model, r.tp, r.phase) for r in results] == [("mega-gpt-2", 8, "prefill")]


def test_layer_timing_of_a_custom_model(cfg):
    r = layer_timing(cfg, TINY, 2, "prefill", seq_len=256)
    assert (r.model, r.layers, r.local_heads, r.tokens) == ("tiny", 3, 2, 2048)
    assert r.model_time_s("sequential") == pytest.approx(3 * r.layer_time_s("sequential"))


# -- argument checks --------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda: layer_ops(TINY, "decode", 512, 2), r"^phase must be one of training, prefill, not 'decode'$"),
    (lambda: layer_ops(MODELS["mega-gpt-2"], "training", 8192, 5), r"^tp must divide hidden 3072, not 5$"),
    (lambda: layer_ops(MODELS["mega-gpt-2"], "training", 8192, 1), r"^tp must be between 2 and 1024, not 1$"),
    (lambda: layer_ops(TINY, "prefill", 3000, 2), r"^tokens must be a multiple of seq_len 2048, not 3000$"),
    (lambda: layer_ops(TINY, "prefill", 512, 2, seq_len=0), r"^seq_len must be between 1 and 1048576, not 0$"),
    (lambda: LayerOp("x", "conv", "forward", 1, 1),
     r"^kind must be one of gemm, attention, elementwise, sublayer, not 'conv'$"),
    (lambda: LayerOp("x", "elementwise", "forward", -1, 1), r"^read_bytes must be between 0 and 1e\+24, not -1$"),
    (lambda: LayerOp("x", "sublayer", "forward", 1, 1, GemmShape(1, 1, 1), "FC-1"),
     r"^direction of sublayer FC-1 must be backward, not 'forward'$"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_study_bad_arguments(cfg):
    with pytest.raises(ValueError, match=r"^model must be one of mega-gpt-2, .*, not 'bert'$"):
        layer_study(cfg, models=["bert"])
    with pytest.raises(ValueError, match=r"^phase must be one of training, prefill, not 'decode'$"):
        layer_study(cfg, phases=["decode"])
    with pytest.raises(ValueError, match=r"^tp must be between 2 and 1024, not 0$"):
        layer_study(cfg, tps=[0])


def test_result_bad_arguments(study):
    r = study[0]
    with pytest.raises(ValueError, match=r"^scheme must be one of sequential, .*, not 'nope'$"):
        r.speedup("nope")
    times = {s: {"OP": 1e-3, "FC-2": 1e-3} for s in SCHEMES}
    with pytest.raises(ValueError, match=r"^sublayer_times_s\['sequential'\] must hold the sublayers "
                                         r"OP, FC-2, FC-1, IP, not OP, FC-2$"):
        LayerResult("x", 8, "training", 8192, 2, 1, {"softmax": 1e-3}, times)
    with pytest.raises(ValueError, match=r"^op_times_s\['softmax'\] must be greater than 0, not 0$"):
        LayerResult("x", 8, "prefill", 2048, 2, 1, {"softmax": 0}, times)


# -- tables -----------------------------------------------------------------------------------


def test_markdown_table(study):
    lines = layer_markdown(study).splitlines()
    assert lines[0].startswith("| model | TP | phase | layer time, sequential (us) | ")
    for scheme in SCHEMES[1:]:
        assert f" {scheme} |" in lines[0]
    rows = [line for line in lines[2:] if not line.startswith("| **geomean**")]
    assert len(rows) == len(study)
    for r, line in zip(study, rows, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:3] == [r.model, str(r.tp), r.phase]
        assert float(cells[3]) == pytest.approx(r.layer_time_s("sequential") * 1e6, abs=0.06)
        speedups = [float(c.rstrip("x")) for c in cells[4:-1]]
        assert speedups == pytest.approx([r.speedup(s) for s in SCHEMES[1:]], abs=6e-4)
        assert float(cells[-1].rstrip("%")) == pytest.approx(r.sublayer_share("sequential") * 100, abs=0.06)
    means = layer_geomeans(study)
    geo = [line for line in lines if line.startswith("| **geomean**")]
    assert len(geo) == 2
    for phase, line in zip(("training", "prefill"), geo, strict=True):
        values = [float(v) for v in re.findall(r"\*\*([\d.]+)x\*\*", line)]
        assert values == pytest.approx([means[phase][s] for s in SCHEMES[1:]], abs=6e-4)


def test_geomean_by_hand(study):
    training = [r for r in study if r.phase == "training"]
    scheme = SCHEMES[-1]
    expected = math.prod(r.speedup(scheme) for r in training) ** (1 / len(training))
    assert layer_geomeans(study)["training"][scheme] == pytest.approx(expected)


def test_text_table(study):
    text = layer_table(study)
    for r in study:
        assert re.search(rf"^{re.escape(r.model)}\s+{r.tp}\s+{r.phase}\s", text, re.M)
    assert "geomean training (7 points)" in text and "geomean prefill (7 points)" in text
