"""Names and parameter sets of the arbitrated-read DMA engine bench (pure Python)."""

from __future__ import annotations

from itertools import product

from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS

PARAM_SETS = {
    # The engine exactly as T3Slice builds it (default slice: 256 x 64-bit bank, 64 commands).
    "slice": {"addr_width": 8, "data_width": 64, "max_beats": 16, "port_width": 2, "dma_cmd_width": 6,
              "read_latency": 1, "arbitrated_reads": True},
    # A slow memory (3-cycle reads) and a 6-bit address space that wraps.
    "slow_mem": {"addr_width": 6, "data_width": 32, "max_beats": 8, "port_width": 1, "dma_cmd_width": 3,
                 "read_latency": 3, "arbitrated_reads": True},
}

#: (mem_read.ready, egress.ready, cmd source) patterns: each one phase of ``random_matrix``.
#: ``mem_read.ready`` is the memory arbiter's grant, driven like a sink's ready.
MATRIX = list(product(SINK_PATTERNS, SINK_PATTERNS, SOURCE_PATTERNS))

RANDOM_TESTS = ["random_matrix"]
DIRECTED_TESTS = ["timing_and_long_stalls", "mid_run_reset"]

CASES = ([(p, "random_matrix") for p in PARAM_SETS]
         + [("slice", t) for t in DIRECTED_TESTS])
