"""The micro-systems the RTL ring runs and the system model predicts (``python -m system_model crosscheck``).

One memory-controller slice per GPU, 64-bit beats, a 4-beat output tile, a link of
``link_cycles_per_beat`` cycles per beat and ``link_latency`` cycles. The GEMMs are chosen
from the channel's and the link's rates, before any result was seen, so that each scenario
sits in one regime:

* ``compute_bound``: 4 reads per tile, 32-cycle k-steps: a wave of 4 tiles computes for
  128 cycles and reads 16 beats; its 16 output beats need 64 link cycles. The
  reduce-scatter should hide behind the GEMM.
* ``memory_heavy``: 10 reads per tile, 7-cycle k-steps: 40 reads and 16 stores per
  70-cycle wave (0.8 of the bank alone), plus T3's DMA reads and incoming updates (about
  16 + 16 per wave): more than the bank can serve, so the arbiter decides who waits.
* ``link_bound``: 2 reads per tile, 4-cycle k-steps, and a slower link (8 cycles per
  beat): a wave produces 16 beats every 8 cycles while the link drains one beat in 8.
* ``latency_bound``: 8 reads per tile, 2-cycle k-steps and a buffer of one k-step's
  beats (4): the next k-step's reads wait until the current one has used its data, so the
  GEMM waits a read latency per k-step (Little's law), the regime the buffer bound sets.

Sizes: "full" (``make crosscheck``) runs 256 tiles per GPU (64 waves) on 4 and on 8 GPUs;
"quick" (``make test``) runs 4 GPUs with 64 tiles per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rtl.params import check_int

from .row_bank import RowTiming

__all__ = ["MicroGemm", "MicroSystem", "Scenario", "scenarios", "SCHEDULES"]

#: What the RTL runs for every scenario: T3 under both arbiter modes, and the sequential
#: schedule (the GEMM to completion, then the reduce-scatter as DMA steps).
SCHEDULES = ("t3", "t3_mca", "sequential")


@dataclass(frozen=True)
class MicroGemm:
    """A staged GEMM at one slice (:class:`rtl.gemm_source.GemmTrafficSource`'s setup)."""

    tiles_per_stage: int
    tiles_per_wave: int = 4
    read_beats_per_tile: int = 4
    step_cycles: int = 32
    outstanding_reads: int = 16

    def __post_init__(self):
        # The source's setup widths (rtl/gemm_source.py); the model needs two CUs or more.
        check_int("tiles_per_stage", self.tiles_per_stage, 1, 512)
        check_int("tiles_per_wave", self.tiles_per_wave, 2, 64)
        check_int("read_beats_per_tile", self.read_beats_per_tile, 1, 255)
        check_int("step_cycles", self.step_cycles, 1, 4095)
        check_int("outstanding_reads", self.outstanding_reads, self.tiles_per_wave, 1023)

    def tiles(self, gpus: int) -> int:
        return gpus * self.tiles_per_stage

    @property
    def compute_cycles_per_tile(self) -> int:
        return self.read_beats_per_tile * self.step_cycles


@dataclass(frozen=True)
class MicroSystem:
    """The RTL ring's parameters (:class:`rtl.gemm_ring.GemmRing`)."""

    gpus: int
    link_latency: int = 32
    link_cycles_per_beat: int = 4
    tile_beats_log2: int = 2
    beat_width: int = 64
    compute_queue_depth: int = 8
    starvation_limit: int = 64
    threshold: int = 4
    #: The memory behind every slice: None, the block RAM's fixed latency; a
    #: :class:`~.row_bank.RowTiming`, a DRAM-like memory with banks and rows that paces the grants.
    rows: RowTiming | None = None

    def __post_init__(self):
        check_int("gpus", self.gpus, 2, 16)
        check_int("link_latency", self.link_latency, 1, 1024)
        check_int("link_cycles_per_beat", self.link_cycles_per_beat, 1, 64)
        check_int("tile_beats_log2", self.tile_beats_log2, 0, 4)      # the DMA's max_beats (16)
        check_int("beat_width", self.beat_width, 16, 256)
        check_int("compute_queue_depth", self.compute_queue_depth, 2, 31)
        check_int("starvation_limit", self.starvation_limit, 0, (1 << 16) - 1)
        check_int("threshold", self.threshold, 0, 31)
        if self.rows is not None and not isinstance(self.rows, RowTiming):
            raise TypeError(f"rows must be a RowTiming or None, not {self.rows!r}")

    @property
    def tile_beats(self) -> int:
        return 1 << self.tile_beats_log2

    def ring_params(self, tiles_per_stage: int) -> dict:
        """:class:`rtl.gemm_ring.GemmRing` parameters for ``tiles_per_stage`` tiles per chunk."""
        tiles = self.gpus * tiles_per_stage
        entries = 1 << max(6, (tiles - 1).bit_length())
        depth = 1 << max(8, (tiles * self.tile_beats - 1).bit_length())
        # A descriptor for every tile a GPU forwards, and the notify command (the driver programs them all
        # before the launch): 256 for every crosscheck scenario.
        commands = max(256, 1 << ((self.gpus - 1) * tiles_per_stage).bit_length())
        return {"gpus": self.gpus, "link_latency": self.link_latency, "link_cycles_per_beat": self.link_cycles_per_beat,
                "tile_beats_log2": self.tile_beats_log2, "beat_width": self.beat_width, "depth": depth,
                "entries": entries, "commands": commands, "max_beats": 16,
                "compute_queue_depth": self.compute_queue_depth, "power_up_seed": 17}


@dataclass(frozen=True)
class Scenario:
    name: str
    system: MicroSystem
    gemm: MicroGemm
    #: The size set it belongs to (:func:`scenarios`), for the replay line.
    size: str = "full"

    @property
    def label(self) -> str:
        return f"{self.name}, N={self.system.gpus}"


def _regimes(gpus: int, tiles_per_stage: int, size: str) -> list[Scenario]:
    return [replace(s, size=size) for s in _regime_list(gpus, tiles_per_stage)]


def _regime_list(gpus: int, tiles_per_stage: int) -> list[Scenario]:
    base = MicroSystem(gpus=gpus)
    return [
        Scenario("compute_bound", base, MicroGemm(tiles_per_stage, read_beats_per_tile=4, step_cycles=32)),
        Scenario("memory_heavy", base, MicroGemm(tiles_per_stage, read_beats_per_tile=10, step_cycles=7,
                                                 outstanding_reads=40)),
        Scenario("link_bound", replace(base, link_cycles_per_beat=8),
                 MicroGemm(tiles_per_stage, read_beats_per_tile=2, step_cycles=4)),
        Scenario("latency_bound", base, MicroGemm(tiles_per_stage, read_beats_per_tile=8, step_cycles=2,
                                                  outstanding_reads=4)),
    ]


def scenarios(size: str = "full") -> list[Scenario]:
    """The scenarios of ``size`` ("full": 256 tiles per GPU on 4 and 8 GPUs; "quick": 64 on 4)."""
    if size == "full":
        return _regimes(4, 64, size) + _regimes(8, 32, size)
    if size == "quick":
        return _regimes(4, 16, size)
    raise ValueError(f"size must be 'full' or 'quick', not {size!r}")
