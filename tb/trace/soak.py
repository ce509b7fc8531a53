"""``make soak``: every block's trace run, many times with fresh seeds, on every core.

``python -m tb.trace.soak [--total N] [--cycles C] [--jobs J] [--only REGEX]`` runs traces of
``C`` cycles (default 10^6; at most a bench's ``soak_run_cycles``, which keeps the ring's
record in memory; 1 % more, for the reset cycles that are not checked) until each block has
``N`` checked cycles (default 10^7), each run with its own
seed drawn from ``SEED`` (printed; ``SEED=`` replays the whole soak), on ``J`` worker
processes (default: every core). Each block's harness is compiled once, before the workers
start. Prints one line per run and a summary; exits 1 if any run failed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from tb.common.seeds import base_seed, derive_seed

__all__ = ["BENCHES", "main"]

#: label -> "module:class" of every trace bench.
BENCHES = {
    "tracker": "tb.tracker.trace:TrackerTrace",
    "dma_path": "tb.dma.trace:DmaPathTrace",
    "track_trigger": "tb.track_trigger.trace:TrackTriggerTrace",
    "reducer": "tb.nmc.trace:ReducerTrace",
    "arbiter": "tb.arbiter.trace:ArbiterTrace",
    "slice": "tb.slice.trace:SliceTrace",
    "ring": "tb.ring.trace:RingTrace",
    "gemm_source": "tb.gemm_source.trace:GemmSourceTrace",
}


def _bench(label: str):
    import importlib

    module, cls = BENCHES[label].split(":")
    return getattr(importlib.import_module(module), cls)()


def _one(label: str, cycles: int, seed: int, index: int) -> tuple[str, int, int, str, float]:
    from .bench import run_trace

    started = time.perf_counter()
    try:
        result = run_trace(_bench(label), cycles=cycles, seed=seed, run_name=f"soak-{index}")
        return label, seed, result.checked_cycles, "", time.perf_counter() - started
    except AssertionError as exc:
        return label, seed, 0, str(exc), time.perf_counter() - started


def _prebuild(label: str, cycles: int) -> None:
    """Compile the block's harness for runs of ``cycles`` cycles (the workers then share it)."""
    import random

    from rtl.flow.generate import to_verilog

    from .harness import Ports, _compile, build_harness, trace_simulator

    bench = _bench(label)
    verilog = to_verilog(bench.block, simulation=True, **bench.params)
    ports = Ports(verilog, bench.block)
    stimulus, responders = bench.stimulus(random.Random(1), cycles)
    text = build_harness(ports, stimulus, responders)[0]
    _compile(verilog, text, trace_simulator())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.trace.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=10_000_000, help="cycles per block (default: %(default)s)")
    parser.add_argument("--cycles", type=int, default=1_000_000, help="cycles per run (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: all cores)")
    parser.add_argument("--only", default="", help="regex on block labels")
    args = parser.parse_args(argv)
    if args.cycles < 10_000:
        print(f"error: --cycles must be at least 10000, not {args.cycles}", file=sys.stderr)
        return 2
    if args.total < args.cycles or args.jobs < 1:
        print("error: --total must be at least --cycles, and --jobs at least 1", file=sys.stderr)
        return 2
    labels = [label for label in BENCHES if re.search(args.only, label)]
    print(f"soak: SEED={base_seed()} (replay with SEED=...), {args.total:,} cycles per block in runs of up to "
          f"{args.cycles:,}, {args.jobs} workers: {', '.join(labels)}")
    jobs = []
    for label in labels:
        cycles = min(args.cycles, getattr(_bench(label), "soak_run_cycles", args.cycles))
        runs = -(-args.total // cycles)
        # Reset cycles are simulated but not checked: 1 % more cycles per run keeps the
        # *checked* cycles at or above the total.
        cycles += cycles // 100
        _prebuild(label, cycles)
        jobs += [(label, cycles, derive_seed("soak", label, k), k) for k in range(runs)]
    totals: dict[str, int] = dict.fromkeys(labels, 0)
    failures = []
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_one, *job) for job in jobs]
        for future in as_completed(futures):
            label, seed, checked, error, seconds = future.result()
            totals[label] += checked
            status = "ok" if not error else "FAILED"
            print(f"  {label:14s} seed {seed:>10d}: {status} ({checked:,} checked cycles, {seconds:.0f} s)")
            if error:
                failures.append(error)
    print(f"soak: {time.perf_counter() - started:.0f} s; checked cycles per block: "
          + ", ".join(f"{label} {count:,}" for label, count in totals.items()))
    short = [label for label, count in totals.items() if count < args.total]
    if short and not failures:
        failures.append(f"soak: fewer than {args.total:,} checked cycles for {', '.join(short)}")
    for error in failures:
        print(error)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
