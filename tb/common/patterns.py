"""Traffic patterns for the idle / back-pressure matrix (pure Python, shared by benches).

A pattern is the probability that a source offers an item (``valid``), or that a sink is
``ready``, in a given cycle. Every stream of every bench is run under each class:
full rate, random gaps and heavy throttling (idle for a source, back-pressure for a sink).
"""

from __future__ import annotations

__all__ = ["SOURCE_PATTERNS", "SINK_PATTERNS"]

#: Probability that a source with data to send asserts ``valid`` in a cycle.
SOURCE_PATTERNS = {
    "full": 1.0,     # back-to-back, no gaps
    "gaps": 0.6,     # random gaps
    "idle": 0.1,     # mostly idle
}

#: Probability that a sink asserts ``ready`` in a cycle.
SINK_PATTERNS = {
    "always": 1.0,   # never back-pressures
    "random": 0.5,   # random back-pressure
    "heavy": 0.08,   # heavy back-pressure
}
