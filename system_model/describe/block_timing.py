# amaranth: UnusedElaboratable=no
# (The RTL components are built only to read their documented timing properties.)
"""Timing of the verified T3 blocks, in memory-controller cycles.

Read by default from ``rtl_timing.json`` beside this module: the figures the model uses,
which ``make characterize`` measures in RTL simulation and writes both into
``sim_results/rtl_timing.json`` (the whole record) and here (so that a model-only install,
which has no ``sim_results/`` and no ``rtl/``, reads the same numbers; a test checks the two
agree). ``--rtl-timing FILE`` reads another record; ``load_block_timing(None)`` takes the
read-only timing properties of the ``rtl/`` components (a clone only). Nothing is copied by
hand; :attr:`BlockTiming.source` says which source was used.

The figures are cycles of the memory controller's clock: the model converts them at the
preset's ``mc_clock_GHz`` (the GPU's controller clock, e.g. 1 GHz for the paper's HBM2),
assuming the blocks run in the controller's clock domain as T3 places them. The FPGA
prototype's own clock (``sim_results/synth.json``, ≥ 100 MHz on ECP5) says the pipelines
are realistic, not how fast an ASIC controller would clock them.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BlockTiming", "load_block_timing", "RTL_TIMING_JSON", "MODEL_FIGURES"]

RTL_TIMING_JSON = Path(__file__).resolve().with_name("rtl_timing.json")
#: The figures the model reads (``make characterize`` writes them beside this module).
MODEL_FIGURES = ("tracker_trigger_latency", "dma_issue_latency", "reducer_requests_per_cycle_ring_stream",
                 "reducer_write_latency", "reducer_beat_bytes")


@dataclass(frozen=True)
class BlockTiming:
    """Cycle counts of the tracker, the DMA path and the near-memory reducer.

    Attributes
    ----------
    trigger_cycles : int
        Tracker: a tile's last write to its trigger.
    dma_issue_cycles : int
        DMA path: trigger to the first beat on the link.
    reducer_requests_per_cycle : float
        Near-memory reducer: requests per cycle per channel on T3's own write stream (the
        ring's local stores and remote updates, measured by ``make characterize``); below 1
        only where an update waits for its address's previous sum in the pipelined adder.
    reducer_write_cycles : int
        Near-memory reducer: acceptance to visibility of an update.
    reducer_beat_bytes : int
        Bytes one reducer request carries.
    source : str
        Where the numbers came from.
    """

    trigger_cycles: int
    dma_issue_cycles: int
    reducer_requests_per_cycle: float
    reducer_write_cycles: int
    reducer_beat_bytes: int
    source: str

    def trigger_to_link_s(self, mc_clock_GHz: float) -> float:
        """Seconds from a tile's last write to its first beat on the link."""
        return (self.trigger_cycles + self.dma_issue_cycles) / (mc_clock_GHz * 1e9)

    def reducer_write_s(self, mc_clock_GHz: float) -> float:
        return self.reducer_write_cycles / (mc_clock_GHz * 1e9)

    def reducer_bytes_per_s(self, mc_clock_GHz: float, channels: int) -> float:
        """Update bandwidth of all channels' reducers together."""
        return self.reducer_requests_per_cycle * self.reducer_beat_bytes * mc_clock_GHz * 1e9 * channels


@functools.cache
def _from_properties() -> BlockTiming:
    from rtl.dma_path import DmaPath
    from rtl.nmc import NearMemoryReducer
    from rtl.tracker import TrackerTable

    tracker, dma, reducer = TrackerTable(), DmaPath(), NearMemoryReducer()
    return BlockTiming(
        trigger_cycles=tracker.trigger_latency,
        dma_issue_cycles=dma.issue_latency,
        reducer_requests_per_cycle=float(reducer.requests_per_cycle),
        reducer_write_cycles=reducer.write_latency,
        reducer_beat_bytes=reducer.beat_width // 8,
        source="rtl/ component properties (TrackerTable, DmaPath, NearMemoryReducer defaults)",
    )


def load_block_timing(path: Path | None = RTL_TIMING_JSON) -> BlockTiming:
    """Measured timing from ``path`` if it exists, else the components' properties."""
    if path is not None and Path(path).exists():
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
        if not isinstance(data, dict) or not isinstance(data.get("figures"), dict):
            raise ValueError(f"{path}: not an rtl_timing.json (no 'figures' table; `make characterize` writes one)")
        figures = data["figures"]

        def figure(name, kind):
            try:
                return kind(figures[name]["value"])
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{path}: figures.{name}.value is missing or not a number") from None
        return BlockTiming(
            trigger_cycles=figure("tracker_trigger_latency", int),
            dma_issue_cycles=figure("dma_issue_latency", int),
            reducer_requests_per_cycle=figure("reducer_requests_per_cycle_ring_stream", float),
            reducer_write_cycles=figure("reducer_write_latency", int),
            reducer_beat_bytes=figure("reducer_beat_bytes", int),
            source=f"{path.name} (measured in RTL simulation)",
        )
    return _from_properties()
