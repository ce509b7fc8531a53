"""Cycle-accurate golden model of :class:`rtl.stream_mux.StreamMux` (pure Python).

Written from the mux's docstring: ``out`` is combinational from the inputs (no latency, one
transfer per cycle); when both inputs are valid they alternate; once ``out`` offers an
input's item without ``out.ready`` it keeps offering that input's item until the transfer.

Port details the docstring leaves open, pinned here so that every output is compared in
every cycle (a change to any of them is a change of the block's port behaviour):

* "alternate" is a round-robin pointer: after a transfer from one input, the other wins
  the next contention; after reset ``a`` wins the first one;
* in each cycle the mux *selects* one input: the held one, else the only valid one, else
  the pointer's choice when both are valid, else ``a`` (neither valid); the selected
  input's ``ready`` is ``out.ready`` and the other's is 0.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["A", "B", "StreamMuxModel", "MuxOutputs"]

A, B = 0, 1


class MuxOutputs(NamedTuple):
    out_valid: int
    select: int          # A or B: the input whose payload is on ``out`` and whose ready follows out.ready
    a_ready: int
    b_ready: int


class StreamMuxModel:
    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.prefer = A          # wins the next contention
        self.held: int | None = None  # input whose offer waits since the previous cycle

    def _select(self, a_valid: int, b_valid: int) -> int:
        if self.held is not None:
            return self.held
        if a_valid and b_valid:
            return self.prefer
        return B if b_valid else A

    def outputs(self, *, a_valid: int, b_valid: int, out_ready: int) -> MuxOutputs:
        select = self._select(a_valid, b_valid)
        ready = 1 if out_ready else 0
        return MuxOutputs(1 if a_valid or b_valid else 0, select,
                          ready if select == A else 0, ready if select == B else 0)

    def step(self, *, a_valid: int, b_valid: int, out_ready: int) -> int | None:
        """Advance one edge; return the input transferred in this cycle (A, B or None)."""
        if not (a_valid or b_valid):
            self.held = None
            return None
        select = self._select(a_valid, b_valid)
        if out_ready:
            self.held = None
            self.prefer = B if select == A else A
            return select
        self.held = select
        return None
