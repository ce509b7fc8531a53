"""The schemes compared for one sublayer: how its GEMM and all-reduce share the GPU.

* ``sequential``: the GEMM, then RCCL's ring RS, then its AG (all CUs, nothing shared).
* ``ideal_overlap``: the GEMM in parallel with an RS that costs only link time (the
  physical upper bound: the link's chunks and one hop), then the AG.
* ``ideal_rs_nmc``: the GEMM, then T3's hardware RS (tracker, DMA, near-memory reduction:
  no CUs, no flags), not overlapped, then the AG.
* ``t3``: track & trigger with near-memory reduction, fused with the GEMM; compute and
  communication share each DRAM channel through the round-robin arbiter.
* ``t3_mca``: the same with T3-MCA (compute first, communication below a threshold set
  from the GEMM's measured memory intensity, with a starvation limit).
* ``cu_sharing``: software fine-grained overlap: each GEMM stage's chunk all-reduced by
  RCCL's kernels on ``cu_sharing_cus`` CUs taken from the GEMM, while the GEMM goes on,
  sharing the DRAM round-robin.

The fused schemes follow the paper's protocol (Fig. 7): the GEMM is sliced into ``tp``
stages, one chunk each, in the ring's staggered order. In T3, stage 1 is written straight
to the next GPU; a middle stage's chunk is forwarded (as an update) once both its local
writes and the previous GPU's incoming updates are complete; the last stage stays local.

Every GEMM wave is timed by the DRAM channel model (:mod:`.dram_queue`), alone or with the
communication that overlaps it, under the scheme's arbiter; the communication moves at
what the channel serves it, capped by the link.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .block_timing import BlockTiming
from .collectives import CollectiveKernelConfig, hardware_reduce_scatter, software_all_gather, software_reduce_scatter
from .dram_queue import TRACE_WINDOW, ArbiterConfig, WaveLoad, WaveResult, dynamic_threshold, simulate_wave
from .gemm import GemmKernelConfig, GemmTiming, gemm_timing
from .hardware import SystemConfig
from .models import GemmShape, WorkloadConfig
from .units import check_int_range

__all__ = ["StudyConfig", "SchemeResult", "DramTrace", "SCHEMES", "evaluate", "gemm_alone_s", "t3_staged"]

SCHEMES = ("sequential", "ideal_overlap", "ideal_rs_nmc", "t3", "t3_mca", "cu_sharing")


@dataclass(frozen=True)
class StudyConfig:
    """Everything a sublayer evaluation needs besides the sublayer itself.

    Attributes
    ----------
    cu_sharing_cus : int
        CUs given to communication in ``cu_sharing`` (8 of 80, as in the paper's study).
    """

    system: SystemConfig
    block: BlockTiming
    kernel: GemmKernelConfig = field(default_factory=GemmKernelConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    arbiter: ArbiterConfig = field(default_factory=ArbiterConfig)
    collective: CollectiveKernelConfig = field(default_factory=CollectiveKernelConfig)
    cu_sharing_cus: int = 8

    def __post_init__(self):
        check_int_range("cu_sharing_cus", self.cu_sharing_cus, 1, self.system.gpu.cus - 1)


@dataclass(frozen=True)
class DramTrace:
    """A representative stretch of one DRAM channel, scaled to the whole GPU.

    ``t_s`` is the simulated time of the representative wave (see :mod:`.dram_queue`);
    ``queue_occupancy`` the requests in the channel's queue; ``GBps`` the bandwidth per
    stream ("gemm_reads", "gemm_writes", "dma_reads", "updates") over all channels.
    """

    t_s: tuple[float, ...]
    queue_occupancy: tuple[float, ...]
    GBps: dict[str, tuple[float, ...]]
    threshold: int


@dataclass
class SchemeResult:
    """Time (s), the GEMM's share of it, DRAM traffic (bytes) and a timeline of one scheme.

    ``slowdowns`` (overlapped schemes only): ``gemm`` = the GEMM's time in the scheme over
    the GEMM alone on all CUs; ``collective`` = the collective's time in the scheme over the
    same collective alone (for ``cu_sharing``: its transfers on ``k`` CUs beside the GEMM,
    not its waits for GEMM stages, over RCCL's RS + AG with the GPU to itself; for T3: from
    the first stage to the last update over the hardware RS alone).
    """

    scheme: str
    time_s: float
    gemm_s: float
    traffic: dict[str, float]
    timeline: list[tuple[str, str, float, float]] = field(default_factory=list)  # (lane, label, start, end)
    slowdowns: dict[str, float] = field(default_factory=dict)
    trace: DramTrace | None = None

    @property
    def dram_bytes(self) -> float:
        return sum(self.traffic.values())


def _traffic(gemm_reads, gemm_writes, rs, ag) -> dict[str, float]:
    return {"gemm_reads": gemm_reads, "gemm_writes": gemm_writes, "rs_reads": rs[0], "rs_writes": rs[1],
            "ag_reads": ag[0], "ag_writes": ag[1]}


class _Channel:
    """Turns a GEMM wave and the communication beside it into one channel's :class:`WaveLoad`."""

    def __init__(self, cfg: StudyConfig, gemm: GemmTiming):
        self.cfg, self.gemm = cfg, gemm
        gpu = cfg.system.gpu
        self.hz = gpu.mc_clock_GHz * 1e9
        self.per_request = gpu.hbm_channels * gpu.dram_request_bytes      # bytes of one request on every channel
        self.prefetch = gemm.prefetch_bytes_per_cu
        self.nmc_units = gpu.nmc_update_units
        self.reads_first = gpu.mc_reads_first
        self.fixed = dict(compute_cycles=gemm.tile_compute_s * self.hz, service_rate=gpu.channel_requests_per_cycle,
                          latency_cycles=max(1, round(gpu.dram_latency_ns * gpu.mc_clock_GHz)),
                          queue_entries=gpu.dram_queue_entries)
        self.loads: dict = {}

    def requests_per_cycle(self, bytes_per_s: float) -> float:
        return bytes_per_s / self.per_request / self.hz

    def bytes_per_s(self, requests_per_cycle: float) -> float:
        return requests_per_cycle * self.per_request * self.hz

    def load(self, w: int, *, local_stores: bool, nmc: bool, update_Bps: float = 0.0, update_units: int | None = None,
             dma_Bps: float = 0.0, dma_burst_bytes: float = 0.0) -> WaveLoad:
        """Wave ``w``'s load; incoming writes are near-memory updates unless ``update_units`` says otherwise."""
        g = self.gemm
        update_units = self.nmc_units if update_units is None else update_units
        key = (g.wave_reads[w], g.wave_tiles[w], local_stores, nmc, update_Bps, update_units, dma_Bps, dma_burst_bytes)
        load = self.loads.get(key)
        if load is None:
            tiles = g.wave_tiles[w]
            load = self.loads[key] = WaveLoad(
                reads=g.wave_reads[w] / self.per_request,
                stores=tiles * g.out_tile_bytes / self.per_request if local_stores else 0.0,
                stores_nmc=nmc,
                outstanding=max(1, round(tiles * self.prefetch * g.l2_miss_ratio(w) / self.per_request)),
                update_rate=self.requests_per_cycle(update_Bps), update_units=update_units,
                dma_rate=self.requests_per_cycle(dma_Bps), dma_burst=max(1, round(dma_burst_bytes / self.per_request)),
                nmc_units=self.nmc_units, k_steps=g.k_steps_per_tile, reads_first=self.reads_first, **self.fixed)
        return load

    def run(self, load: WaveLoad, policy: str, threshold: int) -> WaveResult:
        return simulate_wave(load, policy, threshold=threshold,
                             starvation_limit=self.cfg.arbiter.starvation_limit_cycles)

    def trace(self, result: WaveResult, threshold: int) -> DramTrace:
        window_s = TRACE_WINDOW / self.hz
        scale = self.per_request / window_s / 1e9
        names = ("gemm_reads", "gemm_writes", "dma_reads", "updates")
        return DramTrace(t_s=tuple(row[0] / self.hz for row in result.trace),
                         queue_occupancy=tuple(float(row[1]) for row in result.trace),
                         GBps={n: tuple(row[2 + i] * scale for row in result.trace) for i, n in enumerate(names)},
                         threshold=threshold)


def _stage_waves(gemm: GemmTiming) -> list[range]:
    """The waves each stage ends (empty when it ends inside an earlier stage's last wave)."""
    spans, first = [], 0
    for last in gemm.stage_end_waves:
        spans.append(range(first, last + 1))
        first = max(first, last + 1)
    return spans


def _runs(gemm: GemmTiming, waves: range) -> list[tuple[int, int]]:
    """``(first wave, count)`` of each run of identical consecutive waves (same reads, same
    tiles): the channel model sees them alike, so each run is timed once."""
    runs: list[list[int]] = []
    for w in waves:
        if runs and (gemm.wave_reads[w], gemm.wave_tiles[w]) == (gemm.wave_reads[runs[-1][0]],
                                                                  gemm.wave_tiles[runs[-1][0]]):
            runs[-1][1] += 1
        else:
            runs.append([w, 1])
    return [(w, n) for w, n in runs]


@functools.lru_cache(maxsize=4096)
def gemm_alone_s(cfg: StudyConfig, gemm: GemmTiming, *, nmc: bool) -> float:
    """The GEMM on its own: every wave through the channel model without communication."""
    channel = _Channel(cfg, gemm)
    return sum(n * channel.run(channel.load(w, local_stores=True, nmc=nmc), "alone", 1).cycles
               for w, n in _runs(gemm, range(gemm.waves))) / channel.hz


def _remaining_s(gemm: GemmTiming, next_wave: int) -> float:
    """Compute time of the waves from ``next_wave`` on (the waves not run yet)."""
    return max(0, gemm.waves - next_wave) * gemm.tile_compute_s


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
    """End of a chunk transfer started at ``start`` that takes ``contended`` seconds while
    the GEMM still runs (until ``gemm_end``) and ``alone`` seconds after."""
    overlap = gemm_end - start
    if overlap <= 0:
        return start + alone
    if contended <= overlap:
        return start + contended
    return gemm_end + (1 - overlap / contended) * alone


def _t3(cfg: StudyConfig, shape: GemmShape, tp: int, ag_s: float, ag_traffic, *, policy: str,
        record: bool) -> SchemeResult:
    """T3: the staged GEMM with track & trigger, near-memory updates and the DRAM arbiter."""
    e = cfg.kernel.bytes_per_element
    gemm = gemm_timing(shape, cfg.system.gpu, cfg.kernel, stages=tp, stores_cached=False)
    base_alone = gemm_alone_s(cfg, gemm_timing(shape, cfg.system.gpu, cfg.kernel, stages=tp), nmc=False)
    return t3_staged(cfg, gemm, tp, chunk_bytes=shape.m * shape.n * e / tp,
                     tile_bytes=cfg.kernel.tile_m * cfg.kernel.tile_n * e, ag_s=ag_s, ag_traffic=ag_traffic,
                     policy=policy, record=record, base_alone_s=base_alone)


def t3_staged(cfg: StudyConfig, gemm: GemmTiming, tp: int, *, chunk_bytes: float, tile_bytes: float, ag_s: float,
              ag_traffic, policy: str, record: bool, base_alone_s: float) -> SchemeResult:
    """T3 on a staged GEMM given by its waves (``gemm``): what :func:`evaluate` runs for a
    sublayer, and what ``python -m system_model crosscheck`` runs for the RTL ring's GEMM.

    ``chunk_bytes``: one GPU's share of the output (one stage); ``base_alone_s``: the
    baseline GEMM alone, for the slowdown.
    """
    gpu, link, block = cfg.system.gpu, cfg.system.link, cfg.block
    chunk = chunk_bytes
    latency = link.link_latency_ns * 1e-9
    channel = _Channel(cfg, gemm)
    link_rate = min(link.ring_bytes_per_s, block.reducer_bytes_per_s(gpu.mc_clock_GHz, gpu.hbm_channels))
    trigger_s = block.trigger_to_link_s(gpu.mc_clock_GHz) + gpu.dram_latency_ns * 1e-9
    stages = _stage_waves(gemm)

    # The threshold, set from the GEMM's memory intensity in its first stage (alone).
    first = stages[0][0] if stages[0] else 0
    probe = channel.run(channel.load(first, local_stores=True, nmc=True), "alone", 1)
    threshold = cfg.arbiter.threshold or dynamic_threshold(gpu.dram_queue_entries, probe.bank_utilisation)

    # Transfers are pipelined at tile granularity, as the tracker triggers them. A middle
    # stage's chunk starts leaving once its first tile is written locally, the previous
    # GPU's first tile of it has arrived and this GPU's link is free; its last tile leaves
    # after the stage's last local write and the last incoming tile. So the communication a
    # channel sees in stage s is paced by the GEMM that produces it, at most the link's
    # rate: the previous GPU's stage-s tiles arriving as updates (s < tp) and, in a middle
    # stage, the DMA reads of this stage's finished tiles. (Checked against the RTL ring:
    # ``python -m system_model crosscheck``.)
    tile_s = tile_bytes / link_rate
    wave_out = gemm.cus * tile_bytes          # one wave's output tiles
    busy: list[tuple[float, float]] = []
    done: list[float] = []
    first_arrival: list[float] = []      # this GPU's chunk of a step: first tile at the next GPU
    last_arrival: list[float] = []       # ... and its last tile
    timeline = []
    trace = None
    t = 0.0
    link_free = 0.0
    next_wave = 0
    for s, waves in enumerate(stages, start=1):
        next_wave = max(next_wave, waves.stop)
        local = s > 1                       # stage 1's stores go straight to the next GPU
        middle = waves[len(waves) // 2] if waves else None
        start = t
        runs = _runs(gemm, waves)
        alone_s = [channel.run(channel.load(w, local_stores=local, nmc=True), "alone", threshold).cycles / channel.hz
                   for w, _ in runs]
        first_wave_s = alone_s[0] if runs else 0.0
        stage_s = sum(a * n for a, (_, n) in zip(alone_s, runs, strict=True))
        if s == 1:
            fire = first_wave_s
        elif s < tp:
            fire = max(link_free, start + first_wave_s + trigger_s,
                       first_arrival[-1] + trigger_s if first_arrival else 0.0)
        else:
            fire = None                     # the last stage only receives what arrived before it
        end = float("inf")
        for _ in range(2 if fire is not None else 1):
            # The communication offered while this stage runs, paced by the GEMM and capped
            # by the link: a stage of several waves completes a wave of tiles per wave time,
            # steadily (its last wave's tiles are forwarded during the next stage's first,
            # as the previous stage's were during its own); a stage of one wave (or less)
            # completes all its tiles at once, a burst at the link's rate.
            offered = min(link_rate, chunk / stage_s) if sum(n for _, n in runs) > 1 else link_rate
            dma = offered if 1 < s < tp else 0.0
            incoming = offered if s < tp else 0.0
            around = busy + ([(fire, end)] if fire is not None else [])
            t = start
            rates = []
            for (w, n), solo_s in zip(runs, alone_s, strict=True):
                shared = channel.run(channel.load(w, local_stores=local, nmc=True, update_Bps=incoming,
                                                  dma_Bps=dma, dma_burst_bytes=tile_bytes), policy, threshold)
                shared_s = shared.cycles / channel.hz
                t = _advance(t, n * solo_s, shared_s / solo_s, around)
                # Each forwarded byte is one DMA read here and one update at the next GPU
                # (and, by symmetry, one arriving here).
                served = channel.bytes_per_s(shared.comm_served_per_cycle) / (2 if dma else 1)
                rates.append(min(offered, served))
                if record and trace is None and dma and w <= middle < w + n:
                    trace = channel.trace(shared, threshold)
            stage_s = t - start
            # A channel that serves communication nothing (a GEMM the arbiter favours
            # throughout) holds the transfer until the GEMM ends.
            rate = min(rates) if rates else link_rate
            contended = chunk / rate if rate > 0 else float("inf")
            if s == 1:
                # Stage 1's stores leave as they are produced, through a wave's worth of
                # output buffer: the link ends with the stage's last byte, and the GEMM can be
                # ahead of it by at most one wave's stage-1 output.
                buffered = min(chunk, wave_out) / link_rate
                end = max(first_wave_s + chunk / link_rate, t + buffered)
                stage1_gemm = max(t, end - buffered)
            elif s < tp:
                end = _transfer_end(fire, t + _remaining_s(gemm, next_wave), contended, chunk / link_rate)
                end = max(end, last_arrival[-1] + trigger_s + tile_s, t + trigger_s + tile_s)
        if s == 1:
            t = stage1_gemm
        if fire is not None:
            busy.append((fire, end))
            first_arrival.append(fire + tile_s + latency)
            last_arrival.append(end + latency)
            link_free = end
            timeline.append(("link", f"step {s}", fire, last_arrival[-1]))
        timeline.append(("GEMM", f"stage {s}", done[-1] if done else 0.0, t))
        done.append(t)
    rs_done = max(done[-1], last_arrival[-1]) + block.reducer_write_s(gpu.mc_clock_GHz)
    timeline.append(("AG", "all-gather", rs_done, rs_done + ag_s))

    rs_alone = (tp - 1) * (chunk / link_rate + trigger_s + latency)
    # The collective's own time: its transfers with their trigger and hop, not its waits
    # for GEMM stages (stage 1's transfer is the stage itself).
    collective_s = sum(end - start for start, end in busy) + (len(busy) - 1) * trigger_s + len(busy) * latency
    traffic = _traffic(gemm.dram_read_bytes, (tp - 1) * chunk, ((tp - 2) * chunk, (tp - 1) * chunk), ag_traffic)
    return SchemeResult("t3_mca" if policy == "mca" else "t3", rs_done + ag_s, done[-1], traffic,
                        timeline if record else [],
                        slowdowns={"gemm": done[-1] / base_alone_s, "collective": collective_s / rs_alone},
                        trace=trace)


def _cu_sharing(cfg: StudyConfig, shape: GemmShape, tp: int, *, record: bool) -> SchemeResult:
    """Software fine-grained overlap, as the paper's CU-sharing study runs it.

    The GEMM runs in ``tp`` stages on ``cus - k`` CUs. As each stage's chunk is done,
    RCCL's ring all-reduce of that chunk (an RS and an AG over the ``tp`` GPUs, on the other
    ``k`` CUs, one chunk after another) overlaps the rest of the GEMM, sharing each DRAM
    channel round-robin. So the whole all-reduce overlaps the GEMM except the last chunk's,
    and every chunk pays its own ``2(tp - 1)`` steps of fill and flags.
    """
    gpu, link, coll = cfg.system.gpu, cfg.system.link, cfg.collective
    k = cfg.cu_sharing_cus
    e = cfg.kernel.bytes_per_element
    total = shape.m * shape.n * e
    chunk = total / tp
    gemm = gemm_timing(shape, gpu, cfg.kernel, stages=tp, cus=gpu.cus - k)
    channel = _Channel(cfg, gemm)
    rs = software_reduce_scatter(chunk, tp, link, gpu, coll, channels=k)
    ag = software_all_gather(chunk, tp, link, gpu, coll, channels=k)
    rate_alone = min(rs.rate_Bps, ag.rate_Bps)
    steps_overhead = rs.steps * rs.overhead_s + ag.steps * ag.overhead_s
    moved = (rs.steps + ag.steps) * chunk / tp          # bytes one GPU sends for one chunk's all-reduce
    stages = _stage_waves(gemm)

    busy: list[tuple[float, float]] = []
    done: list[float] = []
    timeline = []
    t = 0.0
    ar_end = 0.0
    next_wave = 0
    for s, waves in enumerate(stages, start=1):
        next_wave = max(next_wave, waves.stop)
        rates = []
        for w, n in _runs(gemm, waves):
            alone = channel.run(channel.load(w, local_stores=True, nmc=False), "alone", 1)
            # Per byte sent: the FIFO and a local source read (2) and one arrival written.
            shared = channel.run(channel.load(w, local_stores=True, nmc=False, update_Bps=rate_alone,
                                              update_units=1, dma_Bps=2 * rate_alone), "round_robin", 1)
            alone_s, shared_s = alone.cycles / channel.hz, shared.cycles / channel.hz
            t = _advance(t, n * alone_s, shared_s / alone_s, busy)
            # The collective's CUs see the loaded latency (Little's law) and the served share.
            cus_rate = coll.cu_bytes_per_s(k, shared.mean_read_latency_cycles / channel.hz)
            rates.append(min(rate_alone, cus_rate, channel.bytes_per_s(shared.comm_served_per_cycle) / 3))
        timeline.append(("GEMM", f"stage {s}", done[-1] if done else 0.0, t))
        done.append(t)
        # This stage's chunk: its all-reduce starts when the chunk is done and the k CUs are free.
        start = max(t, ar_end)
        rate = min(rates) if rates else rate_alone
        contended = moved / rate if rate > 0 else float("inf")
        ar_end = _transfer_end(start + steps_overhead, t + _remaining_s(gemm, next_wave), contended,
                               moved / rate_alone)
        busy.append((start, ar_end))
        timeline.append(("link", f"all-reduce {s}", start, ar_end))

    base = software_reduce_scatter(total, tp, link, gpu, coll)
    ag_full = software_all_gather(total, tp, link, gpu, coll)
    traffic = _traffic(gemm.dram_read_bytes, gemm.dram_write_bytes, (base.read_bytes, base.write_bytes),
                       (ag_full.read_bytes, ag_full.write_bytes))
    gemm_full = gemm_alone_s(cfg, gemm_timing(shape, gpu, cfg.kernel, stages=tp), nmc=False)
    # The collective's own time: its all-reduces, not its waits for GEMM stages.
    collective_s = sum(end - start for start, end in busy)
    return SchemeResult("cu_sharing", max(done[-1], ar_end), done[-1], traffic, timeline if record else [],
                        slowdowns={"gemm": done[-1] / gemm_full,
                                   "collective": collective_s / (base.time_s + ag_full.time_s)})


def evaluate(cfg: StudyConfig, shape: GemmShape, tp: int, *, timeline: bool = True) -> dict[str, SchemeResult]:
    """Every scheme of :data:`SCHEMES` for one sublayer GEMM under tensor parallelism ``tp``.

    ``timeline=False`` skips recording the Gantt segments and traces (sweeps do not plot them).
    """
    check_int_range("tp", tp, 2, 1 << 16)
    gpu, link, coll = cfg.system.gpu, cfg.system.link, cfg.collective
    e = cfg.kernel.bytes_per_element
    total = shape.m * shape.n * e
    chunk = total / tp
    gemm = gemm_timing(shape, gpu, cfg.kernel, stages=tp)
    g = gemm_alone_s(cfg, gemm, nmc=False)
    rs_sw = software_reduce_scatter(total, tp, link, gpu, coll)
    ag = software_all_gather(total, tp, link, gpu, coll)
    rs_nmc = hardware_reduce_scatter(total, tp, link, gpu,
                                     trigger_to_link_s=cfg.block.trigger_to_link_s(gpu.mc_clock_GHz),
                                     reducer_bytes_per_s=cfg.block.reducer_bytes_per_s(gpu.mc_clock_GHz,
                                                                                        gpu.hbm_channels),
                                     tile_bytes=cfg.kernel.tile_m * cfg.kernel.tile_n * e)
    # The link's bound: it carries tp - 1 chunks, the last one a hop away (a tile-pipelined
    # RS pays the hop once, not per step).
    rs_link_only = (tp - 1) * chunk / link.ring_bytes_per_s + link.link_latency_ns * 1e-9
    ag_traffic = (ag.read_bytes, ag.write_bytes)
    software = _traffic(gemm.dram_read_bytes, gemm.dram_write_bytes, (rs_sw.read_bytes, rs_sw.write_bytes),
                        ag_traffic)
    nmc = _traffic(gemm.dram_read_bytes, gemm.dram_write_bytes, (rs_nmc.read_bytes, rs_nmc.write_bytes), ag_traffic)
    r, a = rs_sw.time_s, ag.time_s
    return {
        "sequential": SchemeResult("sequential", g + r + a, g, software,
                                   [("GEMM", "GEMM", 0, g), ("link", "RS", g, g + r),
                                    ("AG", "all-gather", g + r, g + r + a)] if timeline else []),
        "ideal_overlap": SchemeResult("ideal_overlap", max(g, rs_link_only) + a, g, software),
        "ideal_rs_nmc": SchemeResult("ideal_rs_nmc", g + rs_nmc.time_s + a, g, nmc),
        "t3": _t3(cfg, shape, tp, a, ag_traffic, policy="round_robin", record=timeline),
        "t3_mca": _t3(cfg, shape, tp, a, ag_traffic, policy="mca", record=timeline),
        "cu_sharing": _cu_sharing(cfg, shape, tp, record=timeline),
    }

