# amaranth: UnusedElaboratable=no
# (Sub-blocks are built in __init__ so that their timing properties are readable before
#  elaboration; they are elaborated with the parent, whose own warning stays on.)
"""Track & trigger: the tracker table driving the DMA path, the first half of T3."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .dma_path import DmaPath
from .ports import ReadPortSignature, ValidSignature
from .tracker import TrackerTable

__all__ = ["TrackAndTrigger"]


class TrackAndTrigger(wiring.Component):
    """:class:`~rtl.tracker.TrackerTable` -> :class:`~rtl.dma_path.DmaPath`.

    Writes counted by the tracker fire the pre-programmed DMA of their tile when the tile
    is complete; the tile leaves on ``egress`` as link packets.

    Timing
    ------
    * :attr:`trigger_latency`: the tracker's (last update to trigger).
    * :attr:`issue_latency`: the DMA path's (trigger to first egress beat).
    * :attr:`update_to_egress_latency`: their sum: edge accepting a tile's last update to
      its first ``egress.valid``, all queues empty.
    * :attr:`updates_per_cycle` and :attr:`beats_per_cycle`: 1 each, at the same time.

    Parameters
    ----------
    entries, count_width, trigger_depth
        As for :class:`~rtl.tracker.TrackerTable`.
    commands, addr_width, data_width, max_beats, port_width, queue_depth, read_latency
        As for :class:`~rtl.dma_path.DmaPath`.
    """

    def __init__(self, *, entries: int = 256, count_width: int = 16, trigger_depth: int | None = None,
                 commands: int = 256, addr_width: int = 32, data_width: int = 256,
                 max_beats: int = 256, port_width: int = 3, queue_depth: int = 4,
                 read_latency: int = 1):
        self.dma = DmaPath(commands=commands, tile_width=(entries - 1).bit_length() or 1,
                           addr_width=addr_width, data_width=data_width, max_beats=max_beats,
                           port_width=port_width, queue_depth=queue_depth, read_latency=read_latency)
        self.tracker = TrackerTable(entries=entries, count_width=count_width,
                                    dma_cmd_width=self.dma.table.dma_cmd_width, trigger_depth=trigger_depth)
        self.status_layout = data.StructLayout({"tracker": self.tracker.status_layout,
                                                "table": self.dma.table.status_layout,
                                                "engine": self.dma.engine.status_layout})
        super().__init__({
            "arm": In(stream.Signature(self.tracker.arm_layout)),
            "update": In(stream.Signature(self.tracker.update_layout)),
            "program": In(stream.Signature(self.dma.table.program_layout)),
            "mem_read": Out(ReadPortSignature(addr_width=addr_width, data_width=data_width)),
            "egress": Out(stream.Signature(self.dma.engine.packet_layout)),
            "done": Out(ValidSignature(self.dma.engine.done_layout)),
            "status": Out(self.status_layout),
        })

    @property
    def trigger_latency(self) -> int:
        return self.tracker.trigger_latency

    @property
    def issue_latency(self) -> int:
        return self.dma.issue_latency

    @property
    def update_to_egress_latency(self) -> int:
        """Cycles from the edge accepting a tile's last update to its first egress beat."""
        return self.tracker.trigger_latency + self.dma.issue_latency

    @property
    def updates_per_cycle(self) -> int:
        return self.tracker.updates_per_cycle

    @property
    def beats_per_cycle(self) -> int:
        return self.dma.beats_per_cycle

    def elaborate(self, platform):
        m = Module()
        m.submodules.tracker = tracker = self.tracker
        m.submodules.dma = dma = self.dma
        wiring.connect(m, wiring.flipped(self.arm), tracker.arm)
        wiring.connect(m, wiring.flipped(self.update), tracker.update)
        wiring.connect(m, tracker.trigger, dma.trigger)
        wiring.connect(m, wiring.flipped(self.program), dma.program)
        wiring.connect(m, wiring.flipped(self.mem_read), dma.mem_read)
        wiring.connect(m, wiring.flipped(self.egress), dma.egress)
        wiring.connect(m, wiring.flipped(self.done), dma.done)
        m.d.comb += [
            self.status.tracker.eq(tracker.status),
            self.status.table.eq(dma.status.table),
            self.status.engine.eq(dma.status.engine),
        ]
        return m
