# amaranth: UnusedElaboratable=no
"""System model: configuration checks, hand-computable formulas, invariants, paper validation."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system_model.describe.block_timing import load_block_timing
from system_model.describe.config import StudyConfig
from system_model.describe.fabric import FabricConfig
from system_model.describe.hardware import GpuConfig, SystemConfig
from system_model.describe.kernels import GemmKernelConfig
from system_model.describe.models import MODELS, GemmShape, sublayer_gemm
from system_model.describe.presets import PLATFORMS, PRESETS, preset
from system_model.describe.transport import TransportConfig
from system_model.kernels.collectives import crossings, hardware_rs_crossings, plan
from system_model.kernels.gemm import gemm_timing, stage_row_overlaps, stage_tile_rows, tile_order, wave_traffic
from system_model.schemes import BOUNDS, PAPER_SCHEMES, evaluate
from system_model.schemes.context import Sublayer
from system_model.schemes.t3 import hardware_rs_on_timeline, hardware_rs_s, t3_ring
from system_model.studies.study import PAPER_FIGURES, run_study, study_points, summarise


def _config(name: str = "t3-paper", **changes) -> StudyConfig:
    """A preset's study configuration, with hardware fields changed by name."""
    cfg = PLATFORMS[name].study_config()
    return replace(cfg, system=cfg.system.with_changes(**changes)) if changes else cfg


# -- configuration --------------------------------------------------------------------------


def test_presets_validate_and_cite_sources():
    for name, system in PRESETS.items():
        assert system.name == name and system.source
    paper = preset("t3-paper")
    assert paper.gpu.cus == 80 and paper.fabric.link_latency_ns == 500


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


def test_fabric_config_wrong_directions():
    # The ring's directions moved from the old LinkConfig to the fabric.
    with pytest.raises(ValueError, match=r"^ring_directions must be between 1 and 2, not 3$"):
        replace(preset("t3-paper").fabric, ring_directions=3)


def test_with_changes_rejects_unknown_field():
    with pytest.raises(ValueError, match=r"^unknown hardware field\(s\): warp_size$"):
        preset("t3-paper").with_changes(warp_size=64)


def test_kernel_config_wrong_efficiency():
    with pytest.raises(ValueError, match=r"^compute_efficiency must be between 0.01 and 1.0, not 0$"):
        GemmKernelConfig(compute_efficiency=0)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: GemmKernelConfig(prefetch_stages=1), r"^prefetch_stages must be between 2 and 16, not 1$"),
    # The collective's kernel (its CUs) is now the transport's channels.
    (lambda: TransportConfig(channels=0), r"^channels must be between 1 and 1024, not 0$"),
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
    order = [tuple(t) for t in tile_order(4, 2, (2, 2), 8).tolist()]
    assert order == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    with pytest.raises(ValueError, match=r"^stage rows must add up to the 4 tile rows, not 3$"):
        tile_order(4, 2, (2, 1), 8)


def test_stages_dispatched_together_by_hand():
    """Four stages of one tile row each in a raster of groups of 2 rows. Stage by stage every
    stage walks the 2 tile columns on its own, and with an L2 that holds no panel across
    waves each stage reads both B panels again; two stages dispatched together walk their
    2 rows column by column, share each B panel, and end together."""
    assert [tuple(t) for t in tile_order(4, 2, (1, 1, 1, 1), 2, 2).tolist()] == [
        (0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    assert [tuple(t) for t in tile_order(4, 2, (1, 1, 1, 1), 2).tolist()] == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]
    # 4 x 4 tiles, K = 64, waves of 2 CUs, an L2 of one wave's three panels (stores bypass).
    shape, kernel = GemmShape(512, 512, 64), GemmKernelConfig(group_rows=2)
    panel = 128 * 64 * 2
    gpu = replace(TOY_GPU, l2_MB=3 * panel / 1e6)
    apart = gemm_timing(shape, gpu, kernel, stages=4, stores_cached=False)
    together = gemm_timing(shape, gpu, kernel, stages=4, stores_cached=False, stage_group=2)
    # Apart, a wave is one row x 2 columns (1 A + 2 B panels): a B panel comes back two waves
    # later, 6 panels on, and misses: every stage reads the 4 B panels, 4 x 4 + 4 A = 20.
    # Together, a wave is 2 rows x 1 column (2 A + 1 B): the A panels hit in the next wave,
    # and each pair of stages reads the 4 B panels once: 2 x 4 + 4 A = 12.
    assert apart.dram_read_bytes == 20 * panel
    assert together.dram_read_bytes == 12 * panel
    assert apart.wave_tiles == together.wave_tiles == (2,) * 8
    assert apart.stage_end_waves == (1, 3, 5, 7)
    assert together.stage_end_waves == (3, 3, 7, 7)
    assert (apart.stage_group, together.stage_group) == (1, 2)
    with pytest.raises(ValueError, match=r"^stage_group must be between 1 and 4, not 5$"):
        gemm_timing(shape, gpu, kernel, stages=4, stage_group=5)


def test_l2_reuse_distance_by_hand():
    # 2 tile rows x 4 columns, K = 64, waves of 2 CUs, one stage, groups of 2 rows: the order
    # is column by column, so a wave is (row 0, row 1) x one column.
    shape, kernel = GemmShape(256, 512, 64), GemmKernelConfig(group_rows=2)
    panel = 128 * 64 * 2                     # an A or a B panel: 16 KiB
    out = 128 * 128 * 2                      # an output tile: 32 KiB
    # Wave footprint: 2 A + 1 B panels, plus 2 output tiles when stores allocate.
    # Big L2: only compulsory misses (2 A panels once, every B panel once).
    reads, tiles, stage_tiles, stage_bytes, _, by_wave = wave_traffic(shape, kernel, cus=2, l2_bytes=1e9,
                                                                     stores_cached=True, stages=1)
    assert reads == (3 * panel, panel, panel, panel) and tiles == (2,) * 4
    assert stage_tiles == (8,) and stage_bytes == (256 * 512 * 2,)
    assert by_wave == (((0, 2 * out),),) * 4           # each wave completes two tiles of the stage
    # The one stage ends with the last of the 4 waves.
    big_l2 = replace(TOY_GPU, l2_MB=1e3)
    assert gemm_timing(shape, big_l2, kernel, stages=1).stage_end_waves == (3,)
    # An L2 that holds one wave's operands but not its outputs as well: the A panels reused
    # by the next wave hit only when the stores bypass the L2 (T3).
    l2 = 3 * panel + out
    cached, *_ = wave_traffic(shape, kernel, cus=2, l2_bytes=l2, stores_cached=True, stages=1)
    bypass, *_ = wave_traffic(shape, kernel, cus=2, l2_bytes=l2, stores_cached=False, stages=1)
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
    assert crossings("reduce_scatter", 8) == (15, 8)
    assert crossings("all_gather", 8) == (8, 14)
    assert crossings("all_reduce", 8) == (15 + 8, 8 + 14)
    # T3's RS: the DMA reads every chunk it forwards, every arrival is a near-memory update.
    assert hardware_rs_crossings(8) == (7, 7)


#: A ring of 4 GPUs with 100 GB/s links (50 GB/s each way, one direction used), 1 us hops,
#: payload efficiency 1, RCCL with 16 channels of 6 GB/s.
TOY_FABRIC = FabricConfig(topology="ring", link_bw_GBps_per_link=100, links_per_gpu=2, link_latency_ns=1000,
                          domain_gpus=64,
                          scale_out_GBps_per_gpu=50, scale_out_latency_ns=1000, ring_directions=1)
TOY_TRANSPORT = TransportConfig(library="rccl", generation="cdna2", sm_link_efficiency=1.0, ce_link_efficiency=1.0,
                                channels=16, channel_GBps=6.0)


def test_software_ring_by_hand():
    """The library's ring on 8 MB over 4 GPUs: link-bound at 50 GB/s, 2 MB chunks."""
    rs = plan("reduce_scatter", 8e6, 4, TOY_FABRIC, TOY_TRANSPORT)
    assert (rs.algorithm, rs.protocol) == ("ring", "simple")
    assert rs.bus_Bps == pytest.approx(50e9)
    # n - 1 = 3 steps of a 2 MB chunk at the link's rate, after the library's latency.
    assert rs.latency_s > 0 and rs.time_s == pytest.approx(rs.latency_s + 3 * 2e6 / 50e9)
    assert rs.egress_bytes == pytest.approx(3 * 2e6)
    assert (rs.dram_read_bytes, rs.dram_write_bytes) == (pytest.approx(7 * 2e6), pytest.approx(4 * 2e6))
    # nccl-tests' busbw of the run: the bytes x (n - 1) / n over its whole time.
    assert rs.busbw_GBps == pytest.approx(8e6 * 3 / 4 / rs.time_s / 1e9)
    # One channel (one CU) moves at most channel_GBps: the ring is channel-bound.
    one = plan("reduce_scatter", 8e6, 4, TOY_FABRIC, TOY_TRANSPORT, channels=1)
    assert one.bus_Bps == pytest.approx(6e9) and one.time_s > rs.time_s
    ag = plan("all_gather", 8e6, 4, TOY_FABRIC, TOY_TRANSPORT)
    assert (ag.dram_read_bytes, ag.dram_write_bytes) == (pytest.approx(4 * 2e6), pytest.approx(6 * 2e6))
    # With a fast link the 16 channels bind (16 x 6 GB/s); the DRAM's share is the timeline's.
    fast = plan("reduce_scatter", 8e6, 4, replace(TOY_FABRIC, link_bw_GBps_per_link=1e4), TOY_TRANSPORT)
    assert fast.bus_Bps == pytest.approx(16 * 6e9)


def _toy_sublayer(fabric: FabricConfig) -> Sublayer:
    """An 8 MB output (2000 x 2000 fp16) reduce-scattered over 4 GPUs of the toy ring."""
    gpu = replace(preset("t3-paper").gpu, dram_latency_ns=400)
    cfg = StudyConfig(system=SystemConfig("toy", gpu, fabric, TOY_TRANSPORT), block=load_block_timing(None))
    return Sublayer(cfg, GemmShape(2000, 2000, 64), 4, "reduce_scatter")


def test_hardware_ring_has_no_flags():
    sub = _toy_sublayer(TOY_FABRIC)
    gpu, block = sub.gpu, sub.block
    chunk, tile = 2e6, 128 * 128 * 2
    # A tile's trigger (tracker + DMA issue, in controller cycles) and the DMA's first read.
    start = (block.trigger_cycles + block.dma_issue_cycles) / (gpu.mc_clock_GHz * 1e9) + 400e-9
    write = block.reducer_write_cycles / (gpu.mc_clock_GHz * 1e9)
    # Pipelined across steps at tile granularity: a chunk outlasts a hop, so the trigger, the
    # DMA's read and a link hop are paid once, not per step.
    assert chunk / 50e9 > 1e-6 + start + tile / 50e9
    hw = hardware_rs_s(sub)
    assert hw == pytest.approx(start + 3 * chunk / 50e9 + 1e-6 + write)
    # The closed form is the engine's run of the same flows.
    assert hardware_rs_on_timeline(sub) == pytest.approx(hw, rel=1e-9)
    # No flags and no per-step library latency: faster than the library's ring RS alone.
    assert hw < plan("reduce_scatter", 8e6, 4, TOY_FABRIC, TOY_TRANSPORT).time_s
    # A DMA read and a two-unit update per forwarded byte: DRAM-bound when nothing else is.
    fast = _toy_sublayer(replace(TOY_FABRIC, link_bw_GBps_per_link=1e4))
    rate = gpu.dram_bytes_per_s / (1 + gpu.nmc_update_units)
    assert rate < block.reducer_bytes_per_s(gpu.mc_clock_GHz, gpu.hbm_channels) and rate < 5e12
    assert hardware_rs_s(fast) == pytest.approx(start + 3 * chunk / rate + 1e-6 + write)
    assert hardware_rs_on_timeline(fast) == pytest.approx(hardware_rs_s(fast), rel=1e-9)


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
    return _config("t3-paper")


@pytest.fixture(scope="module")
def paper_results(paper_cfg):
    return run_study(paper_cfg, study_points(), timeline=False)


#: The schemes each result is held under its ideal for (the ideals themselves excluded).
HELD = [s for s in PAPER_SCHEMES if s not in BOUNDS.values()]


def _whole_all_reduce_bound(cfg, r) -> float:
    """Written from the hardware alone: no scheme that overlaps the whole all-reduce beats its
    GEMM's matrix work on every CU at the best kernel's efficiency, nor the all-reduce's
    bytes (2(n - 1)/n of the tensor each way) over the ring's links at line rate."""
    gpu, fabric = cfg.system.gpu, cfg.system.fabric
    s = r.shape
    efficiency = max(k.compute_efficiency for k in cfg.kernels)
    flops = 2 * s.m * s.n * s.k / (gpu.peak_fp16_flops * efficiency)
    total = s.m * s.n * cfg.kernel.bytes_per_element
    tp = r.point.tp
    link = fabric.ring_directions * fabric.link_Bps
    return max(flops, 2 * (tp - 1) / tp * total / link)


def test_ideal_bounds_t3_mca_and_t3_mca_beats_sequential(paper_cfg, paper_results):
    for r in paper_results:
        ideal, mca, seq = (r.schemes[s].time_s for s in ("ideal_overlap", "t3_mca", "sequential"))
        assert ideal <= mca * (1 + 1e-9) and mca < seq, r.point
        for scheme in HELD:
            res = r.schemes[scheme]
            for bound in {BOUNDS[res.bound], "ideal_all_reduce"}:
                assert res.time_s >= r.schemes[bound].time_s * (1 - 1e-9), (r.point, scheme, bound)
        # T3 hides only the RS: it is held under ideal_overlap; CU sharing hides the all-gather too.
        assert r.schemes["t3"].bound == r.schemes["t3_mca"].bound == "ideal_rs"
        assert r.schemes["cu_sharing"].bound == "ideal_ar"
        assert r.schemes["cu_sharing"].time_s >= _whole_all_reduce_bound(paper_cfg, r), r.point
        assert r.schemes["ideal_all_reduce"].time_s >= _whole_all_reduce_bound(paper_cfg, r) * (1 - 1e-9), r.point


def test_mca_serves_the_gemm_first(paper_results):
    """The mechanism T3-MCA is for: its GEMM never runs slower than under round-robin."""
    for r in paper_results:
        assert r.schemes["t3_mca"].gemm_s <= r.schemes["t3"].gemm_s * (1 + 1e-3), r.point


def test_mca_never_loses(paper_results):
    """The runtime leaves the arbiter in round robin where compute-first is slower (the
    paper sets the mode and threshold per GEMM), so T3-MCA never loses to T3, the
    memory-intensive GEMMs included (the old model's counter-example, MT-NLG prefill OP)."""
    for r in paper_results:
        assert r.speedup("t3_mca") >= r.speedup("t3") * (1 - 1e-12), r.point
        assert r.schemes["t3_mca"].slowdowns["mode_mca"] in (0.0, 1.0)


@pytest.fixture(scope="module")
def contended_cfg():
    """Links of 600 GB/s against 500 GB/s of HBM: communication takes most of each channel."""
    return _config("t3-paper", link_bw_GBps_per_link=600, hbm_GBps=500)


HEADLINE = [p for p in study_points(phases=("training",)) if p.model in ("mega-gpt-2", "t-nlg")]


def test_mca_wins_where_communication_contends_for_dram(contended_cfg):
    results = run_study(contended_cfg, HEADLINE, timeline=False)
    # MCA's GEMM is faster than round-robin's on the geomean, and per point (its mode is
    # chosen per GEMM) no more than 2% slower.
    mca_gemm = [r.schemes["t3_mca"].gemm_s / r.schemes["t3"].gemm_s for r in results]
    assert math.prod(mca_gemm) ** (1 / len(mca_gemm)) < 1
    for r, ratio in zip(results, mca_gemm, strict=True):
        assert ratio <= 1.02, r.point
    # ... and the contention is real: round-robin's GEMM runs slower than alone (on the
    # geomean), and MCA gains from it: strictly better somewhere, better on the geomean.
    slowdowns = [r.schemes["t3"].slowdowns["gemm"] for r in results]
    assert math.prod(slowdowns) ** (1 / len(slowdowns)) > 1.05
    assert any(r.speedup("t3_mca") > r.speedup("t3") * 1.001 for r in results)
    mca, rr = (summarise(results, "headline").speedup_geomean[s] for s in ("t3_mca", "t3"))
    assert mca > rr


def test_a_starvation_limit_below_the_slot_interval_starves_the_gemm(contended_cfg):
    """Two-unit updates at 500 GB/s free a queue slot every ~10 cycles; with a limit of 8 the
    starving communication takes every slot (see test_dram_queue): compute-first's GEMM runs
    slower than under the default limit, the mode loses to round robin, and the runtime
    leaves the arbiter in round robin (T3-MCA is T3)."""
    starving = replace(contended_cfg, arbiter=replace(contended_cfg.arbiter, starvation_limit_cycles=8))
    lost = 0
    for p in HEADLINE[:4]:
        shape = sublayer_gemm(MODELS[p.model], p.sublayer, starving.workload.tokens(p.phase), p.tp)
        starved = t3_ring(Sublayer(starving, shape, p.tp), policy="mca")
        default = t3_ring(Sublayer(contended_cfg, shape, p.tp), policy="mca")
        rr = t3_ring(Sublayer(starving, shape, p.tp), policy="rr")
        assert starved.gemm_s > default.gemm_s, p
        assert starved.time_s >= rr.time_s * (1 - 1e-9), p
        lost += starved.time_s > rr.time_s * (1 + 1e-6)
    assert lost > 0
    results = run_study(starving, HEADLINE[:4], timeline=False)
    for r in results:
        assert r.schemes["t3_mca"].time_s == pytest.approx(r.schemes["t3"].time_s, rel=1e-12), r.point


def test_collective_slowdowns_are_at_least_one(paper_results):
    for r in paper_results:
        assert r.schemes["cu_sharing"].slowdowns["collective"] >= 1 - 1e-9, r.point


def test_t3_near_ideal_on_op_sublayers(paper_results):
    for r in paper_results:
        if r.point.sublayer == "OP":
            assert r.schemes["t3"].time_s <= r.schemes["ideal_overlap"].time_s * 1.05, r.point


def test_near_memory_rs_beats_the_software_rs(paper_results):
    # The library's RS pays a latency per step and runs on its CUs' channels; T3's does not.
    for r in paper_results:
        assert r.speedup("ideal_rs_nmc") > 1.0, r.point


def test_t3_gemm_reads_never_exceed_the_same_gemm_with_cached_stores(paper_cfg, paper_results):
    """T3's tracked stores bypass the L2, leaving it to the operands: its staged GEMM never
    reads more than the same staged order with write-allocating stores, and saves reads on
    some sublayers."""
    gpu = paper_cfg.system.gpu
    saved = 0
    for r in paper_results:
        kernel = Sublayer(paper_cfg, r.shape, r.point.tp).kernel
        # (each cut T3 may take: by rows, and for an all-reduce of few rows by columns)
        layouts = Sublayer(paper_cfg, r.shape, r.point.tp).stage_layouts
        staged = {cols: [gemm_timing(r.shape, gpu, kernel, stages=r.point.tp, stores_cached=c,
                                     stage_columns=cols).dram_read_bytes for c in (False, True)]
                  for cols in layouts}
        assert any(r.schemes["t3"].traffic["gemm_reads"] == pytest.approx(s[0]) for s in staged.values()), r.point
        assert all(s[0] <= s[1] for s in staged.values()), r.point
        saved += any(s[0] < 0.9 * s[1] for s in staged.values())
    assert saved > 0


def test_t3_gemm_reads_never_exceed_the_baseline_on_the_headline_set(paper_results):
    headline = [r for r in paper_results if r.point.phase == "training" and r.point.model in ("mega-gpt-2", "t-nlg")]
    assert len(headline) == 16
    for r in headline:
        assert r.schemes["t3"].traffic["gemm_reads"] <= r.schemes["sequential"].traffic["gemm_reads"], r.point
    # ... and the bypassing stores save reads on some sublayers.
    assert any(r.schemes["t3"].traffic["gemm_reads"] < 0.9 * r.schemes["sequential"].traffic["gemm_reads"]
               for r in headline)


def test_t3_staging_rereads_what_the_l2_cannot_hold(paper_results):
    """T3's GEMM runs its output in tp row stages (the chunks its ring forwards); the
    library's baseline runs groups of 8 tile rows. Where a stage is fewer tile rows than a
    group and the second operand outgrows the L2, every stage re-reads it: at TP 32 T3 reads
    more than the baseline (README, "T3 at TP 32"), on the headline set never."""
    tp32 = [r for r in paper_results if r.point.tp == 32]
    assert tp32 and any(r.schemes["t3"].traffic["gemm_reads"] > 2 * r.schemes["sequential"].traffic["gemm_reads"]
                        for r in tp32)


def test_more_cus_for_sharing_slow_the_gemm_and_speed_the_collective(paper_cfg):
    shape = sublayer_gemm(MODELS["t-nlg"], "FC-2", 8192, 8)
    slowdowns = [evaluate(replace(paper_cfg, cu_sharing_cus=k), shape, 8, schemes=("cu_sharing",))["cu_sharing"]
                 .slowdowns for k in (1, 2, 8, 16)]
    gemm = [s["gemm"] for s in slowdowns]
    collective = [s["collective"] for s in slowdowns]
    assert all(a <= b * (1 + 1e-9) for a, b in zip(gemm, gemm[1:], strict=False)) and gemm[0] < gemm[-1]
    assert all(a >= b * (1 - 1e-9) for a, b in zip(collective, collective[1:], strict=False))
    # One CU and two are both channel-bound (k x channel_GBps below the link's 75 GB/s): the
    # second CU doubles the ring's rate, so the collective takes little more than half as long.
    t = paper_cfg.system.transport
    assert 2 * t.channel_GBps * 1e9 < paper_cfg.system.fabric.link_Bps * t.sm_link_efficiency
    assert collective[0] > 1.5 * collective[1]


# -- invariants over hardware (every point of a grid) -----------------------------------------------

GRID = list(itertools.product([("mega-gpt-2", "OP", 8), ("t-nlg", "FC-2", 16), ("gpt-3", "IP", 32)],
                              [2048, 8192], [75, 150, 300], [500, 1000, 2000], [4, 16, 64]))


def _grid_point(point, tokens, link, hbm, l2):
    model, sublayer, tp = point
    cfg = _config("t3-paper", link_bw_GBps_per_link=link, hbm_GBps=hbm, l2_MB=l2)
    return cfg, sublayer_gemm(MODELS[model], sublayer, tokens, tp), tp


def _evaluate(*args):
    cfg, shape, tp = _grid_point(*args)
    return evaluate(cfg, shape, tp, schemes=PAPER_SCHEMES)


def test_invariants_hold_across_hardware():
    """T3 beating sequential is claimed only where DRAM is not the bottleneck: a near-memory
    update holds its bank twice as long as a plain access, and at 500 GB/s a memory-bound
    GEMM pays for it (and a staged order that repeats reads would:
    test_stages_smaller_than_a_raster_group_may_be_dispatched_together)."""
    for args in GRID:
        point, tokens, link, hbm, l2 = args
        r = _evaluate(*args)
        seq = r["sequential"].time_s
        for scheme in HELD:
            for bound in {BOUNDS[r[scheme].bound], "ideal_all_reduce"}:
                assert r[scheme].time_s >= r[bound].time_s * (1 - 1e-9), (args, scheme, bound)
        assert r["ideal_rs_nmc"].time_s < seq, args
        if hbm >= 1000:
            assert r["t3_mca"].time_s <= seq and r["t3"].time_s <= seq, args
        # T3's bypassing stores never add reads to its staged GEMM (the same order with
        # write-allocating stores; the library's unstaged order: test_t3_staging_rereads_...).
        cfg, shape, tp = _grid_point(*args)
        cached = gemm_timing(shape, cfg.system.gpu, Sublayer(cfg, shape, tp).kernel, stages=tp).dram_read_bytes
        assert r["t3"].traffic["gemm_reads"] <= cached, args


def test_stages_smaller_than_a_raster_group_may_be_dispatched_together():
    """GPT-3's prefill FC-2 at TP 32 (16 tile rows for 32 stages) as a reduce-scatter, which
    must leave each GPU its rows, at 500 GB/s. Stage after stage, each half a tile row, the
    staged order walks the second operand's 12,288 columns once per tile row and re-reads it
    (more than 4x the library's reads): that layout loses to sequential. Dispatched as whole
    raster groups (``Sublayer.stage_groups``: the stages of one group end together) the GEMM
    reads what the library reads, and T3, which keeps its fastest layout, beats sequential.
    Before T3 was offered the grouped layout it lost here (2,037 against 1,476 us)."""
    cfg, shape, tp = _grid_point(("gpt-3", "FC-2", 32), 2048, 300, 500, 16)
    sub = Sublayer(cfg, shape, tp, "reduce_scatter")
    assert sub.stage_groups()[0] == 1 and len(sub.stage_groups()) > 1
    stage_by_stage = t3_ring(sub, policy="rr", gemm=sub.gemm(stages=tp, stores_cached=False))
    r = evaluate(cfg, shape, tp, schemes=("t3", "sequential"), collective="reduce_scatter")
    assert stage_by_stage.time_s > r["sequential"].time_s
    assert stage_by_stage.traffic["gemm_reads"] > 4 * r["sequential"].traffic["gemm_reads"]
    assert r["t3"].time_s < r["sequential"].time_s
    assert r["t3"].traffic["gemm_reads"] <= r["sequential"].traffic["gemm_reads"] * (1 + 1e-9)


def test_faster_links_never_slow_a_scheme_beyond_its_transfers_dram_time():
    """Twice the link bandwidth: T3-MCA never slower (0.1%); every scheme at most 0.1% plus
    its transfers' own DRAM time, the most a faster transfer can take from the GEMM under
    round-robin arbitration (tests/test_invariants.py explains the allowance)."""
    rises = []
    for args in GRID:
        point, tokens, link, hbm, l2 = args
        cfg, _, _ = _grid_point(*args)
        slow, fast = _evaluate(*args), _evaluate(point, tokens, link * 2, hbm, l2)
        for scheme in PAPER_SCHEMES:
            contention = slow[scheme].transfer_dram_s(cfg.system.gpu.dram_bytes_per_s)
            allowed = slow[scheme].time_s * 1e-3 + (0.0 if scheme == "t3_mca" else contention)
            if fast[scheme].time_s > slow[scheme].time_s + allowed:
                rises.append(f"{args} {scheme}: {fast[scheme].time_s / slow[scheme].time_s - 1:+.3%}")
    assert not rises, "link x2 made a scheme slower:\n" + "\n".join(rises)


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
    "known gap: the model's largest DRAM cut on the headline set is well below the paper's 36%. T3 removes the "
    "software RS's chunk crossings (2n - 1 reads and n writes per GPU, against n - 2 DMA reads and n - 1 updates) "
    "and what the uncached stores save in GEMM reads; the all-gather, which both schemes run, stays in both "
    "counts."))
def test_t3_paper_preset_dram_cut_max(paper_study):
    set_name, paper, tolerance = PAPER_FIGURES["dram_cut_max"]
    ours = paper_study[set_name].dram_cut_max["t3_mca"]
    assert abs(ours - paper) <= tolerance


def test_stages_are_the_chunks_whatever_the_tile_rows():
    """Every stage is output / stages bytes, its rows of C: with fewer rows than stages x
    tile_m several stages share a tile row (a decode step's one row is 8 chunks at TP 8),
    each done when that tile row is, none empty."""
    rows, stages_of, shared = stage_row_overlaps(1, 128, 8)
    assert rows.tolist() == [0] * 8 and stages_of.tolist() == list(range(8))
    assert shared.tolist() == pytest.approx([1 / 8] * 8)
    # 300 rows in 128-row tiles and 8 stages of 37.5 rows: tile row 1 (rows 128-255) holds
    # the end of stage 3, stages 4-5 and the start of stage 6.
    rows, stages_of, shared = stage_row_overlaps(300, 128, 8)
    one = {int(s): float(x) for r, s, x in zip(rows, stages_of, shared, strict=True) if r == 1}
    assert one == pytest.approx({3: 150 - 128, 4: 37.5, 5: 37.5, 6: 256 - 225})


@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 5000), n=st.integers(1, 3000), stages=st.integers(1, 64), cus=st.integers(1, 200),
       tile=st.sampled_from([(64, 64), (128, 128), (256, 128)]), split=st.sampled_from([1, 2, 4]),
       columns=st.booleans())
def test_waves_complete_each_stage_exactly(m, n, stages, cus, tile, split, columns):
    """The waves' output, stage by stage, adds up to each stage's share of C (m / stages rows,
    or by columns n / stages columns: the same bytes), and a stage's bytes all exist by its
    end wave (conservation of the output, whatever the tiles and the cut)."""
    shape, kernel = GemmShape(m, n, 64), GemmKernelConfig(tile_m=tile[0], tile_n=tile[1], split_k=split)
    g = gemm_timing(shape, replace(TOY_GPU, cus=200), kernel, stages=stages, cus=cus, stage_columns=columns)
    assert g.tiles == sum(g.wave_tiles) == sum(g.stage_tiles)
    assert g.stage_bytes == pytest.approx((m / stages * n * 2,) * stages)
    got = [0.0] * stages
    for w, parts in enumerate(g.stage_bytes_by_wave):
        for s, b in parts.items():
            assert w <= g.stage_end_waves[s], f"wave {w} completes stage {s} after its end wave"
            got[s] += b
    assert got == pytest.approx(list(g.stage_bytes), rel=1e-9)
