"""Golden model of track & trigger: the tracker model feeding the DMA path model."""

from __future__ import annotations

from collections.abc import Callable

from tb.dma.model import DmaPathModel
from tb.tracker.model import TrackerTableModel

__all__ = ["TrackAndTriggerModel"]


class TrackAndTriggerModel:
    """Reference behaviour of :class:`rtl.track_trigger.TrackAndTrigger`."""

    def __init__(self, *, entries: int, trigger_depth: int | None, max_beats: int, queue_depth: int,
                 read_latency: int, addr_width: int, memory: Callable[[int], int]):
        self._params = {"entries": entries, "trigger_depth": trigger_depth, "max_beats": max_beats,
                        "queue_depth": queue_depth, "read_latency": read_latency, "addr_width": addr_width,
                        "memory": memory}
        self.reset()

    def reset(self) -> None:
        """The state in the first cycle after reset: both models at power-up (the tracker's
        sweep starting, the command table without descriptors)."""
        p = self._params
        self.tracker = TrackerTableModel(entries=p["entries"], trigger_depth=p["trigger_depth"])
        self.path = DmaPathModel(max_beats=p["max_beats"], queue_depth=p["queue_depth"],
                                 read_latency=p["read_latency"], addr_width=p["addr_width"], memory=p["memory"])

    def outputs(self):
        """``(tracker outputs, table outputs, engine outputs)`` of this cycle."""
        return (self.tracker.outputs(), *self.path.outputs())

    def step(self, *, arm, update, program, egress_ready: int):
        """Advance one edge; return ``(packet sent, dma_cmd done)`` of this cycle."""
        tracker_out, table_out, _ = self.outputs()
        trigger = None
        if tracker_out.trigger_valid:
            tile, dma_cmd = tracker_out.trigger
            trigger = {"tile": tile, "dma_cmd": dma_cmd}
        self.tracker.step(arm=arm, update=update, trigger_ready=table_out.trigger_ready)
        return self.path.step(program=program, trigger=trigger, egress_ready=egress_ready)

    def idle(self) -> bool:
        return self.tracker.idle() and self.path.idle()
