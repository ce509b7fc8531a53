"""DMA engine: reads a triggered tile from local memory and sends it out as link packets."""

from __future__ import annotations

from amaranth.hdl import Assert, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .dma_table import command_layout
from .params import check_int
from .ports import ReadPortSignature, ValidSignature, WriteOp

__all__ = ["packet_layout", "DmaEngine"]

STATUS_COUNTER_WIDTH = 32


def packet_layout(*, port_width: int, addr_width: int, data_width: int) -> data.StructLayout:
    """One link beat: ``{dst_port, dst_addr, op, data, last}``."""
    return data.StructLayout({
        "dst_port": unsigned(port_width),
        "dst_addr": unsigned(addr_width),
        "op": WriteOp,
        "last": 1,
        "data": unsigned(data_width),
    })


class DmaEngine(wiring.Component):
    """Executes queued DMA commands in order, one beat per cycle.

    For each command ``{dma_cmd, desc}`` it reads ``desc.beats`` words from
    ``desc.src_addr`` upward through ``mem_read`` and emits one ``egress`` packet per word,
    to ``desc.dst_addr`` upward (addresses wrap modulo ``2**addr_width``), with ``last`` on
    the final beat. ``done`` pulses with the command's index in the cycle its last beat is
    accepted by ``egress``.

    Reads are issued only while the beat buffer has room for their data
    (``buffered + in flight < buffer_depth``), so back-pressure on ``egress`` never loses
    or duplicates a beat; ``status.err_overflow`` would record a violation and is checked to
    stay 0. The next command is accepted in the cycle the current one issues its last read,
    so consecutive commands have no bubble between them.

    Timing
    ------
    * :attr:`start_latency` (= ``read_latency + 2``): edge accepting a command on ``cmd``
      (engine idle) to its first ``egress.valid``: one cycle to load the command, the
      memory's latency, one cycle in the beat buffer.
    * :attr:`beats_per_cycle` (= 1) when ``egress`` is always ready: the buffer holds
      ``read_latency + 2`` beats, enough to cover the read pipeline.

    Parameters
    ----------
    addr_width : int
        Bits of a beat address, 4..48.
    data_width : int
        Bits of a beat, 8..1024 (256 = 16 fp16 lanes).
    max_beats, port_width : int
        As for :class:`~rtl.dma_table.DmaCommandTable`.
    dma_cmd_width : int
        Bits of a command index, 1..16.
    read_latency : int
        Cycles from a read's ``en`` to its ``data``, 1..8.
    arbitrated_reads : bool
        Give ``mem_read`` a ``ready`` input (see :class:`~rtl.ports.ReadPortSignature`), for a
        memory shared through an arbiter; a read is issued when ``en`` and ``ready`` are
        both high. The timing properties then hold while ``ready`` stays high.
    """

    def __init__(self, *, addr_width: int = 32, data_width: int = 256, max_beats: int = 256,
                 port_width: int = 3, dma_cmd_width: int = 8, read_latency: int = 1,
                 arbitrated_reads: bool = False):
        self._arbitrated = bool(arbitrated_reads)
        self._addr_width = check_int("addr_width", addr_width, 4, 48)
        self._data_width = check_int("data_width", data_width, 8, 1024)
        self._max_beats = check_int("max_beats", max_beats, 1, 65535)
        self._port_width = check_int("port_width", port_width, 1, 8)
        self._dma_cmd_width = check_int("dma_cmd_width", dma_cmd_width, 1, 16)
        self._read_latency = check_int("read_latency", read_latency, 1, 8)

        self.command_layout = command_layout(
            dma_cmd_width=dma_cmd_width, addr_width=addr_width, max_beats=max_beats,
            port_width=port_width)
        self.packet_layout = packet_layout(
            port_width=port_width, addr_width=addr_width, data_width=data_width)
        self.done_layout = data.StructLayout({"dma_cmd": unsigned(dma_cmd_width)})
        self.status_layout = data.StructLayout({
            "err_overflow": 1,
            "busy": 1,
            "commands": unsigned(STATUS_COUNTER_WIDTH),
            "beats": unsigned(STATUS_COUNTER_WIDTH),
        })
        super().__init__({
            "cmd": In(stream.Signature(self.command_layout)),
            "mem_read": Out(ReadPortSignature(addr_width=addr_width, data_width=data_width,
                                              arbitrated=self._arbitrated)),
            "egress": Out(stream.Signature(self.packet_layout)),
            # A completion pulse: the receiver counts it and cannot push back.
            "done": Out(ValidSignature(self.done_layout)),
            "status": Out(self.status_layout),
        })

    addr_width = property(lambda self: self._addr_width, doc="Bits of a beat address.")
    data_width = property(lambda self: self._data_width, doc="Bits of a beat.")
    max_beats = property(lambda self: self._max_beats, doc="Largest transfer in beats.")
    port_width = property(lambda self: self._port_width, doc="Bits of a destination port.")
    dma_cmd_width = property(lambda self: self._dma_cmd_width, doc="Bits of a command index.")
    read_latency = property(lambda self: self._read_latency, doc="Cycles from read enable to data.")

    @property
    def buffer_depth(self) -> int:
        """Beats the output buffer holds: the read pipeline plus two."""
        return self._read_latency + 2

    @property
    def start_latency(self) -> int:
        """Cycles from the edge accepting a command (engine idle) to its first ``egress.valid``."""
        return self._read_latency + 2

    @property
    def beats_per_cycle(self) -> int:
        """Sustained beats per cycle while ``egress`` is always ready."""
        return 1

    def elaborate(self, platform):
        m = Module()
        latency = self._read_latency
        beat_layout = data.StructLayout({"packet": self.packet_layout,
                                         "dma_cmd": unsigned(self._dma_cmd_width)})
        m.submodules.buffer = buffer = SyncFIFO(width=beat_layout.size, depth=self.buffer_depth)

        # The command being read out.
        active = Signal()
        src = Signal(self._addr_width)
        dst = Signal(self._addr_width)
        left = Signal(self._max_beats.bit_length())
        port = Signal(self._port_width)
        op = Signal(WriteOp)
        cmd_index = Signal(self._dma_cmd_width)

        # Per-read metadata travels beside the memory pipeline and meets the data at its end.
        meta_layout = data.StructLayout({"valid": 1, "dst_addr": unsigned(self._addr_width),
                                         "dst_port": unsigned(self._port_width), "op": WriteOp,
                                         "last": 1, "dma_cmd": unsigned(self._dma_cmd_width)})
        stages = [Signal(meta_layout, name=f"read_stage{i}") for i in range(latency)]
        in_flight = sum(stage.valid for stage in stages)

        want = Signal()   # a read is wanted and the buffer has room for its data (a register)
        issue = Signal()
        issue_last = Signal()
        granted = self.mem_read.ready if self._arbitrated else 1
        # Beats buffered or in flight (buffer.level + in_flight), kept as a counter, and
        # ``want`` (= active and the counter below the buffer's depth) as a register: the
        # slice's arbiter waits on ``mem_read.en``, and decides ``mem_read.ready`` late in the
        # cycle. Both outcomes of this cycle's read are formed before it is known, and the
        # grant picks one.
        reserved = Signal(range(self.buffer_depth + 1))
        kept = Signal.like(reserved)       # the count if no read issues now
        m.d.comb += kept.eq(reserved - (self.egress.valid & self.egress.ready))
        depth = self.buffer_depth
        # The next cycle's ``active``: a read that is the command's last lets the next command in.
        active_if_read = self.cmd.valid | (left != 1)
        active_if_not = active | self.cmd.valid
        m.d.sync += [reserved.eq(Mux(issue, kept + 1, kept)),
                     want.eq(Mux(issue, active_if_read & (kept + 1 < depth), active_if_not & (kept < depth)))]
        m.d.sync += Assert(want == (active & (reserved < depth)), "the engine's want register disagrees")
        m.d.comb += [
            issue.eq(want & granted),
            issue_last.eq(issue & (left == 1)),
            self.cmd.ready.eq(~active | issue_last),
            self.mem_read.en.eq(want),
            self.mem_read.addr.eq(src),
        ]
        with m.If(issue):
            m.d.sync += [src.eq(src + 1), dst.eq(dst + 1), left.eq(left - 1)]
            with m.If(issue_last):
                m.d.sync += active.eq(0)
        with m.If(self.cmd.valid & self.cmd.ready):
            desc = self.cmd.payload.desc
            m.d.sync += [
                active.eq(1),
                src.eq(desc.src_addr),
                dst.eq(desc.dst_addr),
                left.eq(desc.beats),
                port.eq(desc.dst_port),
                op.eq(desc.op),
                cmd_index.eq(self.cmd.payload.dma_cmd),
            ]

        m.d.sync += [
            stages[0].valid.eq(issue),
            stages[0].dst_addr.eq(dst),
            stages[0].dst_port.eq(port),
            stages[0].op.eq(op),
            stages[0].last.eq(issue_last),
            stages[0].dma_cmd.eq(cmd_index),
        ]
        for prev, stage in zip(stages, stages[1:], strict=False):
            m.d.sync += stage.eq(prev)

        returning = stages[-1]
        beat_in = Signal(beat_layout)
        m.d.comb += [
            beat_in.packet.dst_port.eq(returning.dst_port),
            beat_in.packet.dst_addr.eq(returning.dst_addr),
            beat_in.packet.op.eq(returning.op),
            beat_in.packet.last.eq(returning.last),
            beat_in.packet.data.eq(self.mem_read.data),
            beat_in.dma_cmd.eq(returning.dma_cmd),
            buffer.w_data.eq(beat_in),
            buffer.w_en.eq(returning.valid),
        ]

        beat_out = data.View(beat_layout, buffer.r_data)
        egress_fire = self.egress.valid & self.egress.ready
        m.d.comb += [
            self.egress.valid.eq(buffer.r_rdy),
            self.egress.payload.eq(beat_out.packet),
            buffer.r_en.eq(self.egress.ready),
            self.done.valid.eq(egress_fire & beat_out.packet.last),
            self.done.payload.dma_cmd.eq(beat_out.dma_cmd),
        ]

        status = self.status
        m.d.comb += status.busy.eq(active | (in_flight != 0) | buffer.r_rdy)
        with m.If(buffer.w_en & ~buffer.w_rdy):
            m.d.sync += status.err_overflow.eq(1)
        with m.If(egress_fire):
            m.d.sync += status.beats.eq(status.beats + 1)
        with m.If(self.done.valid):
            m.d.sync += status.commands.eq(status.commands + 1)
        return m
