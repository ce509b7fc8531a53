"""Cycle-accurate golden model of :class:`rtl.link.LinkModel`'s ports (pure Python).

Written from the link's docstring: a FIFO of ``depth`` beats; a beat accepted on ``input``
in cycle *c* is offered on ``output`` from cycle *c + latency* (once the beats ahead of it
have left); ``input`` accepts at most one beat every ``cycles_per_beat`` cycles, and none
while the link holds ``depth`` beats; ``output`` holds a beat, valid and unchanged, until it
is taken. Time is an unbounded Python integer, so nothing here wraps.

One detail the docstring leaves open, pinned here: "holds ``depth`` beats" is counted at
the start of the cycle, so a full link does not accept in the cycle its head leaves.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

__all__ = ["LinkGoldenModel", "LinkOutputs", "default_depth"]


def default_depth(latency: int, cycles_per_beat: int) -> int:
    """The documented default ``depth``: enough to keep the link busy."""
    return latency // cycles_per_beat + 2


class LinkOutputs(NamedTuple):
    input_ready: int
    output_valid: int
    output: int | None     # the head beat's payload, when output_valid


class LinkGoldenModel:
    def __init__(self, *, latency: int, cycles_per_beat: int, depth: int | None = None):
        self.latency = latency
        self.cycles_per_beat = cycles_per_beat
        self.depth = default_depth(latency, cycles_per_beat) if depth is None else depth
        self.reset()

    def reset(self) -> None:
        self.now = 0
        self.next_accept = 0                     # first cycle the bandwidth allows an accept
        self.beats: deque[tuple[int, int]] = deque()   # (accept cycle, payload), oldest first

    def outputs(self) -> LinkOutputs:
        ready = int(len(self.beats) < self.depth and self.now >= self.next_accept)
        head_valid = bool(self.beats) and self.now >= self.beats[0][0] + self.latency
        return LinkOutputs(input_ready=ready, output_valid=int(head_valid),
                           output=self.beats[0][1] if head_valid else None)

    def step(self, *, input_valid: int, payload: int | None, output_ready: int) -> tuple[bool, int | None]:
        """Advance one edge; return ``(accepted, payload taken from output or None)``."""
        out = self.outputs()
        taken = None
        if out.output_valid and output_ready:
            taken = self.beats.popleft()[1]
        accepted = bool(input_valid and out.input_ready)
        if accepted:
            self.beats.append((self.now, payload))
            self.next_accept = self.now + self.cycles_per_beat
        self.now += 1
        return accepted, taken

    def held(self) -> list[int]:
        return [p for _, p in self.beats]
