"""T3's reduce-scatter protocol on N GPUs (paper Fig. 7), and its numpy reference (pure Python).

GPU g produces its partial output in N stages, one chunk per stage, staggered so that
stage k works on chunk ``(g - k) mod N``: it produces first the chunk it sends first, and
its last stage is chunk g, which it owns at the end.

* Stage 1 is written straight to GPU g + 1 as remote updates (``gemm_remote``).
* Stages 2..N-1 are written locally as tracked updates (``op=UPDATE, tracked=1``). Each
  tile is armed with threshold ``2 x beats`` (its local writes plus the previous GPU's
  incoming update beats) and a DMA command that forwards the tile to GPU g + 1 as updates
  at the same address.
* Stage N (chunk g) is written locally as tracked updates and armed with the notify-only
  command, so the host learns when the reduce-scatter has finished.

Initialisation: the driver zeroes the output buffer
----------------------------------------------------
The bank makes no reset or power-up promise (:class:`~rtl.nmc.NearMemoryReducer`; the
benches build it with ``power_up_seed``, so it starts full of garbage, and it keeps its old
words across a reset). Every word GPU g accumulates into (chunks ``g-2 .. g-N``, i.e. every
chunk but ``g-1``, which it only sends) therefore receives two ``UPDATE``\\ s onto a value
the driver must set first. Of the two choices the issue offers, the protocol takes the
first: **the driver zeroes the output buffer with** ``op=STORE, tracked=0, data=0`` **writes
on the GEMM port before the reduce-scatter starts**, as any accumulate-into-buffer scheme
(``beta = 0`` GEMM, ``cudaMemset`` before a reduction) does. The other choice, making the
first write of each word a ``STORE``, would need to know which of the local partial and
the incoming update arrives first; that order is decided by the two GPUs' arbiters and the
link, so no write can be statically "first". The zeroing writes are untracked: the
tracker counts only the 2 x beats updates of each tile.

The zeroing is a **barrier** across the ring: every GPU's zeroing must be *executed by its
bank* (the bank's ``status.reducer.stores`` counter reaches the number of zeroing writes)
before any GPU sends stage-1 traffic or writes a local stage. A per-GPU order is not
enough: GPU g + 1's stage-1 updates arrive at GPU g + 2 through the link and the
communication class of its arbiter, which does not wait for GPU g + 2's compute queue, so
an update could land on a word that GPU g + 2's zeroing then overwrites (or the zeroing
could land after a partial sum). Waiting for the bank counter rather than for the GEMM
port's handshake matters for the same reason: an accepted store may still sit in the
compute queue. The barrier costs one drain of the compute queue per run.

Every address then receives its two updates onto +0, in either order; ``(0 + a) + b ==
(0 + b) + a`` bit for bit in IEEE arithmetic (including signed zeros: ``0 + x`` is never
-0), so the final values need no timing. :func:`plan_reduce_scatter` checks that identity
on the drawn data and also computes each word's intermediate values (``0``, ``0 + local``,
``0 + incoming``, the sum), which a GEMM read made during the reduce-scatter may see.

DMA descriptors
---------------
Each forwarded tile needs its own descriptor (its source address differs), and the table
has at most ``commands - 1`` of them besides the notify command (``commands`` <= 1024).
When a GPU forwards more tiles than that (N = 8 with 256 tiles per chunk forwards 1536),
descriptor index ``j mod pool`` is reused: the j-th forwarded tile (stage order) is armed
with it up front, but its descriptor is programmed only once tile ``j - pool`` has started
on the link (its descriptor has then been read by the table), and the GEMM holds the
local writes of tile j until that program is accepted, so the tile cannot complete before
its descriptor exists. Tiles ``0 .. pool-1`` are programmed before the GEMM starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tb.fp_add.golden import NUMPY_TYPES, golden_add, mismatches
from tb.nmc.model import lanes_to_beat

__all__ = ["RingPlan", "GpuPlan", "plan_reduce_scatter", "output_region", "STORE", "UPDATE"]

STORE, UPDATE = 0, 1


@dataclass
class GpuPlan:
    gpu: int
    zero_writes: list[dict] = field(default_factory=list)     # gemm port, before the barrier
    programs: list[dict] = field(default_factory=list)        # before the GEMM
    arms: list[dict] = field(default_factory=list)
    local_writes: list[dict] = field(default_factory=list)    # gemm port, stage order
    remote_writes: list[dict] = field(default_factory=list)   # gemm_remote port (stage 1)
    dma_tiles: list[int] = field(default_factory=list)        # forwarded tiles, stage order
    notify_tiles: set[int] = field(default_factory=set)
    #: Descriptor reuse: tile -> (tile whose start on the link frees its index, program).
    late_programs: dict[int, tuple[int, dict]] = field(default_factory=dict)
    #: Words this GPU accumulates into (every chunk but ``gpu - 1``), ascending.
    region: list[int] = field(default_factory=list)
    #: Per word of ``region``: ``0 + local``, the incoming beat, ``0 + incoming``, the sum.
    local_z: dict[int, int] = field(default_factory=dict)
    incoming: dict[int, int] = field(default_factory=dict)
    incoming_z: dict[int, int] = field(default_factory=dict)
    total: dict[int, int] = field(default_factory=dict)


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
    pool: int                     # DMA descriptor indices in use (reused beyond it)

    def chunk_addresses(self, chunk: int) -> range:
        base = self.chunk_base[chunk]
        return range(base, base + self.tiles * self.beats)

    def chunk_of(self, addr: int) -> int:
        return addr // (self.tiles * self.beats)


def output_region(g: int, *, gpus: int, tiles: int, beats: int) -> list[int]:
    """The words GPU g accumulates into (and zeroes): every chunk but ``g - 1``, ascending."""
    chunk_beats = tiles * beats
    return sorted(a for c in range(gpus) if c != (g - 1) % gpus for a in range(c * chunk_beats, (c + 1) * chunk_beats))


def _beats(rows: np.ndarray) -> list[int]:
    return [lanes_to_beat(row) for row in rows]


def plan_reduce_scatter(rng: np.random.Generator, *, gpus: int, tiles: int, beats: int, lanes: int, fmt: str,
                        notify_cmd: int, entries: int, depth: int, trigger_depth: int | None = None) -> RingPlan:
    """Random partial outputs for every GPU, the per-GPU programming and write streams, the
    expected value of every word at every step, and the expected reduce-scatter result.

    This driver arms every tile of a GPU before the barrier that starts the stage traffic,
    so that no remote update can reach a tile its receiver has not armed yet. Each armed
    tile holds one of the tracker's ``trigger_depth`` slots until it completes, and it
    completes only after the barrier: the ``(gpus - 1) * tiles`` arms must therefore fit
    the slots at once (``trigger_depth``, by default ``entries``), or the arms wait for
    slots that only the stage traffic behind them frees: a deadlock of the driver, which
    is refused here."""
    ftype, utype = NUMPY_TYPES[fmt]
    chunk_beats = tiles * beats
    if gpus * tiles > entries:
        raise ValueError(f"tile ids are addresses >> log2(beats): gpus * tiles ({gpus * tiles}) must be at most the "
                         f"tracker's entries ({entries})")
    if gpus * chunk_beats > depth:
        raise ValueError(f"gpus * tiles * beats ({gpus * chunk_beats}) must be at most the bank depth ({depth})")
    slots = entries if trigger_depth is None else trigger_depth
    if (gpus - 1) * tiles > slots:
        raise ValueError(f"this driver arms (gpus - 1) * tiles ({(gpus - 1) * tiles}) tiles before the barrier: "
                         f"trigger_depth must be at least that, not {slots}")
    if 2 * beats > 255:
        raise ValueError("threshold 2 * beats must fit the tracker's count")
    pool = notify_cmd  # descriptor indices 0 .. notify_cmd - 1
    partial = [
        (rng.standard_normal((gpus, chunk_beats, lanes)) * 4).astype(np.float32).astype(ftype).view(utype)
        for _ in range(gpus)
    ]
    chunk_base = [c * chunk_beats for c in range(gpus)]
    plans = [GpuPlan(gpu=g) for g in range(gpus)]
    for g, plan in enumerate(plans):
        for stage in range(1, gpus + 1):
            chunk = (g - stage) % gpus
            for t in range(tiles if stage > 1 else 0):
                tile = chunk * tiles + t
                base = chunk_base[chunk] + t * beats
                if stage < gpus:
                    j = len(plan.dma_tiles)
                    program = {"index": j % pool, "desc": {"src_addr": base, "dst_addr": base, "beats": beats,
                                                           "dst_port": 0, "op": UPDATE}}
                    if j < pool:
                        plan.programs.append(program)
                    else:
                        plan.late_programs[tile] = (plan.dma_tiles[j - pool], program)
                    plan.dma_tiles.append(tile)
                    plan.arms.append({"tile": tile, "threshold": 2 * beats, "dma_cmd": j % pool})
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
                    plan.local_writes.append({"tile": addr // beats, "addr": addr, "op": UPDATE, "tracked": 1,
                                              "data": word})
        plan.region = sorted(w["addr"] for w in plan.local_writes)
        assert plan.region == output_region(g, gpus=gpus, tiles=tiles, beats=beats), (
            f"GPU {g}'s stage-N writes cover {len(plan.region)} words, not its output region")
        plan.zero_writes = [{"tile": a // beats, "addr": a, "op": STORE, "tracked": 0, "data": 0}
                            for a in plan.region]

    # Every word's values along the ring: chunk c starts at GPU c + 1 (stage 1, raw partial
    # sent to GPU c + 2) and gains a partial per hop until GPU c (stage N).
    zero = np.zeros((chunk_beats, lanes), dtype=utype)
    expected = []
    for c in range(gpus):
        incoming = partial[(c + 1) % gpus][c]
        for hop in range(2, gpus + 1):
            g = (c + hop) % gpus
            local = partial[g][c]
            local_z = golden_add(fmt, zero, local)
            incoming_z = golden_add(fmt, zero, incoming)
            total = golden_add(fmt, local_z, incoming)
            other_order = golden_add(fmt, incoming_z, local)
            if len(mismatches(fmt, total.ravel(), other_order.ravel())):
                raise AssertionError("(0 + a) + b != (0 + b) + a on the drawn data: the reference needs timing")
            addrs = list(range(chunk_base[c], chunk_base[c] + chunk_beats))
            plan = plans[g]
            for table, rows in ((plan.local_z, local_z), (plan.incoming, incoming), (plan.incoming_z, incoming_z),
                                (plan.total, total)):
                table.update(zip(addrs, _beats(rows.astype(utype)), strict=True))
            incoming = total
        # An independent fold of the same chain, as the paper's reduce-scatter defines it.
        acc = golden_add(fmt, zero, partial[(c + 1) % gpus][c])
        for hop in range(2, gpus + 1):
            acc = golden_add(fmt, golden_add(fmt, zero, partial[(c + hop) % gpus][c]), acc)
        expected.append(acc.astype(utype))
        final = [plans[c].total[a] for a in range(chunk_base[c], chunk_base[c] + chunk_beats)]
        if final != _beats(expected[c]):
            raise AssertionError(f"chunk {c}: the per-hop values disagree with the reduce-scatter fold")
    return RingPlan(gpus, tiles, beats, lanes, fmt, plans, expected, chunk_base, pool)
