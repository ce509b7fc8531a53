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

#: ``T3_FULL_MATRIX=1``: ``make test`` runs every random cocotb test of the matrix (``make soak`` does).
FULL_MATRIX_ENV = "T3_FULL_MATRIX"

#: The cells ``make test`` runs through the cocotb benches: the diagonal of the matrix. The
#: trace runs (``tb/trace``) cross every cell with every stream at a million cycles per block,
#: so the cocotb benches keep the matrix for debugging (waveforms, one cell at a time) and
#: ``T3_FULL_MATRIX=1``.
DIAGONAL = (("full", "always"), ("gaps", "random"), ("idle", "heavy"))


def full_matrix() -> bool:
    import os

    return os.environ.get(FULL_MATRIX_ENV, "0") not in ("", "0")


def in_make_test(random_tests: list[str], kept: list[str]) -> list[str]:
    """The random cocotb tests ``make test`` runs: ``kept`` (which must all exist), or all of
    them under ``T3_FULL_MATRIX=1``."""
    missing = [name for name in kept if name not in random_tests]
    if missing:
        raise ValueError(f"kept tests must be random tests of the bench, not {missing}")
    return list(random_tests) if full_matrix() else list(kept)


def diagonal_names(prefix: str = "random") -> list[str]:
    """``random__<source>__<sink>`` for the cells of :data:`DIAGONAL`."""
    return [f"{prefix}__{source}__{sink}" for source, sink in DIAGONAL]
