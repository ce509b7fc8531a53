"""Names and parameter sets of the near-memory reducer bench (pure Python)."""

from __future__ import annotations

from tb.common.patterns import SOURCE_PATTERNS, in_make_test

# Narrow beats carry the bulk of the request count: Icarus time grows with the number of
# lane adders, and a lane is a lane. The paper's 256-bit beat (16 x binary16) runs too.
# The bank makes no promise at power-up: every set fills it with pseudo-random words
# (``power_up_seed``), so a bench that relied on the simulator's zeros would fail.
PARAM_SETS = {
    "fp16x4": {"format": "binary16", "beat_width": 64, "depth": 256, "power_up_seed": 1},
    "bf16x4": {"format": "bfloat16", "beat_width": 64, "depth": 256, "power_up_seed": 2},
    "fp32x2": {"format": "binary32", "beat_width": 64, "depth": 256, "power_up_seed": 3},
    "fp16x16": {"format": "binary16", "beat_width": 256, "depth": 64, "power_up_seed": 4},
}

#: Requests per random test, by source pattern (the idle ones would otherwise be slow). The
#: volume (a million cycles) is the trace run's (tb/nmc/trace.py); these cross the matrix.
REQUESTS = {"full": 5_000, "gaps": 2_500, "idle": 500}

#: Address set (hot: 4 addresses, so read-after-write hazards at distance 1 and 2 are
#: frequent; wide: the whole bank) x request source pattern. The reducer back-pressures
#: only an update that depends on a sum still in the adder, so the matrix varies the
#: sources; reads arrive at random on the read port throughout.
RANDOM_TESTS = [f"random__{addresses}__{src}" for addresses in ("hot", "wide") for src in SOURCE_PATTERNS]
#: In `make test` (the trace run crosses every source mode at a million cycles); all with T3_FULL_MATRIX=1.
RANDOM_IN_MAKE_TEST = in_make_test(RANDOM_TESTS, ["random__hot__full", "random__wide__gaps", "random__hot__idle"])

#: Random requests (a quarter of ``REQUESTS``) with ``RESETS_PER_TEST`` mid-run resets.
RESET_TESTS = ["reset_mid_run__hot__full", "reset_mid_run__wide__gaps"]
RESETS_PER_TEST = 3

DIRECTED_TESTS = [
    "back_to_back_updates_one_address",
    "same_address_runs_of_every_length",
    "alternating_addresses",
    "update_and_read_of_one_word_in_one_cycle",
    "write_visible_after_write_latency",
]

CASES = (
    [("fp16x4", t) for t in RANDOM_IN_MAKE_TEST + RESET_TESTS + DIRECTED_TESTS]
    # The other formats (binary32's adder is deeper: latency 7) take the hazard runs; the
    # format-blind directed tests run on fp16x4.
    + [(p, t) for p in ("bf16x4", "fp32x2") for t in ["random__hot__full", "back_to_back_updates_one_address",
                                                       "same_address_runs_of_every_length"]]
    + [("fp16x16", t) for t in ["random__hot__full", "write_visible_after_write_latency"]]
)
