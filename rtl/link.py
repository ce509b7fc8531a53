"""Model of a point-to-point link between GPUs: a FIFO with a latency and a bandwidth."""

from __future__ import annotations

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .params import check_int

__all__ = ["LinkModel"]


class LinkModel(wiring.Component):
    """A beat accepted on ``input`` in cycle *c* can leave on ``output`` from cycle
    *c + latency*; ``input`` accepts at most one beat every ``cycles_per_beat`` cycles (the
    link's bandwidth relative to the memory's beat rate). Back-pressure on ``output`` fills
    the FIFO and then back-pressures ``input``; nothing is dropped.

    Parameters
    ----------
    payload_shape : shape
    latency : int
        Cycles in flight, 1..1024.
    cycles_per_beat : int
        1..64: 2 means half the memory's bandwidth.
    depth : int or None
        Beats in flight; by default enough to keep the link busy:
        ``latency // cycles_per_beat + 2``.
    """

    def __init__(self, *, payload_shape, latency: int = 8, cycles_per_beat: int = 1, depth: int | None = None):
        self._latency = check_int("latency", latency, 1, 1024)
        self._cycles_per_beat = check_int("cycles_per_beat", cycles_per_beat, 1, 64)
        default_depth = latency // cycles_per_beat + 2
        self._depth = check_int("depth", default_depth if depth is None else depth, 1, 4096)
        self.payload_shape = payload_shape
        super().__init__({
            "input": In(stream.Signature(payload_shape)),
            "output": Out(stream.Signature(payload_shape)),
        })

    latency = property(lambda self: self._latency, doc="Cycles from input to output.")
    cycles_per_beat = property(lambda self: self._cycles_per_beat, doc="Cycles per beat of bandwidth.")
    depth = property(lambda self: self._depth, doc="Beats the link holds.")

    def elaborate(self, platform):
        m = Module()
        stamp_width = (self._latency + self._depth + 1).bit_length() + 1
        entry = data.StructLayout({"stamp": unsigned(stamp_width), "payload": self.payload_shape})
        m.submodules.fifo = fifo = SyncFIFO(width=entry.size, depth=self._depth)
        now = Signal(stamp_width)
        m.d.sync += now.eq(now + 1)
        cooldown = Signal(range(self._cycles_per_beat))

        accept = self.input.valid & self.input.ready
        incoming = Signal(entry)
        m.d.comb += [
            self.input.ready.eq(fifo.w_rdy & (cooldown == 0)),
            incoming.stamp.eq(now),
            incoming.payload.eq(self.input.payload),
            fifo.w_data.eq(incoming),
            fifo.w_en.eq(accept),
        ]
        if self._cycles_per_beat > 1:
            with m.If(accept):
                m.d.sync += cooldown.eq(self._cycles_per_beat - 1)
            with m.Elif(cooldown != 0):
                m.d.sync += cooldown.eq(cooldown - 1)

        head = data.View(entry, fifo.r_data)
        age = Signal(stamp_width)
        m.d.comb += [
            age.eq(now - head.stamp),
            self.output.valid.eq(fifo.r_rdy & (age >= self._latency)),
            self.output.payload.eq(head.payload),
            fifo.r_en.eq(self.output.valid & self.output.ready),
        ]
        return m
