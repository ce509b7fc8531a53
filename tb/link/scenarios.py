"""Names and parameter sets of the link bench's cocotb tests (pure Python)."""

from __future__ import annotations

from itertools import product

from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS

PARAM_SETS = {
    # The ring's links: 8 cycles, half the memory's beat rate, default depth (6).
    "ring": {"payload_shape": 16, "latency": 8, "cycles_per_beat": 2},
    # Shallower than the default: the FIFO, not the bandwidth, throttles input (3 beats / 6 cycles).
    "shallow": {"payload_shape": 16, "latency": 5, "cycles_per_beat": 1, "depth": 3},
    # The shortest latency (a one-bit age register) with a bandwidth slower than it.
    "latency1": {"payload_shape": 16, "latency": 1, "cycles_per_beat": 3},
}

#: (output sink, input source) patterns, each one phase of ``random_matrix``.
MATRIX = list(product(SINK_PATTERNS, SOURCE_PATTERNS))

RANDOM_TESTS = ["random_matrix"]
DIRECTED_TESTS = ["mid_run_reset"]

CASES = [(p, "random_matrix") for p in PARAM_SETS] + [("ring", "mid_run_reset")]
