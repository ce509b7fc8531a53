"""Model of a point-to-point link between GPUs: a FIFO with a latency and a bandwidth."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .params import check_int

__all__ = ["LinkModel"]


class LinkModel(wiring.Component):
    """A beat accepted on ``input`` in cycle *c* can leave on ``output`` from cycle
    *c + latency*; ``input`` accepts at most one beat every ``cycles_per_beat`` cycles (the
    link's bandwidth relative to the memory's beat rate). Back-pressure on ``output`` fills
    the FIFO and then back-pressures ``input``; nothing is dropped, and ``output`` obeys the
    stream rules: once valid, a beat stays valid and unchanged until it is taken, however
    long the back-pressure lasts.

    How a beat's age is kept: a shift register of ``latency`` bits records in which of the
    last ``latency`` cycles a beat was accepted, and a counter holds the beats that have
    aged past ``latency`` and wait in the FIFO. Neither wraps, unlike a timestamp compared
    with a free-running clock, whose difference wraps after ``2**width`` cycles of
    back-pressure and would take ``valid`` away from a waiting beat.

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
        m.submodules.fifo = fifo = SyncFIFO(width=Shape.cast(self.payload_shape).width, depth=self._depth)
        cooldown = Signal(range(self._cycles_per_beat))

        accept = self.input.valid & self.input.ready
        m.d.comb += [
            self.input.ready.eq(fifo.w_rdy & (cooldown == 0)),
            fifo.w_data.eq(self.input.payload),
            fifo.w_en.eq(accept),
        ]
        if self._cycles_per_beat > 1:
            with m.If(accept):
                m.d.sync += cooldown.eq(self._cycles_per_beat - 1)
            with m.Elif(cooldown != 0):
                m.d.sync += cooldown.eq(cooldown - 1)

        # Bit i of ``accepted_ago``: a beat was accepted i + 1 cycles ago. The top bit is the
        # beat that reaches ``latency`` cycles of age in this cycle.
        accepted_ago = Signal(self._latency)
        m.d.sync += accepted_ago.eq(Cat(accept, accepted_ago[:-1]))
        maturing = accepted_ago[-1]
        matured = Signal(range(self._depth + 1))  # beats older than ``latency``, in the FIFO
        take = self.output.valid & self.output.ready
        m.d.sync += matured.eq(matured + maturing - take)
        m.d.comb += [
            self.output.valid.eq((matured != 0) | maturing),
            self.output.payload.eq(fifo.r_data),
            fifo.r_en.eq(take),
        ]
        return m
