"""The serving regime (``peers_serving.md``): the load-based all-reduce, the fastest
all-gather, and every serving scheme held to its bounds and to physics on random
configurations down to one token."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from system_model.describe.models import GemmShape
from system_model.describe.presets import PLATFORMS
from system_model.kernels.collectives import plan
from system_model.kernels.custom_allreduce import custom_all_gather, custom_all_reduce, custom_na_reason
from system_model.kernels.gemm import gemm_alone_s, gemm_timing
from system_model.kernels.triton_gemm import AR_GEMM_TILE, LL_GEMM_TILE, LOW_LATENCY_M, triton_ar_kernel
from system_model.schemes import BOUNDS, SERVING_SCHEMES, evaluate
from system_model.schemes.context import Sublayer
from system_model.studies.serving import ServingPoint, _threshold, run_serving, serving_markdown, serving_verdicts

#: Random configurations per run.
EXAMPLES = int(__import__("os").environ.get("T3_SERVING_EXAMPLES", "150"))
H100 = PLATFORMS["h100-sxm"]


def _custom(S, n=8, p=H100, **kw):
    return custom_all_reduce(S, n, p.fabric, p.transport, p.gpu.dram_latency_ns, **kw)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: _custom(0), "bytes must be greater than 0, not 0"),
    (lambda: _custom(1024, n=1), "n must be between 2 and 65536, not 1"),
    (lambda: _custom(1024, algorithm="three_shot"), "algorithm must be one of one_shot, two_shot, not 'three_shot'"),
    (lambda: _custom(1024, n=16), "TP 16 spans more than the 8-GPU domain"),
    (lambda: _custom(1024, n=4, p=PLATFORMS["t3-paper"]), "a ring reaches only its two neighbours"),
])
def test_bad_custom_all_reduce_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_one_shot_is_latency_two_shot_is_bandwidth():
    """One barrier and one round trip fewer make one-shot the faster for a token's tensor;
    receiving 2(n-1)/n of the tensor instead of n-1 copies makes two-shot the faster for
    large ones, and the crossover lies where the closed forms put it."""
    f, t, lat = H100.fabric, H100.transport, H100.gpu.dram_latency_ns
    one = lambda S: custom_all_reduce(S, 8, f, t, lat, algorithm="one_shot")  # noqa: E731
    two = lambda S: custom_all_reduce(S, 8, f, t, lat, algorithm="two_shot")  # noqa: E731
    assert one(16 << 10).time_s < two(16 << 10).time_s and two(64 << 20).time_s < one(64 << 20).time_s
    hop, mem = f.hop_latency_s(8), lat * 1e-9
    rate = f.group_egress_Bps(8) * t.sm_link_efficiency
    crossover = ((hop + mem) + (2 * hop + mem)) / ((7 - 14 / 8) / rate)
    assert one(crossover * 0.99).time_s < two(crossover * 0.99).time_s
    assert one(crossover * 1.01).time_s > two(crossover * 1.01).time_s
    assert _custom(crossover * 1.01).algorithm == "two_shot"


def test_a_load_based_all_gather_is_one_phase_of_a_two_shot():
    S = 4 << 20
    ag = custom_all_gather(S, 8, H100.fabric, H100.transport, H100.gpu.dram_latency_ns)
    two = _custom(S, algorithm="two_shot")
    hop, mem = H100.fabric.hop_latency_s(8), H100.gpu.dram_latency_ns * 1e-9
    # Two-shot is a reduce-scatter phase (a barrier, a round trip, half its bytes) and this all-gather.
    assert two.time_s == pytest.approx(ag.time_s + (hop + mem) + (2 * hop + mem) + ag.egress_bytes
                                       / (H100.fabric.group_egress_Bps(8) * H100.transport.sm_link_efficiency))


def test_where_loads_cannot_reach_the_scheme_says_why():
    cfg = H100.study_config()
    r = evaluate(cfg, GemmShape(64, 8192, 1024), 16, schemes=("custom_ar",))["custom_ar"]
    assert not r.available and "16" in r.reason and "NCCL" in r.reason
    assert custom_na_reason(H100.fabric, 8) is None


def test_the_fastest_all_gather_only_shortens_what_follows_the_reduce_scatter():
    """With the fastest all-gather every scheme that hides the reduce-scatter ends exactly
    what the all-gather saves earlier; the others do not move."""
    cfg = H100.study_config()
    fast = replace(cfg, peer=replace(cfg.peer, all_gather="fastest"))
    shape = GemmShape(16, 8192, 1024)
    a = evaluate(cfg, shape, 8, schemes=SERVING_SCHEMES)
    b = evaluate(fast, shape, 8, schemes=SERVING_SCHEMES)
    library = plan("all_gather", 16 * 8192 * 2, 8, H100.fabric, H100.transport).time_s
    loads = custom_all_gather(16 * 8192 * 2, 8, H100.fabric, H100.transport, H100.gpu.dram_latency_ns).time_s
    assert loads < library
    for s in SERVING_SCHEMES:
        if not a[s].available:
            continue
        if a[s].bound == "ideal_rs":
            assert b[s].time_s == pytest.approx(a[s].time_s - (library - loads), rel=1e-9), s
        else:
            assert b[s].time_s == pytest.approx(a[s].time_s, rel=1e-12), s


def test_bad_all_gather_choice():
    from system_model.describe.config import PeerConfig

    with pytest.raises(ValueError, match="all_gather must be one of library, fastest, not 'nccl'"):
        PeerConfig(all_gather="nccl")


# -- random configurations, down to one token ----------------------------------------------

SERVING_PRESETS = tuple(n for n in PLATFORMS if n != "t3-paper")


@st.composite
def serving_cases(draw):
    name = draw(st.sampled_from(SERVING_PRESETS))
    m = int(round(math.exp(draw(st.floats(0.0, math.log(8192))))))
    n = int(round(math.exp(draw(st.floats(math.log(1024), math.log(32768))))))
    k = int(round(math.exp(draw(st.floats(math.log(256), math.log(32768))))))
    tp = draw(st.integers(2, 16))
    field = draw(st.sampled_from(("link_bw_GBps_per_link", "link_latency_ns", "dram_latency_ns")))
    factor = draw(st.floats(1.05, 4.0))
    return name, (m, n, k), tp, field, factor


def _serving_run(description, shape, tp):
    cfg = description.study_config()
    cfg = replace(cfg, peer=replace(cfg.peer, all_gather="fastest"))
    return evaluate(cfg, GemmShape(*shape), tp, schemes=SERVING_SCHEMES)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serving_cases())
@example(("h100-sxm", (1, 8192, 1024), 8, "link_latency_ns", 4.0))
@example(("mi300x", (1, 8192, 3584), 8, "link_bw_GBps_per_link", 2.0))
def test_serving_schemes_keep_their_bounds_and_physics(case):
    """Every serving scheme, from one token up, never beats its ideal nor the all-reduce ideal;
    a faster link or a shorter latency never makes it slower by more than the invariant
    suite's allowance (0.5% plus its transfers' own DRAM time)."""
    name, shape, tp, field, factor = case
    base = PLATFORMS[name]
    r0 = _serving_run(base, shape, tp)
    for s, r in r0.items():
        if r.time_s is None:
            continue
        for bound in {BOUNDS[r.bound], "ideal_all_reduce"}:
            assert r.time_s >= r0[bound].time_s * (1 - 1e-9), (s, bound, case)
    part = "gpu" if field == "dram_latency_ns" else "fabric"
    value = getattr(getattr(base, part), field)
    changed = base.with_changes(**{field: value / factor if field.endswith("_ns") else value * factor})
    r1 = _serving_run(changed, shape, tp)
    for s in r0:
        if r0[s].time_s is None or r1[s].time_s is None:
            continue
        allowed = r0[s].time_s * 0.005 + r0[s].transfer_dram_s(base.gpu.dram_bytes_per_s)
        assert r1[s].time_s <= r0[s].time_s + allowed, (s, case, r0[s].time_s, r1[s].time_s)


# -- the study -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def h100_points():
    return run_serving([H100], ("llama-3-70b",), (8,))


def test_the_study_covers_decode_and_chunked_prefill(h100_points):
    tokens = [q.tokens for q in h100_points]
    assert tokens == sorted(tokens) and tokens[0] == 1 and tokens[-1] == 8192 and 256 in tokens and 512 in tokens
    for q in h100_points:
        assert set(q.results) == {"OP", "FC-2"}
        assert q.time_s("sequential") == pytest.approx(
            sum(q.results[s]["sequential"].time_s for s in ("OP", "FC-2")), rel=1e-12)


def test_verdicts_follow_the_margin_and_the_error(h100_points):
    errors = {"nccl_ring": 0.1, "nccl_nvls": 0.1, "gemm": 0.05, "copy_engine": 0.1, "fused": 0.2, "custom": 0.1}
    for r in serving_verdicts(h100_points, errors):
        ratio, needed = r["t3_over_software"], r["model_error"]
        assert needed is not None and needed > 0
        expected = "within" if max(ratio, 1 / ratio) - 1 <= needed else ("T3" if ratio > 1 else "software")
        assert r["verdict"] == expected
    for r in serving_verdicts(h100_points, None):
        assert r["verdict"] == ("T3" if r["t3_over_software"] > 1 else "software")


def test_threshold_wording():
    rows = [{"tokens": t, "verdict": v} for t, v in ((1, "software"), (8, "within"), (64, "T3"), (512, "T3"))]
    assert _threshold(rows) == "from 64 tokens"
    rows[-1]["verdict"] = "within"
    assert _threshold(rows) == "at 64"
    assert _threshold([{"tokens": 1, "verdict": "software"}, {"tokens": 2, "verdict": "within"}]) == (
        "never (software wins at 1)")


def test_markdown_has_every_point(h100_points):
    md = serving_markdown(h100_points)
    every = md[md.index("## Every point"):]
    assert every.count("| h100-sxm | llama-3-70b | 8 |") == len(h100_points)
    assert md[:md.index("## Every point")].count("| h100-sxm | llama-3-70b | 8 |") == 1 + 4    # summary, 4 layers
    assert isinstance(h100_points[0], ServingPoint)


# -- Triton-distributed -----------------------------------------------------------------------

def test_triton_distributed_falls_back_below_100_gflops():
    from system_model.schemes.triton_dist import SMALL_GEMM_FLOPS

    cfg = H100.study_config()
    small = GemmShape(4096, 4096, 1024)            # 34 GFLOPs
    assert 2 * small.m * small.n * small.k < SMALL_GEMM_FLOPS
    r = evaluate(cfg, small, 8, schemes=("sequential", "triton_dist_rs"), collective="reduce_scatter")
    assert r["triton_dist_rs"].time_s == r["sequential"].time_s
    big = GemmShape(8192, 8192, 3696)
    r = evaluate(cfg, big, 8, schemes=("sequential", "triton_dist_rs", "ideal_overlap"), collective="reduce_scatter")
    assert r["ideal_overlap"].time_s <= r["triton_dist_rs"].time_s < r["sequential"].time_s


def test_triton_distributed_amd_stores_leave_one_stream_at_a_time():
    """Its AMD GEMM + RS stores each wave's tiles as the wave ends; the stores leave in wave
    order, one flow at a time. With a flow per wave, all at once, a GEMM of 1,300 short waves
    (MI210, K 4) took 56 s to evaluate and gave each wave's stores an arbitrating share of
    their own. Checked: the ideal overlap below it, and, at this point, no more than 5% above
    the sequential schedule (the GEMM, then the reduce-scatter). That is not a bound in
    general: where M / TP is not a multiple of the tile's rows, whole tile rows go to the
    peers and the kernel sends more than a chunk (the review found up to 1.7x on small M)."""
    import time

    cfg = PLATFORMS["mi210"].study_config()
    shape = GemmShape(52707, 43045, 4)
    started = time.perf_counter()
    r = evaluate(cfg, shape, 2, schemes=("sequential", "ideal_overlap", "triton_dist_rs"), collective="reduce_scatter")
    assert time.perf_counter() - started < 20, "the AMD epilogue's stores are evaluated in quadratic time again"
    t = r["triton_dist_rs"]
    assert t.gemm_s <= t.time_s and r["ideal_overlap"].time_s <= t.time_s <= r["sequential"].time_s * 1.05


def test_triton_distributed_all_reduce_takes_its_communication_ctas():
    from system_model.schemes.triton_dist import ar_ctas

    assert (ar_ctas(1), ar_ctas(256), ar_ctas(257)) == (16, 16, 4)
    cfg = H100.study_config()
    r = evaluate(cfg, GemmShape(2048, 8192, 3584), 8, schemes=("triton_dist_ar",))["triton_dist_ar"]
    assert r.bound == "ideal_ar" and r.traffic["ag_reads"] == 0.0
    rs = evaluate(cfg, GemmShape(2048, 8192, 3584), 8, schemes=("triton_dist_ar",), collective="reduce_scatter")
    assert not rs["triton_dist_ar"].available and "all-reduce" in rs["triton_dist_ar"].reason


@pytest.mark.parametrize(("m", "tile"), [(1, LL_GEMM_TILE), (256, LL_GEMM_TILE), (257, AR_GEMM_TILE),
                                         (2048, AR_GEMM_TILE)])
def test_triton_distributed_all_reduce_runs_its_layers_gemm(m, tile):
    """Its NVIDIA layer's own tile for the GEMM's M, on the SMs its communication CTAs leave:
    no faster than that kernel on every SM, and never under the GEMM's lower bound (which
    must count the kernel, or the fused scheme could beat its own ideal)."""
    cfg = H100.study_config()
    # (An attention output projection at TP 8: the library's 128-row tiles give 40 tiles, the
    # low-latency kernel's 32 x 64 up to 320, a GEMM faster than any of the library's.)
    sub = Sublayer(cfg, GemmShape(m, 5120, 1024), 8, "all_reduce")
    kernel = triton_ar_kernel(sub.kernel, m, cfg.peer.ll_tile_compute_efficiency)
    assert (kernel.tile_m, kernel.tile_n, kernel.k_tile, kernel.prefetch_stages) == tile
    assert kernel.split_k == 1 and kernel.group_rows == 1
    r = evaluate(cfg, sub.shape, 8, schemes=("triton_dist_ar",))["triton_dist_ar"]
    assert r.gemm_s >= gemm_alone_s(gemm_timing(sub.shape, sub.gpu, kernel, stages=1), sub.gpu) * (1 - 1e-12)
    assert r.gemm_s >= sub.gemm_lower_bound_s * (1 - 1e-12)
    # The assumed efficiency of the low-latency tile moves only the low-latency kernel, and
    # a slower tile never makes the fused kernel faster.
    slow = replace(cfg, peer=replace(cfg.peer, ll_tile_compute_efficiency=0.3))
    r_slow = evaluate(slow, sub.shape, 8, schemes=("triton_dist_ar",))["triton_dist_ar"]
    if m <= LOW_LATENCY_M:
        assert r_slow.time_s >= r.time_s * (1 - 1e-12)
    else:
        assert r_slow.time_s == pytest.approx(r.time_s, rel=1e-12)


@pytest.mark.parametrize(("preset", "tp", "reason"), [("t3-paper", 4, "ring"), ("h100-sxm", 16, "domain")])
def test_triton_distributed_needs_one_domain(preset, tp, reason):
    r = evaluate(PLATFORMS[preset].study_config(), GemmShape(4096, 8192, 4096), tp,
                 schemes=("triton_dist_rs", "triton_dist_ar"))
    for s in ("triton_dist_rs", "triton_dist_ar"):
        assert not r[s].available and reason in r[s].reason, (s, r[s].reason)


# -- TokenWeave -------------------------------------------------------------------------------

def test_tokenweave_splits_from_1024_tokens_into_256_rounded_halves():
    from system_model.studies.serving.tokenweave import split_tokens

    assert split_tokens(1024) == (512, 512) and split_tokens(1000) == (512, 488) and split_tokens(1300) == (768, 532)
    assert split_tokens(8192, 256) == (4352, 3840)
    with pytest.raises(ValueError, match="offset must leave tokens in both halves"):
        split_tokens(1024, 512)


def test_tokenweave_takes_the_nearest_row_of_its_table():
    """Its runner looks its table up at the token count nearest the batch's (``closest_len``);
    a model it has no table for runs the default; the prefill figures ran their own table."""
    from system_model.studies.serving.tokenweave import (
        DEFAULT_CONFIG,
        PREFILL_FIGURE_CONFIGS,
        SHIPPED_CONFIGS,
        TokenWeaveConfig,
        tokenweave_config,
    )

    table = SHIPPED_CONFIGS[("llama", 8)]
    assert tokenweave_config("llama-3-70b", 8, 8192) == table[8192] == TokenWeaveConfig(8, 4, 256)
    assert tokenweave_config("llama-3-70b", 8, 6000) == table[4096]      # 4096 is nearer than 8192
    assert tokenweave_config("llama-3-70b", 8, 6144) == table[4096]      # a tie: the smaller, as min() keeps
    assert tokenweave_config("llama-3-70b", 8, 7000) == table[8192]      # nearer above than below
    assert tokenweave_config("llama-3-70b", 8, 100) == table[1024]
    # Its Llama code loads the Llama tables for every Llama model; other families run the default.
    assert tokenweave_config("llama-3-405b", 8, 8192) == table[8192]
    assert tokenweave_config("gpt-3", 8, 8192) == DEFAULT_CONFIG
    assert tokenweave_config("llama-3-70b", 8, 1024, PREFILL_FIGURE_CONFIGS) == TokenWeaveConfig(4, 2, 0)
    with pytest.raises(ValueError, match="mlp_ctas"):
        TokenWeaveConfig(4, 0, 0)


def test_tokenweave_layer_is_between_no_communication_and_its_parts():
    """Below 1,024 tokens it only fuses (the baseline less its add + RMSNorm ops); from 1,024
    every overlapped pair costs at least its longer member, so the layer is never faster than
    the halves' compute alone on the SMs its kernel leaves, nor than their all-reduces alone."""
    from system_model.describe.models import MODELS
    from system_model.studies.serving.tokenweave import (
        TokenWeaveConfig,
        multimem_all_reduce_s,
        split_tokens,
        tokenweave_config,
        tokenweave_layer,
    )

    cfg = H100.study_config()
    m = MODELS["llama-3-70b"]
    small = tokenweave_layer(cfg, m, 512, 8)
    ar = multimem_all_reduce_s(512 * m.hidden * 2, 8, cfg)
    assert small.baseline_s == pytest.approx(small.nocomm_s + 2 * ar, rel=1e-12)
    assert small.nocomm_s < small.tokenweave_s < small.baseline_s
    for tokens in (1024, 4096, 16384):
        layer = tokenweave_layer(cfg, m, tokens, 8)
        offset = tokenweave_config(m.name, 8, tokens).split_offset_tokens
        ars = sum(2 * multimem_all_reduce_s(t * m.hidden * 2, 8, cfg) for t in split_tokens(tokens, offset))
        assert layer.tokenweave_s >= ars
        assert layer.baseline_s > layer.nocomm_s
        # More CTAs for its kernel leave fewer SMs to the compute it hides behind.
        base = tokenweave_config(m.name, 8, tokens)
        for more in (TokenWeaveConfig(16, base.mlp_ctas, base.split_offset_tokens),
                     TokenWeaveConfig(base.attention_ctas, 16, base.split_offset_tokens)):
            assert tokenweave_layer(cfg, m, tokens, 8, config=more).tokenweave_s >= layer.tokenweave_s


def test_tokenweave_layer_pairs_each_block_with_its_kernel():
    """The layer as its overlap code runs it, rebuilt here from the docstring: A1 beside the
    fused kernel of the second half's previous MLP and A2 beside the first half's attention
    output, both on the attention CTAs; M1 beside the second half's attention output and M2
    beside the first half's MLP output, both on the MLP CTAs; the halves split at
    round_up(tokens, 256) / 2 plus the offset. On B200 at 1 and 2 CTAs the kernels are
    exposed, so a swap of the CTAs or a lost offset changes the sum."""
    from system_model.describe.models import MODELS
    from system_model.studies.serving.tokenweave import (
        PROFILE_TOKENS,
        TokenWeaveConfig,
        _blocks,
        fused_all_reduce_s,
        split_tokens,
        tokenweave_config,
        tokenweave_layer,
    )

    cfg = PLATFORMS["b200"].study_config()
    m, tp, e = MODELS["llama-3-70b"], 8, 2
    cus = cfg.system.gpu.cus
    for tokens, config in ((2048, TokenWeaveConfig(2, 8, 0)), (2048, TokenWeaveConfig(8, 2, 0)),
                           (4096, TokenWeaveConfig(1, 2, 256))):
        (t1, t2) = split_tokens(tokens, config.split_offset_tokens)
        (a1, m1, _, _), (a2, m2, _, _) = (_blocks(m, t, tp, cfg, of=tokens) for t in (t1, t2))
        sa, sm = cus / (cus - config.attention_ctas), cus / (cus - config.mlp_ctas)

        def ar(t, ctas):
            return fused_all_reduce_s(t * m.hidden * e, tp, ctas, cfg)

        expected = (max(a1 * sa, ar(t2, config.attention_ctas)) + max(a2 * sa, ar(t1, config.attention_ctas))
                    + max(m1 * sm, ar(t2, config.mlp_ctas)) + max(m2 * sm, ar(t1, config.mlp_ctas)))
        got = tokenweave_layer(cfg, m, tokens, tp, config=config).tokenweave_s
        assert got == pytest.approx(expected, rel=1e-12), (tokens, config)
    swapped = [tokenweave_layer(cfg, m, 2048, tp, config=c).tokenweave_s
               for c in (TokenWeaveConfig(2, 8, 0), TokenWeaveConfig(8, 2, 0))]
    assert abs(swapped[0] - swapped[1]) > 0.01 * swapped[0]
    # Below 1,024 tokens: the row its profile run loaded, capped at the tokens per rank.
    row = tokenweave_config(m.name, tp, PROFILE_TOKENS)
    for tokens in (16, 512):
        per_rank = -(-tokens // tp)
        layer = tokenweave_layer(cfg, m, tokens, tp)
        attention, mlp, _, _ = _blocks(m, tokens, tp, cfg)
        expected = attention + mlp + sum(fused_all_reduce_s(tokens * m.hidden * e, tp, min(c, per_rank), cfg)
                                         for c in (row.attention_ctas, row.mlp_ctas))
        assert layer.tokenweave_s == pytest.approx(expected, rel=1e-12)


def test_tokenweave_fused_kernel_on_few_ctas_keeps_its_own_pace():
    """Never faster than the multimem all-reduce; slower on fewer CTAs, never faster; on 2
    CTAs at 32K tokens the pace its figure 10 measured (the value's source)."""
    from system_model.studies.serving.tokenweave import fused_all_reduce_s, multimem_all_reduce_s

    cfg = H100.study_config()
    for tokens in (64, 1024, 8192, 32768):
        nbytes = tokens * 8192 * 2
        times = [fused_all_reduce_s(nbytes, 8, c, cfg) for c in (1, 2, 4, 8, 16, 64)]
        assert all(t >= multimem_all_reduce_s(nbytes, 8, cfg) for t in times)
        assert all(a >= b for a, b in zip(times, times[1:], strict=False))
        assert times[-1] == multimem_all_reduce_s(nbytes, 8, cfg)
    assert fused_all_reduce_s(32768 * 8192 * 2, 8, 2, cfg) * 1e6 == pytest.approx(6240.8, rel=1e-3)
    with pytest.raises(ValueError, match="ctas"):
        fused_all_reduce_s(1 << 20, 8, 0, cfg)


def test_multimem_needs_a_reducing_switch():
    from system_model.studies.serving.tokenweave import multimem_all_reduce_s

    with pytest.raises(ValueError, match="reducing switch"):
        multimem_all_reduce_s(1 << 20, 8, PLATFORMS["mi300x"].study_config())
    with pytest.raises(ValueError, match="reducing switch"):
        multimem_all_reduce_s(1 << 20, 16, H100.study_config())


def test_prefill_layers_only_where_tokenweave_runs(h100_points):
    from system_model.studies.serving import prefill_layers

    rows = prefill_layers(h100_points)
    assert {r["tokens"] for r in rows} == {1024, 2048, 4096, 8192}
    for r in rows:
        best = min(r["software_layer_us"], r["tokenweave_layer_us"])
        assert r["t3_over_best"] == pytest.approx(best / r["t3_layer_us"], rel=1e-12)
    assert prefill_layers(run_serving([PLATFORMS["mi300x"]], ("llama-3-70b",), (8,))) == []


# -- FiCCO ------------------------------------------------------------------------------------

def test_ficco_tries_rounds_up_to_the_ranks_and_keeps_the_fastest():
    from system_model.schemes.ficco import _ficco, ficco_rounds

    assert ficco_rounds(8) == [2, 4, 8] and ficco_rounds(6) == [2, 4, 6] and ficco_rounds(2) == [2]
    p = PLATFORMS["mi300x"]
    cfg = p.study_config()
    shape = GemmShape(8192, 8192, 3584)
    r = evaluate(cfg, shape, 8, schemes=("ficco", "sequential", "ideal_overlap"), collective="reduce_scatter")
    from system_model.schemes.context import Sublayer
    sub = Sublayer(cfg, shape, 8, "reduce_scatter")
    times = {k: _ficco(sub, k, record=False).time_s for k in ficco_rounds(8)}
    assert r["ficco"].time_s <= min(times.values()) * (1 + 1e-12)
    assert r["ideal_overlap"].time_s <= r["ficco"].time_s
    # Decomposed, its GEMM rounds together take at least the GEMM alone's matrix work.
    assert r["ficco"].gemm_s >= r["sequential"].gemm_s * 0.8
    assert not evaluate(cfg, shape, 16, schemes=("ficco",))["ficco"].available


def test_triton_distributed_on_amd_scatters_from_the_epilogue_without_a_fallback():
    cfg = PLATFORMS["mi300x"].study_config()
    small = GemmShape(4096, 4096, 1024)            # below 100 GFLOPs: NVIDIA's op would fall back
    r = evaluate(cfg, small, 8, schemes=("sequential", "triton_dist_rs", "ideal_overlap"), collective="reduce_scatter")
    assert r["ideal_overlap"].time_s <= r["triton_dist_rs"].time_s < r["sequential"].time_s
    # The peers' rows leave as the GEMM's own stores: no copy engine, the reduction after.
    t = r["triton_dist_rs"].traffic
    assert t["rs_reads"] == pytest.approx(8 * 4096 * 4096 * 2 / 8) and r["triton_dist_rs"].gemm_s > 0


@pytest.mark.parametrize(("preset", "scheme"), [("h100-sxm", "flux"), ("mi300x", "triton_dist_rs")])
def test_a_single_wave_gemm_sends_nothing_before_its_wave_ends(preset, scheme):
    """A decode GEMM is one wave: its tiles store in their epilogues as the wave ends, so a
    scheme that moves them tile by tile (Flux's pulls, Triton-distributed's AMD epilogue
    stores) sends its peers' rows only after the GEMM, at most at the links' line rate, and
    Triton-distributed's reduction kernel is launched only after that."""
    from system_model.schemes.context import Sublayer

    cfg = PLATFORMS[preset].study_config()
    shape = GemmShape(128, 16384, 1024)           # one wave with every kernel of the library
    sub = Sublayer(cfg, shape, 8, "reduce_scatter")
    assert all(sub.with_kernel(k).gemm(stages=8).waves == 1 for k in cfg.kernels)
    r = evaluate(cfg, shape, 8, schemes=(scheme,), collective="reduce_scatter")[scheme]
    after = sub.launch_s if scheme == "triton_dist_rs" else 0.0
    assert r.time_s >= r.gemm_s + sub.total * 7 / 8 / sub.link_Bps + after


@pytest.mark.parametrize(("preset", "received"), [("a100-sxm", lambda n: n - 1), ("mi300x", lambda n: 2 * (n - 1) / n)])
def test_triton_distributed_all_reduce_without_a_switch_moves_its_shots_bytes(preset, received):
    """Without multimem its all-reduce is NVIDIA's Consumer_Load, a one-shot ((n - 1) copies
    of the tensor arrive), after two barriers; on AMD a two-shot (2 (n - 1) / n of it)."""
    from system_model.schemes.context import Sublayer

    cfg = PLATFORMS[preset].study_config()
    shape = GemmShape(2048, 8192, 1024)
    sub = Sublayer(cfg, shape, 8)
    r = evaluate(cfg, shape, 8, schemes=("triton_dist_ar",))["triton_dist_ar"]
    start = 2 * sub.signal_s if preset == "a100-sxm" else 0.0
    assert r.time_s >= start + received(8) * sub.total / (sub.link_Bps * cfg.system.transport.sm_link_efficiency)


def test_the_margin_is_the_same_whichever_side_leads():
    from system_model.studies.peers import _margin

    assert _margin(1.5) == pytest.approx(0.5) and _margin(1 / 1.5) == pytest.approx(0.5) and _margin(1.0) == 0.0


# -- T3's ring when a GPU's rows are fewer than a tile row --------------------------------------

@pytest.mark.parametrize(("preset", "shape", "tp"), [
    ("h100-sxm", (128, 8192, 8192), 16),
    ("mi210", (1, 8192, 1024), 8),
])
def test_t3_ring_after_a_one_wave_gemm_takes_a_hop_per_step(preset, shape, tp):
    """After a GEMM of one wave every chunk exists at once, and T3's reduce-scatter still needs
    tp - 1 steps, one after another, each at least a hop: T3 ends no sooner than its GEMM's end
    plus tp - 1 hops. (The case must be a one-wave GEMM; if it is not, the test errors.)

    A regression: T3's stages were whole tile rows, and with fewer than tp x tile_m rows the
    first stage held the tile row's bytes and the others were empty, finished at once with no
    hop (found by the sceptic review of 2026-12-07). Each stage is now its chunk, output / tp."""
    cfg = PLATFORMS[preset].study_config()
    sub = Sublayer(cfg, GemmShape(*shape), tp, "reduce_scatter")
    if sub.gemm(stages=tp, stores_cached=False).waves != 1:
        raise RuntimeError(f"{preset} {shape} is no longer a one-wave GEMM: choose another case")
    t3 = evaluate(cfg, GemmShape(*shape), tp, schemes=("t3",), collective="reduce_scatter")["t3"]
    assert t3.time_s >= t3.gemm_s + (tp - 1) * sub.latency_s


@pytest.mark.parametrize(("preset", "shape", "tp", "gains"), [
    ("mi210", (1, 8192, 3584), 8, True),
    ("mi210", (16, 8192, 1024), 8, True),
    ("h100-sxm", (32, 8192, 3584), 8, False),
])
def test_an_all_reduce_may_cut_a_decode_gemm_by_columns(preset, shape, tp, gains):
    """An all-reduce's chunks may be columns: a GEMM of one tile row cut by columns is its
    transpose cut by rows (the same tiles and panels), so T3 runs it as fast as the
    transposed GEMM, which has the tile rows to stage; a reduce-scatter, which must leave each
    GPU its rows, is offered rows only. On MI210 the cut is what lets T3 overlap at all (its
    64 x 64 kernel's two waves); on H100 it changes nothing."""
    m, n, k = shape
    cfg = PLATFORMS[preset].study_config()
    assert Sublayer(cfg, GemmShape(m, n, k), tp, "all_reduce").stage_layouts == (False, True)
    assert Sublayer(cfg, GemmShape(m, n, k), tp, "reduce_scatter").stage_layouts == (False,)
    cut = evaluate(cfg, GemmShape(m, n, k), tp, schemes=("t3",), collective="all_reduce")["t3"]
    transposed = evaluate(cfg, GemmShape(n, m, k), tp, schemes=("t3",), collective="all_reduce")["t3"]
    assert cut.time_s == pytest.approx(transposed.time_s, rel=1e-9)
    # The same all-reduce cut by rows only: T3 over the library's kernels, as evaluate runs it
    # (called directly, so that nothing patched reaches the results cache).
    from unittest import mock

    from system_model.schemes.t3 import t3_ring

    def best() -> float:
        sub = Sublayer(cfg, GemmShape(m, n, k), tp, "all_reduce")
        return min(t3_ring(sub.with_kernel(kernel), policy="rr").time_s for kernel in cfg.kernels)
    assert best() == pytest.approx(cut.time_s, rel=1e-9)
    with mock.patch.object(Sublayer, "stage_layouts", (False,)):
        rows_only = best()
    assert (cut.time_s < rows_only * (1 - 0.05)) if gains else cut.time_s == pytest.approx(rows_only, rel=1e-9)
