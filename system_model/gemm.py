"""GEMM timing: a tile / wave model over the CUs with an HBM roofline and L2 panel reuse.

Each CU computes one ``tile_m x tile_n`` output tile at a time; the tiles run in waves of
``cus`` tiles, tile row by tile row (so that the rows of C complete in order, which T3's
staged GEMM needs), each wave covering a near-square block of tiles. A wave's time is the
larger of its compute time (partial edge tiles cost a full tile) and the DRAM time of the
operand panels it needs plus its output. Panels are shared by the tiles of a wave through
the L2; the weight matrix B is read from DRAM only once when it fits in half of the L2. The
output is written once.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .hardware import GpuConfig
from .models import GemmShape
from .units import check_int_range, check_range

__all__ = ["GemmKernelConfig", "GemmTiming", "gemm_timing"]


@dataclass(frozen=True)
class GemmKernelConfig:
    """Kernel choices the paper does not give.

    Attributes
    ----------
    tile_m, tile_n : int
        Macro tile per workgroup: 128 x 128, a common rocBLAS/Tensile fp16 macro tile on
        CDNA for large GEMMs. In T3 a tile is the unit the tracker counts writes for.
    compute_efficiency : float
        Fraction of the matrix-core peak a compute-bound tile achieves (0.8: typical of
        tuned fp16 GEMMs on MI200-class GPUs).
    bytes_per_element : int
        fp16.
    """

    tile_m: int = 128
    tile_n: int = 128
    compute_efficiency: float = 0.8
    bytes_per_element: int = 2

    def __post_init__(self):
        check_int_range("tile_m", self.tile_m, 1, 4096)
        check_int_range("tile_n", self.tile_n, 1, 4096)
        check_range("compute_efficiency", self.compute_efficiency, 0.01, 1.0)
        check_int_range("bytes_per_element", self.bytes_per_element, 1, 8)


@dataclass(frozen=True)
class GemmTiming:
    """Result of :func:`gemm_timing`; times in seconds, traffic in bytes.

    All full waves are alike, so the schedule is two kinds of wave: ``full`` (``waves - 1``
    or ``waves`` of them) and the last, possibly partial, one.
    """

    time_s: float
    compute_s: float
    waves: int
    tiles: int
    tiles_n: int
    tile_m: int
    cus: int
    dram_read_bytes: float
    dram_write_bytes: float
    full_wave: tuple[float, float]   # (time_s, dram_bytes) of a full wave
    last_wave: tuple[float, float]   # (time_s, dram_bytes) of the last wave

    @property
    def dram_bytes(self) -> float:
        return self.dram_read_bytes + self.dram_write_bytes

    @property
    def demand_bytes_per_s(self) -> float:
        """DRAM rate the GEMM asks for when it runs at its own speed."""
        return self.dram_bytes / self.time_s

    def waves_span(self, first: int, last: int) -> tuple[float, float]:
        """``(time_s, dram_bytes)`` of waves ``first..last`` inclusive."""
        n = last - first + 1
        includes_last = last == self.waves - 1
        full = n - 1 if includes_last else n
        time_s = full * self.full_wave[0] + (self.last_wave[0] if includes_last else 0.0)
        dram = full * self.full_wave[1] + (self.last_wave[1] if includes_last else 0.0)
        return time_s, dram

    def stage_segments(self, rows_per_stage: tuple[int, ...]) -> tuple[tuple[float, float, bool] | None, ...]:
        """Per stage, the ``(time_s, dram_bytes, includes_last_wave)`` of the waves that end
        with it, or None if the stage ends inside a wave that an earlier stage ended with."""
        return _stage_segments(self, rows_per_stage)

    def stage_last_wave(self, rows_per_stage: list[int]) -> list[int]:
        """Index of the wave that finishes each stage, the stages being consecutive row ranges
        of C: a stage is done when every tile row it touches is done (tile rows run in order)."""
        ends, row = [], 0
        for rows in rows_per_stage:
            row += rows
            last_tile = -(-row // self.tile_m) * self.tiles_n - 1
            ends.append(min(last_tile // self.cus, self.waves - 1))
        return ends


def _wave(in_wave: int, tiles_n: int, a_panel: float, b_panel: float, out_tile: float, weights_resident: bool,
          tile_compute_s: float, dram_bytes_per_s: float) -> tuple[float, float, float]:
    """(time_s, read_bytes, dram_bytes) of a wave of ``in_wave`` tiles."""
    # Grouped rasterisation (as tuned GEMM libraries do for L2 locality): a wave covers a
    # near-square block of `rows` tile rows x `cols` tile columns.
    cols = min(tiles_n, math.ceil(math.sqrt(in_wave)))
    rows = math.ceil(in_wave / cols)
    reads = rows * a_panel + (0 if weights_resident else cols * b_panel)
    dram = reads + in_wave * out_tile
    return max(tile_compute_s, dram / dram_bytes_per_s), reads, dram


def gemm_timing(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, *, cus: int | None = None) -> GemmTiming:
    """Time, DRAM traffic and wave schedule of ``shape`` on ``cus`` CUs (default: all)."""
    cus = gpu.cus if cus is None else cus
    check_int_range("cus", cus, 1, gpu.cus)
    return _gemm_timing(shape, gpu, kernel, cus)


@functools.lru_cache(maxsize=4096)
def _gemm_timing(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, cus: int) -> GemmTiming:
    e = kernel.bytes_per_element
    tiles_n = math.ceil(shape.n / kernel.tile_n)
    tiles = math.ceil(shape.m / kernel.tile_m) * tiles_n
    waves = math.ceil(tiles / cus)
    flops_per_tile = 2 * kernel.tile_m * kernel.tile_n * shape.k
    cu_flops = gpu.clock_GHz * 1e9 * gpu.fp16_flops_per_cycle_per_cu * kernel.compute_efficiency
    tile_compute_s = flops_per_tile / cu_flops
    weights_bytes = shape.k * shape.n * e
    weights_resident = weights_bytes <= gpu.l2_MB * 1e6 / 2
    args = (tiles_n, kernel.tile_m * shape.k * e, kernel.tile_n * shape.k * e, kernel.tile_m * kernel.tile_n * e,
            weights_resident, tile_compute_s, gpu.dram_bytes_per_s)
    full_time, full_reads, full_dram = _wave(cus, *args)
    last_tiles = tiles - (waves - 1) * cus
    last_time, last_reads, last_dram = _wave(last_tiles, *args)
    reads = (waves - 1) * full_reads + last_reads + (weights_bytes if weights_resident else 0)
    return GemmTiming(time_s=(waves - 1) * full_time + last_time, compute_s=waves * tile_compute_s, waves=waves,
                      tiles=tiles, tiles_n=tiles_n, tile_m=kernel.tile_m, cus=cus, dram_read_bytes=reads,
                      dram_write_bytes=shape.m * shape.n * e, full_wave=(full_time, full_dram),
                      last_wave=(last_time, last_dram))


@functools.lru_cache(maxsize=4096)
def _stage_segments(gemm: GemmTiming, rows_per_stage: tuple[int, ...]):
    segments, first = [], 0
    for last in gemm.stage_last_wave(list(rows_per_stage)):
        if last >= first:
            segments.append((*gemm.waves_span(first, last), last == gemm.waves - 1))
            first = last + 1
        else:
            segments.append(None)
    return tuple(segments)
