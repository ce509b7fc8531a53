"""Parameter sets and tests of the ring bench (pure Python)."""

from __future__ import annotations

_SLICE = {"beat_width": 64, "depth": 256, "entries": 64, "commands": 64, "tile_beats_log2": 2, "max_beats": 16}

PARAM_SETS = {
    "n2": {"gpus": 2, **_SLICE},
    "n4": {"gpus": 4, **_SLICE},
    "n4_bf16": {"gpus": 4, "format": "bfloat16", **_SLICE},
    "n8": {"gpus": 8, **_SLICE},
}

CASES = (
    [("n2", t) for t in ("reduce_scatter_full_rate", "reduce_scatter_random_gaps")]
    + [("n4", t) for t in ("reduce_scatter_full_rate", "reduce_scatter_random_gaps", "reduce_scatter_round_robin",
                           "compute_reads_mca", "compute_reads_round_robin")]
    + [("n4_bf16", "reduce_scatter_random_gaps"), ("n8", "reduce_scatter_random_gaps")]
)
