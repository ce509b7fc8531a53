"""Pre-programmed DMA command table: turns tracker triggers into queued DMA commands.

In T3 the trigger computes nothing: it marks a DMA command, programmed before the GEMM
runs, ready to go. This table holds the descriptors, looks one up per trigger and queues
the command for the :class:`~rtl.dma_engine.DmaEngine`.
"""

from __future__ import annotations

from fractions import Fraction

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .fifo import TailRegisterFIFO
from .params import check_int, check_power_of_two
from .ports import WriteOp

__all__ = ["descriptor_layout", "command_layout", "DmaCommandTable"]

STATUS_COUNTER_WIDTH = 32


def descriptor_layout(*, addr_width: int, max_beats: int, port_width: int) -> data.StructLayout:
    """``{src_addr, dst_addr, beats, dst_port, op}``; addresses count beats."""
    return data.StructLayout({
        "src_addr": unsigned(addr_width),
        "dst_addr": unsigned(addr_width),
        "beats": unsigned(max_beats.bit_length()),
        "dst_port": unsigned(port_width),
        "op": WriteOp,
    })


def command_layout(*, dma_cmd_width: int, addr_width: int, max_beats: int,
                   port_width: int) -> data.StructLayout:
    """A queued command: the descriptor and the index it was programmed at."""
    return data.StructLayout({
        "dma_cmd": unsigned(dma_cmd_width),
        "desc": descriptor_layout(addr_width=addr_width, max_beats=max_beats, port_width=port_width),
    })


class DmaCommandTable(wiring.Component):
    """Table of pre-programmed DMA descriptors and the queue of triggered commands.

    Semantics
    ---------
    * ``program`` (``{index, desc}``) is always ready and writes descriptor ``index``. A
      descriptor with ``beats == 0`` or ``beats > max_beats`` is refused with a sticky error.
      A program takes effect before a trigger accepted in the same cycle.
    * ``trigger`` (the tracker's ``{tile, dma_cmd}``) looks up descriptor ``dma_cmd`` and
      queues ``{dma_cmd, desc}`` on ``issue``, in trigger order. A trigger of a descriptor
      never programmed is consumed and sets a sticky error that records the index.
    * ``trigger.ready`` is low only when the queue plus the lookup in flight holds
      ``queue_depth`` commands, so no trigger is ever lost.

    Timing
    ------
    * :attr:`lookup_latency` (= 2): edge accepting a trigger to ``issue.valid``, with the
      queue empty (one cycle of descriptor read, one of queue).
    * :attr:`triggers_per_cycle` (= ``min(1, queue_depth / 3)``) while ``issue`` takes one
      command per cycle: the ready rule counts the lookup in flight and the command being
      handed out, so a queue of 3 sustains one trigger per cycle, 2 sustains 2 in 3.

    Parameters
    ----------
    commands : int
        Descriptors in the table, a power of two in 2..1024.
    tile_width : int
        Bits of the tile id in the trigger payload (the tracker's), 1..12.
    addr_width : int
        Bits of a beat address, 4..48.
    max_beats : int
        Largest transfer in beats, 1..65535.
    port_width : int
        Bits of a destination port, 1..8.
    queue_depth : int
        Commands the issue queue holds, 1..64.
    """

    def __init__(self, *, commands: int = 256, tile_width: int = 8, addr_width: int = 32,
                 max_beats: int = 256, port_width: int = 3, queue_depth: int = 4):
        self._commands = check_power_of_two("commands", commands, 2, 1024)
        self._tile_width = check_int("tile_width", tile_width, 1, 12)
        self._addr_width = check_int("addr_width", addr_width, 4, 48)
        self._max_beats = check_int("max_beats", max_beats, 1, 65535)
        self._port_width = check_int("port_width", port_width, 1, 8)
        self._queue_depth = check_int("queue_depth", queue_depth, 1, 64)
        self._dma_cmd_width = (commands - 1).bit_length()

        self.descriptor_layout = descriptor_layout(
            addr_width=addr_width, max_beats=max_beats, port_width=port_width)
        self.command_layout = command_layout(
            dma_cmd_width=self._dma_cmd_width, addr_width=addr_width, max_beats=max_beats,
            port_width=port_width)
        self.program_layout = data.StructLayout({
            "index": unsigned(self._dma_cmd_width),
            "desc": self.descriptor_layout,
        })
        self.trigger_layout = data.StructLayout({
            "tile": unsigned(tile_width),
            "dma_cmd": unsigned(self._dma_cmd_width),
        })
        self.status_layout = data.StructLayout({
            "err_unprogrammed": 1,
            "err_unprogrammed_index": unsigned(self._dma_cmd_width),
            "err_bad_descriptor": 1,
            "err_bad_descriptor_index": unsigned(self._dma_cmd_width),
            "triggers": unsigned(STATUS_COUNTER_WIDTH),
            "issued": unsigned(STATUS_COUNTER_WIDTH),
        })
        super().__init__({
            "program": In(stream.Signature(self.program_layout)),
            "trigger": In(stream.Signature(self.trigger_layout)),
            "issue": Out(stream.Signature(self.command_layout)),
            "status": Out(self.status_layout),
        })

    commands = property(lambda self: self._commands, doc="Descriptors in the table.")
    dma_cmd_width = property(lambda self: self._dma_cmd_width, doc="Bits of a descriptor index.")
    tile_width = property(lambda self: self._tile_width, doc="Bits of the trigger's tile id.")
    addr_width = property(lambda self: self._addr_width, doc="Bits of a beat address.")
    max_beats = property(lambda self: self._max_beats, doc="Largest transfer in beats.")
    port_width = property(lambda self: self._port_width, doc="Bits of a destination port.")
    queue_depth = property(lambda self: self._queue_depth, doc="Commands the issue queue holds.")

    @property
    def lookup_latency(self) -> int:
        """Cycles from the edge accepting a trigger to its command's ``issue.valid``."""
        return 2

    @property
    def triggers_per_cycle(self) -> Fraction:
        """Sustained triggers accepted per cycle while ``issue`` takes one command per cycle."""
        return min(Fraction(1), Fraction(self._queue_depth, 3))

    def elaborate(self, platform):
        m = Module()
        m.submodules.desc_mem = desc_mem = Memory(
            shape=self.descriptor_layout, depth=self._commands, init=[])
        desc_wr = desc_mem.write_port()
        # Not transparent, and the queue's newest entry is a register
        # (:class:`~rtl.fifo.TailRegisterFIFO`): the block RAM's word (5.8 ns clock-to-out on
        # ECP5) goes straight into flip-flops beside the descriptor a program wrote in the
        # lookup's cycle, and the choice between them is made after the register.
        desc_rd = desc_mem.read_port()
        looked_up = data.StructLayout({"dma_cmd": unsigned(self._dma_cmd_width), "read": self.descriptor_layout,
                                       "programmed": self.descriptor_layout, "take_programmed": 1})

        def finish(value):
            entry = data.View(looked_up, value)
            return Cat(entry.dma_cmd, Mux(entry.take_programmed, entry.programmed, entry.read))

        m.submodules.queue = queue = TailRegisterFIFO(shape=self.command_layout, depth=self._queue_depth,
                                                      tail_shape=looked_up, finish=finish)

        # Valid bits in flip-flops: a trigger must know in its own cycle whether its
        # descriptor exists, to flag it and keep it out of the queue.
        programmed = Signal(self._commands)

        prog = self.program.payload
        beats = prog.desc.beats
        prog_bad = self.program.valid & ((beats == 0) | (beats > self._max_beats))
        prog_ok = self.program.valid & ~prog_bad

        trig = self.trigger.payload
        s1_valid = Signal()
        s1_cmd = Signal(self._dma_cmd_width)
        trigger_fire = self.trigger.valid & self.trigger.ready
        known = programmed.bit_select(trig.dma_cmd, 1) | (prog_ok & (prog.index == trig.dma_cmd))

        m.d.comb += [
            self.program.ready.eq(1),
            desc_wr.addr.eq(prog.index),
            desc_wr.data.eq(prog.desc),
            desc_wr.en.eq(prog_ok),
            desc_rd.addr.eq(trig.dma_cmd),
            self.trigger.ready.eq(queue.level + s1_valid < self._queue_depth),
        ]
        with m.If(prog_ok):
            m.d.sync += programmed.bit_select(prog.index, 1).eq(1)
        # A program takes effect before a trigger accepted in its cycle: its descriptor is
        # kept for the trigger, which takes it in place of the block RAM's (older) word.
        s1_programmed = Signal(self.descriptor_layout, reset_less=True)
        s1_take_programmed = Signal()
        m.d.sync += [
            s1_valid.eq(trigger_fire & known),
            s1_cmd.eq(trig.dma_cmd),
            s1_programmed.eq(prog.desc),
            s1_take_programmed.eq(prog_ok & (prog.index == trig.dma_cmd)),
        ]

        m.d.comb += [
            queue.w_data.dma_cmd.eq(s1_cmd),
            queue.w_data.read.eq(desc_rd.data),
            queue.w_data.programmed.eq(s1_programmed),
            queue.w_data.take_programmed.eq(s1_take_programmed),
            queue.w_en.eq(s1_valid),
            self.issue.valid.eq(queue.r_rdy),
            self.issue.payload.eq(queue.r_data),
            queue.r_en.eq(self.issue.ready),
        ]

        status = self.status
        with m.If(trigger_fire & ~known & ~status.err_unprogrammed):
            m.d.sync += [status.err_unprogrammed.eq(1), status.err_unprogrammed_index.eq(trig.dma_cmd)]
        with m.If(prog_bad & ~status.err_bad_descriptor):
            m.d.sync += [status.err_bad_descriptor.eq(1), status.err_bad_descriptor_index.eq(prog.index)]
        with m.If(trigger_fire):
            m.d.sync += status.triggers.eq(status.triggers + 1)
        with m.If(self.issue.valid & self.issue.ready):
            m.d.sync += status.issued.eq(status.issued + 1)
        return m
