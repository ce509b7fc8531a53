"""The schemes compared for one sublayer: how its GEMM and all-reduce share the GPU.

* ``sequential``: GEMM, then software ring RS, then AG.
* ``ideal_overlap``: GEMM in parallel with an RS that costs only link time (the physical
  upper bound), then AG.
* ``ideal_rs_nmc``: GEMM, then an RS with near-memory reduction (no CU work), then AG.
* ``t3``: track & trigger with near-memory reduction; compute and communication share
  DRAM round-robin, so communication bursts slow the GEMM.
* ``t3_mca``: the same with T3's memory-controller arbitration (compute first).
* ``cu_sharing``: software fine-grained overlap that gives ``k`` CUs to communication
  (reduction kernels), the paper's CU-sharing study.

The fused schemes follow the paper's protocol (Fig. 7): the GEMM is sliced into ``tp``
stages, one chunk each, in the ring's staggered order. Stage 1 is written straight to the
next GPU; a middle stage's chunk is forwarded (as an update) once both its local writes and
the previous GPU's incoming updates are complete; the last stage stays local.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .block_timing import BlockTiming
from .collectives import ring_all_gather, ring_reduce_scatter
from .contention import ArbiterConfig, served_rates
from .gemm import GemmKernelConfig, gemm_timing
from .hardware import SystemConfig
from .models import GemmShape, WorkloadConfig
from .units import check_int_range, check_range

__all__ = ["StudyConfig", "SchemeResult", "SCHEMES", "evaluate"]

SCHEMES = ("sequential", "ideal_overlap", "ideal_rs_nmc", "t3", "t3_mca", "cu_sharing")


@dataclass(frozen=True)
class StudyConfig:
    """Everything a sublayer evaluation needs besides the sublayer itself.

    Attributes
    ----------
    cu_sharing_cus : int
        CUs given to communication in ``cu_sharing`` (8 of 80: a tenth of the GPU).
    cu_stream_bytes_per_cycle : int
        DRAM bytes a CU moves per cycle in a streaming kernel (one 64-byte line).
    software_step_overhead_ns : float
        Synchronisation per ring step of a software collective (0: favours the baselines).
    """

    system: SystemConfig
    block: BlockTiming
    kernel: GemmKernelConfig = field(default_factory=GemmKernelConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    arbiter: ArbiterConfig = field(default_factory=ArbiterConfig)
    cu_sharing_cus: int = 8
    cu_stream_bytes_per_cycle: int = 64
    software_step_overhead_ns: float = 0.0

    def __post_init__(self):
        check_int_range("cu_sharing_cus", self.cu_sharing_cus, 1, self.system.gpu.cus - 1)
        check_int_range("cu_stream_bytes_per_cycle", self.cu_stream_bytes_per_cycle, 1, 4096)
        check_range("software_step_overhead_ns", self.software_step_overhead_ns, 0, 1e9)


@dataclass
class SchemeResult:
    """Time (s), the GEMM's share of it, DRAM traffic (bytes) and a timeline of one scheme."""

    scheme: str
    time_s: float
    gemm_s: float
    traffic: dict[str, float]
    timeline: list[tuple[str, str, float, float]] = field(default_factory=list)  # (lane, label, start, end)

    @property
    def dram_bytes(self) -> float:
        return sum(self.traffic.values())


def _traffic(gemm_reads, gemm_writes, rs, ag) -> dict[str, float]:
    return {"gemm_reads": gemm_reads, "gemm_writes": gemm_writes, "rs_reads": rs[0], "rs_writes": rs[1],
            "ag_reads": ag.read_bytes, "ag_writes": ag.write_bytes}


def _stage_rows(m: int, stages: int) -> tuple[int, ...]:
    base, extra = divmod(m, stages)
    return tuple(base + (1 if i < extra else 0) for i in range(stages))


def _advance(t: float, work_s: float, stretch: float, busy: list[tuple[float, float]]) -> float:
    """Time at which ``work_s`` seconds of GEMM work started at ``t`` end, when the work runs
    ``stretch`` times slower inside the ``busy`` (communication) intervals."""
    if stretch <= 1.0:
        return t + work_s
    for start, end in busy:
        if end <= t:
            continue
        if start > t:
            if work_s <= start - t:
                return t + work_s
            work_s -= start - t
            t = start
        if work_s * stretch <= end - t:
            return t + work_s * stretch
        work_s -= (end - t) / stretch
        t = end
    return t + work_s


def _transfer_end(start: float, gemm_end: float, contended: float, alone: float) -> float:
    """End of a chunk transfer started at ``start`` that runs at the contended rate while the
    GEMM still runs (until ``gemm_end``) and at the link's own rate after."""
    overlap = gemm_end - start
    if overlap <= 0:
        return start + alone
    if contended <= overlap:
        return start + contended
    return gemm_end + (1 - overlap / contended) * alone


def _fused(cfg: StudyConfig, shape: GemmShape, tp: int, ag, *, policy: str, software: bool,
           record: bool) -> SchemeResult:
    """One GEMM kernel whose tiles run in stage order, overlapped with a ring RS (T3 in
    hardware, or CU-sharing in software), simulated wave by wave."""
    gpu, link, arbiter = cfg.system.gpu, cfg.system.link, cfg.arbiter
    e = cfg.kernel.bytes_per_element
    chunk = shape.m * shape.n * e / tp
    latency = link.link_latency_ns * 1e-9
    capacity = gpu.dram_bytes_per_s

    if software:
        # The reduction kernel reads two operands and writes the sum; the DMA reads the chunk
        # it sends and writes the one it receives: 5 channel crossings per chunk, moved by k CUs.
        cus = gpu.cus - cfg.cu_sharing_cus
        crossings = 5
        comm_engine = cfg.cu_sharing_cus * cfg.cu_stream_bytes_per_cycle * gpu.clock_GHz * 1e9
        trigger_s = cfg.software_step_overhead_ns * 1e-9
        finish_s = 0.0
    else:
        # The DMA reads the chunk it forwards; the incoming update crosses the channel once.
        cus = gpu.cus
        crossings = 2
        comm_engine = cfg.block.reducer_bytes_per_s(gpu.mc_clock_GHz, gpu.hbm_channels) * crossings
        trigger_s = cfg.block.trigger_to_link_s(gpu.mc_clock_GHz)
        finish_s = cfg.block.reducer_write_s(gpu.mc_clock_GHz)
    link_rate = min(link.ring_bytes_per_s, comm_engine / crossings)
    comm_need = crossings * link_rate

    gemm = gemm_timing(shape, gpu, cfg.kernel, cus=cus)
    segments = gemm.stage_segments(_stage_rows(shape.m, tp))
    _, comm_served = served_rates(policy, gemm.demand_bytes_per_s, comm_need, capacity, arbiter)
    transfer_contended = chunk / min(link_rate, comm_served / crossings)
    transfer_alone = chunk / link_rate

    busy: list[tuple[float, float]] = []
    done: list[float] = []
    arrival: list[float] = []
    timeline = [] if record else None
    t = 0.0
    gemm_left = gemm.time_s
    stretch_full = stretch_last = None
    for s, segment in enumerate(segments, start=1):
        if segment is not None:  # else this stage finished inside an earlier wave
            work, dram, includes_last = segment
            # Full waves all have the same demand: compute the stretch once per kind.
            stretch = stretch_last if includes_last else stretch_full
            if stretch is None:
                need = dram / work
                served, _ = served_rates(policy, need, comm_need, capacity, arbiter)
                stretch = need / served
                if includes_last:
                    stretch_last = stretch
                else:
                    stretch_full = stretch
            t = _advance(t, work, stretch, busy)
            gemm_left -= work
        if s == 1:
            # Stage 1's stores go straight to the next GPU as they are produced; the GEMM
            # cannot run ahead of the link by more than its store buffers, so it waits.
            t = max(t, _transfer_end(0.0, t, transfer_contended, transfer_alone))
            busy.append((0.0, t))
            arrival.append(t + latency)
            if record:
                timeline.append(("link", "step 1", 0.0, t + latency))
        elif s < tp:
            fire = max(t, arrival[-1]) + trigger_s
            end = _transfer_end(fire, t + gemm_left, transfer_contended, transfer_alone)
            busy.append((fire, end))
            arrival.append(end + latency)
            if record:
                timeline.append(("link", f"step {s}", fire, arrival[-1]))
        if record:
            timeline.append(("GEMM", f"stage {s}", done[-1] if done else 0.0, t))
        done.append(t)
    rs_done = max(done[-1], arrival[-1]) + finish_s
    if record:
        timeline.append(("AG", "all-gather", rs_done, rs_done + ag.time_s))

    writes = gemm.dram_write_bytes
    if software:
        traffic = _traffic(gemm.dram_read_bytes, writes, (3 * (tp - 1) * chunk, 2 * (tp - 1) * chunk), ag)
    else:
        # Stage 1 is written at the next GPU; by symmetry this GPU receives tp - 1 chunks as
        # updates and forwards tp - 2 of them with DMA reads.
        traffic = _traffic(gemm.dram_read_bytes, writes - chunk, ((tp - 2) * chunk, (tp - 1) * chunk), ag)
    scheme = "cu_sharing" if software else ("t3_mca" if policy == "mca" else "t3")
    return SchemeResult(scheme, rs_done + ag.time_s, done[-1], traffic, timeline or [])


def evaluate(cfg: StudyConfig, shape: GemmShape, tp: int, *, timeline: bool = True) -> dict[str, SchemeResult]:
    """Every scheme of :data:`SCHEMES` for one sublayer GEMM under tensor parallelism ``tp``.

    ``timeline=False`` skips recording the Gantt segments (sweeps do not plot them).
    """
    gpu, link = cfg.system.gpu, cfg.system.link
    e = cfg.kernel.bytes_per_element
    total = shape.m * shape.n * e
    chunk = total / tp
    gemm = gemm_timing(shape, gpu, cfg.kernel)
    overhead = cfg.software_step_overhead_ns * 1e-9
    rs_sw = ring_reduce_scatter(total, tp, link, gpu, nmc=False, step_overhead_s=overhead)
    nmc_rate = cfg.block.reducer_bytes_per_s(gpu.mc_clock_GHz, gpu.hbm_channels)
    rs_nmc = ring_reduce_scatter(total, tp, link, gpu, nmc=True, update_bytes_per_s=nmc_rate)
    ag = ring_all_gather(total, tp, link, gpu, step_overhead_s=overhead)
    rs_link_only = (tp - 1) * (link.link_latency_ns * 1e-9 + chunk / link.ring_bytes_per_s)

    software_traffic = _traffic(gemm.dram_read_bytes, gemm.dram_write_bytes,
                                (rs_sw.read_bytes, rs_sw.write_bytes), ag)
    nmc_traffic = _traffic(gemm.dram_read_bytes, gemm.dram_write_bytes - chunk,
                           ((tp - 2) * chunk, (tp - 1) * chunk), ag)
    g, r, a = gemm.time_s, rs_sw.time_s, ag.time_s
    results = {
        "sequential": SchemeResult("sequential", g + r + a, g, software_traffic,
                                   [("GEMM", "GEMM", 0, g), ("link", "RS", g, g + r),
                                    ("AG", "all-gather", g + r, g + r + a)] if timeline else []),
        "ideal_overlap": SchemeResult("ideal_overlap", max(g, rs_link_only) + a, g, software_traffic),
        "ideal_rs_nmc": SchemeResult("ideal_rs_nmc", g + rs_nmc.time_s + a, g, nmc_traffic),
        "t3": _fused(cfg, shape, tp, ag, policy="round_robin", software=False, record=timeline),
        "t3_mca": _fused(cfg, shape, tp, ag, policy="mca", software=False, record=timeline),
        "cu_sharing": _fused(cfg, shape, tp, ag, policy="round_robin", software=True, record=timeline),
    }
    return results
