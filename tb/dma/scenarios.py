"""Names and parameter sets of the DMA path bench's cocotb tests (pure Python)."""

from __future__ import annotations

from itertools import product

from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS, diagonal_names, in_make_test

PARAM_SETS = {
    # 256-bit beats (16 x fp16), a memory with the usual one-cycle read port.
    "default": {"commands": 64, "tile_width": 8, "addr_width": 12, "data_width": 256,
                "max_beats": 64, "port_width": 3, "queue_depth": 4, "read_latency": 1},
    # A slow memory (3-cycle reads), a 2-deep queue and an 8-bit address space that wraps.
    "slow_mem": {"commands": 16, "tile_width": 4, "addr_width": 8, "data_width": 64,
                 "max_beats": 16, "port_width": 2, "queue_depth": 2, "read_latency": 3},
}

#: Trigger source pattern x egress sink pattern.
RANDOM_TESTS = [f"random__{src}__{sink}" for src, sink in product(SOURCE_PATTERNS, SINK_PATTERNS)]
#: The diagonal in `make test` (the trace run crosses every cell); all nine with T3_FULL_MATRIX=1.
RANDOM_IN_MAKE_TEST = in_make_test(RANDOM_TESTS, diagonal_names())

#: Random triggers with ``RESETS_PER_TEST`` mid-run resets (trigger source x egress sink).
RESET_TESTS = ["reset_mid_run__full__random", "reset_mid_run__gaps__heavy"]
RESETS_PER_TEST = 3

DIRECTED_TESTS = [
    "full_rate_back_to_back",
    "trigger_burst_while_egress_stalled",
    "program_in_trigger_cycle",
    "error_unprogrammed_trigger",
    "error_bad_descriptor",
]

CASES = (
    [("default", t) for t in RANDOM_IN_MAKE_TEST + RESET_TESTS + DIRECTED_TESTS]
    + [("slow_mem", t) for t in ["random__full__always", "random__gaps__random", "random__full__heavy",
                                  "reset_mid_run__full__random", *DIRECTED_TESTS]]
)
