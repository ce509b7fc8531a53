# amaranth: UnusedElaboratable=no
"""The system model against the RTL ring's recorded results (``make crosscheck``), without a
simulator: every full-size scenario and schedule is recorded, the model (run now) is within
the tolerances chosen before the first comparison, and the committed table is current."""

from __future__ import annotations

import functools
import json
import math
import re
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtl.gemm_ring import GemmRing
from system_model.describe.models import GemmShape
from system_model.schemes.context import Sublayer
from system_model.schemes.t3 import hardware_rs_from_s, hardware_rs_s, ring_chains, ring_step_Bps
from system_model.studies import crosscheck as xc
from tb.gemm_ring.scenarios import SCHEDULES, MicroGemm, MicroSystem, scenarios

RECORDED = xc.load_recorded()


def test_tolerances_are_the_issues():
    """10 % on total cycles; 5 points on the T3-MCA vs round-robin difference."""
    assert xc.TOLERANCE_TOTAL == 0.10 and xc.TOLERANCE_MCA_POINTS == 5.0


def test_every_full_scenario_is_recorded():
    assert RECORDED["size"] == "full"
    recorded = {(r["scenario"], r["gpus"], r["schedule"]) for r in RECORDED["runs"]}
    wanted = {(s.name, s.system.gpus, k) for s in scenarios("full") for k in SCHEDULES}
    assert recorded == wanted
    assert {s.system.gpus for s in scenarios("full")} == {4, 8}
    assert all(r["tiles_per_gpu"] >= 256 for r in xc.entries(RECORDED["runs"], "full"))


def test_model_within_tolerance_of_the_rtl():
    found = xc.entries(RECORDED["runs"], "full")
    assert len(found) == len(scenarios("full"))
    assert xc.violations(found) == []


def test_committed_table_is_current():
    """sim_results/crosscheck.md is what the model says now about the recorded RTL runs."""
    table = xc.crosscheck_markdown(xc.entries(RECORDED["runs"], "full"))
    assert (xc.CROSSCHECK_JSON.parent / "crosscheck.md").read_text() == table


def test_violations_catch_each_miss():
    """The checker fails on an error over 10 %, on an opposite sign, and on a gap over 5 points."""
    def entry(rr_rtl, mca_rtl, rr_model, mca_model):
        rtl = {"t3": {"total_cycles": rr_rtl, "gemm_cycles": 1}, "t3_mca": {"total_cycles": mca_rtl, "gemm_cycles": 1},
               "sequential": {"total_cycles": 2000, "gemm_cycles": 1}}
        model = {"t3": xc.Prediction(rr_model, 1), "t3_mca": xc.Prediction(mca_model, 1),
                 "sequential": xc.Prediction(2000, 1)}
        return {"scenario": "x", "gpus": 4, "comparison": xc.compare(rtl, model)}
    assert xc.violations([entry(1000, 1000, 1005, 1000)]) == []
    assert any("t3:" in v for v in xc.violations([entry(1000, 1000, 1101, 1101)]))    # model too slow
    assert any("t3:" in v for v in xc.violations([entry(1000, 1000, 899, 899)]))      # model too fast
    assert any("points" in v for v in xc.violations([entry(1000, 1030, 1000, 980)]))     # opposite sign
    assert any("points" in v for v in xc.violations([entry(1100, 1000, 1000, 1000)]))    # 10 points apart
    assert xc.violations([entry(1000, 1000, 1040, 1000)]) == []                         # RTL: no difference


def test_micro_system_reads_the_rtl():
    """The model's micro-system comes from the RTL's parameters and properties."""
    for sc in scenarios("full"):
        cfg, gemm, shape, kernel = xc.micro_study(sc)
        ring = GemmRing(**sc.system.ring_params(sc.gemm.tiles_per_stage))
        s, link = ring.ring.slices[0], ring.ring.links[0]
        gpu, fabric, transport = cfg.system.gpu, cfg.system.fabric, cfg.system.transport
        assert gpu.dram_latency_ns == s.gemm_read_latency + ring.sources[0].operand_latency
        assert gpu.channel_requests_per_cycle == pytest.approx(float(s.nmc.requests_per_cycle))
        assert gpu.dram_queue_entries == sc.system.compute_queue_depth
        # One link each way at the RTL's beat rate, carried at its full rate, one ring direction.
        assert fabric.topology == "ring" and fabric.ring_directions == 1
        assert fabric.link_bw_GBps_per_link / 2 == pytest.approx(s.nmc.beat_width / 8 / link.cycles_per_beat)
        assert transport.ce_link_efficiency == transport.sm_link_efficiency == 1.0
        assert fabric.link_latency_ns == link.latency
        assert (cfg.block.trigger_cycles + cfg.block.dma_issue_cycles + s.read_latency
                == s.update_to_egress_latency)
        assert gemm.tiles == sc.gemm.tiles(sc.system.gpus) and gemm.cus == sc.gemm.tiles_per_wave
        assert gemm.tile_compute_s * 1e9 == pytest.approx(sc.gemm.compute_cycles_per_tile)
        chunk = shape.m * shape.n * kernel.bytes_per_element / sc.system.gpus
        assert chunk == sc.gemm.tiles_per_stage * sc.system.tile_beats * s.nmc.beat_width // 8
        assert gemm.stage_bytes == (chunk,) * sc.system.gpus
        assert cfg.arbiter.starvation_limit_cycles == sc.system.starvation_limit
        assert cfg.arbiter.threshold == sc.system.threshold


def test_hardware_reduce_scatter_is_pipelined_across_steps():
    """T3's RS pays a hop's latency once when a chunk outlasts a hop (steps back to back), and
    once per step when a chunk is one tile (each step waits for the previous GPU's)."""
    sc = scenarios("full")[0]
    cfg, _, _, kernel = xc.micro_study(sc)
    n = sc.system.gpus
    tile = kernel.tile_m * kernel.tile_n * kernel.bytes_per_element

    def rs_ns(tiles_per_chunk):
        shape = GemmShape(m=kernel.tile_m * tiles_per_chunk * n, n=1, k=1)
        return hardware_rs_s(Sublayer(cfg, shape, n, "reduce_scatter", kernel)) * 1e9

    gpu, fabric, block = cfg.system.gpu, cfg.system.fabric, cfg.block
    # Each forwarded byte: a DMA read here, an update (two units, or one) at the next GPU;
    # the channel serves one unit per request of dram_request_bytes a cycle; one link each way.
    units = 1 + gpu.nmc_update_units
    rate = min(gpu.hbm_GBps / units, fabric.link_bw_GBps_per_link / 2)           # bytes per ns
    trigger = block.trigger_cycles + block.dma_issue_cycles + gpu.dram_latency_ns
    write = block.reducer_write_cycles
    hop = fabric.link_latency_ns
    big = 4096
    assert rs_ns(big) == pytest.approx(trigger + (n - 1) * big * tile / rate + hop + write, rel=1e-6)
    one = trigger + tile / rate + (n - 2) * (hop + trigger + tile / rate) + hop + write
    assert rs_ns(1) == pytest.approx(one, rel=1e-6)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "system_model", "crosscheck", *args], capture_output=True, text=True)


def test_cli_reads_the_recorded_results(tmp_path):
    result = run_cli("--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "within tolerance on every scenario" in result.stdout
    assert "| memory_heavy | 8 |" in result.stdout


def test_cli_fails_when_the_model_misses(tmp_path):
    """The recorded runs made 1.5x longer: the table still prints, the exit status is 1."""
    slow = dict(RECORDED, runs=[{**r, "total_cycles": int(r["total_cycles"] * 1.5)} for r in RECORDED["runs"]])
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(slow))
    result = run_cli("--recorded", str(path))
    assert result.returncode == 1
    assert "outside tolerance" in result.stdout


def test_replay_line_is_a_command_the_cli_takes():
    from system_model.cli import _parser
    from tb.gemm_ring.run import replay_line

    sc = scenarios("quick")[0]
    line = replay_line(sc, "t3_mca", 7)
    args = _parser().parse_args(line.split("python -m system_model ", 1)[1].split())
    assert (args.rtl, args.size, args.only, args.gpus, args.schedule, args.seed) == (
        True, "quick", sc.name, sc.system.gpus, "t3_mca", 7)


@pytest.mark.parametrize(("content", "message"), [
    (None, "--recorded: no such file"),
    ({"runs": []}, "not a crosscheck record (no 'size')"),
    ({"size": "full", "runs": []}, "no scenario has all of its RTL runs"),
])
def test_cli_errors_are_one_line(tmp_path, content, message):
    path = tmp_path / "record.json"
    if content is not None:
        path.write_text(json.dumps(content))
    result = run_cli("--recorded", str(path))
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("make", "message"), [
    (lambda: MicroGemm(tiles_per_stage=0), "tiles_per_stage must be between 1 and 512, not 0"),
    (lambda: MicroGemm(tiles_per_stage=8, tiles_per_wave=1), "tiles_per_wave must be between 2 and 64, not 1"),
    (lambda: MicroGemm(tiles_per_stage=8, tiles_per_wave=8, outstanding_reads=7),
     "outstanding_reads must be between 8 and 1023, not 7"),
    (lambda: MicroSystem(gpus=1), "gpus must be between 2 and 16, not 1"),
    (lambda: MicroSystem(gpus=4, link_cycles_per_beat=0), "link_cycles_per_beat must be between 1 and 64, not 0"),
])
def test_bad_scenario_parameters(make, message):
    with pytest.raises(ValueError, match=message):
        make()


#: A mechanism the crosscheck's tolerances cannot see: with the starvation limit at 8 instead
#: of the RTL's 64 the model missed one tolerance by a fraction of a point (latency-bound on 8
#: GPUs, T3-MCA over round robin 5.2 points from the RTL's, against 5), and since a ring step
#: sends a wave's tiles only once the wave has ended (2026-12-07) it misses none (4.7 points).
BLIND = {"starvation limit 8": "the block-RAM crosscheck cannot tell a starvation limit of 8 from the RTL's 64"}


@pytest.mark.parametrize("variant", [pytest.param(v, marks=pytest.mark.xfail(strict=True, reason=BLIND[v]))
                                     if v in BLIND else v for v in xc.PERTURBATIONS])
def test_the_crosscheck_tells_the_mechanisms_apart(variant):
    """Each mechanism changed in the model (continuous data use, half the latency, twice the
    buffer, two-unit updates, reads before writes) misses a tolerance against the recorded
    RTL: the scenarios are sharp enough to see it (a starvation limit of 8: :data:`BLIND`)."""
    assert xc.perturbed_violations(RECORDED["runs"], "full", variant)


# -- Behind the DRAM-like memory (``make crosscheck`` with --rows) --------------------------

RECORDED_ROWS = xc.load_recorded(xc.CROSSCHECK_ROWS_JSON)


@functools.cache
def rows_entries() -> tuple[dict, ...]:
    """The model beside the recorded runs behind rows (computed once; read, never changed)."""
    return tuple(xc.entries(RECORDED_ROWS["runs"], "full", rows=xc.ROWS))


def test_every_full_scenario_is_recorded_behind_rows():
    from dataclasses import asdict

    assert RECORDED_ROWS["size"] == "full" and RECORDED_ROWS["rows"] == asdict(xc.ROWS)
    recorded = {(r["scenario"], r["gpus"], r["schedule"]) for r in RECORDED_ROWS["runs"]}
    assert recorded == {(s.name, s.system.gpus, k) for s in scenarios("full") for k in SCHEDULES}
    assert all(r["system"]["rows"] == asdict(xc.ROWS) and r["row_misses"] > 0 for r in RECORDED_ROWS["runs"])


@pytest.mark.xfail(strict=True, reason="issue 27: behind rows the model misses 7 of its 32 tolerances at full size "
                   "(docs/model.md, 'Behind DRAM-like memory'); strict, so a model that passes must say so")
def test_model_within_tolerance_of_the_rtl_behind_rows():
    found = list(rows_entries())
    assert len(found) == len(scenarios("full"))
    assert xc.violations(found) == []


def test_committed_rows_table_is_current():
    table = xc.crosscheck_markdown(list(rows_entries()), xc.ROWS)
    assert xc.CROSSCHECK_ROWS_JSON.with_suffix(".md").read_text() == table


def test_behind_rows_each_gpu_is_recorded_and_modelled_and_the_slowest_sets_the_figure():
    """Behind rows the GPUs differ (each fills its chunks in its own order), so the RTL's
    record and the model both give every GPU's GEMM end and last notify; the scenario's
    figures are the slowest GPU's, and no GPU notifies before its GEMM ends."""
    for e in rows_entries():
        n = e["gpus"]
        for k in SCHEDULES:
            for side, total, gemm in (("rtl", "total_cycles", "gemm_cycles"), ("model", "total_cycles", "gemm_cycles")):
                r = e[side][k]
                assert len(r["gpu_total_cycles"]) == len(r["gpu_gemm_cycles"]) == n, (e["scenario"], n, k, side)
                assert max(r["gpu_total_cycles"]) == pytest.approx(r[total], abs=0.11), (e["scenario"], n, k, side)
                assert max(r["gpu_gemm_cycles"]) == pytest.approx(r[gemm], abs=0.11), (e["scenario"], n, k, side)
                assert all(t >= g for t, g in zip(r["gpu_total_cycles"], r["gpu_gemm_cycles"], strict=True))


def test_ring_steps_slow_a_gemm_behind_rows_only_while_it_runs():
    """The sequential schedule behind rows: a GEMM beside ring steps (its own forwards and
    the previous GPU's arrivals) that start with it ends later than alone, and exactly as
    alone when none does; a step beside it gets at most the ring step's own rate."""
    sc = next(s for s in xc.size_scenarios("quick", xc.ROWS) if s.name == "memory_heavy")
    cfg, gemm, shape, kernel = xc.micro_study(sc)
    n = sc.system.gpus
    rate = ring_step_Bps(Sublayer(cfg, shape, n, "reduce_scatter", kernel))
    alone, stages, got = xc._gemm_beside_ring(cfg, gemm, shape, kernel, n, {}, {})
    assert got == rate and stages == sorted(stages) and stages[-1] == alone
    beside, _, got = xc._gemm_beside_ring(cfg, gemm, shape, kernel, n, {(0, 2): 0.0}, {(3, 2): 0.0})
    assert beside > 1.02 * alone and 0 < got <= rate * (1 + 1e-9)
    later, _, _ = xc._gemm_beside_ring(cfg, gemm, shape, kernel, n, {(0, 2): 2 * alone}, {})
    assert later == pytest.approx(alone, rel=1e-12)


@functools.cache
def ring_sub(name: str = "compute_bound", gpus: int = 4, rows=xc.ROWS) -> Sublayer:
    sc = next(s for s in xc.size_scenarios("full", rows) if s.name == name)
    cfg, _, shape, kernel = xc.micro_study(replace(sc, system=replace(sc.system, gpus=gpus)))
    return Sublayer(cfg, shape, gpus, "reduce_scatter", kernel)


def chain_floor_s(sub: Sublayer) -> float:
    """The last GPU's own chain through free links: its chunk, then a hop, a trigger and a
    tile per further step."""
    rate = ring_step_Bps(sub)
    trigger = sub.block.trigger_to_link_s(sub.gpu.mc_clock_GHz) + sub.dram_latency_s
    step = sub.latency_s + trigger + min(sub.tile_bytes, sub.chunk) / rate
    return (trigger + sub.chunk / rate + (sub.tp - 2) * step + sub.latency_s
            + sub.block.reducer_write_s(sub.gpu.mc_clock_GHz))


@pytest.mark.parametrize("gpus", [2, 3, 4, 8])
@pytest.mark.parametrize("rows", [None, xc.ROWS])
def test_a_ring_starting_together_is_the_closed_form_reduce_scatter(gpus, rows):
    sub = ring_sub(gpus=gpus, rows=rows)
    assert hardware_rs_from_s(sub, [3e-6] * gpus) == pytest.approx(3e-6 + hardware_rs_s(sub), rel=1e-12)


def test_a_ring_whose_others_finished_long_before_pays_a_chain_not_a_reduce_scatter():
    """GPU 3 ends last, every other GPU (and GPU 3's later stages) long before: the others'
    chains have gone through, and GPU 3's own finds every link free."""
    sub = ring_sub(gpus=8)
    late = 1e-3
    doorbells = [0.0] * 7 + [late]
    local = [[0.0] * 8 for _ in range(8)]
    assert hardware_rs_from_s(sub, doorbells, local) == pytest.approx(late + chain_floor_s(sub), rel=1e-12)
    assert chain_floor_s(sub) < 0.6 * hardware_rs_s(sub)


def test_a_chain_step_after_a_slow_one_waits_for_its_last_tile():
    """GPU 1's GEMM runs throughout and a step to or from it goes at half the ring step's
    rate. Chain 0 crosses GPU 0 -> 1 and 1 -> 2 at half rate, then 2 -> 3 at full rate, on a
    link that a full-rate chunk held first: it cannot end before the half-rate step's last
    tile has arrived and triggered (a hop, a trigger and a tile after it ended)."""

    sub = ring_sub(gpus=4)
    rate = ring_step_Bps(sub)
    trigger = sub.block.trigger_to_link_s(sub.gpu.mc_clock_GHz) + sub.dram_latency_s
    last_tile = sub.latency_s + trigger + min(sub.tile_bytes, sub.chunk) / rate
    _, steps = ring_chains(sub, [0.0, 1.0, 0.0, 0.0], [[0.0] * 4 for _ in range(4)], [rate, rate / 2, rate, rate])
    g1, start1, end1 = steps[(0, 1)]
    g2, start2, end2 = steps[(0, 2)]
    g3, start3, end3, _ = steps[(0, 3)]
    assert (g1, g2, g3) == (0, 1, 2)
    assert end1 - start1 == pytest.approx(2 * sub.chunk / rate) and end2 - start2 == pytest.approx(2 * sub.chunk / rate)
    assert start3 == pytest.approx(steps[(2, 1)][2])             # GPU 2's own first chunk held its link
    assert end3 == pytest.approx(end2 + last_tile) and end3 > start3 + sub.chunk / rate


@pytest.mark.parametrize(("args", "message"), [
    (([0.0] * 3,), "doorbells_s must have one finite time >= 0 per GPU (4), not [0.0, 0.0, 0.0]"),
    (([0.0, math.nan, 0.0, 0.0],), "doorbells_s must have one finite time >= 0 per GPU (4)"),
    (([0.0] * 4, None, [1e9, math.nan, 1e9, 1e9]), "beside_Bps must have one rate per GPU (4), each above 0"),
    (([0.0] * 4, [[0.0] * 3] * 3), "local_s must have one list per GPU (4), each of at least 3 times"),
    (([0.0] * 4, [[0.0] * 2] * 4), "local_s must have one list per GPU (4), each of at least 3 times"),
    (([0.0] * 4, None, [1e9, 1e9, 0.0, 1e9]), "beside_Bps must have one rate per GPU (4), each above 0"),
])
def test_bad_ring_starts(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        hardware_rs_from_s(ring_sub(gpus=4), *args)


@settings(max_examples=150, deadline=None)
@given(gpus=st.integers(2, 9), data=st.data())
def test_no_ring_ends_before_the_last_gpus_chain(gpus, data):
    """On random doorbells and local parts, the ring never ends before the last doorbell's
    own chain through free links, and no GPU's chunk is complete before its own part of it
    (its last local time, or its doorbell) and the reducer's write."""
    sub = ring_sub(gpus=gpus)
    span = data.draw(st.sampled_from([1e-7, 1e-5, 1e-3]))
    doorbells = data.draw(st.lists(st.floats(0, span), min_size=gpus, max_size=gpus))
    local = [[min(d, data.draw(st.floats(0, span))) for _ in range(gpus)] for d in doorbells]
    write = sub.block.reducer_write_s(sub.gpu.mc_clock_GHz)
    for own in (local, None):
        total, steps = ring_chains(sub, doorbells, own)
        assert total == hardware_rs_from_s(sub, doorbells, own)
        assert total >= max(doorbells) + chain_floor_s(sub) * (1 - 1e-12)
        if gpus > 1:
            kept = {(step[0] + 1) % gpus: step[3] for (_, k), step in steps.items() if k == gpus - 1}
            assert sorted(kept) == list(range(gpus)) and max(kept.values()) == total
            for g, done in kept.items():
                assert done >= (own[g][-1] if own else doorbells[g]) + write


@pytest.mark.parametrize(("link_cycles_per_beat", "low", "high"), [(1, 0.0, 0.5), (32, 1.0, 2.0)])
def test_behind_rows_the_dma_trails_the_stores_as_far_as_the_link_leaves_it(monkeypatch, link_cycles_per_beat,
                                                                           low, high):
    """What T3's ring tells the channel of where its DMA reads (``dma_lag_bytes``, in chunks
    here): within a wave's tiles of the stores when the link outruns the GEMM, more than a
    chunk behind (the stage before's) when the link is 32 times slower than a beat a cycle."""
    from system_model.engine.dram_cycle import CycleDram
    from system_model.schemes.t3 import t3_ring
    lags, serve = [], CycleDram.serve

    def spy(self, gemm, update_Bps, dma_Bps, burst_bytes, forwarded_Bps=0.0, dma_lag_bytes=0.0):
        if dma_Bps > 0:
            lags.append(dma_lag_bytes)
        return serve(self, gemm, update_Bps, dma_Bps, burst_bytes, forwarded_Bps, dma_lag_bytes)
    monkeypatch.setattr(CycleDram, "serve", spy)
    sc = next(s for s in xc.size_scenarios("quick", xc.ROWS) if s.name == "compute_bound")
    sc = replace(sc, system=replace(sc.system, link_cycles_per_beat=link_cycles_per_beat))
    cfg, gemm, shape, kernel = xc.micro_study(sc)
    t3_ring(Sublayer(cfg, shape, sc.system.gpus, "reduce_scatter", kernel), policy="rr", gemm=gemm)
    chunk = gemm.stage_bytes[1]
    assert lags and min(lags) >= 0.0
    assert low * chunk <= max(lags) < high * chunk


def test_micro_system_behind_rows_reads_the_harness():
    """The model's rows are the harness memory's, its bank the slice's, its chunk the ring's;
    each GPU is modelled with the chunks it fills (GPU g fills chunk g - 1 - s in stage s)."""
    for sc in xc.size_scenarios("full", xc.ROWS):
        cfg, *_ = xc.micro_study(sc)
        ring = GemmRing(**sc.system.ring_params(sc.gemm.tiles_per_stage))
        rows = cfg.cycle_rows
        assert (rows.banks, rows.row_requests, rows.miss_cycles, rows.bank_hash) == (
            xc.ROWS.banks, xc.ROWS.row_beats, xc.ROWS.miss_cycles, xc.ROWS.bank_hash)
        assert rows.bank_requests == ring.ring.slices[0].nmc.depth
        assert rows.chunk_requests == sc.gemm.tiles_per_stage * sc.system.tile_beats
        assert rows.chunk_order == () and cfg.dram_model == "cycle"
    for sc in xc.size_scenarios("full"):
        assert xc.micro_study(sc)[0].cycle_rows is None


def test_cli_behind_rows_writes_the_table_and_fails_while_the_model_misses(tmp_path, capsys):
    # In this process (the CLI's main, as ``python -m system_model`` calls it): the channel's
    # simulations of the other rows tests are reused, a second process would redo them all.
    from system_model.cli import main

    status = main(["crosscheck", "--rows", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 1
    assert "outside tolerance" in out and "behind DRAM-like memory" in out
    assert (tmp_path / "crosscheck_rows.md").read_text() == xc.CROSSCHECK_ROWS_JSON.with_suffix(".md").read_text()


def test_cli_rows_and_a_block_ram_record_conflict():
    result = run_cli("--rows", "--recorded", str(xc.CROSSCHECK_JSON))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "not {'banks': 4" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--rows", "--only", "latency_bound", "--gpus", "8"],
     "crosscheck --door-census needs --rtl, --schedule (it counts one RTL run behind rows)"),
    (["--rtl", "--only", "latency_bound", "--gpus", "8", "--schedule", "t3"], "needs --rows"),
    (["--rtl", "--rows", "--gpus", "8", "--schedule", "t3"], "needs --only"),
    (["--rtl", "--rows", "--only", "latency_bound", "--gpus", "8", "--schedule", "sequential"],
     "needs --schedule t3 or t3_mca, not 'sequential'"),
    (["--rtl", "--rows", "--only", "latency_bound", "--gpus", "4", "--schedule", "t3", "--door-census", "4:1"],
     "GPU must be from 0 to 3, not 4"),
    (["--rtl", "--rows", "--only", "latency_bound", "--gpus", "8", "--schedule", "t3", "--door-census", "0:8"],
     "STAGE must be from 0 to 7, not 8"),
    (["--rtl", "--rows", "--only", "latency_bound", "--gpus", "8", "--schedule", "t3", "--door-census", "0-3"],
     "expected GPU:STAGE, two whole numbers, not '0-3'"),
    (["--rtl", "--rows", "--only", "latency_bound", "--gpus", "8", "--schedule", "t3", "--seed", "-1"],
     "crosscheck --seed must be 0 or more, not -1"),
])
def test_cli_door_census_refuses_before_any_work(args, message, monkeypatch, capsys):
    from system_model import cli
    from system_model.studies.crosscheck import door_census

    def work(*_, **__):
        raise AssertionError("the census ran")
    monkeypatch.setattr(door_census, "door_census", work)
    monkeypatch.setattr(xc, "run_rtl", work)
    if "--door-census" not in args and "--seed" not in args:
        args = [*args, "--door-census", "0:3"]
    assert cli.main(["crosscheck", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
