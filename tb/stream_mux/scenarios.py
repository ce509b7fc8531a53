"""Names and parameter sets of the stream mux bench's cocotb tests (pure Python)."""

from __future__ import annotations

from itertools import product

from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS

PARAM_SETS = {
    # 16-bit payload: {seq: 15, src: 1}, so every item is unique and names its input.
    "default": {"payload_shape": 16},
}

#: The idle/back-pressure matrix: (out sink, a source, b source) patterns, each one phase of
#: ``random_matrix`` (one cocotb test, since each test costs a simulator start-up).
MATRIX = list(product(SINK_PATTERNS, SOURCE_PATTERNS, SOURCE_PATTERNS))

RANDOM_TESTS = ["random_matrix"]

DIRECTED_TESTS = [
    "hold_and_alternate",
    "mid_run_reset",
]

CASES = [("default", t) for t in RANDOM_TESTS + DIRECTED_TESTS]
