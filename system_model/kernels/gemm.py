"""GEMM: its tile order, its waves, the DRAM traffic an L2 of finite size lets through, and
the kernel a library would run.

One order for timing and traffic. Each CU computes one ``tile_m x tile_n`` tile of C at a
time; tiles are dispatched in row-major order (tile row by tile row, which T3's staged
GEMM needs: a stage is a range of C's rows, ``M / stages`` of them, the chunk the
reduce-scatter forwards however the tile rows fall), ``cus`` at a time, so wave ``w`` holds tiles
``w*cus .. (w+1)*cus - 1``. A wave's CUs step through K together, one ``k_tile`` slice at a
time, reading for each tile row it touches an A slice (``tile_m x k_tile``) and for each
tile column a B slice (``k_tile x tile_n``).

The L2 as a reuse-distance model of LRU at panel granularity: within a wave an A panel
(``tile_m x K``) or a B panel (``K x tile_n``) is read from DRAM once and shared through
the L2 by the wave's tiles, which step through K together. Between waves, a panel a wave
needs was last touched by an earlier wave, and everything the waves in between touched
lies between the two uses; under LRU it hits iff that footprint fits the L2. A wave's
footprint is its A and B panels and, where stores allocate in the L2, its output tiles
(baseline stores write-allocate; T3's tracked stores bypass the caches, so they take none).

**A wave on the timeline** (:func:`wave_cap_per_s`): it cannot be shorter than its matrix
work plus the first operands' latency (``Tc + L``), nor than the latency of every k-slice
over the prefetch depth its CUs keep in flight (Little's law: ``L x K / (k_tile x
(prefetch_stages - 1))``); the DRAM, shared, decides the rest (:mod:`system_model.engine`).

**The kernel** (:func:`choose_kernel`): of the library's kernels, the one whose modelled
time alone is least, as cuBLAS's and hipBLASLt's heuristics aim to (not a proxy: a proxy
such as "fewest waves x tile area" let a bigger GEMM finish sooner).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from ..describe.hardware import GpuConfig
from ..describe.kernels import GemmKernelConfig
from ..describe.models import GemmShape
from ..describe.units import check_int_range

__all__ = ["GemmTiming", "gemm_timing", "wave_traffic", "tile_order", "stage_tile_rows", "stage_row_overlaps",
           "wave_cap_per_s", "gemm_alone_s", "choose_kernel", "split_variants", "library_variants", "waves_floor_s",
           "wave_stage_bytes", "wave_stage_share", "wave_bytes_before"]


@dataclass(frozen=True)
class GemmTiming:
    """Waves of a GEMM and their DRAM traffic; times in seconds, traffic in bytes.

    ``wave_reads[w]`` is wave ``w``'s DRAM reads after the L2; ``wave_tiles[w]`` its tiles;
    ``stage_tiles[s]`` the tiles of stage ``s`` (dispatched stage after stage, or with the
    other stages of its group interleaved: ``stage_group``);
    ``stage_bytes[s]`` the output bytes they hold. ``stores_cached`` says which L2 policy
    the traffic was computed for (baseline: True).

    With K split (``split_k`` > 1) a "tile" is a work item, one part of a tile's K: ``tiles``,
    ``wave_tiles`` and ``stage_tiles`` count parts, ``tile_compute_s`` is a part's, and
    ``wave_workspace_bytes[w]`` the partial sums wave ``w`` writes and reads back.
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
    stage_tiles: tuple[int, ...]
    stage_bytes: tuple[float, ...]
    stores_cached: bool
    #: Operand bytes one CU keeps in flight (its prefetch: bounds the requests in flight).
    prefetch_bytes_per_cu: float = 0.0
    #: k-loop steps per tile (the k-slices whose latency the prefetch hides).
    k_steps_per_tile: int = 1
    #: The CUs' operand buffer holds one k-step: the next step's reads wait until this
    #: step's data is used, so a step's reads, its latency and its compute add up (the
    #: crosscheck's RTL GEMM); False: the reads of later steps overlap (every library kernel).
    serial_steps: bool = False
    #: The wave uses its data a k-step at a time, each step waiting for its share of the
    #: reads (the cycle-level DRAM service's k-steps); False: continuously.
    stepwise: bool = False
    #: Parts K is split into (:attr:`GemmKernelConfig.split_k`).
    split_k: int = 1
    #: Per wave, split-K's partial sums written to the workspace and read back (bytes).
    wave_workspace_bytes: tuple[float, ...] = ()
    #: Per wave, ``(stage, bytes)`` of the output it completes; empty: each stage's bytes
    #: spread evenly over its own tiles (a GEMM whose stages are whole tiles: the crosscheck's).
    wave_stage_parts: tuple[tuple[tuple[int, float], ...], ...] = ()
    #: Consecutive stages dispatched as one (:func:`tile_order`): their tiles interleave and
    #: they end together; 1: stage after stage.
    stage_group: int = 1

    @property
    def waves(self) -> int:
        return len(self.wave_tiles)

    @property
    def compute_s(self) -> float:
        return self.waves * self.tile_compute_s

    @functools.cached_property
    def dram_read_bytes(self) -> float:
        """Operand reads after the L2, and split-K's partial sums read back."""
        return float(sum(self.wave_reads)) + self.workspace_bytes / 2

    @property
    def dram_write_bytes(self) -> float:
        """The output, and split-K's partial sums."""
        return float(sum(self.stage_bytes)) + self.workspace_bytes / 2

    @functools.cached_property
    def workspace_bytes(self) -> float:
        """Split-K's partial sums, written and read back (0 unsplit)."""
        return float(sum(self.wave_workspace_bytes))

    def wave_dram_bytes(self, w: int) -> float:
        """Wave ``w``'s DRAM bytes besides its output stores: operand reads and split-K's
        workspace."""
        return self.wave_reads[w] + (self.wave_workspace_bytes[w] if self.wave_workspace_bytes else 0.0)

    @property
    def output_bytes(self) -> float:
        return float(sum(self.stage_bytes))

    @functools.cached_property
    def stage_bytes_by_wave(self) -> tuple[dict[int, float], ...]:
        """Output bytes each wave completes, by stage."""
        if self.wave_stage_parts:
            return tuple(dict(parts) for parts in self.wave_stage_parts)
        out = [dict() for _ in range(self.waves)]
        start = 0
        for s, (tiles, nbytes) in enumerate(zip(self.stage_tiles, self.stage_bytes, strict=True)):
            if not tiles:
                continue
            per_tile = nbytes / tiles
            t = start
            while t < start + tiles:
                w = t // self.cus
                end = min(start + tiles, (w + 1) * self.cus)
                out[w][s] = out[w].get(s, 0.0) + (end - t) * per_tile
                t = end
            start += tiles
        return tuple(out)

    @functools.cached_property
    def segments(self) -> tuple[tuple[int, int, float], ...]:
        """``(first wave, waves, reads per wave)`` of each run of waves alike: the same
        tiles and the same stages' bytes. The run's reads are its waves' mean: a GPU's CUs
        start their next tile as they finish one, not in lock-step waves, so within a run
        the L2's misses of one wave and the next blend (every scheme and every bound runs
        the same runs)."""
        out, w = [], 0
        comp = self.stage_bytes_by_wave
        while w < self.waves:
            n = 1
            while (w + n < self.waves and self.wave_tiles[w + n] == self.wave_tiles[w]
                   and comp[w + n] == comp[w]):
                n += 1
            out.append((w, n, sum(self.wave_dram_bytes(i) for i in range(w, w + n)) / n))
            w += n
        return tuple(out)

    @functools.cached_property
    def stage_end_waves(self) -> tuple[int, ...]:
        """The wave that completes each stage (a stage without tiles: its predecessor's)."""
        if self.stage_group > 1:
            # Stages interleave in their group: a stage ends with the last wave holding its bytes.
            last: dict[int, int] = {}
            for w, parts in enumerate(self.stage_bytes_by_wave):
                for st in parts:
                    last[st] = w
            ends, end = [], -1
            for st in range(len(self.stage_tiles)):
                end = max(end, last.get(st, end))
                ends.append(end)
            return tuple(ends)
        ends, done = [], 0
        for tiles in self.stage_tiles:
            done += tiles
            ends.append(max(0, (done - 1) // self.cus) if done else -1)
        return tuple(ends)

    def wave_output_bytes(self, w: int) -> float:
        """Output bytes wave ``w`` completes."""
        return sum(self.stage_bytes_by_wave[w].values())


def tile_order(tiles_m: int, tiles_n: int, stage_rows: tuple[int, ...], group_rows: int,
               stage_group: int = 1) -> np.ndarray:
    """The dispatch order as an array of (tile row, tile column).

    Stage by stage (each a range of tile rows, so that a stage's rows of C are done before
    the next stage's, as T3's staged GEMM needs), and within a stage in groups of
    ``group_rows`` tile rows walked column by column (the grouped rasterisation GEMM
    libraries use for L2 locality: Tensile's WorkGroupMapping, CUTLASS's swizzle).

    ``stage_group`` consecutive stages are dispatched as one range (their rows done
    together): where a stage holds fewer tile rows than a raster group, stage by stage
    would walk every tile column once per stage and read each panel of B again for it
    (64 tile rows in 32 stages: 32 walks, against the library's 8 of 8 rows).
    """
    if sum(stage_rows) != tiles_m:
        raise ValueError(f"stage rows must add up to the {tiles_m} tile rows, not {sum(stage_rows)}")
    if stage_group > 1:
        stage_rows = tuple(sum(stage_rows[i:i + stage_group]) for i in range(0, len(stage_rows), stage_group))
    # The groups: (first row, height), stage by stage.
    starts, heights = [], []
    row = 0
    for rows in stage_rows:
        for group in range(row, row + rows, group_rows):
            starts.append(group)
            heights.append(min(group_rows, row + rows - group))
        row += rows
    if not starts:
        return np.zeros((0, 2), dtype=np.int64)
    starts, heights = np.array(starts), np.array(heights)
    sizes = heights * tiles_n
    first = np.repeat(np.cumsum(sizes) - sizes, sizes)           # each tile's group's first index
    i = np.arange(int(sizes.sum())) - first                      # index inside its group
    h = np.repeat(heights, sizes)
    r = np.repeat(starts, sizes) + i % h
    c = i // h
    return np.stack([r, c], axis=1)


def stage_tile_rows(m: int, tile_m: int, stages: int) -> tuple[int, ...]:
    """New tile rows each stage needs: stage ``s`` holds C's rows ``s*m/stages`` up to the
    next stage's, and is done when every tile row overlapping them is; a stage whose rows
    lie inside a tile row an earlier stage needed adds none (0), though its rows are its own
    (:func:`stage_row_overlaps`)."""
    tiles_m = math.ceil(m / tile_m)
    needed = [min(tiles_m, math.ceil((s + 1) * m / stages / tile_m)) for s in range(stages)]
    return tuple(b - a for a, b in zip([0, *needed], needed, strict=False))


def stage_row_overlaps(m: int, tile_m: int, stages: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tile row, stage, rows)``: how many of C's rows each tile row shares with each stage
    it overlaps, every stage exactly ``m / stages`` rows (a fraction of a row where the
    stages outnumber the rows: a chunk of the flat output, as the collective splits it).

    A stage is a chunk of the reduce-scatter, ``output / stages`` bytes whatever the tiles
    (``Sublayer.chunk``, which T3's ring and its bound forward step by step); the tiles only
    decide when it is done. Stages that lie inside one tile row (a decode step's few rows)
    are each their own chunk, done together when that tile row is."""
    tiles_m = math.ceil(m / tile_m)
    rows, stages_of, shared = [], [], []
    for r in range(tiles_m):
        lo, hi = r * tile_m, min((r + 1) * tile_m, m)
        first, last = (lo * stages) // m, -(-hi * stages // m) - 1
        for s in range(first, last + 1):
            overlap = min(hi, (s + 1) * m / stages) - max(lo, s * m / stages)
            if overlap > 0:
                rows.append(r)
                stages_of.append(s)
                shared.append(overlap)
    return np.array(rows, dtype=np.int64), np.array(stages_of, dtype=np.int64), np.array(shared, dtype=float)


#: fp32 accumulators: the bytes of one partial sum in a split-K workspace.
PARTIAL_SUM_BYTES = 4


@functools.lru_cache(maxsize=8192)
def wave_traffic(shape: GemmShape, kernel: GemmKernelConfig, *, cus: int, l2_bytes: float, stores_cached: bool,
                 stages: int, stage_group: int = 1
                 ) -> tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...], tuple[float, ...],
                            tuple[float, ...], tuple[tuple[tuple[int, float], ...], ...]]:
    """Per wave, DRAM read bytes and work items (a tile's K parts, :attr:`split_k` of them,
    one after another in the dispatch order) under the reuse-distance LRU model of the L2,
    and its split-K workspace bytes (partial sums written, and read back by a tile's last
    part); per stage, its work items and output bytes; and per wave, ``(stage, bytes)`` of
    the output it completes.

    With K split, a panel is a part's slice of it (``tile_m x K / split_k``), shared by the
    wave's items of the same part. The workspace is charged to the DRAM in full: an upper
    bound, since a workspace that fits the L2 may never leave it."""
    e = kernel.bytes_per_element
    split = kernel.split_k
    tiles_m, tiles_n = math.ceil(shape.m / kernel.tile_m), math.ceil(shape.n / kernel.tile_n)
    rows_per_stage = stage_tile_rows(shape.m, kernel.tile_m, stages)
    order = tile_order(tiles_m, tiles_n, rows_per_stage, kernel.group_rows, stage_group)
    k_part = math.ceil(shape.k / split)
    a_panel, b_panel = kernel.tile_m * k_part * e, kernel.tile_n * k_part * e
    out_tile = kernel.tile_m * kernel.tile_n * e
    partial = np.zeros(len(order) * split)
    item_rows, item_cols = np.repeat(order[:, 0], split), np.repeat(order[:, 1], split)
    if split > 1:
        # Each tile's parts follow one another; a panel's index names its part too.
        part = np.tile(np.arange(split), len(order))
        rows = np.repeat(order[:, 0], split)
        cols = np.repeat(order[:, 1], split)
        real = (np.minimum(kernel.tile_m, shape.m - rows * kernel.tile_m)
                * np.minimum(kernel.tile_n, shape.n - cols * kernel.tile_n) * PARTIAL_SUM_BYTES)
        # Parts but the last write their partial sums; the last reads them all back.
        partial = np.where(part < split - 1, real, (split - 1) * real).astype(float)
        order = np.stack([rows * split + part, cols * split + part], axis=1)
        tiles_m, tiles_n = tiles_m * split, tiles_n * split
        # A part's stores in the L2: its partial sums (fp32), the last part's the tile.
        out_tile = out_tile * (1 + (split - 1) * PARTIAL_SUM_BYTES / e) / split
    n_tiles = len(order)
    waves = math.ceil(n_tiles / cus)
    wave_of = np.arange(n_tiles) // cus
    counts = np.bincount(wave_of, minlength=waves)

    def uses(index: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Per wave: how many distinct panels it touches, and the (wave, panel) uses sorted
        by panel then wave."""
        present = np.zeros((size, waves), dtype=bool)            # panel-major: no sort needed
        present[index, wave_of] = True
        key = np.flatnonzero(present)            # the distinct uses, by panel then wave
        p, w = np.divmod(key, waves)
        return np.bincount(w, minlength=waves), np.stack([w, p], axis=1)
    rows_w, a_uses = uses(order[:, 0], tiles_m)
    cols_w, b_uses = uses(order[:, 1], tiles_n)
    footprint = rows_w * a_panel + cols_w * b_panel + (counts * out_tile if stores_cached else 0)
    until = np.concatenate([[0.0], np.cumsum(footprint, dtype=float)])    # waves 0..w-1

    def misses(use: np.ndarray) -> np.ndarray:
        w, p = use[:, 0], use[:, 1]
        first = np.ones(len(w), dtype=bool)
        first[1:] = p[1:] != p[:-1]
        prev = np.empty_like(w)
        prev[1:] = w[:-1]
        distance = until[w] - until[np.where(first, 0, prev)]
        miss = first | (distance > l2_bytes)
        return np.bincount(w[miss], minlength=waves)
    reads = misses(a_uses) * a_panel + misses(b_uses) * b_panel
    workspace = np.bincount(wave_of, weights=partial, minlength=waves)
    stage_tiles = tuple(r * tiles_n for r in rows_per_stage)     # (tiles_n counts the parts)
    # Output bytes per stage: its rows of C, m / stages of them (the chunk).
    stage_bytes = tuple(shape.m / stages * shape.n * e for _ in range(stages))
    by_wave = _wave_stage_parts(shape, kernel, item_rows, item_cols, wave_of, waves, stages)
    return (tuple(float(x) for x in reads), tuple(int(c) for c in counts), stage_tiles, stage_bytes,
            tuple(float(x) for x in workspace), by_wave)


def _sums_by_key(keys: np.ndarray, weights: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` (non-negative, below ``bound``), ascending, and the sum of the
    ``weights`` of each, added in the order given (``np.unique`` with ``return_inverse``
    then ``np.bincount``, the same sums, without the sort where the key space is dense:
    the sort was the largest single cost of the invariant suite)."""
    if bound > 4 * len(keys) + 1024:
        key, inverse = np.unique(keys, return_inverse=True)
        return key, np.bincount(inverse, weights=weights)
    present = np.flatnonzero(np.bincount(keys, minlength=bound))
    return present, np.bincount(keys, weights=weights, minlength=bound)[present]


def _wave_stage_parts(shape: GemmShape, kernel: GemmKernelConfig, item_rows: np.ndarray, item_cols: np.ndarray,
                      wave_of: np.ndarray, waves: int, stages: int) -> tuple[tuple[tuple[int, float], ...], ...]:
    """Per wave, ``(stage, output bytes)`` its work items complete: each tile's real area of
    C split between the stages its rows belong to (a K part carries its share of the tile)."""
    e = kernel.bytes_per_element
    tiles_m = math.ceil(shape.m / kernel.tile_m)
    width = np.minimum(kernel.tile_n, shape.n - item_cols * kernel.tile_n) * e / kernel.split_k
    # Bytes per column of C's rows, per (wave, tile row): the tile row's columns the wave did.
    key, per_row = _sums_by_key(wave_of * tiles_m + item_rows, width, waves * tiles_m)
    w, r = key // tiles_m, key % tiles_m
    o_rows, o_stages, o_shared = stage_row_overlaps(shape.m, kernel.tile_m, stages)
    first = np.searchsorted(o_rows, r)
    count = np.searchsorted(o_rows, r, side="right") - first
    pick = np.repeat(first, count) + (np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count))
    ws = np.repeat(w, count) * stages + o_stages[pick]
    nbytes = np.repeat(per_row, count) * o_shared[pick]
    key2, totals = _sums_by_key(ws, nbytes, waves * stages)
    out: list[list[tuple[int, float]]] = [[] for _ in range(waves)]
    for k, b in zip(key2.tolist(), totals.tolist(), strict=True):
        out[k // stages].append((k % stages, b))
    return tuple(tuple(p) for p in out)


def gemm_timing(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, *, stages: int, cus: int | None = None,
                stores_cached: bool = True, stage_columns: bool = False, stage_group: int = 1) -> GemmTiming:
    """Waves and traffic of ``shape`` dispatched in ``stages`` row ranges on ``cus`` CUs
    (default: all); ``stores_cached=False`` for T3's tracked stores, which bypass the L2.

    ``stage_columns``: the stages are ranges of C's columns instead (``N / stages`` each, all
    rows; the raster groups tile columns and walks them row by row): the same GEMM
    transposed, as an all-reduce may cut a GEMM of few rows, whose row stages would all end
    in its one tile row.

    ``stage_group``: stages dispatched together (:func:`tile_order`), 1..``stages``."""
    cus = gpu.cus if cus is None else cus
    check_int_range("cus", cus, 1, gpu.cus)
    check_int_range("stages", stages, 1, 1 << 16)
    check_int_range("stage_group", stage_group, 1, stages)
    return _gemm_timing(shape, gpu, kernel, cus, stores_cached, stages, stage_columns, stage_group)


@functools.lru_cache(maxsize=8192)
def _gemm_timing(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, cus: int,
                 stores_cached: bool, stages: int, stage_columns: bool = False, stage_group: int = 1) -> GemmTiming:
    # Column stages are the transposed GEMM's row stages: C^T = B^T A^T, its tiles the same
    # tiles (tile_m and tile_n swapped), its panels the same panels.
    traffic_shape, traffic_kernel = ((GemmShape(shape.n, shape.m, shape.k),
                                      replace(kernel, tile_m=kernel.tile_n, tile_n=kernel.tile_m))
                                     if stage_columns else (shape, kernel))
    reads, counts, stage_tiles, stage_bytes, workspace, by_wave = wave_traffic(
        traffic_shape, traffic_kernel, cus=cus, l2_bytes=gpu.l2_MB * 1e6, stores_cached=stores_cached,
        stages=stages, stage_group=stage_group)
    return GemmTiming(**_work_items(shape, gpu, kernel, cus), wave_reads=reads, wave_tiles=counts,
                      stage_tiles=stage_tiles, stage_bytes=stage_bytes, stores_cached=stores_cached,
                      wave_workspace_bytes=workspace, wave_stage_parts=by_wave, stage_group=stage_group)


def _work_items(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, cus: int) -> dict:
    """A GEMM's work items (tiles, or a tile's K parts) and what one costs a CU."""
    e = kernel.bytes_per_element
    split = kernel.split_k
    tiles_n = math.ceil(shape.n / kernel.tile_n)
    k_part = math.ceil(shape.k / split)
    cu_flops = gpu.clock_GHz * 1e9 * gpu.fp16_flops_per_cycle_per_cu * kernel.compute_efficiency
    return {"shape": shape, "cus": cus, "tiles": math.ceil(shape.m / kernel.tile_m) * tiles_n * split,
            "tiles_n": tiles_n, "tile_m": kernel.tile_m,
            "tile_compute_s": 2 * kernel.tile_m * kernel.tile_n * k_part / cu_flops,
            "out_tile_bytes": kernel.tile_m * kernel.tile_n * e,
            "cu_load_bytes_per_tile": (kernel.tile_m + kernel.tile_n) * k_part * e,
            "prefetch_bytes_per_cu": kernel.prefetch_bytes_per_cu(k_part),
            "k_steps_per_tile": math.ceil(k_part / kernel.k_tile), "split_k": split}


def waves_floor_s(shape: GemmShape, gpu: GpuConfig, kernel: GemmKernelConfig, latency_s: float) -> float:
    """``ceil(items / cus)`` waves on all CUs, each at its own pace (:func:`wave_cap_per_s`: its
    matrix work, its operands' latency, its prefetch depth), without the DRAM: the compute
    side of a GEMM's lower bound, with no traffic model to run."""
    g = GemmTiming(**_work_items(shape, gpu, kernel, gpu.cus), wave_reads=(0.0,), wave_tiles=(0,), stage_tiles=(),
                   stage_bytes=(), stores_cached=True)
    return math.ceil(g.tiles / gpu.cus) / wave_cap_per_s(g, 0, latency_s)


def wave_stage_bytes(gemm: GemmTiming, w: int) -> dict[int, float]:
    """Output bytes wave ``w`` completes, by stage."""
    return gemm.stage_bytes_by_wave[w]


def wave_stage_share(gemm: GemmTiming, w: int, stage: int) -> float:
    """The share of wave ``w``'s output that falls in ``stage`` (1 for a wave with none)."""
    parts = gemm.stage_bytes_by_wave[w]
    total = sum(parts.values())
    return parts.get(stage, 0.0) / total if total else 1.0


def wave_bytes_before(gemm: GemmTiming, w: int, stage: int) -> float:
    """Output bytes wave ``w`` completes in the stages before ``stage`` (with the last stage
    a GPU's own chunk: what it completes for its peers)."""
    return sum(b for s, b in gemm.stage_bytes_by_wave[w].items() if s < stage)


def wave_cap_per_s(gemm: GemmTiming, w: int, latency_s: float) -> float:
    """Waves per second wave ``w`` can run at with the DRAM to itself: its matrix work and
    the first operands' latency, and its k-slices' latency over its prefetch depth."""
    if gemm.serial_steps:
        # A step's reads are asked for only once the previous step's data is used: its
        # latency and its compute add up, step after step (the reads' own time is the
        # DRAM's, added by the engine from what it gives the burst).
        return 1.0 / (gemm.k_steps_per_tile * latency_s + gemm.tile_compute_s)
    time = gemm.tile_compute_s + latency_s
    if gemm.prefetch_bytes_per_cu > 0:
        # Little's law per CU: every k-slice's operands arrive a latency after they are asked
        # for, and (prefetch_stages - 1) slices are in flight.
        time = max(time, latency_s * gemm.cu_load_bytes_per_tile / gemm.prefetch_bytes_per_cu)
    return 1.0 / time


def gemm_alone_s(gemm: GemmTiming, gpu: GpuConfig, *, store_units: float = 1.0, local_store_fraction: float = 1.0
                 ) -> float:
    """The GEMM alone on its CUs (the timeline's answer with nothing beside it, in closed
    form): each run of waves at the slowest of its cap and the DRAM's service of its reads
    and stores (``store_units`` of service per stored byte; ``local_store_fraction`` of the
    output stored in this GPU's memory)."""
    key = (gpu.dram_bytes_per_s, gpu.dram_latency_ns, store_units, local_store_fraction)
    cache = gemm.__dict__.setdefault("_alone", {})
    if key not in cache:
        dram, latency = gpu.dram_bytes_per_s, gpu.dram_latency_ns * 1e-9
        total = 0.0
        for w, n, reads in gemm.segments:
            units = reads + store_units * local_store_fraction * gemm.wave_output_bytes(w)
            own = 1.0 / wave_cap_per_s(gemm, w, latency)
            if gemm.serial_steps:
                own += reads / dram
            total += n * max(own, units / dram)
        cache[key] = total
    return cache[key]


#: The parts a library may split K into (each at most the kernel's ``max_split_k``).
SPLITS = (2, 4, 8, 16)


def split_variants(shape: GemmShape, kernel: GemmKernelConfig, cus: int, *, underfilled_only: bool = True
                   ) -> tuple[GemmKernelConfig, ...]:
    """``kernel`` and, where its tiles underfill the ``cus`` CUs, the same kernel with K split
    in 2, 4, 8 or 16 parts (up to its ``max_split_k``, each part at least one element of K
    deep): what cuBLASLt's split-K and hipBLASLt's GlobalSplitU and Stream-K offer a skinny
    GEMM, a decode step's. ``underfilled_only=False``: every split, whatever the tiles (for
    a bound: a schedule that cuts the GEMM into smaller ones can split each)."""
    if kernel.split_k != 1 or kernel.max_split_k < 2:
        return (kernel,)
    tiles = math.ceil(shape.m / kernel.tile_m) * math.ceil(shape.n / kernel.tile_n)
    if underfilled_only and tiles >= cus:
        return (kernel,)
    return (kernel, *(replace(kernel, split_k=s) for s in SPLITS if s <= kernel.max_split_k and shape.k >= s))


def library_variants(shape: GemmShape, kernels: tuple[GemmKernelConfig, ...], cus: int, *,
                     underfilled_only: bool = True) -> tuple[GemmKernelConfig, ...]:
    """Every kernel of the library with its split-K variants for ``shape`` on ``cus`` CUs."""
    return tuple(v for k in kernels for v in split_variants(shape, k, cus, underfilled_only=underfilled_only))


def choose_kernel(shape: GemmShape, gpu: GpuConfig, kernels: tuple[GemmKernelConfig, ...], *, cus: int | None = None
                  ) -> GemmKernelConfig:
    """The library's kernel for ``shape``: least modelled time alone (the larger tile on a tie;
    a split variant only where it is faster), of the kernels and their split-K variants."""
    kernels = library_variants(shape, kernels, gpu.cus if cus is None else cus)
    if len(kernels) == 1:
        return kernels[0]
    best, best_s = None, math.inf
    for k in kernels:
        t = gemm_alone_s(gemm_timing(shape, gpu, k, stages=1, cus=cus), gpu)
        if t < best_s * (1 - 1e-12):
            best, best_s = k, t
    return best
