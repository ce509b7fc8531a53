"""Names and parameter sets of the T3 slice bench's cocotb tests (pure Python)."""

from __future__ import annotations

from tb.common.patterns import SINK_PATTERNS

_SMALL = {"format": "binary16", "beat_width": 64, "depth": 256, "entries": 64, "count_width": 8,
          "commands": 64, "max_beats": 16, "port_width": 2, "queue_depth": 4, "tile_beats_log2": 2,
          "compute_queue_depth": 8, "level_width": 5, "wait_width": 16}

PARAM_SETS = {
    # 4 binary16 lanes, 64 tiles of 4 beats covering the 256-word bank; garbage at power-up.
    "default": {**_SMALL, "power_up_seed": 11},
    # Four trigger slots: arm back-pressure (the tracker's reservation) in every run.
    "trigger4": {**_SMALL, "trigger_depth": 4, "compute_queue_depth": 4, "power_up_seed": 12},
}

#: One test per egress sink pattern; inside, every input stream runs through the source
#: patterns (SOURCE_PATTERNS) in phases.
RANDOM_TESTS = [f"random__{sink}" for sink in SINK_PATTERNS]

DIRECTED_TESTS = [
    "idle_latency",
    "completion_burst",
    "mid_run_reset",
    "long_random",
]

CASES = ([("default", t) for t in RANDOM_TESTS + DIRECTED_TESTS]
         + [("trigger4", t) for t in ("random__always", "random__heavy", "completion_burst", "mid_run_reset")])
