"""GEMM: its tile order, its waves, and the DRAM traffic an L2 of finite size lets through.

One order for timing and traffic. Each CU computes one ``tile_m x tile_n`` tile of C at a
time; tiles are dispatched in row-major order (tile row by tile row, which T3's staged
GEMM needs: a stage is a range of C's rows), ``cus`` at a time, so wave ``w`` holds tiles
``w*cus .. (w+1)*cus - 1``. A wave's CUs step through K together, one ``k_tile`` slice at a
time, reading for each tile row it touches an A slice (``tile_m x k_tile``) and for each
tile column a B slice (``k_tile x tile_n``).

The L2 as a reuse-distance model of LRU at panel granularity: within a wave an A panel
(``tile_m x K``) or a B panel (``K x tile_n``) is read from DRAM once and shared through
the L2 by the wave's tiles, which step through K together. Between waves, a panel a wave
needs was last touched by an earlier wave, and everything the waves in between touched
lies between the two uses (at every k-slice alike, since all waves walk K in the same
order); under LRU it hits iff that footprint fits the L2. A wave's footprint is its A and
B panels and, where stores allocate in the L2, its output tiles.

* **Baseline**: output stores write-allocate in the L2 (and are written back to DRAM
  once), so they take L2 room from the operands.
* **T3**: the tracked stores bypass the caches on their way to the memory controller
  (the tracker must see them, and the near-memory reducer adds them), so they take none.

So the GEMM's reads differ between the two only where the L2 is tight, as the model says.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .hardware import GpuConfig
from .models import GemmShape
from .units import check_int_range, check_range

__all__ = ["GemmKernelConfig", "GemmTiming", "gemm_timing", "wave_traffic", "tile_order", "stage_tile_rows"]


@dataclass(frozen=True)
class GemmKernelConfig:
    """Kernel choices the paper does not give.

    Attributes
    ----------
    tile_m, tile_n : int
        Macro tile per workgroup: 128 x 128, a common rocBLAS/Tensile fp16 macro tile on
        CDNA for large GEMMs. In T3 a tile is the unit the tracker counts writes for.
    k_tile : int
        Depth of one k-loop iteration (Tensile's DepthU): the k-slice a CU prefetches.
    prefetch_stages : int
        k-slices a CU's global-to-LDS pipeline holds (2: double buffering); all but the one
        being consumed are in flight, which bounds the GEMM's outstanding requests.
    group_rows : int
        Tile rows walked together, column by column, inside a stage (grouped rasterisation,
        Tensile's WorkGroupMapping of 8).
    compute_efficiency : float
        Fraction of the matrix-core peak a compute-bound tile achieves.
    bytes_per_element : int
        fp16.
    """

    tile_m: int = 128
    tile_n: int = 128
    k_tile: int = 32
    prefetch_stages: int = 2
    group_rows: int = 8
    compute_efficiency: float = 0.8
    bytes_per_element: int = 2

    def __post_init__(self):
        check_int_range("tile_m", self.tile_m, 1, 4096)
        check_int_range("tile_n", self.tile_n, 1, 4096)
        check_int_range("k_tile", self.k_tile, 1, 4096)
        check_int_range("prefetch_stages", self.prefetch_stages, 2, 16)
        check_int_range("group_rows", self.group_rows, 1, 4096)
        check_range("compute_efficiency", self.compute_efficiency, 0.01, 1.0)
        check_int_range("bytes_per_element", self.bytes_per_element, 1, 8)

    def prefetch_bytes_per_cu(self, k: int) -> int:
        """Operand bytes one CU keeps in flight."""
        depth = min(self.k_tile, k)
        return (self.prefetch_stages - 1) * (self.tile_m + self.tile_n) * depth * self.bytes_per_element


@dataclass(frozen=True)
class GemmTiming:
    """Waves of a GEMM and their DRAM traffic; times in seconds, traffic in bytes.

    ``wave_reads[w]`` is wave ``w``'s DRAM reads after the L2; ``wave_tiles[w]`` its tiles;
    ``stage_end_waves[s]`` the wave that finishes stage ``s`` (a wave may finish several).
    ``stores_cached`` says which L2 policy the traffic was computed for (baseline: True).
    """

    shape: GemmShape
    cus: int
    tiles: int
    tiles_n: int
    tile_m: int
    tile_compute_s: float
    out_tile_bytes: int
    cu_load_bytes_per_tile: float
    wave_reads: tuple[float, ...]
    wave_tiles: tuple[int, ...]
    stage_end_waves: tuple[int, ...]
    stores_cached: bool
    #: Operand bytes one CU keeps in flight (its prefetch: bounds the requests in flight).
    prefetch_bytes_per_cu: float = 0.0
    #: k-loop steps per tile whose data the wave waits for one at a time; 0: continuous
    #: (see :class:`~system_model.dram_queue.WaveLoad`).
    k_steps_per_tile: int = 0

    @property
    def waves(self) -> int:
        return len(self.wave_tiles)

    @property
    def compute_s(self) -> float:
        return self.waves * self.tile_compute_s

    @functools.cached_property
    def dram_read_bytes(self) -> float:
        return sum(self.wave_reads)

    @property
    def dram_write_bytes(self) -> float:
        return self.tiles * self.out_tile_bytes

    def l2_miss_ratio(self, wave: int) -> float:
        """DRAM reads / the CUs' operand loads in a wave."""
        return self.wave_reads[wave] / (self.wave_tiles[wave] * self.cu_load_bytes_per_tile)


def tile_order(tiles_m: int, tiles_n: int, stage_rows: tuple[int, ...], group_rows: int) -> list[tuple[int, int]]:
    """The dispatch order of the (tile row, tile column) pairs.

    Stage by stage (each a range of tile rows, so that a stage's rows of C are done before
    the next stage's, as T3's staged GEMM needs), and within a stage in groups of
    ``group_rows`` tile rows walked column by column (the grouped rasterisation GEMM
    libraries use for L2 locality: Tensile's WorkGroupMapping, CUTLASS's swizzle).
    """
    order, row = [], 0
    for rows in stage_rows:
        for group in range(row, row + rows, group_rows):
            height = min(group_rows, row + rows - group)
            order.extend((group + i, col) for col in range(tiles_n) for i in range(height))
        row += rows
    if row != tiles_m:
        raise ValueError(f"stage rows must add up to the {tiles_m} tile rows, not {row}")
    return order


def stage_tile_rows(m: int, tile_m: int, stages: int) -> tuple[int, ...]:
    """New tile rows each stage needs: stage ``s`` holds C's rows ``s*m/stages`` up to the
    next stage's, and is done when every tile row overlapping them is; a stage whose rows
    lie inside a tile row an earlier stage needed adds none (0)."""
    tiles_m = math.ceil(m / tile_m)
    needed = [min(tiles_m, math.ceil((s + 1) * m / stages / tile_m)) for s in range(stages)]
    return tuple(b - a for a, b in zip([0, *needed], needed, strict=False))


@functools.lru_cache(maxsize=4096)
def wave_traffic(shape: GemmShape, kernel: GemmKernelConfig, *, cus: int, l2_bytes: float, stores_cached: bool,
                 stages: int) -> tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...]]:
    """Per wave, DRAM read bytes and tiles under the reuse-distance LRU model of the L2,
    and per stage the index of the wave that finishes it."""
    e = kernel.bytes_per_element
    tiles_m, tiles_n = math.ceil(shape.m / kernel.tile_m), math.ceil(shape.n / kernel.tile_n)
    rows_per_stage = stage_tile_rows(shape.m, kernel.tile_m, stages)
    order = tile_order(tiles_m, tiles_n, rows_per_stage, kernel.group_rows)
    a_panel, b_panel = kernel.tile_m * shape.k * e, kernel.tile_n * shape.k * e
    out_tile = kernel.tile_m * kernel.tile_n * e
    last_a: dict[int, int] = {}
    last_b: dict[int, int] = {}
    footprint_until: list[float] = [0.0]     # footprint of waves 0..w-1 together
    reads, counts = [], []
    for w, first in enumerate(range(0, len(order), cus)):
        wave = order[first:first + cus]
        rows, cols = {r for r, _ in wave}, {c for _, c in wave}
        here = footprint_until[-1]
        # Hit iff everything touched since the panel's last use fits the L2 (LRU).
        miss = sum(a_panel for r in rows if r not in last_a or here - footprint_until[last_a[r]] > l2_bytes)
        miss += sum(b_panel for c in cols if c not in last_b or here - footprint_until[last_b[c]] > l2_bytes)
        last_a.update(dict.fromkeys(rows, w))
        last_b.update(dict.fromkeys(cols, w))
        footprint_until.append(here + len(rows) * a_panel + len(cols) * b_panel
                               + (len(wave) * out_tile if stores_cached else 0))
        reads.append(float(miss))
        counts.append(len(wave))
    ends, done = [], 0
    for rows in rows_per_stage:
        done += rows * tiles_n
        ends.append((done - 1) // cus)
    return tuple(reads), tuple(counts), tuple(ends)


def gemm_timing(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, *, stages: int, cus: int | None = None,
                stores_cached: bool = True) -> GemmTiming:
    """Waves and traffic of ``shape`` dispatched in ``stages`` row ranges on ``cus`` CUs
    (default: all); ``stores_cached=False`` for T3's tracked stores, which bypass the L2."""
    cus = gpu.cus if cus is None else cus
    check_int_range("cus", cus, 1, gpu.cus)
    check_int_range("stages", stages, 1, 1 << 16)
    return _gemm_timing(shape, gpu, kernel, cus, stores_cached, stages)


@functools.lru_cache(maxsize=4096)
def _gemm_timing(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, cus: int,
                 stores_cached: bool, stages: int) -> GemmTiming:
    e = kernel.bytes_per_element
    tiles_n = math.ceil(shape.n / kernel.tile_n)
    tiles = math.ceil(shape.m / kernel.tile_m) * tiles_n
    flops_per_tile = 2 * kernel.tile_m * kernel.tile_n * shape.k
    cu_flops = gpu.clock_GHz * 1e9 * gpu.fp16_flops_per_cycle_per_cu * kernel.compute_efficiency
    reads, counts, ends = wave_traffic(shape, kernel, cus=cus, l2_bytes=gpu.l2_MB * 1e6,
                                       stores_cached=stores_cached, stages=stages)
    return GemmTiming(shape=shape, cus=cus, tiles=tiles, tiles_n=tiles_n, tile_m=kernel.tile_m,
                      tile_compute_s=flops_per_tile / cu_flops, out_tile_bytes=kernel.tile_m * kernel.tile_n * e,
                      cu_load_bytes_per_tile=(kernel.tile_m + kernel.tile_n) * shape.k * e,
                      wave_reads=reads, wave_tiles=counts, stage_end_waves=ends, stores_cached=stores_cached,
                      prefetch_bytes_per_cu=kernel.prefetch_bytes_per_cu(shape.k))
