"""Names and parameter sets of the tracker bench's cocotb tests (pure Python).

Shared by the cocotb module (which defines one test per name) and the pytest runner
(which makes one pytest item per name and parameter set).
"""

from __future__ import annotations

from itertools import product

from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS

PARAM_SETS = {
    # The paper's table: 256 entries.
    "default": {"entries": 256, "count_width": 16, "dma_cmd_width": 8, "trigger_depth": 4},
    # Small corners: 4-bit counters hit their maximum threshold, a 2-deep trigger queue fills.
    "small": {"entries": 16, "count_width": 4, "dma_cmd_width": 3, "trigger_depth": 2},
}

#: Random legal traffic crossed with the idle/back-pressure matrix: the input pattern applies
#: to both ``arm`` and ``update``; the sink pattern to ``trigger``.
RANDOM_TESTS = [f"random__{src}__{sink}" for src, sink in product(SOURCE_PATTERNS, SINK_PATTERNS)]

DIRECTED_TESTS = [
    "back_to_back_same_tile",
    "all_entries_in_flight",
    "rearm_right_after_trigger",
    "trigger_stalled_until_queue_full",
    "error_unarmed_update",
    "error_rearm",
    "error_zero_threshold",
]

#: (parameter set, testcase) pairs that `make test` runs.
CASES = (
    [("default", t) for t in RANDOM_TESTS + DIRECTED_TESTS]
    + [("small", t) for t in ["random__full__random", "random__gaps__heavy", *DIRECTED_TESTS]]
)
