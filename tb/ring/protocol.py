"""T3's reduce-scatter protocol on N GPUs (paper Fig. 7), and its numpy reference (pure Python).

GPU g produces its partial output in N stages, one chunk per stage, staggered so that
stage k works on chunk ``(g - k) mod N``: it produces first the chunk it sends first, and
its last stage is chunk g, which it owns at the end.

* Stage 1 is written straight to GPU g + 1 as remote updates.
* Stages 2..N-1 are written locally as updates. Each tile is armed with threshold
  ``2 x beats`` (its local writes plus the previous GPU's incoming update beats) and a
  DMA command that forwards the tile to GPU g + 1 as updates at the same address.
* Stage N (chunk g) is written locally as updates and armed with the notify-only command,
  so the host learns when the reduce-scatter has finished.

The memory starts at +0, so every address receives two updates onto zero (its local
partial and the incoming sum), in either order; ``(0 + a) + b == (0 + b) + a`` bit for bit
in IEEE arithmetic (including signed zeros), so the reference needs no timing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tb.fp_add.golden import NUMPY_TYPES, golden_add
from tb.nmc.model import lanes_to_beat

__all__ = ["RingPlan", "GpuPlan", "plan_reduce_scatter"]

STORE, UPDATE = 0, 1


@dataclass
class GpuPlan:
    programs: list[dict] = field(default_factory=list)
    arms: list[dict] = field(default_factory=list)
    local_writes: list[dict] = field(default_factory=list)    # gemm port, stage order
    remote_writes: list[dict] = field(default_factory=list)   # gemm_remote port (stage 1)
    notify_tiles: set[int] = field(default_factory=set)


@dataclass
class RingPlan:
    gpus: int
    tiles: int
    beats: int
    lanes: int
    fmt: str
    plans: list[GpuPlan]
    expected: list[np.ndarray]    # GPU g's final chunk g: (tiles * beats, lanes) bit patterns
    chunk_base: list[int]

    def chunk_addresses(self, chunk: int) -> range:
        base = self.chunk_base[chunk]
        return range(base, base + self.tiles * self.beats)


def plan_reduce_scatter(rng: np.random.Generator, *, gpus: int, tiles: int, beats: int, lanes: int, fmt: str,
                        notify_cmd: int) -> RingPlan:
    """Random partial outputs for every GPU, the per-GPU programming and write streams, and
    the expected reduce-scatter result."""
    ftype, utype = NUMPY_TYPES[fmt]
    chunk_beats = tiles * beats
    if gpus * tiles > notify_cmd:
        raise ValueError(f"gpus * tiles must be below {notify_cmd} (DMA commands), not {gpus * tiles}")
    partial = [
        (rng.standard_normal((gpus, chunk_beats, lanes)) * 4).astype(np.float32).astype(ftype).view(utype)
        for _ in range(gpus)
    ]
    chunk_base = [c * chunk_beats for c in range(gpus)]
    plans = [GpuPlan() for _ in range(gpus)]
    for g, plan in enumerate(plans):
        for stage in range(1, gpus + 1):
            chunk = (g - stage) % gpus
            for t in range(tiles):
                tile = chunk * tiles + t
                base = chunk_base[chunk] + t * beats
                if stage == 1:
                    continue
                if stage < gpus:
                    plan.programs.append({"index": tile, "desc": {"src_addr": base, "dst_addr": base, "beats": beats,
                                                                  "dst_port": 0, "op": UPDATE}})
                    plan.arms.append({"tile": tile, "threshold": 2 * beats, "dma_cmd": tile})
                else:
                    plan.arms.append({"tile": tile, "threshold": 2 * beats, "dma_cmd": notify_cmd})
                    plan.notify_tiles.add(tile)
            for i in range(chunk_beats):
                addr = chunk_base[chunk] + i
                word = lanes_to_beat(partial[g][chunk][i])
                if stage == 1:
                    plan.remote_writes.append({"dst_port": 0, "dst_addr": addr, "op": UPDATE, "last": 0,
                                               "data": word})
                else:
                    plan.local_writes.append({"tile": addr // beats, "addr": addr, "op": UPDATE, "data": word})

    zero = np.zeros((chunk_beats, lanes), dtype=utype)
    expected = []
    for c in range(gpus):
        # Chunk c starts at GPU c + 1 and travels the ring to GPU c, gaining a partial per hop.
        acc = golden_add(fmt, zero, partial[(c + 1) % gpus][c])
        for hop in range(2, gpus + 1):
            local = golden_add(fmt, zero, partial[(c + hop) % gpus][c])
            acc = golden_add(fmt, local, acc)
        expected.append(acc.astype(utype))
    return RingPlan(gpus, tiles, beats, lanes, fmt, plans, expected, chunk_base)
