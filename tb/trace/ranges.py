"""Every documented range exercised: a block's setup and port fields, each with its range,
drawn across all of it, and two coverage bins that prove both ends were reached.

Why: a counter narrower than the field it counts (the GEMM source's k-step and cycle
counters once were) passes every test whose stimulus stays in the field's low values. So a
trace bench states its fields' ranges (:class:`FieldRange`, from the block's parameters),
draws with :func:`draw` (a quarter of the draws at each end), and counts the ends its
replay saw accepted with :func:`cover_ranges`; a bin never hit fails the run like any
other (:func:`tb.trace.bench.run_trace`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["FieldRange", "range_bins", "cover_ranges", "draw"]


@dataclass(frozen=True)
class FieldRange:
    """Field ``name`` takes ``lo`` .. ``hi`` (both included) by the block's documentation."""

    name: str
    lo: int
    hi: int

    def __post_init__(self):
        if not self.lo <= self.hi:
            raise ValueError(f"{self.name}: lo must be at most hi, not {self.lo} > {self.hi}")

    @property
    def bins(self) -> tuple[str, str]:
        """The two coverage bins: the field at its minimum and at its maximum."""
        return f"{self.name} at its minimum ({self.lo})", f"{self.name} at its maximum ({self.hi})"


def range_bins(ranges: tuple[FieldRange, ...]) -> tuple[str, ...]:
    """Both end bins of every range, in order."""
    return tuple(b for r in ranges for b in r.bins)


def cover_ranges(cover, ranges: tuple[FieldRange, ...], values: dict[str, int]) -> None:
    """Count the ends among ``values`` (field name -> a value the block accepted)."""
    for r in ranges:
        value = values.get(r.name)
        if value is None:
            continue
        low, high = r.bins
        cover[low] += value == r.lo
        cover[high] += value == r.hi


def draw(rng: random.Random, lo: int, hi: int, *, typical_hi: int | None = None) -> int:
    """A value of ``lo .. hi``: a quarter of the time ``lo``, a quarter ``hi``, else uniform
    over ``lo .. typical_hi`` (default ``hi``: the whole range)."""
    r = rng.random()
    if r < 0.25:
        return lo
    if r < 0.5:
        return hi
    return rng.randint(lo, hi if typical_hi is None else max(lo, min(hi, typical_hi)))
