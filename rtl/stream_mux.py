"""Two-input round-robin stream multiplexer."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamMux"]


class StreamMux(wiring.Component):
    """Merges streams ``a`` and ``b`` into ``out``, alternating when both are valid.

    Combinational (no latency); neither input waits more than one transfer of the other.
    """

    def __init__(self, payload_shape):
        self.payload_shape = payload_shape
        super().__init__({
            "a": In(stream.Signature(payload_shape)),
            "b": In(stream.Signature(payload_shape)),
            "out": Out(stream.Signature(payload_shape)),
        })

    def elaborate(self, platform):
        m = Module()
        last_a = Signal()
        pick_b = self.b.valid & (~self.a.valid | last_a)
        m.d.comb += [
            self.out.valid.eq(self.a.valid | self.b.valid),
            self.out.payload.eq(Mux(pick_b, self.b.payload, self.a.payload)),
            self.a.ready.eq(self.out.ready & ~pick_b),
            self.b.ready.eq(self.out.ready & pick_b),
        ]
        with m.If(self.a.valid & self.a.ready):
            m.d.sync += last_a.eq(1)
        with m.Elif(self.b.valid & self.b.ready):
            m.d.sync += last_a.eq(0)
        return m
