"""Names and parameter sets of the track & trigger join bench (pure Python)."""

from __future__ import annotations

from itertools import product

from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS, diagonal_names, in_make_test

PARAM_SETS = {
    "default": {"entries": 64, "count_width": 10, "trigger_depth": 4, "commands": 64,
                "addr_width": 12, "data_width": 256, "max_beats": 64, "port_width": 3,
                "queue_depth": 4, "read_latency": 1},
}

#: Update source pattern x egress sink pattern.
RANDOM_TESTS = [f"random__{src}__{sink}" for src, sink in product(SOURCE_PATTERNS, SINK_PATTERNS)]
#: The diagonal in `make test` (the trace run crosses every cell); all nine with T3_FULL_MATRIX=1.
RANDOM_IN_MAKE_TEST = in_make_test(RANDOM_TESTS, diagonal_names())

#: Random tiles with ``RESETS_PER_TEST`` mid-run resets (source x egress sink pattern).
RESET_TESTS = ["reset_mid_run__full__random", "reset_mid_run__gaps__heavy"]
RESETS_PER_TEST = 3

DIRECTED_TESTS = [
    "update_to_egress_latency",
    "tracker_and_dma_at_full_rate_together",
]

CASES = [("default", t) for t in RANDOM_IN_MAKE_TEST + RESET_TESTS + DIRECTED_TESTS]
