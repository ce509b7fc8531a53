# amaranth: UnusedElaboratable=no
"""System model: configuration checks, hand-computable formulas, invariants, paper validation."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from system_model import build_config
from system_model.block_timing import load_block_timing
from system_model.collectives import ring_all_gather, ring_reduce_scatter
from system_model.contention import ArbiterConfig, served_rates
from system_model.gemm import GemmKernelConfig, gemm_timing
from system_model.hardware import PRESETS, GpuConfig, LinkConfig, preset
from system_model.models import MODELS, GemmShape, sublayer_gemm
from system_model.schemes import SCHEMES, evaluate
from system_model.study import PAPER_FIGURES, run_study, study_points, summarise

# -- configuration --------------------------------------------------------------------------


def test_presets_validate_and_cite_sources():
    for name, system in PRESETS.items():
        assert system.name == name and system.source
    assert preset("t3-paper").gpu.cus == 80 and preset("t3-paper").link.link_latency_ns == 500


def test_preset_unknown():
    with pytest.raises(ValueError, match=r"^preset must be one of t3-paper, .*, not 'a100'$"):
        preset("a100")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("cus", 0, r"^cus must be between 1 and 10000, not 0$"),
    ("hbm_efficiency", 1.5, r"^hbm_efficiency must be between 0.05 and 1.0, not 1.5$"),
    ("hbm_GBps", -1, r"^hbm_GBps must be greater than 0, not -1$"),
])
def test_gpu_config_wrong_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        replace(preset("t3-paper").gpu, **{field: value})


def test_link_config_wrong_directions():
    with pytest.raises(ValueError, match=r"^ring_directions must be between 1 and 2, not 3$"):
        LinkConfig(link_bw_GBps=100, link_latency_ns=0, ring_directions=3)


def test_with_changes_rejects_unknown_field():
    with pytest.raises(ValueError, match=r"^unknown hardware field\(s\): warp_size$"):
        preset("t3-paper").with_changes(warp_size=64)


def test_kernel_config_wrong_efficiency():
    with pytest.raises(ValueError, match=r"^compute_efficiency must be between 0.01 and 1.0, not 0$"):
        GemmKernelConfig(compute_efficiency=0)


# -- formulas on hand-computable cases ---------------------------------------------------------

def test_sublayer_shapes():
    tnlg, palm = MODELS["t-nlg"], MODELS["palm"]
    assert sublayer_gemm(tnlg, "FC-2", 8192, 8) == GemmShape(8192, 4256, 2128)
    assert sublayer_gemm(tnlg, "OP", 8192, 16) == GemmShape(8192, 4256, 266)
    assert sublayer_gemm(tnlg, "IP", 10, 8) == GemmShape(10, 4256, 3 * 4256 // 8)
    # PaLM's multi-query attention: one K and one V head of 384.
    assert sublayer_gemm(palm, "IP", 10, 32).k == (18432 + 2 * 384) // 32
    with pytest.raises(ValueError, match=r"^tp must divide OP's reduced dimension 3072, not 7$"):
        sublayer_gemm(MODELS["mega-gpt-2"], "OP", 10, 7)


TOY_GPU = GpuConfig(cus=2, clock_GHz=1.0, fp16_flops_per_cycle_per_cu=1000, l2_MB=0.001, hbm_GBps=1e6,
                    hbm_efficiency=1.0, mc_clock_GHz=1.0, hbm_channels=1)
TOY_KERNEL = GemmKernelConfig(tile_m=128, tile_n=128, compute_efficiency=1.0)


def test_gemm_compute_bound_waves():
    g = gemm_timing(GemmShape(256, 256, 100), TOY_GPU, TOY_KERNEL)
    tile_s = 2 * 128 * 128 * 100 / 1e12
    assert (g.tiles, g.waves) == (4, 2)
    assert g.time_s == pytest.approx(2 * tile_s)
    # A wave of 2 tiles covers 1 tile row x 2 tile columns: one A panel, two B panels.
    assert g.dram_read_bytes == pytest.approx(2 * (128 * 100 * 2 + 2 * 128 * 100 * 2))
    assert g.dram_write_bytes == 256 * 256 * 2


def test_gemm_memory_bound_wave():
    slow = replace(TOY_GPU, hbm_GBps=1.0)
    g = gemm_timing(GemmShape(128, 128, 100), slow, TOY_KERNEL)
    traffic = 128 * 100 * 2 * 2 + 128 * 128 * 2
    assert g.time_s == pytest.approx(traffic / 1e9)


def test_ring_reduce_scatter_and_all_gather():
    link = LinkConfig(link_bw_GBps=100, link_latency_ns=1000)   # 50 GB/s each way
    rs = ring_reduce_scatter(8e6, 4, link, TOY_GPU, nmc=False)
    assert rs.step_s == pytest.approx(1e-6 + 2e6 / 50e9)
    assert rs.time_s == pytest.approx(3 * rs.step_s)
    assert (rs.read_bytes, rs.write_bytes) == (pytest.approx(3 * 3 * 2e6), pytest.approx(3 * 2 * 2e6))
    nmc = ring_reduce_scatter(8e6, 4, link, TOY_GPU, nmc=True)
    assert (nmc.read_bytes, nmc.write_bytes) == (pytest.approx(3 * 2e6), pytest.approx(3 * 2e6))
    ag = ring_all_gather(8e6, 4, replace(link, ring_directions=2), TOY_GPU)
    assert ag.step_s == pytest.approx(1e-6 + 2e6 / 100e9)


def test_served_rates():
    arb = ArbiterConfig(starvation_limit_cycles=3)
    assert served_rates("round_robin", 30, 40, 100, arb) == (30, 40)
    assert served_rates("round_robin", 90, 90, 100, arb) == (50, 50)
    assert served_rates("round_robin", 20, 90, 100, arb) == (20, 80)
    assert served_rates("mca", 90, 90, 100, arb) == (75, 25)     # comm floor 1/(3+1)
    assert served_rates("mca", 60, 90, 100, arb) == (60, 40)
    with pytest.raises(ValueError, match=r"^policy must be one of 'round_robin', 'mca', not 'fifo'$"):
        served_rates("fifo", 1, 1, 1, arb)


# -- block timing from the RTL --------------------------------------------------------------------

def test_block_timing_from_rtl_properties():
    from rtl.dma_path import DmaPath
    from rtl.nmc import NearMemoryReducer
    from rtl.tracker import TrackerTable

    timing = load_block_timing(None)
    assert timing.trigger_cycles == TrackerTable().trigger_latency
    assert timing.dma_issue_cycles == DmaPath().issue_latency
    assert timing.reducer_requests_per_cycle == NearMemoryReducer().requests_per_cycle
    assert "properties" in timing.source


def test_block_timing_from_json(tmp_path):
    figures = {"tracker_trigger_latency": 3, "dma_issue_latency": 9, "reducer_updates_per_cycle_random": 0.5,
               "reducer_write_latency": 2, "reducer_beat_bytes": 32}
    path = tmp_path / "rtl_timing.json"
    path.write_text(json.dumps({"figures": {k: {"value": v} for k, v in figures.items()}}))
    timing = load_block_timing(path)
    assert (timing.trigger_cycles, timing.dma_issue_cycles, timing.reducer_requests_per_cycle) == (3, 9, 0.5)
    assert "rtl_timing.json" in timing.source
    assert timing.trigger_to_link_s(1.0) == pytest.approx(12e-9)


# -- invariants ---------------------------------------------------------------------------------

point_st = st.tuples(st.sampled_from(list(MODELS)), st.sampled_from(["OP", "FC-2", "FC-1", "IP"]),
                     st.sampled_from([2, 4, 8, 16]), st.sampled_from([1024, 2048, 8192]),
                     st.floats(25, 1200), st.floats(250, 8000))


def _evaluate(model, sublayer, tp, tokens, link, hbm):
    cfg = build_config("t3-paper", link_bw_GBps=link, hbm_GBps=hbm)
    return evaluate(cfg, sublayer_gemm(MODELS[model], sublayer, tokens, tp), tp, timeline=False)


@settings(max_examples=150, deadline=None)
@given(point_st)
def test_ideal_overlap_bounds_every_scheme_and_t3_never_loses(point):
    r = _evaluate(*point)
    ideal = r["ideal_overlap"].time_s
    for scheme in SCHEMES:
        assert r[scheme].time_s >= ideal * (1 - 1e-9), scheme
    for scheme in ("ideal_rs_nmc", "t3", "t3_mca"):
        assert r[scheme].time_s <= r["sequential"].time_s * (1 + 1e-9), scheme


@settings(max_examples=80, deadline=None)
@given(point_st, st.floats(1.1, 4.0))
def test_faster_links_never_slow_a_scheme(point, factor):
    model, sublayer, tp, tokens, link, hbm = point
    slow, fast = _evaluate(*point), _evaluate(model, sublayer, tp, tokens, link * factor, hbm)
    for scheme in SCHEMES:
        assert fast[scheme].time_s <= slow[scheme].time_s * (1 + 1e-9), scheme


# Slow links, fast DRAM and small-K GEMMs: the communication-bound, uncontended regime.
comm_bound_st = st.tuples(st.sampled_from(list(MODELS)), st.sampled_from(["OP", "IP"]), st.sampled_from([8, 16]),
                          st.sampled_from([1024, 2048, 8192]), st.floats(20, 60), st.floats(3000, 8000))


@settings(max_examples=80, deadline=None)
@given(comm_bound_st, st.floats(1.1, 2.0))
def test_t3_speedup_grows_with_link_bandwidth_while_communication_bound(point, factor):
    """Speedup over sequential is not monotonic in general: it peaks where the RS is as
    long as the GEMM, and a faster link also raises the DRAM pressure of the overlapped
    communication. While the RS is the longer of the two and the DRAM is not contended, it
    grows with link bandwidth."""
    model, sublayer, tp, tokens, link, hbm = point
    slow, fast = _evaluate(*point), _evaluate(model, sublayer, tp, tokens, link * factor, hbm)
    rs_fast = fast["sequential"].time_s - fast["sequential"].gemm_s
    cfg = build_config("t3-paper", link_bw_GBps=link * factor, hbm_GBps=hbm)
    gemm = gemm_timing(sublayer_gemm(MODELS[model], sublayer, tokens, tp), cfg.system.gpu, cfg.kernel)
    uncontended = gemm.demand_bytes_per_s + 2 * cfg.system.link.ring_bytes_per_s <= cfg.system.gpu.dram_bytes_per_s
    # Only that regime is claimed; assume() makes hypothesis look for it (and fail its health
    # check if it cannot), so the test never passes vacuously.
    assume(uncontended and rs_fast / 2 > fast["sequential"].gemm_s * 1.5)
    before = slow["sequential"].time_s / slow["t3_mca"].time_s
    after = fast["sequential"].time_s / fast["t3_mca"].time_s
    assert after >= before * (1 - 1e-9)


# -- validation against the paper ---------------------------------------------------------------

@pytest.fixture(scope="module")
def paper_study():
    cfg = build_config("t3-paper", rtl_timing=None)
    results = run_study(cfg, study_points(), timeline=False)
    return {name: summarise(results, name) for name in ("headline", "palm_mtnlg")}


@pytest.mark.parametrize("figure", [f for f in PAPER_FIGURES if f != "dram_cut_geomean"])
def test_t3_paper_preset_reproduces(paper_study, figure):
    set_name, paper, tolerance = PAPER_FIGURES[figure]
    ours = getattr(paper_study[set_name], figure.removeprefix("palm_mtnlg_"))["t3_mca"]
    assert abs(ours - paper) <= tolerance, f"{figure}: ours {ours:.3f}, paper {paper} +- {tolerance}"


@pytest.mark.xfail(strict=True, reason=(
    "known gap: our DRAM cut is ~33% geomean against the paper's 22%. With the RS accounting of the "
    "issue (software RS: 5 channel crossings per chunk and step; NMC RS: 2) the RS traffic falls by "
    "~60%, and our tiled GEMM reuses its operand panels in the L2, so GEMM traffic is a small share. "
    "See the README's calibration section."))
def test_t3_paper_preset_dram_cut_geomean(paper_study):
    set_name, paper, tolerance = PAPER_FIGURES["dram_cut_geomean"]
    ours = paper_study[set_name].dram_cut_geomean["t3_mca"]
    assert abs(ours - paper) <= tolerance
