"""Two-input round-robin stream multiplexer."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamMux"]


class StreamMux(wiring.Component):
    """Merges streams ``a`` and ``b`` into ``out``, alternating when both are valid.

    ``out`` obeys the stream rules whenever ``a`` and ``b`` do: once the mux offers an
    input's item (``out.valid`` high, ``out.ready`` low) it keeps offering that item,
    unchanged, until the transfer, even if the other input becomes valid meanwhile.
    Choosing afresh in every cycle would change ``out.payload`` under a waiting ``valid``,
    which a receiver that latches on ``valid`` (a link, a queue with registered inputs) would
    see as a lost item.

    Timing: combinational (no latency), one transfer per cycle. Fairness: when both
    inputs are valid they alternate, so neither waits more than one transfer of the other.
    """

    def __init__(self, payload_shape):
        self.payload_shape = payload_shape
        super().__init__({
            "a": In(stream.Signature(payload_shape)),
            "b": In(stream.Signature(payload_shape)),
            "out": Out(stream.Signature(payload_shape)),
        })

    @property
    def latency(self) -> int:
        """Cycles from an input's ``valid`` to ``out.valid``: 0 (combinational)."""
        return 0

    def elaborate(self, platform):
        m = Module()
        last_a = Signal()     # round-robin state: a was transferred last
        held = Signal()       # an offer is waiting: keep its input
        held_b = Signal()     # ... and that input is b
        fresh_b = self.b.valid & (~self.a.valid | last_a)
        pick_b = Mux(held, held_b, fresh_b)
        m.d.comb += [
            self.out.valid.eq(self.a.valid | self.b.valid),
            self.out.payload.eq(Mux(pick_b, self.b.payload, self.a.payload)),
            self.a.ready.eq(self.out.ready & ~pick_b),
            self.b.ready.eq(self.out.ready & pick_b),
        ]
        m.d.sync += [held.eq(self.out.valid & ~self.out.ready), held_b.eq(pick_b)]
        with m.If(self.a.valid & self.a.ready):
            m.d.sync += last_a.eq(1)
        with m.Elif(self.b.valid & self.b.ready):
            m.d.sync += last_a.eq(0)
        return m
