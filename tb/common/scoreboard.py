"""Per-cycle scoreboard: compares every checked output with the golden model each cycle."""

from __future__ import annotations

import logging

__all__ = ["Scoreboard"]


class Scoreboard:
    """Counts comparisons and mismatches; logs the first few mismatches in detail.

    Parameters
    ----------
    log : logging.Logger
        Where mismatches are reported.
    max_logged : int
        Mismatches logged in full before the rest are only counted.
    """

    def __init__(self, log: logging.Logger, *, max_logged: int = 20):
        self.log = log
        self.max_logged = max_logged
        self.checks = 0
        self.mismatches = 0

    def check(self, cycle: int, what: str, got, expected, *, explain=None) -> bool:
        """Compare one observed value with the model's; return True if they agree."""
        self.checks += 1
        if got == expected:
            return True
        self.mismatches += 1
        if self.mismatches <= self.max_logged:
            detail = f" ({explain(got, expected)})" if explain is not None else ""
            self.log.error("cycle %d: %s = %r, model expects %r%s", cycle, what, got, expected, detail)
        return False

    def assert_clean(self) -> None:
        """Fail unless every check so far agreed (and at least one was made)."""
        assert self.checks > 0, "scoreboard made no comparisons"
        assert self.mismatches == 0, f"{self.mismatches} mismatches in {self.checks} checks"
