"""Replaying a recorded trace against a golden model: comparison, stream protocol, coverage.

:class:`Trace` wraps one run's record. A bench's replay loop reads the recorded inputs
cycle by cycle, steps its golden model and compares every output through :meth:`Trace.compare`
(a tuple of fields at once, the cheap common case) or :meth:`Trace.check` (one field). The
first mismatch raises :class:`TraceMismatch` naming the cycle, the field, expected against
got, and the replay line.

Independently of any model, :func:`check_stream_protocol` checks every stream of the record
with numpy: once ``valid`` is high without ``ready``, ``valid`` stays high and the payload
stays bit-identical in the next cycle (a reset excepted).

:class:`Coverage` counts the bins a bench declares; a bin left at zero fails the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from .harness import Ports, RecordLayout

__all__ = ["TraceMismatch", "Trace", "Coverage", "check_stream_protocol"]


class TraceMismatch(AssertionError):
    """The DUT's recorded output differs from the golden model (or breaks a rule)."""


def _show(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:#x}" if value > 9 else str(value)
    return repr(value)


class Coverage:
    """Named bins of one block; :meth:`missing` lists those never hit."""

    def __init__(self, block: str, bins: Iterable[str]):
        self.block = block
        self.counts = dict.fromkeys(bins, 0)

    def hit(self, name: str, count: int = 1) -> None:
        if name not in self.counts:
            raise KeyError(f"{self.block}: unknown coverage bin {name!r}")
        self.counts[name] += int(count)

    def missing(self) -> list[str]:
        return [name for name, count in self.counts.items() if count == 0]

    def merge(self, other: Coverage) -> None:
        for name, count in other.counts.items():
            self.counts[name] = self.counts.get(name, 0) + count

    def summary(self) -> str:
        hit = len(self.counts) - len(self.missing())
        return f"{self.block}: {hit}/{len(self.counts)} bins hit"


class Trace:
    """One recorded run, with the comparison and coverage state of its replay."""

    def __init__(self, block: str, record: np.ndarray, layout: RecordLayout, *, replay: str, coverage: Coverage):
        self.block = block
        self.record = record
        self.layout = layout
        self.replay = replay
        self.coverage = coverage
        self.cycles = record.shape[0]
        self.checks = 0
        self.checked_cycles = 0

    def col(self, name: str) -> list[int]:
        """A port's value in every cycle (Python ints, any width)."""
        return self.layout.wide_column(self.record, name)

    def np_col(self, name: str) -> np.ndarray:
        """A port of up to 64 bits, as a numpy column."""
        return self.layout.column(self.record, name)

    def reset_mask(self) -> np.ndarray:
        return self.np_col("rst").astype(bool)

    def fail(self, cycle: int, field: str, expected, got, explain: str = "") -> None:
        detail = f" ({explain})" if explain else ""
        raise TraceMismatch(f"{self.block}: cycle {cycle}: {field}: expected {_show(expected)}, got {_show(got)}"
                            f"{detail}\n  {self.replay}")

    def check(self, cycle: int, field: str, got, expected, explain: Callable | None = None) -> None:
        self.checks += 1
        if got != expected:
            self.fail(cycle, field, expected, got, explain(got, expected) if explain else "")

    def compare(self, cycle: int, names: tuple[str, ...], got: tuple, expected: tuple,
                explain: dict | None = None) -> None:
        """Compare several fields at once; on a difference, report the first differing one."""
        if got != expected:
            for name, g, e in zip(names, got, expected, strict=True):
                if g != e:
                    how = explain.get(name) if explain else None
                    self.fail(cycle, name, e, g, how(g, e) if how else "")

    def stream_fields(self, names: tuple[str, ...]) -> None:
        """Count ``len(names)`` checks per compared cycle (call once, after the loop)."""
        self.checks += len(names) * self.checked_cycles


def check_stream_protocol(trace: Trace, ports: Ports, *, relaxed: dict[str, str] | None = None) -> int:
    """Check valid/ready on every stream of the record; return the number of cycles checked.

    For each stream and each cycle ``t`` with ``valid & ~ready`` and no reset in ``t`` or
    ``t + 1``: ``valid[t + 1]`` is high and the payload is unchanged. Streams in ``relaxed``
    (name -> the documented reason) are skipped.
    """
    rst = trace.reset_mask()
    checked = 0
    for stream in [*ports.sources, *ports.sinks]:
        if relaxed and stream in relaxed:
            continue
        valid = trace.np_col(f"{stream}__valid").astype(bool)
        ready = trace.np_col(f"{stream}__ready").astype(bool)
        stalled = valid[:-1] & ~ready[:-1] & ~rst[:-1] & ~rst[1:]
        bad = np.flatnonzero(stalled & ~valid[1:])
        if bad.size:
            trace.fail(int(bad[0]) + 1, f"{stream}.valid", 1, 0, "valid fell before ready (protocol)")
        if f"{stream}__payload" in ports.ports:
            word, _, width = trace.layout.fields[f"{stream}__payload"]
            count = (width + 31) // 32 if width > 32 else 1
            if width > 32:
                block = trace.record[:, word:word + count]
                changed = np.any(block[1:] != block[:-1], axis=1)
            else:
                column = trace.np_col(f"{stream}__payload")
                changed = column[1:] != column[:-1]
            bad = np.flatnonzero(stalled & changed)
            if bad.size:
                t = int(bad[0])
                before, after = trace.col(f"{stream}__payload")[t:t + 2]
                trace.fail(t + 1, f"{stream}.payload", before, after, "payload changed before ready (protocol)")
        checked += len(valid)
        trace.checks += 2 * len(valid)
    return checked
