# amaranth: UnusedElaboratable=no
"""``make soak``'s production-size run: Llama-3 70B's FC-2 at TP 8 through the 8-GPU RTL ring.

Why: the crosscheck's rings are small (64-bit beats, 4-beat tiles, up to 64 tiles per
chunk). This run puts a real sublayer's volume of output through the RTL, round after round
(random data of that size, not FC-2's activations):

* the sublayer: FC-2 of Llama-3 70B at tensor parallelism 8 in prefill (2,048 tokens), whose
  output, 2,048 x 8,192 binary16 per GPU (32 MiB), is reduce-scattered over the 8 GPUs;
* at the RTL's widest beat (256 bits, 16 lanes) and its longest tile (16 beats: the tracker
  counts a tile's stores and updates, ``2 x beats``, in 8 bits, and the DMA moves 16 beats
  a descriptor), so one 128 x 128 tile of the real kernel is 64 RTL tiles;
* 128 tiles per chunk, 1,024 per GPU (the tracker's 1,024 entries): 512 KiB per GPU a
  round, so the sublayer is :func:`rounds_needed` rounds, each a whole GEMM and
  reduce-scatter with fresh data.

Each round (:func:`tb.gemm_ring.run.run_scenario`) reads every GPU's chunk back and compares
it bit for bit with numpy's reduce-scatter, checks the beats each link carried and every
error flag, and its cycles are compared with the system model's crosscheck prediction for
the same micro-system (:func:`system_model.studies.crosscheck.predict`) within the
crosscheck's 10 %. The GEMM's pacing is the crosscheck's compute-bound regime (4 reads per
tile, 32-cycle k-steps): the run is about size (addresses, tile counts, a descriptor per
forwarded tile, the width of every counter), not FC-2's arithmetic intensity. The rounds
have no random gaps and the RTL's timing does not depend on the data, so every round takes
the same cycles: the model comparison is one comparison, the bit-exact check 64.

``python -m tb.gemm_ring.production [--rounds N] [--schedule t3_mca] [--jobs J]`` (``SEED=``
replays; each round's seed is printed; about 20 s a round on one core once the first has
built the ring). Exits 1 if any round fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from tb.common.seeds import base_seed, derive_seed

from .scenarios import MicroGemm, MicroSystem, Scenario

__all__ = ["production_scenario", "rounds_needed", "main", "TOLERANCE"]

#: The crosscheck's tolerance on total cycles (chosen before its first comparison).
TOLERANCE = 0.10
MODEL, SUBLAYER, TP = "llama-3-70b", "FC-2", 8
TILES_PER_STAGE = 128


def production_scenario() -> Scenario:
    system = MicroSystem(gpus=TP, beat_width=256, tile_beats_log2=4)
    gemm = MicroGemm(TILES_PER_STAGE, read_beats_per_tile=4, step_cycles=32)
    return Scenario("production_fc2", system, gemm, size="production")


def output_bytes_per_gpu() -> int:
    """Bytes of the sublayer's output each GPU reduce-scatters (its partial GEMM result)."""
    from system_model.describe.models import MODELS, WorkloadConfig, sublayer_gemm

    shape = sublayer_gemm(MODELS[MODEL], SUBLAYER, WorkloadConfig().prefill_tokens, TP)
    return shape.m * shape.n * 2


def round_bytes_per_gpu(scenario: Scenario) -> int:
    sysm = scenario.system
    return scenario.gemm.tiles(sysm.gpus) * sysm.tile_beats * sysm.beat_width // 8


def rounds_needed(scenario: Scenario | None = None) -> int:
    scenario = scenario or production_scenario()
    return -(-output_bytes_per_gpu() // round_bytes_per_gpu(scenario))


def _round(schedule: str, k: int, seed: int) -> tuple[int, int, dict | str]:
    """One round in a worker process: (round, seed, figures or the failure's message)."""
    from tb.gemm_ring.run import run_scenario

    started = time.perf_counter()
    try:
        figures = run_scenario(production_scenario(), schedule, seed=seed, run_name=f"production_{schedule}_{k}")
    except AssertionError as error:
        return k, seed, str(error)
    figures["round_s"] = time.perf_counter() - started
    return k, seed, figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.gemm_ring.production", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds to run (default: the whole sublayer)")
    parser.add_argument("--schedule", default="t3_mca", choices=("t3", "t3_mca", "sequential"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="rounds side by side (default: every core; each holds a 0.5 GB record)")
    args = parser.parse_args(argv)
    scenario = production_scenario()
    total = rounds_needed(scenario)
    if args.rounds is not None and not 1 <= args.rounds <= total:
        parser.error(f"--rounds must be 1 to {total} (the whole sublayer), not {args.rounds}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    rounds = total if args.rounds is None else args.rounds
    from system_model.studies.crosscheck import predict

    predicted = predict(scenario)[args.schedule].total_cycles
    print(f"production run: {MODEL} {SUBLAYER} at TP {TP}, {output_bytes_per_gpu() / 2**20:.0f} MiB per GPU in "
          f"{total} rounds of {round_bytes_per_gpu(scenario) / 2**10:.0f} KiB; {rounds} to run on {args.jobs} "
          f"processes, {args.schedule}; session SEED={base_seed()}; the model predicts {predicted:,.0f} cycles a round",
          flush=True)
    seeds = [derive_seed("production", args.schedule, k) for k in range(rounds)]
    # The first round alone: it converts and builds the ring once for the workers that follow.
    first = _round(args.schedule, 0, seeds[0])
    results = [first]
    if rounds > 1 and not isinstance(first[2], str):
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(_round, args.schedule, k, seeds[k]) for k in range(1, rounds)]
            results += [f.result() for f in as_completed(futures)]
    words, failed = 0, 0
    for k, seed, figures in sorted(results, key=lambda r: r[0]):
        if isinstance(figures, str):
            print(f"round {k}: FAILED (seed {seed})\n{figures}")
            failed += 1
            continue
        error = predicted / figures["total_cycles"] - 1
        words += figures["words_checked"]
        verdict = "" if abs(error) <= TOLERANCE else f": off by more than the crosscheck's {TOLERANCE:.0%}"
        failed += bool(verdict)
        print(f"round {k}: {figures['total_cycles']:,} cycles, the model {error:+.1%}{verdict}; "
              f"{figures['words_checked']:,} words bit-exact; {figures['round_s']:.0f} s; seed {seed}")
    print(f"production run: {len(results) - failed} of the {len(results)} rounds run passed ({rounds} asked for); "
          f"{words:,} words of 256 bits bit-exact against numpy")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
