"""Cycle-accurate golden model of the near-memory reducer (pure Python and numpy).

Lane sums come from :func:`tb.fp_add.golden.golden_add` (numpy / ml_dtypes), never from the
RTL adder. The model keeps two views of the bank: the *logical* one, with every accepted
request applied in order (what the bank must finally hold), and the *physical* one, which
the read port sees, where a request lands ``write_latency`` (= ``adder_latency + 2``)
cycles after acceptance; a read shows that view ``SPEC_READ_LATENCY`` (2) cycles after it is
issued, with every write-back up to the cycle before. Acceptance follows the documented hazard rule: an ``UPDATE`` is
refused (``request.ready`` low) while a request to its address was accepted within the last
``adder_latency - 1`` cycles; anything else is accepted at once.

What the bank holds is known only where the documentation determines it. ``rtl/nmc.py``
makes no promise about the bank after power-up or reset, so every word starts *unknown*;
a ``STORE`` makes it known, an ``UPDATE`` keeps it as known as it was (an update of an
unknown word is a protocol error of the driver, and its result is unknown). A read of an
unknown word is not compared. A reset drops the requests in flight (accepted, not yet
written back): their words become unknown, since their write-back may or may not have
happened. Every other word keeps its value across the reset, as the memory array itself
is not reset (real memory keeps its contents; the benches check that, see
:meth:`NearMemoryReducerModel.reset`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb.fp_add.golden import NUMPY_TYPES, golden_add

__all__ = ["NearMemoryReducerModel", "beat_to_lanes", "lanes_to_beat", "STORE", "UPDATE", "SPEC_READ_LATENCY"]

STORE = 0
UPDATE = 1
COUNTER_MASK = (1 << 32) - 1


def spec_write_latency(adder_latency: int) -> int:
    """The documented write latency: bank read, registered word, adder, write-back."""
    return adder_latency + 2


#: The documented read latency: ``read.data`` two cycles after ``read.en``, showing every
#: write-back up to the cycle before it.
SPEC_READ_LATENCY = 2


def lanes_to_beat(lanes: np.ndarray) -> int:
    """Pack lane bit patterns (lane 0 in the low bits) into one beat integer."""
    return int.from_bytes(np.ascontiguousarray(lanes).astype(lanes.dtype.newbyteorder("<")).tobytes(), "little")


def beat_to_lanes(beat: int, dtype, lanes: int) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return np.frombuffer(beat.to_bytes(width * lanes, "little"), dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)


@dataclass(frozen=True)
class ReducerOutputs:
    request_ready: int
    read_data: int | None  # the beat of the read issued read_latency cycles ago, None if none or unknown
    read_issued: bool      # a read was issued read_latency cycles ago (its data shows now)
    status: dict


class NearMemoryReducerModel:
    """Reference behaviour of :class:`rtl.nmc.NearMemoryReducer`.

    ``known`` (``physical_known``) marks the words of the logical (physical) view whose
    contents the specification determines.
    """

    def __init__(self, *, format: str, lanes: int, depth: int, adder_latency: int):  # noqa: A002
        self.format = format
        self.adder_latency = adder_latency
        self.write_latency = spec_write_latency(adder_latency)
        self.lanes = lanes
        self.utype = NUMPY_TYPES[format][1]
        self.logical = np.zeros((depth, lanes), dtype=self.utype)
        self.known = np.zeros(depth, dtype=bool)
        self.physical = self.logical.copy()
        self.physical_known = self.known.copy()
        self.reset()

    def reset(self) -> None:
        """The state in the first cycle after reset: the requests in flight are dropped and
        their words unknown; the read port shows nothing; the counters are zero."""
        for slot in getattr(self, "pipeline", []):
            if slot is not None:
                addr = slot[0]
                self.known[addr] = self.physical_known[addr] = False
        self.pipeline: list[tuple[int, np.ndarray, bool] | None] = [None] * self.write_latency
        # Addresses accepted 1 .. adder_latency - 1 cycles ago (None: no request that cycle).
        self.window: list[int | None] = [None] * (self.adder_latency - 1)
        self.read_data: int | None = None
        self.read_issued = False
        self.reads_in_flight: list[int | None] = [None] * (SPEC_READ_LATENCY - 1)  # newest first
        self.status = {"stores": 0, "updates": 0}

    def outputs(self) -> ReducerOutputs:
        return ReducerOutputs(request_ready=1, read_data=self.read_data, read_issued=self.read_issued,
                              status=dict(self.status))

    def ready_for(self, addr: int, op: int) -> bool:
        """``request.ready`` while ``(addr, op)`` is offered: an update waits for a result
        that the adder has not produced yet (``ready`` is high when nothing is offered)."""
        return not (op == UPDATE and addr in self.window)

    def step(self, *, request: tuple[int, int, int] | None, read_addr: int | None) -> bool:
        """Advance one edge. ``request`` is the ``(addr, op, beat)`` offered now (accepted if
        :meth:`ready_for` allows); ``read_addr`` a read issued now. Returns whether a request
        was accepted."""
        if request is not None and not self.ready_for(request[0], request[1]):
            request = None
        if self.window:
            self.window = [None if request is None else request[0], *self.window[:-1]]
        landing = self.pipeline[-1]
        if landing is not None:
            addr, value, known = landing
            self.physical[addr] = value
            self.physical_known[addr] = known
        # A read's word is taken after the write-back of the cycle before its data shows.
        *self.reads_in_flight, oldest = [read_addr, *self.reads_in_flight]
        self.read_issued = oldest is not None
        self.read_data = (lanes_to_beat(self.physical[oldest])
                          if oldest is not None and self.physical_known[oldest] else None)
        entering = None
        if request is not None:
            addr, op, beat = request
            data = beat_to_lanes(beat, self.utype, self.lanes)
            if op == UPDATE:
                value = golden_add(self.format, self.logical[addr], data).astype(self.utype)
                self.status["updates"] = (self.status["updates"] + 1) & COUNTER_MASK
            else:
                value = data
                self.known[addr] = True
                self.status["stores"] = (self.status["stores"] + 1) & COUNTER_MASK
            self.logical[addr] = value
            entering = (addr, value, bool(self.known[addr]))
        self.pipeline = [entering, *self.pipeline[:-1]]
        return request is not None
