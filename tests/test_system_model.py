# amaranth: UnusedElaboratable=no
"""System model: configuration checks, hand-computable formulas, invariants, paper validation."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system_model import build_config
from system_model.block_timing import load_block_timing
from system_model.collectives import (
    CollectiveKernelConfig,
    ag_software_crossings,
    hardware_reduce_scatter,
    rs_nmc_crossings,
    rs_software_crossings,
    software_all_gather,
    software_reduce_scatter,
)
from system_model.gemm import GemmKernelConfig, gemm_timing, stage_tile_rows, tile_order, wave_traffic
from system_model.hardware import PRESETS, GpuConfig, LinkConfig, preset
from system_model.models import MODELS, GemmShape, sublayer_gemm
from system_model.schemes import SCHEMES, evaluate, gemm_alone_s
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
    ("hbm_GBps", 0.5, r"^hbm_GBps must be between 1 and 1000000.0, not 0.5$"),
    ("hbm_GBps", float("inf"), r"^hbm_GBps must be a finite number, not inf$"),
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


@pytest.mark.parametrize(("make", "message"), [
    (lambda: GemmKernelConfig(prefetch_stages=1), r"^prefetch_stages must be between 2 and 16, not 1$"),
    (lambda: CollectiveKernelConfig(unroll=0), r"^unroll must be between 1 and 64, not 0$"),
    (lambda: replace(preset("t3-paper").gpu, dram_queue_entries=1),
     r"^dram_queue_entries must be between 2 and 4096, not 1$"),
    (lambda: replace(preset("t3-paper").gpu, dram_latency_ns=0),
     r"^dram_latency_ns must be between 1 and 100000.0, not 0$"),
])
def test_new_fields_are_checked(make, message):
    with pytest.raises(ValueError, match=message):
        make()


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


TOY_GPU = GpuConfig(cus=2, clock_GHz=1.0, fp16_flops_per_cycle_per_cu=1000, l2_MB=1.0, hbm_GBps=1e6,
                    hbm_efficiency=1.0, mc_clock_GHz=1.0, hbm_channels=1)
TOY_KERNEL = GemmKernelConfig(tile_m=128, tile_n=128, compute_efficiency=1.0)


# -- GEMM: tile order and the L2 ------------------------------------------------------------------

def test_stage_rows_and_tile_order():
    # 4 tile rows in 2 stages of 2; groups of 8 rows are cut at the stage boundary.
    assert stage_tile_rows(512, 128, 2) == (2, 2)
    # 16 tile rows, 32 stages of 64 rows: every other stage lies inside a tile row.
    assert stage_tile_rows(2048, 128, 32) == (1, 0) * 16
    assert tile_order(4, 2, (2, 2), 8) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    with pytest.raises(ValueError, match=r"^stage rows must add up to the 4 tile rows, not 3$"):
        tile_order(4, 2, (2, 1), 8)


def test_l2_reuse_distance_by_hand():
    # 2 tile rows x 4 columns, K = 64, waves of 2 CUs, one stage, groups of 2 rows: the order
    # is column by column, so a wave is (row 0, row 1) x one column.
    shape, kernel = GemmShape(256, 512, 64), GemmKernelConfig(group_rows=2)
    panel = 128 * 64 * 2                     # an A or a B panel: 16 KiB
    out = 128 * 128 * 2                      # an output tile: 32 KiB
    # Wave footprint: 2 A + 1 B panels, plus 2 output tiles when stores allocate.
    # Big L2: only compulsory misses (2 A panels once, every B panel once).
    reads, tiles, ends = wave_traffic(shape, kernel, cus=2, l2_bytes=1e9, stores_cached=True, stages=1)
    assert reads == (3 * panel, panel, panel, panel) and tiles == (2,) * 4 and ends == (3,)
    # An L2 that holds one wave's operands but not its outputs as well: the A panels reused
    # by the next wave hit only when the stores bypass the L2 (T3).
    l2 = 3 * panel + out
    cached, _, _ = wave_traffic(shape, kernel, cus=2, l2_bytes=l2, stores_cached=True, stages=1)
    bypass, _, _ = wave_traffic(shape, kernel, cus=2, l2_bytes=l2, stores_cached=False, stages=1)
    assert cached == (3 * panel,) * 4
    assert bypass == (3 * panel, panel, panel, panel)


def test_gemm_timing_waves_and_compute():
    g = gemm_timing(GemmShape(256, 256, 100), TOY_GPU, TOY_KERNEL, stages=1)
    assert (g.tiles, g.waves, g.wave_tiles) == (4, 2, (2, 2))
    assert g.tile_compute_s == pytest.approx(2 * 128 * 128 * 100 / 1e12)
    assert g.dram_write_bytes == 256 * 256 * 2
    with pytest.raises(ValueError, match=r"^cus must be between 1 and 2, not 3$"):
        gemm_timing(GemmShape(256, 256, 100), TOY_GPU, TOY_KERNEL, stages=1, cus=3)


# -- collectives ---------------------------------------------------------------------------------------

def test_crossings_per_gpu():
    # RCCL's RS: send (1 read), n-2 recvReduceSend (2 reads), recvReduceCopy (2 reads, 1 write),
    # plus the n-1 arrivals written into the FIFO.
    assert rs_software_crossings(8) == (15, 8)
    assert ag_software_crossings(8) == (8, 14)
    assert rs_nmc_crossings(8) == (7, 7)


def test_software_ring_step_by_hand():
    gpu = replace(preset("t3-paper").gpu, dram_latency_ns=400)
    link = LinkConfig(link_bw_GBps=100, link_latency_ns=1000)     # 50 GB/s each way
    kernel = CollectiveKernelConfig()
    rs = software_reduce_scatter(8e6, 4, link, gpu, kernel)
    overhead = (0.4e-6 + 1e-6) + (2e-6 + 0.4e-6)                  # fill + release fence and flag poll
    assert (rs.limit, rs.rate_Bps) == ("link", 50e9)
    assert rs.step_s == pytest.approx(overhead + 2e6 / 50e9)
    assert rs.time_s == pytest.approx(3 * rs.step_s)
    assert (rs.read_bytes, rs.write_bytes) == (pytest.approx(7 * 2e6), pytest.approx(4 * 2e6))
    # One channel is CU-bound: Little's law, 256 threads x 16 B x 4 in flight per 400 ns.
    one = software_reduce_scatter(8e6, 4, replace(link, link_bw_GBps=1e4), gpu, kernel, channels=1)
    assert (one.limit, one.rate_Bps) == ("cus", pytest.approx(256 * 16 * 4 / 400e-9))
    ag = software_all_gather(8e6, 4, link, gpu, kernel)
    assert (ag.read_bytes, ag.write_bytes) == (pytest.approx(4 * 2e6), pytest.approx(6 * 2e6))
    # With a fast link and 16 channels the DRAM binds: three chunk crossings per step.
    fast = software_reduce_scatter(8e6, 4, replace(link, link_bw_GBps=1e4), gpu, kernel)
    assert (fast.limit, fast.rate_Bps) == ("dram", pytest.approx(gpu.dram_bytes_per_s / 3))


def test_hardware_ring_has_no_flags():
    gpu, link = preset("t3-paper").gpu, LinkConfig(link_bw_GBps=100, link_latency_ns=1000)
    hw = hardware_reduce_scatter(8e6, 4, link, gpu, trigger_to_link_s=7e-9, reducer_bytes_per_s=1e12,
                                 tile_bytes=32768)
    # Pipelined across steps at tile granularity: a chunk outlasts a hop, so the trigger, the
    # DMA's read and a link hop are paid once, not per step.
    start = 7e-9 + gpu.dram_latency_ns * 1e-9
    assert hw.step_s == pytest.approx(2e6 / 50e9)
    assert hw.time_s == pytest.approx(start + 3 * 2e6 / 50e9 + 1e-6)
    sw = software_reduce_scatter(8e6, 4, link, gpu, CollectiveKernelConfig())
    assert hw.time_s < sw.time_s
    # A DMA read and a two-unit update per forwarded chunk: DRAM-bound when nothing else is.
    bound = hardware_reduce_scatter(8e6, 4, replace(link, link_bw_GBps=1e4), gpu, trigger_to_link_s=7e-9,
                                    reducer_bytes_per_s=1e13, tile_bytes=32768)
    assert (bound.limit, bound.rate_Bps) == ("dram", pytest.approx(gpu.dram_bytes_per_s / 3))


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
    figures = {"tracker_trigger_latency": 3, "dma_issue_latency": 9, "reducer_requests_per_cycle_ring_stream": 0.5,
               "reducer_write_latency": 2, "reducer_beat_bytes": 32}
    path = tmp_path / "rtl_timing.json"
    path.write_text(json.dumps({"figures": {k: {"value": v} for k, v in figures.items()}}))
    timing = load_block_timing(path)
    assert (timing.trigger_cycles, timing.dma_issue_cycles, timing.reducer_requests_per_cycle) == (3, 9, 0.5)
    assert "rtl_timing.json" in timing.source
    assert timing.trigger_to_link_s(1.0) == pytest.approx(12e-9)


# -- the sublayer schemes: mechanisms on the paper's points ----------------------------------------

@pytest.fixture(scope="module")
def paper_cfg():
    return build_config("t3-paper")


@pytest.fixture(scope="module")
def paper_results(paper_cfg):
    return run_study(paper_cfg, study_points(), timeline=False)


def _gemm_demand(cfg, r) -> float:
    """The GEMM's own DRAM demand (bytes over its time alone) / the DRAM's capacity."""
    gemm = gemm_timing(r.shape, cfg.system.gpu, cfg.kernel, stages=r.point.tp)
    return gemm.dram_read_bytes + gemm.dram_write_bytes, gemm_alone_s(cfg, gemm, nmc=False)


#: The schemes that overlap at most the RS with the GEMM (ideal_overlap bounds them); CU
#: sharing overlaps the whole all-reduce and has its own bound.
RS_OVERLAP = [s for s in SCHEMES if s != "cu_sharing"]


def _whole_all_reduce_bound(cfg, r) -> float:
    """No scheme that overlaps the whole all-reduce beats the GEMM alone or the all-reduce's
    link time alone."""
    chunk = r.shape.m * r.shape.n * cfg.kernel.bytes_per_element / r.point.tp
    return max(r.schemes["sequential"].gemm_s, 2 * (r.point.tp - 1) * chunk / cfg.system.link.ring_bytes_per_s)


def test_ideal_bounds_t3_mca_and_t3_mca_beats_sequential(paper_cfg, paper_results):
    for r in paper_results:
        ideal, mca, seq = (r.schemes[s].time_s for s in ("ideal_overlap", "t3_mca", "sequential"))
        assert ideal <= mca * (1 + 1e-9) and mca < seq, r.point
        for scheme in RS_OVERLAP:
            assert r.schemes[scheme].time_s >= ideal * (1 - 1e-9), (r.point, scheme)
        assert r.schemes["cu_sharing"].time_s >= _whole_all_reduce_bound(paper_cfg, r), r.point


def test_mca_serves_the_gemm_first(paper_cfg, paper_results):
    """The mechanism T3-MCA is for: its GEMM never runs slower than under round-robin."""
    for r in paper_results:
        assert r.schemes["t3_mca"].gemm_s <= r.schemes["t3"].gemm_s * (1 + 1e-3), r.point


def test_mca_strictly_better_somewhere(paper_results):
    assert any(r.speedup("t3_mca") > r.speedup("t3") * 1.001 for r in paper_results)


@pytest.mark.xfail(strict=True, reason=(
    "measured counter-example: MT-NLG prefill OP (its GEMM alone asks ~98% of the DRAM) is 0.2% slower under MCA. "
    "The GEMM saturates its channels, compute-first leaves the RS only the grants the starvation limit "
    "forces, and the RS is the long pole of an OP sublayer; round-robin gives it its link rate. "
    "See the README's model section."))
def test_mca_never_loses_where_the_gemm_is_memory_intensive(paper_cfg, paper_results):
    for r in paper_results:
        traffic, alone_s = _gemm_demand(paper_cfg, r)
        if traffic / alone_s > 0.5 * paper_cfg.system.gpu.dram_bytes_per_s:
            assert r.speedup("t3_mca") >= r.speedup("t3") * (1 - 1e-9), r.point


@pytest.fixture(scope="module")
def contended_cfg():
    """Links of 600 GB/s against 500 GB/s of HBM: communication takes most of each channel."""
    return build_config("t3-paper", link_bw_GBps=600, hbm_GBps=500)


HEADLINE = [p for p in study_points(phases=("training",)) if p.model in ("mega-gpt-2", "t-nlg")]


def test_mca_wins_where_communication_contends_for_dram(contended_cfg):
    results = run_study(contended_cfg, HEADLINE, timeline=False)
    # MCA's GEMM is faster than round-robin's on the geomean. Per point the wave-level
    # property (test_dram_queue: MCA serves a saturating GEMM first) survives the composition
    # only to 2%: a stage's GEMM is stretched over its whole transfer, which MCA makes longer
    # and thinner (T-NLG OP at TP 8: 1.8% slower; bound loosened from 0.1% when transfers
    # became paced by the GEMM, README).
    mca_gemm = [r.schemes["t3_mca"].gemm_s / r.schemes["t3"].gemm_s for r in results]
    assert math.prod(mca_gemm) ** (1 / len(mca_gemm)) < 1
    for r, ratio in zip(results, mca_gemm, strict=True):
        assert ratio <= 1.02, r.point
    # ... and the contention is real: round-robin's GEMM runs slower than alone (on the
    # geomean; the communication a channel sees is paced by the GEMM's own tiles, so the
    # slowdown varies from none to 2.6x across the set), and MCA gains from it.
    slowdowns = [r.schemes["t3"].slowdowns["gemm"] for r in results]
    assert math.prod(slowdowns) ** (1 / len(slowdowns)) > 1.05
    mca, rr = (summarise(results, "headline").speedup_geomean[s] for s in ("t3_mca", "t3"))
    assert mca > rr


def test_a_starvation_limit_below_the_slot_interval_starves_the_gemm(contended_cfg):
    """Two-unit updates at 500 GB/s free a queue slot every ~10 cycles; with a limit of 8 the
    starving communication takes every slot (see test_dram_queue), and T3-MCA loses."""
    starving = replace(contended_cfg, arbiter=replace(contended_cfg.arbiter, starvation_limit_cycles=8))
    results = run_study(starving, HEADLINE[:4], timeline=False)
    assert all(r.speedup("t3_mca") <= r.speedup("t3") * (1 + 1e-9) for r in results)
    assert any(r.speedup("t3_mca") < r.speedup("t3") for r in results)


def test_collective_slowdowns_are_at_least_one(paper_results):
    for r in paper_results:
        assert r.schemes["cu_sharing"].slowdowns["collective"] >= 1 - 1e-9, r.point


def test_t3_near_ideal_on_op_sublayers(paper_results):
    for r in paper_results:
        if r.point.sublayer == "OP":
            assert r.schemes["t3"].time_s <= r.schemes["ideal_overlap"].time_s * 1.05, r.point


def test_near_memory_rs_beats_the_software_rs(paper_results):
    # The software RS is never purely link-bound on t3-paper: every step pays a flag.
    for r in paper_results:
        assert r.speedup("ideal_rs_nmc") > 1.0, r.point


def test_t3_gemm_reads_never_exceed_the_baseline(paper_results):
    for r in paper_results:
        assert r.schemes["t3"].traffic["gemm_reads"] <= r.schemes["sequential"].traffic["gemm_reads"], r.point
    # ... and the bypassing stores save reads on some sublayers.
    assert any(r.schemes["t3"].traffic["gemm_reads"] < 0.9 * r.schemes["sequential"].traffic["gemm_reads"]
               for r in paper_results)


def test_more_cus_for_sharing_slow_the_gemm_and_speed_the_collective(paper_cfg):
    shape = sublayer_gemm(MODELS["t-nlg"], "FC-2", 8192, 8)
    slowdowns = [evaluate(replace(paper_cfg, cu_sharing_cus=k), shape, 8, timeline=False)["cu_sharing"].slowdowns
                 for k in (1, 2, 8, 16)]
    gemm = [s["gemm"] for s in slowdowns]
    collective = [s["collective"] for s in slowdowns]
    assert all(a <= b * (1 + 1e-9) for a, b in zip(gemm, gemm[1:], strict=False)) and gemm[0] < gemm[-1]
    # One CU is Little's-law bound; from two on the ring is link-bound and more CUs change nothing.
    assert all(a >= b * (1 - 1e-9) for a, b in zip(collective, collective[1:], strict=False))
    assert collective[0] > 1.5 * collective[1]


# -- invariants over hardware (hypothesis) ---------------------------------------------------------

hardware_st = st.tuples(st.sampled_from([("mega-gpt-2", "OP", 8), ("t-nlg", "FC-2", 16), ("gpt-3", "IP", 32)]),
                        st.sampled_from([2048, 8192]), st.sampled_from([75, 150, 300]),
                        st.sampled_from([500, 1000, 2000]), st.sampled_from([4, 16, 64]))


def _evaluate(point, tokens, link, hbm, l2):
    model, sublayer, tp = point
    cfg = build_config("t3-paper", link_bw_GBps=link, hbm_GBps=hbm, l2_MB=l2)
    return evaluate(cfg, sublayer_gemm(MODELS[model], sublayer, tokens, tp), tp, timeline=False)


@settings(max_examples=12, deadline=None)
@given(hardware_st)
def test_invariants_hold_across_hardware(args):
    """T3 beating sequential is claimed only where DRAM is not the bottleneck: a near-memory
    update holds its bank twice as long as a plain access, so per GPU T3 spends 5n - 6 chunks
    of bank time on the RS where RCCL spends 4n - 1, and at 500 GB/s a memory-bound GEMM pays
    for it (GPT-3 prefill FC-2 at TP 32, 300 GB/s links: T3 8% slower than sequential; README,
    model section)."""
    point, tokens, link, hbm, l2 = args
    r = _evaluate(*args)
    ideal, seq = r["ideal_overlap"].time_s, r["sequential"].time_s
    for scheme in RS_OVERLAP:
        assert r[scheme].time_s >= ideal * (1 - 1e-9), scheme
    assert r["ideal_rs_nmc"].time_s < seq
    if hbm >= 1000:
        assert r["t3_mca"].time_s <= seq and r["t3"].time_s <= seq
    assert r["t3"].traffic["gemm_reads"] <= r["sequential"].traffic["gemm_reads"]


def test_near_memory_updates_can_lose_where_dram_is_the_bottleneck():
    """The measured counter-example of the docstring above, kept so that it stays explained."""
    r = _evaluate(("gpt-3", "FC-2", 32), 2048, 300, 500, 16)
    assert r["t3"].time_s > r["sequential"].time_s


@settings(max_examples=8, deadline=None)
@given(hardware_st.filter(lambda args: args[3] >= 1000))
def test_faster_links_never_slow_a_scheme_while_dram_is_plentiful(args):
    """Not claimed when HBM is scarce: at 500 GB/s a link of 600 GB/s makes T3's overlapped
    communication take DRAM slots from a memory-bound GEMM faster than it saves link time
    (measured: T-NLG FC-2 TP 16, link 300 -> 600 GB/s: T3 +12%, T3-MCA +6%; README, model
    section)."""
    point, tokens, link, hbm, l2 = args
    slow, fast = _evaluate(*args), _evaluate(point, tokens, link * 2, hbm, l2)
    for scheme in SCHEMES:
        assert fast[scheme].time_s <= slow[scheme].time_s * (1 + 1e-3), scheme


# -- validation against the paper ---------------------------------------------------------------

@pytest.fixture(scope="module")
def paper_study(paper_results):
    return {name: summarise(paper_results, name) for name in ("headline", "palm_mtnlg")}


@pytest.mark.parametrize("figure", [f for f in PAPER_FIGURES if f != "dram_cut_max"])
def test_t3_paper_preset_reproduces(paper_study, figure):
    set_name, paper, tolerance = PAPER_FIGURES[figure]
    ours = getattr(paper_study[set_name], figure.removeprefix("palm_mtnlg_"))["t3_mca"]
    assert abs(ours - paper) <= tolerance, f"{figure}: ours {ours:.3f}, paper {paper} +- {tolerance}"


@pytest.mark.xfail(strict=True, reason=(
    "known gap: our largest DRAM cut is ~30% against the paper's 36%. With RCCL's ring kernels counted, "
    "T3 removes (n + 3) of the baseline's (7n - 3) chunk crossings per GPU (21% at n = 8) plus what the "
    "uncached stores save in GEMM reads; the paper's 36% fits a count without the all-gather (which both "
    "schemes share). See the README's model section."))
def test_t3_paper_preset_dram_cut_max(paper_study):
    set_name, paper, tolerance = PAPER_FIGURES["dram_cut_max"]
    ours = paper_study[set_name].dram_cut_max["t3_mca"]
    assert abs(ours - paper) <= tolerance
