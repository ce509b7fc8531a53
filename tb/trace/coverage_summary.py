"""Functional coverage of the trace runs of one pytest session, printed at the end of ``make test``."""

from __future__ import annotations

from .check import Coverage

__all__ = ["SESSION_COVERAGE", "add_coverage", "coverage_lines"]

#: label -> merged coverage of the session's runs.
SESSION_COVERAGE: dict[str, Coverage] = {}


def add_coverage(coverage: Coverage) -> None:
    merged = SESSION_COVERAGE.setdefault(coverage.block, Coverage(coverage.block, coverage.counts.keys()))
    merged.merge(coverage)


def coverage_lines() -> list[str]:
    """One line per block: bins hit, then every bin with its count."""
    lines = []
    for _label, cov in sorted(SESSION_COVERAGE.items()):
        bins = ", ".join(f"{name}={count:,}" for name, count in cov.counts.items())
        lines.append(f"{cov.summary()}: {bins}")
    return lines
