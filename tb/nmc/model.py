"""Cycle-accurate golden model of the near-memory reducer (pure Python and numpy).

Lane sums come from :func:`tb.fp_add.golden.golden_add` (numpy / ml_dtypes), never from the
RTL adder. The model keeps two views of the bank: the *logical* one, with every accepted
request applied in order (what the bank must finally hold), and the *physical* one, which
the read port sees, where a request lands ``write_latency`` (= 2) cycles after acceptance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb.fp_add.golden import NUMPY_TYPES, golden_add

__all__ = ["NearMemoryReducerModel", "beat_to_lanes", "lanes_to_beat", "STORE", "UPDATE"]

STORE = 0
UPDATE = 1
COUNTER_MASK = (1 << 32) - 1
SPEC_WRITE_LATENCY = 2


def lanes_to_beat(lanes: np.ndarray) -> int:
    """Pack lane bit patterns (lane 0 in the low bits) into one beat integer."""
    return int.from_bytes(np.ascontiguousarray(lanes).astype(lanes.dtype.newbyteorder("<")).tobytes(), "little")


def beat_to_lanes(beat: int, dtype, lanes: int) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return np.frombuffer(beat.to_bytes(width * lanes, "little"), dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)


@dataclass(frozen=True)
class ReducerOutputs:
    request_ready: int
    read_data: int | None  # the beat read last cycle, or None if no read was issued
    status: dict


class NearMemoryReducerModel:
    """Reference behaviour of :class:`rtl.nmc.NearMemoryReducer`."""

    def __init__(self, *, format: str, lanes: int, depth: int):  # noqa: A002
        self.format = format
        self.lanes = lanes
        self.utype = NUMPY_TYPES[format][1]
        self.logical = np.zeros((depth, lanes), dtype=self.utype)
        self.physical = self.logical.copy()
        self.pipeline: list[tuple[int, np.ndarray] | None] = [None] * SPEC_WRITE_LATENCY
        self.read_data: int | None = None
        self.status = {"stores": 0, "updates": 0}

    def outputs(self) -> ReducerOutputs:
        return ReducerOutputs(request_ready=1, read_data=self.read_data, status=dict(self.status))

    def step(self, *, request: tuple[int, int, int] | None, read_addr: int | None) -> None:
        """Advance one edge. ``request`` is ``(addr, op, beat)``; ``read_addr`` a read issued now."""
        landing = self.pipeline[-1]
        if landing is not None:
            addr, value = landing
            self.physical[addr] = value
        # The read port is transparent to the write-back of its own cycle.
        self.read_data = lanes_to_beat(self.physical[read_addr]) if read_addr is not None else None
        entering = None
        if request is not None:
            addr, op, beat = request
            data = beat_to_lanes(beat, self.utype, self.lanes)
            if op == UPDATE:
                value = golden_add(self.format, self.logical[addr], data).astype(self.utype)
                self.status["updates"] = (self.status["updates"] + 1) & COUNTER_MASK
            else:
                value = data
                self.status["stores"] = (self.status["stores"] + 1) & COUNTER_MASK
            self.logical[addr] = value
            entering = (addr, value)
        self.pipeline = [entering, *self.pipeline[:-1]]
