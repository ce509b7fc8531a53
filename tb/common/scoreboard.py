"""Per-cycle scoreboard: compares every checked output with the golden model each cycle."""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = ["Scoreboard", "Mismatch"]


class Mismatch(AssertionError):
    """An output differed from the golden model."""


def _show(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 9:
        return f"{value} ({value:#x})"
    return repr(value)


class Scoreboard:
    """Counts comparisons and mismatches; fails the test on the first mismatch.

    Parameters
    ----------
    log : logging.Logger
        Where mismatches are reported.
    context : callable or str, optional
        Extra lines for a mismatch's message: the simulation time and the replay line
        (``replay: SEED=<base> pytest <bench> -k '<testcase>' (cocotb seed N)``).
    fail_fast : bool
        Raise :class:`Mismatch` (an ``AssertionError``) on the first mismatch (default).
        With False, mismatches are only counted and the first ``max_logged`` logged, and
        :meth:`assert_clean` fails at the end.
    max_logged : int
        Mismatches logged in full when not failing fast.
    """

    def __init__(self, log: logging.Logger, *, context: Callable[[], str] | str | None = None,
                 fail_fast: bool = True, max_logged: int = 20):
        self.log = log
        self.context = context
        self.fail_fast = fail_fast
        self.max_logged = max_logged
        self.checks = 0
        self.mismatches = 0

    def check(self, cycle: int, what: str, got, expected, *, explain=None) -> bool:
        """Compare one observed value with the model's; return True if they agree.

        On a mismatch, raises :class:`Mismatch` naming the cycle, ``what``, the observed and
        expected values, ``explain(got, expected)`` (e.g. the differing fields) and the
        replay line, unless :attr:`fail_fast` is off.
        """
        self.checks += 1
        if got == expected:
            return True
        self.mismatches += 1
        if not self.fail_fast and self.mismatches > self.max_logged:
            return False
        message = self.describe(cycle, what, got, expected, explain=explain)
        self.log.error("%s", message)
        if self.fail_fast:
            raise Mismatch(message)
        return False

    def describe(self, cycle: int, what: str, got, expected, *, explain=None) -> str:
        message = f"mismatch at cycle {cycle}: {what} = {_show(got)}, model expects {_show(expected)}"
        if explain is not None:
            try:
                message += f"\n  differs in: {explain(got, expected)}"
            except Exception as exc:  # noqa: BLE001 - the mismatch matters more than its explanation
                message += f"\n  (explain failed: {exc!r})"
        context = self.context() if callable(self.context) else self.context
        if context:
            message += f"\n  {context}"
        return message

    def assert_clean(self) -> None:
        """Fail unless every check so far agreed (and at least one was made)."""
        assert self.checks > 0, "scoreboard made no comparisons"
        assert self.mismatches == 0, f"{self.mismatches} mismatches in {self.checks} checks"
