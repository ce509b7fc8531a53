# amaranth: UnusedElaboratable=no
"""Measure the RTL timing the system model needs: ``python -m tb.characterize`` (``make characterize``).

Each figure is measured in simulation, not copied from a property: the small blocks on
Amaranth's simulator, the ring with the cocotb bench on Icarus. The JSON carries each
figure's unit and parameters and the git commit; ``tests/test_characterize.py`` checks it
against the components' documented properties.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from amaranth.sim import Simulator

from rtl.arbiter import ArbiterMode, MemoryArbiter
from rtl.dma_path import DmaPath
from rtl.nmc import NearMemoryReducer
from rtl.tracker import TrackerTable
from tb.common.packing import pack

__all__ = ["characterize", "main"]

REPO = Path(__file__).resolve().parents[1]


def _simulate(dut, bench) -> None:
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def tracker_trigger_latency() -> int:
    """Cycles from the edge accepting a tile's last update to ``trigger.valid``."""
    dut = TrackerTable(entries=16)
    result = {}

    async def bench(ctx):
        ctx.set(dut.arm.payload.as_value(), pack(dut.arm_layout, {"tile": 3, "threshold": 2, "dma_cmd": 1}))
        ctx.set(dut.arm.valid, 1)
        while not ctx.get(dut.arm.ready):   # the reset sweep (``reset_cycles``)
            await ctx.tick()
        await ctx.tick()
        ctx.set(dut.arm.valid, 0)
        ctx.set(dut.update.payload.as_value(), pack(dut.update_layout, {"tile": 3, "source": 0}))
        ctx.set(dut.update.valid, 1)
        ctx.set(dut.trigger.ready, 1)
        await ctx.tick()
        await ctx.tick()          # the last update is accepted at this edge
        ctx.set(dut.update.valid, 0)
        for cycle in range(1, 20):
            if ctx.get(dut.trigger.valid):
                result["latency"] = cycle
                return
            await ctx.tick()

    _simulate(dut, bench)
    return result["latency"]


def dma_issue_latency() -> tuple[int, float]:
    """Trigger accepted to first egress beat, and sustained egress beats per cycle."""
    dut = DmaPath(commands=4, tile_width=4, addr_width=8, data_width=32, max_beats=16)
    result = {}

    async def bench(ctx):
        desc = {"src_addr": 0, "dst_addr": 0, "beats": 16, "dst_port": 0, "op": 1}
        ctx.set(dut.program.payload.as_value(), pack(dut.table.program_layout, {"index": 1, "desc": desc}))
        ctx.set(dut.program.valid, 1)
        await ctx.tick()
        ctx.set(dut.program.valid, 0)
        ctx.set(dut.egress.ready, 1)
        ctx.set(dut.trigger.payload.as_value(), pack(dut.table.trigger_layout, {"tile": 0, "dma_cmd": 1}))
        ctx.set(dut.trigger.valid, 1)
        await ctx.tick()          # the trigger is accepted at this edge (the table is empty)
        ctx.set(dut.trigger.valid, 0)
        first, beats = None, 0
        for cycle in range(1, 60):
            if ctx.get(dut.egress.valid):
                first = cycle if first is None else first
                beats += 1
                if beats == 16:
                    result["latency"], result["rate"] = first, 16 / (cycle - first + 1)
                    return
            await ctx.tick()

    _simulate(dut, bench)
    return result["latency"], result["rate"]


def reducer_throughput(addresses: list[int], ops: list[int] | None = None) -> float:
    """Requests accepted per cycle when ``addresses`` (with ``ops``, default all UPDATE) are
    offered back to back, each held until accepted, into the default reducer (64-bit beats)."""
    dut = NearMemoryReducer(format="binary16", beat_width=64, depth=256)
    ops = [1] * len(addresses) if ops is None else ops
    rng = random.Random(1)
    result = {}

    async def bench(ctx):
        cycles = 0
        ctx.set(dut.request.valid, 1)
        for addr, op in zip(addresses, ops, strict=True):
            ctx.set(dut.request.payload.as_value(),
                    pack(dut.request_layout, {"addr": addr % 256, "op": op, "data": rng.getrandbits(64)}))
            while True:
                ready = ctx.get(dut.request.ready)
                cycles += 1
                await ctx.tick()
                if ready:
                    break
        ctx.set(dut.request.valid, 0)
        result["rate"] = len(addresses) / cycles

    _simulate(dut, bench)
    return result["rate"]


def reducer_write_latency() -> int:
    """Cycles from a store's acceptance to the first read that sees it."""
    dut = NearMemoryReducer(format="binary16", beat_width=64, depth=64)
    result = {}

    async def bench(ctx):
        ctx.set(dut.request.payload.as_value(), pack(dut.request_layout, {"addr": 9, "op": 0, "data": 0xABCD}))
        ctx.set(dut.request.valid, 1)
        await ctx.tick()          # accepted at this edge: cycle 0 of the count
        ctx.set(dut.request.valid, 0)
        ctx.set(dut.read.addr, 9)
        ctx.set(dut.read.en, 1)
        for issued in range(1, 20):
            await ctx.tick()      # the read issued in cycle `issued` shows its data now
            if ctx.get(dut.read.data) == 0xABCD:
                result["visible"] = issued
                return

    _simulate(dut, bench)
    return result["visible"]


def slice_gemm_read_latency() -> int:
    """Cycles from the edge accepting a ``gemm_read`` of an idle slice to ``gemm_read_data.valid``."""
    from rtl.t3_slice import T3Slice

    dut = T3Slice()
    result = {}

    async def bench(ctx):
        ctx.set(dut.gemm_read.payload, 5)
        ctx.set(dut.gemm_read.valid, 1)
        while not ctx.get(dut.gemm_read.ready):
            await ctx.tick()
        await ctx.tick()          # accepted at this edge: cycle 0 of the count
        ctx.set(dut.gemm_read.valid, 0)
        for cycle in range(1, 40):
            if ctx.get(dut.gemm_read_data.valid):
                result["latency"] = cycle
                return
            await ctx.tick()

    _simulate(dut, bench)
    return result["latency"]


def ring_bank_streams(cycles: int = 40_000, seed: int = 11) -> tuple[list[list[tuple[int, int]]], dict]:
    """Every bank write of the 4-GPU ring trace run (GEMM stores and updates, remote updates,
    the zeroing stores), per GPU in grant order; and the hazard waits seen in the ring."""
    from tb.common.runner import REPO_ROOT
    from tb.ring.trace import RingTrace
    from tb.trace.bench import run_trace

    bench = RingTrace()
    bench.bank_writes = []
    # Its own folder: make test runs the ring's own trace test beside this one.
    # A measurement, not the ring's verification run (test_trace_ring): its bins need not all be hit.
    run_trace(bench, cycles=cycles, seed=seed, folder=REPO_ROOT / "sim_build" / "trace" / "ring-characterize",
              require_coverage=False)
    streams: list[list[tuple[int, int]]] = [[] for _ in range(bench.gpus)]
    for gpu, _, addr, op in bench.bank_writes:
        streams[gpu].append((addr, 1 if op == 1 else 0))
    return streams, {"gpus": bench.gpus, "trace_cycles": cycles, "trace_seed": seed,
                     "writes": len(bench.bank_writes)}


def arbiter_shares(mode: ArbiterMode, compute_p: float, *, comm_p: float = 0.5, cycles: int = 3000,
                   threshold: int = 4, starvation_limit: int = 8) -> tuple[float, int]:
    """Compute grants per cycle and the worst communication wait, with a one-per-cycle DRAM
    queue model behind the grant port and requests arriving at the given rates."""
    dut = MemoryArbiter(payload_shape=8, level_width=5, wait_width=16)
    rng = random.Random(2)
    result = {}

    async def bench(ctx):
        ctx.set(dut.mode, mode)
        ctx.set(dut.threshold, threshold)
        ctx.set(dut.starvation_limit, starvation_limit)
        level, compute_pending, comm_pending, compute_grants, worst = 0, 0, 0, 0, 0
        for _ in range(cycles):
            compute_pending += rng.random() < compute_p
            comm_pending += rng.random() < comm_p
            ctx.set(dut.compute.valid, compute_pending > 0)
            ctx.set(dut.comm.valid, comm_pending > 0)
            ctx.set(dut.queue_level, level)
            ctx.set(dut.grant.ready, level < 16)
            compute_fire, comm_fire = ctx.get(dut.compute.ready), ctx.get(dut.comm.ready)
            compute_pending -= compute_fire
            comm_pending -= comm_fire
            compute_grants += compute_fire
            level += compute_fire + comm_fire - (level > 0)   # the queue serves one per cycle
            await ctx.tick()
            worst = max(worst, ctx.get(dut.status.max_comm_wait))
        result["share"], result["worst"] = compute_grants / cycles, worst

    _simulate(dut, bench)
    return result["share"], result["worst"]


def ring_cycles(param_set: str = "n4") -> dict:
    """Reduce-scatter cycles of the cocotb ring bench on Icarus (its stats file)."""
    from tb.common.runner import CocotbBench
    from tb.ring.scenarios import PARAM_SETS

    # The bench needs banks that power up with garbage (it checks that it zeroes them).
    bench = CocotbBench(block="t3_ring", test_module="tb.ring.tb_ring", param_set=param_set,
                        params={**PARAM_SETS[param_set], "power_up_seed": 1})
    bench.run("reduce_scatter_full_rate")
    stats = json.loads((bench.build_dir / "sim" / "stats-reduce_scatter_full_rate.json").read_text())
    return {"params": PARAM_SETS[param_set], "rs_cycles": stats["rs_cycles"]}


def _figure(value, unit: str, params: dict, how: str) -> dict:
    return {"value": value, "unit": unit, "params": params, "measured_by": how}


def ring_figures() -> dict:
    """The ring's figures (a 4-GPU ring's trace run and its cocotb bench): the reducer's rate on
    each GPU's real stream of bank writes, and the reduce-scatter against the sum of its parts.
    ``make test`` measures them afresh (``tests/test_characterize.py``)."""
    figures = {}
    reducer = NearMemoryReducer()
    reducer_params = {"format": "binary16", "beat_width": 64, "adder_latency": reducer.adder_latency}
    streams, where = ring_bank_streams()
    rates = [reducer_throughput([a for a, _ in st], [op for _, op in st]) for st in streams]
    figures["reducer_requests_per_cycle_ring_stream"] = _figure(
        round(min(rates), 4), "requests/cycle", {**reducer_params, **where},
        "Amaranth sim: each GPU's bank writes of the 4-GPU ring trace run (local stores and remote "
        "updates as the protocol interleaves them), offered back to back; the slowest GPU")
    ring = ring_cycles("n4")
    p = ring["params"]
    gpus, beats, tiles = p["gpus"], 1 << p["tile_beats_log2"], 4
    chunk = tiles * beats
    # Sum of the parts if nothing overlapped: every GEMM write, then N - 1 hops of trigger
    # + DMA + link latency + a chunk at the link's rate (1 beat / 2 cycles).
    from rtl.ring import T3Ring
    ring_rtl = T3Ring(**p)
    hop = ring_rtl.slices[0].update_to_egress_latency + ring_rtl.links[0].latency
    parts = gpus * chunk + (gpus - 1) * (hop + chunk * ring_rtl.links[0].cycles_per_beat)
    figures["ring_reduce_scatter_cycles"] = _figure(ring["rs_cycles"], "cycles", p,
                                                    "cocotb ring bench on Icarus, full-rate GEMM writes")
    figures["ring_sum_of_parts_cycles"] = _figure(parts, "cycles", p,
                                                  "GEMM writes + (N-1) x (trigger + DMA + link + chunk)")
    return figures


def characterize(*, with_ring: bool = True) -> dict:
    started = time.perf_counter()
    figures = {}
    figures["tracker_trigger_latency"] = _figure(tracker_trigger_latency(), "cycles", {"entries": 16},
                                                 "Amaranth sim: last update accepted -> trigger.valid")
    latency, rate = dma_issue_latency()
    dma_params = {"read_latency": 1, "beats": 16}
    figures["dma_issue_latency"] = _figure(latency, "cycles", dma_params,
                                           "Amaranth sim: trigger accepted -> first egress.valid")
    figures["dma_beats_per_cycle"] = _figure(rate, "beats/cycle", dma_params, "Amaranth sim: 16-beat command")
    reducer = NearMemoryReducer()
    reducer_params = {"format": "binary16", "beat_width": 64, "adder_latency": reducer.adder_latency}
    figures["reducer_updates_per_cycle_distinct"] = _figure(
        reducer_throughput(list(range(400))), "requests/cycle", {**reducer_params, "requests": 400},
        "Amaranth sim: back-to-back updates to 400 successive addresses")
    rng = random.Random(3)
    figures["reducer_updates_per_cycle_random"] = _figure(
        reducer_throughput([rng.randrange(256) for _ in range(2000)]), "requests/cycle",
        {**reducer_params, "requests": 2000, "addresses": 256},
        "Amaranth sim: back-to-back updates to random addresses of 256")
    figures["reducer_updates_per_cycle_same_address"] = _figure(
        reducer_throughput([7] * 200), "requests/cycle", {**reducer_params, "requests": 200},
        "Amaranth sim: back-to-back updates to one address (a dependency chain)")
    figures["reducer_write_latency"] = _figure(reducer_write_latency(), "cycles", reducer_params,
                                               "Amaranth sim: store accepted -> first read that sees it")
    figures["slice_gemm_read_latency"] = _figure(slice_gemm_read_latency(), "cycles", {"slice": "defaults"},
                                                 "Amaranth sim: gemm_read accepted -> gemm_read_data.valid, idle")
    figures["reducer_beat_bytes"] = _figure(reducer.beat_width // 8, "bytes",
                                            {"beat_width": reducer.beat_width}, "default reducer beat")
    for mode in (ArbiterMode.MCA, ArbiterMode.ROUND_ROBIN):
        for compute_p in (0.25, 0.5, 0.9):
            share, worst = arbiter_shares(mode, compute_p)
            params = {"compute_request_rate": compute_p, "comm_request_rate": 0.5, "threshold": 4,
                      "starvation_limit": 8, "service": "1 per cycle"}
            key = f"arbiter_{mode.name.lower()}_compute{int(compute_p * 100)}"
            figures[key + "_compute_share"] = _figure(share, "grants/cycle", params, "Amaranth sim")
            figures[key + "_worst_comm_wait"] = _figure(worst, "cycles", params, "Amaranth sim")
    if with_ring:
        figures.update(ring_figures())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip() or "unknown"
    return {"commit": commit, "seconds": round(time.perf_counter() - started, 2), "figures": figures}


DEFAULT_OUT = REPO / "sim_results" / "rtl_timing.json"


def packaged_figures(record: dict, names: tuple[str, ...]) -> dict:
    """The part of a record the model reads, with the commit it was measured at."""
    return {"commit": record["commit"], "measured": "make characterize (sim_results/rtl_timing.json)",
            "figures": {name: record["figures"][name] for name in names}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.characterize", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-ring", action="store_true", help="skip the ring measurement (needs Icarus)")
    args = parser.parse_args(argv)
    result = characterize(with_ring=not args.no_ring)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.out.resolve() == DEFAULT_OUT.resolve():
        # The figures the model reads, beside its code (a model-only install has no sim_results/).
        from system_model.describe.block_timing import MODEL_FIGURES, RTL_TIMING_JSON
        RTL_TIMING_JSON.write_text(json.dumps(packaged_figures(result, MODEL_FIGURES), indent=1) + "\n")
        print(f"wrote {RTL_TIMING_JSON.relative_to(REPO)}")
    for name, fig in result["figures"].items():
        value = fig["value"]
        print(f"{name:48s} {value:.3f} {fig['unit']}" if isinstance(value, float) else
              f"{name:48s} {value} {fig['unit']}")
    print(f"wrote {args.out} in {result['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
