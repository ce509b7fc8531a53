"""Names and parameter sets of the tracker bench's cocotb tests (pure Python).

Shared by the cocotb module (which defines one test per name) and the pytest runner
(which makes one pytest item per name and parameter set).
"""

from __future__ import annotations

from itertools import product

from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS, diagonal_names, in_make_test

PARAM_SETS = {
    # The paper's table: 256 entries, the default trigger queue (as deep as the table).
    # Both power up with pseudo-random counters, which only the reset sweep clears.
    "default": {"entries": 256, "count_width": 16, "dma_cmd_width": 8, "power_up_seed": 1},
    # Small corners: 4-bit counters hit their maximum threshold; a 2-deep trigger queue
    # reserves a slot per armed tile, so arm is back-pressured most of the time.
    "small": {"entries": 16, "count_width": 4, "dma_cmd_width": 3, "trigger_depth": 2, "power_up_seed": 2},
}

#: Random legal traffic crossed with the idle/back-pressure matrix: the input pattern applies
#: to both ``arm`` and ``update``; the sink pattern to ``trigger``.
RANDOM_TESTS = [f"random__{src}__{sink}" for src, sink in product(SOURCE_PATTERNS, SINK_PATTERNS)]
#: The diagonal in `make test` (the trace run crosses every cell); all nine with T3_FULL_MATRIX=1.
RANDOM_IN_MAKE_TEST = in_make_test(RANDOM_TESTS, diagonal_names())

#: Random legal traffic with ``RESETS_PER_TEST`` mid-run resets (source x sink pattern):
#: at full rate into a heavily back-pressured sink (queue full, arms held back at the
#: reset) and with gaps into a randomly ready sink.
RESET_TESTS = ["reset_mid_run__full__heavy", "reset_mid_run__gaps__random"]
RESETS_PER_TEST = 3

DIRECTED_TESTS = [
    "back_to_back_same_tile",
    "all_entries_in_flight",
    "rearm_right_after_trigger",
    "arm_backpressure_while_trigger_stalled",
    "reset_clears_counts",
    "error_unarmed_update",
    "error_rearm",
    "error_zero_threshold",
]

#: Cycle-exact pipeline hazards (tb_tracker.py: same tile on consecutive cycles, tiles round
#: robin, errors next to a completion). Each re-arms a tile the cycle after its completion,
#: which the default set's trigger queue (as deep as the table) never holds back.
HAZARD_TESTS = [
    "hazard_same_tile_runs",
    "hazard_alternating_tiles",
    "hazard_errors_at_completion",
]

#: (parameter set, testcase) pairs that `make test` runs.
CASES = (
    [("default", t) for t in RANDOM_IN_MAKE_TEST + RESET_TESTS + DIRECTED_TESTS + HAZARD_TESTS]
    + [("small", t) for t in ["random__full__random", "random__gaps__heavy", "reset_mid_run__full__heavy",
                              *DIRECTED_TESTS]]
)
