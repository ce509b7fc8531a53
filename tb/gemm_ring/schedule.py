"""The driver's side of a GEMM + reduce-scatter on :class:`rtl.gemm_ring.GemmRing`: what each
GPU programs, arms and writes, for T3 and for the sequential schedule.

Both start from :func:`tb.ring.protocol.plan_reduce_scatter` (random partial outputs, the
staged order, the numpy reduce-scatter). The GEMM traffic source decides *when* each write
goes; this module decides *what* goes and in which order.

* **T3** is the plan as it is: stage 1 written straight to the next GPU (``remote``),
  stages 2..N written locally as tracked updates, each tile armed with ``2 x beats``.
* **Sequential** (the GEMM to completion, then the reduce-scatter as DMA steps, on the
  same hardware): every stage is written locally, stage 1 (chunk ``g - 1``) included, as
  tracked updates into the zeroed buffer. A stage-1 tile is armed with ``beats + 1`` and a
  forward command; after its GEMM is ``done`` the driver writes one *doorbell* per stage-1
  tile (a tracked ``+0`` update of its first word), which completes the tile and starts the
  reduce-scatter's first step. ``x + 0 == x`` bit for bit because no accumulated word is
  ``-0`` (``0 + a`` never is), so the result is the plan's. The doorbell costs one bank
  write per tile: the hardware has no other way for software to start a DMA command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tb.ring.protocol import STORE, UPDATE, RingPlan, plan_reduce_scatter

__all__ = ["GpuSchedule", "make_schedules"]


@dataclass
class GpuSchedule:
    """One GPU's streams, in order."""

    programs: list[dict] = field(default_factory=list)
    arms: list[dict] = field(default_factory=list)
    zero_writes: list[dict] = field(default_factory=list)
    local_writes: list[dict] = field(default_factory=list)     # through the GEMM source's credits
    remote_writes: list[dict] = field(default_factory=list)
    doorbells: list[dict] = field(default_factory=list)        # after the GEMM is done
    readback: list[int] = field(default_factory=list)          # chunk g's words, after its last notify


def make_schedules(rng: np.random.Generator, *, schedule: str, gpus: int, tiles: int, beats: int, lanes: int,
                   fmt: str, notify_cmd: int, entries: int, depth: int) -> tuple[RingPlan, list[GpuSchedule]]:
    """The plan (data and expected result) and every GPU's streams for ``schedule``
    ("t3" or "sequential")."""
    if schedule not in ("t3", "sequential"):
        raise ValueError(f"schedule must be 't3' or 'sequential', not {schedule!r}")
    plan = plan_reduce_scatter(rng, gpus=gpus, tiles=tiles, beats=beats, lanes=lanes, fmt=fmt,
                               notify_cmd=notify_cmd, entries=entries, depth=depth)
    out = []
    for g, gp in enumerate(plan.plans):
        s = GpuSchedule(programs=list(gp.programs), arms=list(gp.arms), zero_writes=list(gp.zero_writes),
                        local_writes=list(gp.local_writes), readback=list(plan.chunk_addresses(g)))
        if gp.late_programs:     # this driver programs every descriptor before the launch
            raise ValueError(f"{len(gp.dma_tiles)} forwarded tiles per GPU need as many descriptors: commands must "
                             f"be more than that, not {notify_cmd + 1}")
        if schedule == "t3":
            s.remote_writes = list(gp.remote_writes)
        else:
            first = len(gp.dma_tiles)
            if first + tiles > notify_cmd:
                raise ValueError(f"the sequential schedule forwards {first + tiles} tiles per GPU: commands must be "
                                 f"more than that, not {notify_cmd + 1}")
            stage1 = [w["dst_addr"] for w in gp.remote_writes]
            s.zero_writes = [{"tile": a // beats, "addr": a, "op": STORE, "tracked": 0, "data": 0}
                             for a in sorted(stage1 + [w["addr"] for w in gp.zero_writes])]
            s.local_writes = [{"tile": w["dst_addr"] // beats, "addr": w["dst_addr"], "op": UPDATE, "tracked": 1,
                               "data": w["data"]} for w in gp.remote_writes] + s.local_writes
            for i, base in enumerate(stage1[::beats]):
                index = first + i
                s.programs.append({"index": index, "desc": {"src_addr": base, "dst_addr": base, "beats": beats,
                                                            "dst_port": 0, "op": UPDATE}})
                s.arms.append({"tile": base // beats, "threshold": beats + 1, "dma_cmd": index})
                s.doorbells.append({"tile": base // beats, "addr": base, "op": UPDATE, "tracked": 1, "data": 0})
        out.append(s)
    return plan, out
