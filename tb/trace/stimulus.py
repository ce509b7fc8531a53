"""Stimulus of a trace-driven run, generated up front: source transactions and per-cycle controls.

A trace run has no Python in its simulation loop, so nothing can react to the DUT while it
runs. What a reactive driver would do is written down in advance instead:

* **Source transactions** (:class:`Source`): per input stream, the payloads in order, each
  with the idle cycles the source waits before offering it (its *gap*) and an optional
  *dependency*: "offer only after transaction ``k`` of stream ``s`` has been accepted" (or,
  with ``same_cycle``, "... or is being accepted in this very cycle"). That is how a legal
  driver's ordering (an update only after its tile's arm, a trigger only after its
  descriptor) survives back-pressure it cannot foresee. The harness holds a payload until
  it is accepted, as a real source must.
* **Segments**: a mid-run reset makes every source drop what it holds and jump to the start
  of its next segment (a real driver starts over; the DUT forgot everything). Segment ``k``
  of every stream starts at :attr:`Source.segment_starts` ``[k]``, and a dependency always
  points into its own segment.
* **Per-cycle controls** (:class:`Stimulus`): ``rst``, every output stream's ``ready`` and
  every plain input (configuration, the arbiter's queue level, ...), one value per cycle.

The golden model never reads any of this: it replays the inputs the harness *recorded*.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Source", "Stimulus", "ready_pattern", "gap_draw", "SOURCE_MODES", "SINK_MODES", "matrix_cells"]

#: Source behaviours of the idle / back-pressure matrix, as gap generators (see :func:`gap_draw`).
SOURCE_MODES = ("full", "gaps", "idle")
#: Sink behaviours: ``ready`` always high, random back-pressure, heavy back-pressure.
SINK_MODES = ("always", "random", "heavy")

#: Largest gap and dependency index the harness's 64-bit meta word holds.
MAX_GAP = (1 << 16) - 1
MAX_DEP_INDEX = (1 << 32) - 1


def matrix_cells() -> list[tuple[str, str]]:
    """Every (source mode, sink mode) cell of the matrix, full rate first."""
    return [(s, k) for s in SOURCE_MODES for k in SINK_MODES]


def gap_draw(rng: random.Random, mode: str) -> int:
    """Idle cycles a source in ``mode`` waits before its next offer.

    ``full``: none, back to back. ``gaps``: none half of the time, else 1-3 (bursts with
    holes). ``idle``: 4-40 (a source that is mostly idle).
    """
    if mode == "full":
        return 0
    if mode == "gaps":
        return 0 if rng.random() < 0.5 else rng.randint(1, 3)
    if mode == "idle":
        return rng.randint(4, 40)
    raise ValueError(f"source mode must be one of {', '.join(SOURCE_MODES)}, not {mode!r}")


def ready_pattern(rng: np.random.Generator, mode: str, cycles: int) -> np.ndarray:
    """A sink's ``ready`` over ``cycles`` cycles in ``mode`` (uint8 0/1).

    ``always``: high. ``random``: a fair coin each cycle. ``heavy``: stalls of 4-60 cycles
    broken by single ready cycles (about 8 % ready), so that queues fill and stay full.
    """
    if mode == "always":
        return np.ones(cycles, dtype=np.uint8)
    if mode == "random":
        return (rng.random(cycles) < 0.5).astype(np.uint8)
    if mode == "heavy":
        out = np.zeros(cycles, dtype=np.uint8)
        position = 0
        while position < cycles:
            position += int(rng.integers(4, 61))
            if position < cycles:
                out[position] = 1
            position += 1
        return out
    raise ValueError(f"sink mode must be one of {', '.join(SINK_MODES)}, not {mode!r}")


@dataclass
class Source:
    """The transactions of one input stream, in the order the source offers them."""

    payloads: list[int] = field(default_factory=list)
    gaps: list[int] = field(default_factory=list)
    #: Per transaction: (stream name, transaction index, same_cycle) or None.
    deps: list[tuple[str, int, bool] | None] = field(default_factory=list)
    segment_starts: list[int] = field(default_factory=lambda: [0])

    def add(self, payload: int, *, gap: int = 0, after: tuple[str, int] | None = None,
            same_cycle: bool = False) -> int:
        """Append a transaction; return its index (for another stream's dependency)."""
        if not 0 <= gap <= MAX_GAP:
            raise ValueError(f"gap must be between 0 and {MAX_GAP}, not {gap}")
        if after is not None and not 0 <= after[1] <= MAX_DEP_INDEX:
            raise ValueError(f"dependency index must be between 0 and {MAX_DEP_INDEX}, not {after[1]}")
        self.payloads.append(int(payload))
        self.gaps.append(int(gap))
        self.deps.append(None if after is None else (after[0], int(after[1]), bool(same_cycle)))
        return len(self.payloads) - 1

    def __len__(self) -> int:
        return len(self.payloads)

    def new_segment(self) -> None:
        self.segment_starts.append(len(self.payloads))


class Stimulus:
    """Everything a trace run drives: sources, and one value per cycle of every control.

    Parameters
    ----------
    cycles : int
        Cycles the harness runs (the first ones are the power-up reset).
    sources : iterable of str
        Names of the input streams (``arm``, ``gemm__0``, ...).
    """

    def __init__(self, cycles: int, sources):
        if cycles < 4:
            raise ValueError(f"cycles must be at least 4, not {cycles}")
        self.cycles = cycles
        self.sources = {name: Source() for name in sources}
        self.controls: dict[str, np.ndarray] = {"rst": np.zeros(cycles, dtype=np.uint64)}
        self.controls["rst"][:2] = 1

    def control(self, name: str) -> np.ndarray:
        """The per-cycle column of control ``name`` (created at zero)."""
        if name not in self.controls:
            self.controls[name] = np.zeros(self.cycles, dtype=np.uint64)
        return self.controls[name]

    def reset_at(self, cycle: int, length: int) -> None:
        """Hold ``rst`` high for ``length`` cycles from ``cycle`` (the sources then jump to their
        next segment: see :meth:`begin_segment`)."""
        if not 2 < cycle < self.cycles - length:
            raise ValueError(f"reset cycle must be between 3 and {self.cycles - length - 1}, not {cycle}")
        self.controls["rst"][cycle:cycle + length] = 1

    def begin_segment(self) -> None:
        """Start the transactions of the next segment in every source (after a reset).

        Call it before generating each segment but the first."""
        for source in self.sources.values():
            source.new_segment()

    def reset_count(self) -> int:
        """Rising edges of ``rst`` (the power-up reset included): the segments the sources need."""
        rst = self.controls["rst"].astype(np.int8)
        return int(rst[0]) + int(np.count_nonzero(np.diff(rst) == 1))


@dataclass(frozen=True)
class Segment:
    """The cycles between two resets and how the sources and sinks behave in them."""

    index: int
    start: int
    end: int
    source_mode: str
    sink_mode: str

    @property
    def length(self) -> int:
        return self.end - self.start


def plan_segments(stimulus: Stimulus, rng: random.Random, *, mean_cycles: int = 20_000,
                  first_cycles: int | None = None, short_every: int = 0, short_cycles: int = 0) -> list[Segment]:
    """Cut the run into segments separated by mid-run resets of 1-4 cycles.

    Segment lengths are drawn between half and one and a half times ``mean_cycles``; the
    cells of the idle / back-pressure matrix follow one another in order (full rate first),
    so a run of nine or more segments covers the whole matrix. With ``short_every`` = *k*,
    every *k*-th segment lasts only ``short_cycles`` (to cut a long operation with a reset).
    """
    cells = matrix_cells()
    segments = []
    start = 2
    index = 0
    while start < stimulus.cycles:
        length = first_cycles if index == 0 and first_cycles else rng.randint(mean_cycles // 2, 3 * mean_cycles // 2)
        if short_every and index % short_every == short_every - 1:
            length = short_cycles
        end = min(stimulus.cycles, start + length)
        if stimulus.cycles - end < mean_cycles // 4:
            end = stimulus.cycles
        source_mode, sink_mode = cells[index % len(cells)]
        segments.append(Segment(index, start, end, source_mode, sink_mode))
        if end < stimulus.cycles:
            reset = rng.randint(1, 4)
            stimulus.reset_at(end, reset)
            start = end + reset
        else:
            start = end
        index += 1
    return segments


def sink_ready(stimulus: Stimulus, name: str, segments: list[Segment], rng: random.Random) -> None:
    """Fill ``<name>__ready`` segment by segment with the segment's sink mode."""
    column = stimulus.control(f"{name}__ready")
    gen = np.random.default_rng(rng.getrandbits(63))
    for seg in segments:
        column[seg.start:seg.end] = ready_pattern(gen, seg.sink_mode, seg.length)
