# amaranth: UnusedElaboratable=no
# (Sub-blocks are built in __init__ so that their timing properties are readable before
#  elaboration; they are elaborated with the parent, whose own warning stays on.)
"""The trigger-to-link path: DMA command table feeding the DMA engine."""

from __future__ import annotations

import math

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .dma_engine import DmaEngine
from .dma_table import DmaCommandTable
from .ports import ReadPortSignature, ValidSignature

__all__ = ["DmaPath"]


class DmaPath(wiring.Component):
    """:class:`~rtl.dma_table.DmaCommandTable` -> :class:`~rtl.dma_engine.DmaEngine`.

    A trigger ``{tile, dma_cmd}`` becomes ``desc.beats`` link packets of descriptor
    ``dma_cmd``. See the two blocks for the semantics.

    Timing
    ------
    * :attr:`issue_latency`: edge accepting a trigger (both blocks idle) to its first
      ``egress.valid`` = ``lookup_latency + start_latency`` = ``read_latency + 4``.
    * :attr:`beats_per_cycle` (= 1) while ``egress`` is always ready, across commands, as
      long as commands are long enough for the table to keep up
      (``beats >= 1 / table.triggers_per_cycle``); :attr:`min_beats_for_full_rate`.

    Parameters
    ----------
    commands, tile_width, addr_width, max_beats, port_width, queue_depth
        As for :class:`~rtl.dma_table.DmaCommandTable`.
    data_width, read_latency
        As for :class:`~rtl.dma_engine.DmaEngine`.
    """

    def __init__(self, *, commands: int = 256, tile_width: int = 8, addr_width: int = 32,
                 data_width: int = 256, max_beats: int = 256, port_width: int = 3,
                 queue_depth: int = 4, read_latency: int = 1):
        self.table = DmaCommandTable(commands=commands, tile_width=tile_width, addr_width=addr_width,
                                     max_beats=max_beats, port_width=port_width, queue_depth=queue_depth)
        self.engine = DmaEngine(addr_width=addr_width, data_width=data_width, max_beats=max_beats,
                                port_width=port_width, dma_cmd_width=self.table.dma_cmd_width,
                                read_latency=read_latency)
        self.status_layout = data.StructLayout({"table": self.table.status_layout,
                                                "engine": self.engine.status_layout})
        super().__init__({
            "program": In(stream.Signature(self.table.program_layout)),
            "trigger": In(stream.Signature(self.table.trigger_layout)),
            "mem_read": Out(ReadPortSignature(addr_width=addr_width, data_width=data_width)),
            "egress": Out(stream.Signature(self.engine.packet_layout)),
            "done": Out(ValidSignature(self.engine.done_layout)),
            "status": Out(self.status_layout),
        })

    @property
    def issue_latency(self) -> int:
        """Cycles from the edge accepting a trigger to its first ``egress.valid``."""
        return self.table.lookup_latency + self.engine.start_latency

    @property
    def beats_per_cycle(self) -> int:
        """Sustained egress beats per cycle for commands of ``min_beats_for_full_rate`` or more."""
        return self.engine.beats_per_cycle

    @property
    def min_beats_for_full_rate(self) -> int:
        """Shortest command length for which back-to-back commands leave no egress bubble."""
        return math.ceil(1 / self.table.triggers_per_cycle)

    @property
    def queue_depth(self) -> int:
        """Commands the issue queue holds."""
        return self.table.queue_depth

    def elaborate(self, platform):
        m = Module()
        m.submodules.table = table = self.table
        m.submodules.engine = engine = self.engine
        wiring.connect(m, wiring.flipped(self.program), table.program)
        wiring.connect(m, wiring.flipped(self.trigger), table.trigger)
        wiring.connect(m, table.issue, engine.cmd)
        wiring.connect(m, wiring.flipped(self.mem_read), engine.mem_read)
        wiring.connect(m, wiring.flipped(self.egress), engine.egress)
        wiring.connect(m, wiring.flipped(self.done), engine.done)
        m.d.comb += [self.status.table.eq(table.status), self.status.engine.eq(engine.status)]
        return m
