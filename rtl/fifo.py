"""A first-in first-out queue whose newest entry is a register, for data that arrives late."""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Elaboratable, Module, Mux, Signal, Value
from amaranth.lib.memory import Memory

from .params import check_int

__all__ = ["TailRegisterFIFO"]


class TailRegisterFIFO(Elaboratable):
    """At its ports, cycle for cycle, :class:`amaranth.lib.fifo.SyncFIFO` (first-word
    fall-through) of the same ``depth``; inside, the entry written last is held in a register
    and moves into the LUT RAM a cycle later.

    Why: an ECP5 LUT RAM's write data must be at the RAM slice well before the clock edge,
    and data that leave a block RAM (5.8 ns clock-to-out) have no time for that at 110 MHz.
    Here ``w_data`` meets only the tail register's D inputs. The RAM is written from that
    register in the next cycle, unless the entry is read first.

    ``finish`` (optional) maps the register's contents to the entry: the writer may store
    raw parts and choose among them after the register (the DMA command table stores the
    block RAM's word beside a descriptor written in the same cycle, and chooses here). The
    RAM holds finished entries, so its width is ``shape``'s.

    Ports (as :class:`~amaranth.lib.fifo.SyncFIFO`): ``w_en``, ``w_data`` (``tail_shape``),
    ``w_rdy`` (``level != depth``), ``r_en``, ``r_data`` (``shape``), ``r_rdy``
    (``level != 0``), ``level`` (a register).

    Timing: an entry written in cycle *t* is readable from cycle *t + 1*; one write and one
    read per cycle, as for ``SyncFIFO``.

    Parameters
    ----------
    shape
        An entry's shape as read.
    depth : int
        Entries, 1..256 (one in the register, ``depth - 1`` in the RAM).
    tail_shape, finish
        The register's shape and a function of its value (a :class:`~amaranth.hdl.Value`
        of ``tail_shape``) returning the entry; both or neither (``None``: the entry as written).
    """

    def __init__(self, *, shape, depth: int, tail_shape=None,
                 finish: Callable[[Value], Value] | None = None):
        self.depth = check_int("depth", depth, 1, 256)
        if (tail_shape is None) != (finish is None):
            raise ValueError("tail_shape and finish must be given together")
        self.shape = shape
        self.tail_shape = shape if tail_shape is None else tail_shape
        self._finish = finish if finish is not None else (lambda value: value)
        self.w_en = Signal()
        self.w_data = Signal(self.tail_shape)
        self.w_rdy = Signal()
        self.r_en = Signal()
        self.r_data = Signal(shape)
        self.r_rdy = Signal()
        self.level = Signal(range(self.depth + 1))

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        tail = Signal(self.tail_shape, reset_less=True)
        tail_valid = Signal()
        finished = Signal(self.shape)
        m.d.comb += finished.eq(self._finish(tail))
        m.d.comb += [self.w_rdy.eq(self.level != depth), self.r_rdy.eq(self.level != 0)]
        do_write = self.w_en & self.w_rdy
        do_read = self.r_en & self.r_rdy
        with m.If(do_write & ~do_read):
            m.d.sync += self.level.eq(self.level + 1)
        with m.If(do_read & ~do_write):
            m.d.sync += self.level.eq(self.level - 1)

        if depth == 1:
            m.d.comb += self.r_data.eq(finished)
            with m.If(do_read):
                m.d.sync += tail_valid.eq(0)
            with m.If(do_write):
                m.d.sync += [tail.eq(self.w_data), tail_valid.eq(1)]
            return m

        ram_depth = depth - 1
        m.submodules.storage = storage = Memory(shape=self.shape, depth=ram_depth, init=[])
        w_port = storage.write_port()
        r_port = storage.read_port(domain="comb")
        produce = Signal(range(ram_depth))
        consume = Signal(range(ram_depth))
        in_ram = Signal(range(depth))    # entries in the RAM, all older than the tail's

        def advance(pointer):
            return Mux(pointer == ram_depth - 1, 0, pointer + 1)

        ram_read = do_read & (in_ram != 0)
        tail_read = do_read & (in_ram == 0)
        # The tail is copied into the RAM whenever the RAM has room before this cycle's read,
        # so that the RAM's write enable comes from registers only (a LUT RAM wants it early;
        # ``r_en`` may come late, from a consumer's handshake). If the tail is read in the
        # same cycle, the copy is not counted: it sits in a free word. A full RAM takes the
        # tail a cycle after its read (the queue was full, so nothing was written meanwhile).
        copy = tail_valid & (in_ram != ram_depth)
        move = copy & ~tail_read
        m.d.comb += [
            r_port.addr.eq(consume),
            w_port.addr.eq(produce),
            w_port.data.eq(finished),
            w_port.en.eq(copy),
        ]
        m.d.comb += self.r_data.eq(r_port.data)
        with m.If(in_ram == 0):
            m.d.comb += self.r_data.eq(finished)
        with m.If(move):
            m.d.sync += produce.eq(advance(produce))
        with m.If(ram_read):
            m.d.sync += consume.eq(advance(consume))
        with m.If(move & ~ram_read):
            m.d.sync += in_ram.eq(in_ram + 1)
        with m.If(ram_read & ~move):
            m.d.sync += in_ram.eq(in_ram - 1)
        with m.If(do_write):
            m.d.sync += [tail.eq(self.w_data), tail_valid.eq(1)]
        with m.Elif(copy | tail_read):
            m.d.sync += tail_valid.eq(0)
        return m
