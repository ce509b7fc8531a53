"""Figures the tests of one pytest session add up, printed at the end of ``make test``."""

from __future__ import annotations

__all__ = ["SESSION_STATS", "add_stats"]

#: block -> figure -> total over the tests run in this session.
SESSION_STATS: dict[str, dict[str, int]] = {}


def add_stats(block: str, **counts: int) -> None:
    totals = SESSION_STATS.setdefault(block, {})
    for key, value in counts.items():
        totals[key] = totals.get(key, 0) + int(value)
