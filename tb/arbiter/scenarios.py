"""Names and parameter sets of the memory arbiter bench (pure Python)."""

from __future__ import annotations

from tb.common.patterns import in_make_test

PARAM_SETS = {"default": {"payload_shape": 16, "level_width": 5, "wait_width": 16}}

#: mix -> (compute request probability, communication request probability)
MIXES = {"compute_heavy": (0.95, 0.5), "balanced": (0.6, 0.6), "comm_heavy": (0.2, 0.95)}
#: DRAM queue service probability per cycle: full rate, random, heavy back-pressure
SERVICE = {"full": 1.0, "random": 0.6, "heavy": 0.15}

RANDOM_TESTS = [f"random__{mode}__{mix}__{service}" for mode in ("mca", "round_robin") for mix in MIXES
                for service in ("random", "heavy")]
RANDOM_TESTS += ["random__mca__balanced__full", "random__round_robin__balanced__full"]
#: In `make test` (the trace run crosses both modes with every queue band and back-pressure
#: at a million cycles); all fourteen with T3_FULL_MATRIX=1.
RANDOM_IN_MAKE_TEST = in_make_test(RANDOM_TESTS, [
    "random__mca__balanced__full", "random__round_robin__balanced__full", "random__mca__compute_heavy__heavy",
    "random__mca__comm_heavy__random", "random__round_robin__comm_heavy__random",
    "random__round_robin__compute_heavy__heavy"])
#: Random requests with ``RESETS_PER_TEST`` mid-run resets (mode x mix x DRAM service).
RESET_TESTS = ["reset_mid_run__mca__balanced__heavy", "reset_mid_run__round_robin__comm_heavy__random"]
RESETS_PER_TEST = 3
DIRECTED_TESTS = ["reprogram_at_runtime", "starvation_limit_one", "comm_waits_while_grant_stalled"]
CASES = [("default", t) for t in RANDOM_IN_MAKE_TEST + RESET_TESTS + DIRECTED_TESTS]
