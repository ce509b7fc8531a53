"""What every scheme shares: the sublayer on its platform, the timeline's resources, the GEMM
driven wave by wave, collectives as flows, and the result.

A :class:`Sublayer` is one GEMM ``(m, n, k)`` per GPU whose output is reduced over ``tp``
GPUs (an all-reduce, or a reduce-scatter alone as Flux and async-TP publish it), on one
platform. Every scheme builds an :class:`~system_model.engine.timeline.Engine` with the same
resources (:meth:`Sublayer.capacities`):

* ``dram``: the GPU's achievable DRAM bandwidth, in byte-equivalents of bank time;
* ``link``: the line rate of the GPU's links into the group, one direction (every byte a
  transfer sends costs ``1 / payload efficiency`` of it: its packets' overhead);
* ``nic``: the GPU's NIC, where the group spans nodes;
* ``reducers``: T3's near-memory reducers, the updates they add per second.

By symmetry every GPU runs the same timeline, and what a GPU receives mirrors what it
sends: a transfer flow carries its sender's DRAM reads and the receiver's writes at once.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..describe.config import StudyConfig
from ..describe.kernels import GemmKernelConfig
from ..describe.models import GemmShape
from ..engine.sharing import DRAM, GRANTS, Policy, mca_floor_grants_Bps
from ..engine.timeline import Engine, Flow
from ..kernels.collectives import Plan, plan
from ..kernels.custom_allreduce import CustomPlan, custom_all_gather, custom_all_reduce, custom_na_reason
from ..kernels.gemm import (
    GemmTiming,
    choose_kernel,
    gemm_alone_s,
    gemm_timing,
    library_variants,
    wave_cap_per_s,
    waves_floor_s,
)
from ..kernels.triton_gemm import triton_ar_kernel

__all__ = ["SchemeResult", "Sublayer", "GemmRun", "start_collective", "na", "direct_na", "COLLECTIVES"]

COLLECTIVES = ("all_reduce", "reduce_scatter")


@dataclass
class SchemeResult:
    """One scheme on one sublayer.

    ``time_s`` is None where the scheme cannot run here (``reason`` says why). ``gemm_s``:
    when its GEMM ended. ``traffic``: DRAM bytes per stream. ``timeline``: (lane, label,
    start, end) segments. ``slowdowns``: the GEMM's time in the scheme over the GEMM alone,
    and the collective's over the collective alone (overlapped schemes). ``bound``: the
    ideal it is held under (``ideal_rs``: the reduce-scatter hidden, the all-gather after;
    ``ideal_ar``: the whole all-reduce hidden). ``intervals``: the engine's per-interval
    rates and resource use, when recorded.
    """

    scheme: str
    time_s: float | None
    gemm_s: float = 0.0
    traffic: dict[str, float] = field(default_factory=dict)
    timeline: list[tuple[str, str, float, float]] = field(default_factory=list)
    slowdowns: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    bound: str = "ideal_ar"
    intervals: list = field(default_factory=list, repr=False)
    events: int = 0

    @property
    def available(self) -> bool:
        return self.time_s is not None

    @property
    def dram_bytes(self) -> float:
        return sum(self.traffic.values())

    def transfer_dram_s(self, dram_bytes_per_s: float) -> float:
        """The DRAM time of the scheme's transfers (the collective's reads and writes, each
        written byte at most two units of service: a near-memory update) at ``dram_bytes_per_s``:
        the most a transfer can take from its GEMM under round-robin arbitration."""
        t = self.traffic
        units = t["rs_reads"] + t["ag_reads"] + 2 * (t["rs_writes"] + t["ag_writes"])
        return units / dram_bytes_per_s

    def contention_s(self, dram_bytes_per_s: float) -> float:
        """The most that sharing the DRAM can move between the GEMM and the transfers: the
        smaller of the two sides' DRAM time (the transfers' as :meth:`transfer_dram_s`, the
        GEMM's reads and stores at one unit each). A change that spreads one side's DRAM
        traffic thinner, or packs it tighter, moves at most this much time from one side to
        the other."""
        t = self.traffic
        gemm = (t["gemm_reads"] + t["gemm_writes"]) / dram_bytes_per_s
        return min(gemm, self.transfer_dram_s(dram_bytes_per_s))


def fastest(results) -> SchemeResult:
    """The fastest of one scheme's runs (its layouts of the GEMM); the first where none runs."""
    return fastest_of(lambda r, _beat: r, results)


def fastest_of(run: Callable, layouts, beat_s: float = math.inf, *, tie: float = 0.0) -> SchemeResult | None:
    """:func:`fastest` of ``run(layout, time to beat)`` over ``layouts``, each run asked to
    beat the fastest so far (and ``beat_s``, where the caller keeps the fastest of several
    kernels): a run returns None once it cannot (:func:`run_to_beat`). None where no run
    ends before ``beat_s``; the first where none runs. A run replaces the fastest so far
    only when it is faster by more than the fraction ``tie`` (T3's ring: ``LAYOUT_TIE``)."""
    best = None
    for layout in layouts:
        replaces = best.time_s * (1 - tie) if best is not None and best.available else math.inf
        r = run(layout, min(beat_s, replaces))
        if r is not None and (best is None or (r.available and r.time_s < replaces)):
            best = r
    return best


def run_to_beat(engine: Engine, beat_s: float, end_s: Callable[[float], float]) -> bool:
    """Run ``engine`` to its end, or stop it once it can no longer end before ``beat_s`` (a
    scheme that keeps the fastest of several runs): ``end_s(t)`` is the run's end if its last
    event came at ``t``, non-decreasing in ``t``, and every event still to come is no sooner
    than the clock. Returns whether it ran to its end."""
    if beat_s < math.inf:
        engine.stop_after_s = (beat_s - end_s(0.0)) * (1 + 1e-12)
    engine.run()
    if not engine.has_work:
        return True
    if end_s(engine.now) >= beat_s:
        return False
    engine.stop_after_s = math.inf
    engine.run()
    return True


def na(scheme: str, reason: str) -> SchemeResult:
    return SchemeResult(scheme, None, reason=reason)


def direct_na(sub: Sublayer, scheme: str, what: str = "remote stores and pulls") -> SchemeResult | None:
    """Why a direct scheme (remote stores, pulls or updates to every peer) does not apply:
    on a ring, or beyond the switch or fully connected domain; None where it applies."""
    if sub.fabric.topology == "ring":
        return na(scheme, "a ring reaches only its two neighbours directly")
    if not sub.in_domain:
        kind = "switch" if sub.fabric.topology == "switch" else "fully connected"
        return na(scheme, f"TP {sub.tp} spans more than the {sub.fabric.domain_gpus}-GPU {kind} domain "
                          f"({what} reach the domain only)")
    return None


def traffic(gemm_reads, gemm_writes, rs=(0.0, 0.0), ag=(0.0, 0.0)) -> dict[str, float]:
    return {"gemm_reads": float(gemm_reads), "gemm_writes": float(gemm_writes), "rs_reads": float(rs[0]),
            "rs_writes": float(rs[1]), "ag_reads": float(ag[0]), "ag_writes": float(ag[1])}


class Sublayer:
    """The shared pieces of one sublayer on one platform at one TP."""

    def __init__(self, cfg: StudyConfig, shape: GemmShape, tp: int, collective: str = "all_reduce",
                 kernel: GemmKernelConfig | None = None):
        if collective not in COLLECTIVES:
            raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}, not {collective!r}")
        self.cfg, self.shape, self.tp, self.collective = cfg, shape, tp, collective
        self.all_reduce = collective == "all_reduce"
        system = cfg.system
        self.gpu, self.fabric, self.transport, self.block = system.gpu, system.fabric, system.transport, cfg.block
        #: The library's kernel for the GEMM alone (by modelled time); a fused scheme may run
        #: another of the library's kernels (:func:`system_model.schemes.evaluate` takes the
        #: fastest for each scheme).
        self.library_kernel = choose_kernel(shape, self.gpu, cfg.kernels)
        self.kernel = self.library_kernel if kernel is None else kernel
        e = self.kernel.bytes_per_element
        self.total = shape.m * shape.n * e
        self.chunk = self.total / tp
        self.tile_bytes = self.kernel.tile_m * self.kernel.tile_n * e
        self.in_domain = self.fabric.in_domain(tp)
        self.ppn = min(tp, self.fabric.domain_gpus)
        self.latency_s = self.fabric.hop_latency_s(tp)
        self.dram_latency_s = self.gpu.dram_latency_ns * 1e-9
        self.mc_hz = self.gpu.mc_clock_GHz * 1e9
        self.signal_s = self.dram_latency_s + self.latency_s      # a flag stored remotely, then seen by a poll
        self.launch_s = cfg.peer.launch_gap_us * 1e-6

    # -- resources ----------------------------------------------------------------------
    @functools.cached_property
    def link_Bps(self) -> float:
        """Line rate of the GPU's links into the group (one direction)."""
        return self.fabric.group_egress_Bps(self.ppn)

    @functools.cached_property
    def nic_Bps(self) -> float:
        return self.fabric.scale_out_GBps_per_gpu * 1e9

    @functools.cached_property
    def reducer_Bps(self) -> float:
        return self.block.reducer_bytes_per_s(self.gpu.mc_clock_GHz, self.gpu.hbm_channels)

    def capacities(self) -> dict[str, float]:
        caps = {DRAM: self.gpu.dram_bytes_per_s, "link": self.link_Bps, "reducers": self.reducer_Bps}
        rows = self.rows_comm_dram_Bps
        if rows is not None:        # (intervals with a GEMM are served by the cycle channel instead)
            caps[DRAM] = min(caps[DRAM], rows)
        if not self.in_domain:
            caps["nic"] = self.nic_Bps
        return caps

    def policy(self, kind: str) -> Policy:
        if kind == "rr":
            return Policy("rr")
        floor = mca_floor_grants_Bps(channels=self.gpu.hbm_channels, request_bytes=self.gpu.dram_request_bytes,
                                     mc_clock_GHz=self.gpu.mc_clock_GHz,
                                     starvation_limit_cycles=self.cfg.arbiter.starvation_limit_cycles)
        return Policy("mca", floor)

    @property
    def cycle_mode(self) -> bool:
        return self.cfg.dram_model == "cycle"

    def cycle_channel(self) -> dict:
        """What the cycle-level DRAM channel (:class:`~system_model.engine.dram_cycle.CycleDram`)
        needs of this GPU, in cycle mode."""
        g = self.gpu
        channel = {"service_rate": g.channel_requests_per_cycle,
                   "latency_cycles": max(1, round(g.dram_latency_ns * g.mc_clock_GHz)),
                   "queue_entries": g.dram_queue_entries, "nmc_units": g.nmc_update_units,
                   "reads_first": g.mc_reads_first, "request_bytes": g.dram_request_bytes * g.hbm_channels,
                   "hz": g.mc_clock_GHz * 1e9}
        # A forwarded beat: its read's latency, the hop, and the beat on the link.
        beat_s = g.dram_request_bytes * g.hbm_channels / self.link_Bps
        channel["hop_cycles"] = channel["latency_cycles"] + max(0, round((self.latency_s + beat_s) * channel["hz"]))
        if self.cfg.cycle_rows is not None:
            channel["rows"] = self.cfg.cycle_rows
            channel["tile_requests"] = self.tile_bytes / channel["request_bytes"]
        return channel

    @functools.cached_property
    def rows_comm_dram_Bps(self) -> float | None:
        """DRAM bytes per second communication gets on its own from a channel with rows (cycle
        mode with ``cycle_rows``; None otherwise): a ring step's DMA reads and the updates
        for the next step's chunk take turns at the door, and a turn may open a row
        (:meth:`~system_model.engine.dram_cycle.CycleDram.reduce_scatter_requests_per_cycle`,
        offered at the link's rate)."""
        if not self.cycle_mode or self.cfg.cycle_rows is None:
            return None
        from ..engine.dram_cycle import CycleDram
        channel = self.cycle_channel()
        per_cycle = channel["request_bytes"] * channel["hz"]
        dram = CycleDram(channel=channel, policy="round_robin", threshold=1,
                         starvation_limit=self.cfg.arbiter.starvation_limit_cycles)
        link_beats = self.link_Bps * self.transport.ce_link_efficiency / per_cycle
        return dram.reduce_scatter_requests_per_cycle(link_beats, max(1, self.tp - 1)) * per_cycle

    def engine(self, policy: str = "rr", *, record: bool = False) -> Engine:
        dram = None
        if self.cycle_mode:
            from ..engine.dram_cycle import CycleDram
            channel = self.cycle_channel()
            dram = CycleDram(channel=channel, policy="mca" if policy == "mca" else "round_robin",
                             threshold=self.cfg.arbiter.threshold,
                             starvation_limit=self.cfg.arbiter.starvation_limit_cycles)
        rows = None
        if self.cfg.dram_model == "rows":
            from ..describe.dram_timing import dram_timing
            from ..engine.dram_rows import RowDram
            g = self.gpu
            rows = RowDram(timing=dram_timing(g.dram_standard), hbm_GBps=g.hbm_GBps, page_policy=g.dram_page_policy,
                           queue_entries=g.dram_queue_entries, threshold=self.cfg.arbiter.threshold,
                           starvation_limit=self.cfg.arbiter.starvation_limit_cycles)
        return Engine(self.capacities(), self.policy(policy), record=record, dram_model=dram, row_model=rows)

    def comm_cycle(self, *, dma_read: bool) -> dict | None:
        """What the cycle-level DRAM needs of a transfer (per byte sent: a DMA read here, an
        update arriving here), in cycle mode."""
        if not self.cycle_mode:
            return None
        return {"update_bytes": 1.0, "dma_bytes": 1.0 if dma_read else 0.0, "burst_bytes": self.tile_bytes}

    def ring_demand(self, efficiency: float) -> dict[str, float]:
        """Wire bytes per payload byte of a ring (or forwarded) transfer: on the links, and
        beyond the domain on the NIC for the one hop of ``ppn`` that leaves the node."""
        if self.in_domain:
            return {"link": 1.0 / efficiency}
        return {"link": (self.ppn - 1) / self.ppn / efficiency,
                "nic": 1.0 / self.ppn / self.transport.nic_efficiency}

    def direct_demand(self, efficiency: float) -> dict[str, float]:
        """Wire bytes per payload byte sent straight to every other GPU of the group."""
        if self.in_domain:
            return {"link": 1.0 / efficiency}
        inside = (self.ppn - 1) / (self.tp - 1)
        return {"link": inside / efficiency, "nic": (1 - inside) / self.transport.nic_efficiency}

    # -- GEMMs --------------------------------------------------------------------------
    @functools.cached_property
    def triton_ar_gemm_kernel(self) -> GemmKernelConfig | None:
        """The GEMM kernel of Triton-distributed's fused GEMM + AR where it runs its layer's own
        tile (NVIDIA; :mod:`~system_model.kernels.triton_gemm`) on the library's choice for
        this shape; None on AMD, whose kernel is autotuned over the library's. The scheme,
        :func:`~system_model.schemes.evaluate` and the GEMM's bound all read it here."""
        if self.transport.library == "rccl":
            return None
        return triton_ar_kernel(self.library_kernel, self.shape.m, self.cfg.peer.ll_tile_compute_efficiency)

    def with_kernel(self, kernel: GemmKernelConfig) -> Sublayer:
        return Sublayer(self.cfg, self.shape, self.tp, self.collective, kernel)

    def gemm(self, *, stages: int = 1, cus: int | None = None, stores_cached: bool = True,
             shape: GemmShape | None = None, stage_columns: bool = False, stage_group: int = 1) -> GemmTiming:
        shape = self.shape if shape is None else shape
        kernel = self.kernel if shape == self.shape else choose_kernel(shape, self.gpu, self.cfg.kernels, cus=cus)
        return gemm_timing(shape, self.gpu, kernel, stages=stages, cus=cus, stores_cached=stores_cached,
                           stage_columns=stage_columns, stage_group=stage_group)

    def stage_groups(self, stage_columns: bool = False) -> tuple[int, ...]:
        """How many consecutive stages a staged GEMM may dispatch as one: 1, and where the
        stages' boundaries cut the kernel's raster groups (``group_rows`` tile rows, or
        columns in a column cut), the fewest stages that end on a raster group's boundary
        (all ``tp``, the library's own order, where no fewer do: a random configuration of
        221 tile rows in 45 stages was offered only 1 and 2, and read 41% more than the
        library), the stages nearest one raster group, and, where the whole
        output is at most two raster groups, half and a quarter of the ring. Stage by
        stage, a raster group cut at a stage boundary walks the other operand's panels once
        more; dispatched together, the stages of a group end together and the panels are
        read as the library reads them; more groups overlap more. (The review of the first
        version, which offered only the stages nearest one raster group, rounded down,
        found 100 of 3,000 memory-bound points where a grouping not offered was 5% faster,
        and 2 stages of 5 tile rows reading more than stage by stage. With these, all run, 74
        and 68 of 3,000 on two other draws; also offering the stages of two raster groups, and an
        eighth of the ring up to four groups, took that to 36 and 34 but the peers study
        10% longer.)"""
        along = self.shape.n if stage_columns else self.shape.m
        tile = self.kernel.tile_n if stage_columns else self.kernel.tile_m
        tiles, rows, tp = math.ceil(along / tile), self.kernel.group_rows, self.tp
        if tiles <= 1 or (tiles % tp == 0 and (tiles // tp) % rows == 0):
            return (1,)             # (one tile row: every stage lies in it; or stages of whole groups)
        # g x tiles / tp a multiple of rows; where no g below tp is, all tp (the library's order)
        aligned = min(tp, rows * tp // math.gcd(tiles, rows * tp))
        near = [min(tp, round(rows * tp / tiles))]
        # Where the whole output is about one raster group, also its halves and quarters:
        # fewer groups read less, more groups overlap more.
        parts = [-(-tp // n) for n in (2, 4)] if tiles <= 2 * rows else []
        return (1, *sorted({g for g in (aligned, *near, *parts) if 2 <= g <= tp}))

    def staged_gemms(self, *, cus: int | None = None, stores_cached: bool = True,
                     stage_columns: bool = False) -> list[GemmTiming]:
        """The GEMM staged one chunk per GPU, in each of :meth:`stage_groups`'s dispatches
        that reads less than stage after stage (every scheme that stages its GEMM keeps the
        fastest, as T3 does). Reading less is what grouping is for; the groupings that read
        no less are not run, for time: in the sweep they were the fastest at 14 points for
        T3 (by at most 0.3%) and 222 for CU sharing (at most 2.7 points of speedup), whose
        collectives batch the stages that a wave ends."""
        first, *rest = (self.gemm(stages=self.tp, cus=cus, stores_cached=stores_cached, stage_columns=stage_columns,
                                  stage_group=g) for g in self.stage_groups(stage_columns))
        return [first, *(g for g in rest if g.dram_read_bytes < first.dram_read_bytes * (1 - 1e-6))]

    @functools.cached_property
    def stage_layouts(self) -> tuple[bool, ...]:
        """How a scheme that stages its GEMM (one chunk per GPU) may cut the output: by rows
        (False), and for an all-reduce whose GEMM has fewer tile rows than GPUs (a decode
        step's) and more tile columns than rows, also by columns (True). Row stages there
        all end with the one tile row that holds them, so nothing leaves before the GEMM
        ends; an all-reduce may cut its buffer either way (its all-gather makes it whole),
        a reduce-scatter must leave each GPU its rows."""
        tiles_m = math.ceil(self.shape.m / self.kernel.tile_m)
        tiles_n = math.ceil(self.shape.n / self.kernel.tile_n)
        return (False, True) if self.all_reduce and tiles_m < self.tp and tiles_n > tiles_m else (False,)

    @functools.cached_property
    def gemm_alone_s(self) -> float:
        """The baseline GEMM alone: all CUs, the library's kernel and order, stores through the L2."""
        return gemm_alone_s(gemm_timing(self.shape, self.gpu, self.library_kernel, stages=1), self.gpu)

    @functools.cached_property
    def gemm_alone_kernel_s(self) -> float:
        """The GEMM alone as :attr:`gemm_alone_s`, with this sublayer's kernel."""
        return gemm_alone_s(gemm_timing(self.shape, self.gpu, self.kernel, stages=1), self.gpu)

    @functools.cached_property
    def gemm_lower_bound_s(self) -> float:
        """No scheme's GEMM can be faster, however it is split or staged and on however many
        CUs: at least ``ceil(tiles / cus)`` waves at a wave's own pace (its matrix work and
        latency, :func:`wave_cap_per_s`), and every operand read once from DRAM at the DRAM's
        achievable rate, with no stores at all; for the best of the library's kernels.

        A tail wave is not charged its DRAM time here: a schedule that splits the GEMM
        (async-TP's per-rank matmuls) or runs it on fewer CUs (CU sharing) can fill it, so
        the GEMM alone (:attr:`gemm_alone_s`) is not a bound for every scheme. For the same
        reason, where the library splits K the waves are counted for every split it offers,
        whether this GEMM's tiles underfill the GPU or not: the smaller GEMMs of such a
        schedule may be split each. The peers' own kernels count with the library's
        (Triton-distributed's GEMM + AR, :mod:`~system_model.kernels.triton_gemm`)."""
        e_in = self.shape.k * (self.shape.m + self.shape.n)
        latency = self.dram_latency_s
        best = math.inf
        kernels = library_variants(self.shape, self.cfg.kernels, self.gpu.cus, underfilled_only=False)
        if self.triton_ar_gemm_kernel is not None:
            kernels = (*kernels, self.triton_ar_gemm_kernel)
        for kernel in kernels:
            compulsory = e_in * kernel.bytes_per_element / self.gpu.dram_bytes_per_s
            best = min(best, max(waves_floor_s(self.shape, self.gpu, kernel, latency), compulsory))
        return best

    # -- collectives --------------------------------------------------------------------
    def plan(self, op: str, nbytes: float | None = None, *, channels: int | None = None,
             algorithm: str | None = None) -> Plan:
        return plan(op, self.total if nbytes is None else nbytes, self.tp, self.fabric, self.transport,
                    channels=channels, algorithm=algorithm)

    @functools.cached_property
    def all_gather(self) -> Plan | CustomPlan:
        """The all-gather after a reduce-scatter: the library's, or with ``peer.all_gather =
        "fastest"`` a load-based one where it is faster and can run."""
        library = self.plan("all_gather")
        if self.cfg.peer.all_gather == "library" or custom_na_reason(self.fabric, self.tp) is not None:
            return library
        loads = custom_all_gather(self.total, self.tp, self.fabric, self.transport, self.gpu.dram_latency_ns)
        return loads if loads.time_s < library.time_s else library

    @functools.cached_property
    def custom_all_reduce(self) -> CustomPlan | None:
        """The load-based all-reduce serving engines run (one-shot or two-shot, the faster);
        None where it cannot run (:func:`~system_model.kernels.custom_allreduce.custom_na_reason`)."""
        if custom_na_reason(self.fabric, self.tp) is not None:
            return None
        return custom_all_reduce(self.total, self.tp, self.fabric, self.transport, self.gpu.dram_latency_ns)

    @functools.cached_property
    def after_rs_s(self) -> float:
        """What follows a reduce-scatter in the sublayer: the library's all-gather, or nothing."""
        return self.all_gather.time_s if self.all_reduce else 0.0

    @property
    def ag_traffic(self) -> tuple[float, float]:
        ag = self.all_gather
        return (ag.dram_read_bytes, ag.dram_write_bytes) if self.all_reduce else (0.0, 0.0)

    def best_efficiency(self) -> float:
        return max(self.transport.sm_link_efficiency, self.transport.ce_link_efficiency)


class GemmRun:
    """A GEMM driven through an engine, run of waves after run of waves.

    Each run of waves alike (:attr:`~system_model.kernels.gemm.GemmTiming.segments`) is one
    flow; ``on_run(engine, flow, first_wave, waves)`` is called as each run starts (a scheme
    links the transfers that follow the GEMM's production to it), ``on_wave(engine, w)`` as
    wave ``w`` ends, for the waves of ``marks_at`` (all when None: an event a wave).
    ``local_fraction(w)``: the share of wave ``w``'s output stored in this GPU's memory;
    ``store_units``: DRAM service per stored byte (2 for a near-memory update); ``extra(w)``:
    more demand per wave (stores that leave through the links).
    """

    def __init__(self, sub: Sublayer, gemm: GemmTiming, *, store_units: float = 1.0,
                 local_fraction: Callable[[int], float] | None = None, name: str = "GEMM",
                 on_wave: Callable | None = None, on_end: Callable | None = None, on_run: Callable | None = None,
                 extra: Callable[[int], dict] | None = None, marks_at: set[int] | None = None):
        self.sub, self.gemm, self.name = sub, gemm, name
        self.store_units = store_units
        self.local_fraction = local_fraction or (lambda w: 1.0)
        self.on_wave, self.on_end, self.on_run = on_wave, on_end, on_run
        self.extra = extra
        self.marks_at = marks_at
        self.flow: Flow | None = None
        self.run_start = 0
        self.start_s: float | None = None
        self.end_s: float | None = None
        self._latency = sub.dram_latency_s
        self._segments: list = []

    def start(self, engine: Engine) -> None:
        self.start_s = engine.now
        self._segments = list(self.gemm.segments)
        if not self._segments:
            self._finish(engine)
            return
        self._next_run(engine)

    def least_s(self, w: int, n: int) -> float:
        """The least time a run of ``n`` waves alike from wave ``w`` takes: its flow's cap
        (below) bounds its rate, whatever the DRAM gives it."""
        return n / wave_cap_per_s(self.gemm, w, self._latency)

    def waves_done(self) -> float:
        """Waves done so far (fractional inside a run)."""
        return self.run_start + (self.flow.done if self.flow is not None else 0.0)

    def _next_run(self, engine: Engine) -> None:
        g = self.gemm
        w, n, reads = self._segments.pop(0)
        stored = self.local_fraction(w) * g.wave_output_bytes(w)
        demand = {DRAM: reads + self.store_units * stored, GRANTS: reads + stored}
        if self.extra is not None:
            for r, a in self.extra(w).items():
                demand[r] = demand.get(r, 0.0) + a
        cap = wave_cap_per_s(g, w, self._latency)      # (least_s reads the same cap)
        flow = Flow(f"{self.name} waves {w}-{w + n - 1}", n, demand, cap=cap, klass="compute", lane="GEMM",
                    serial=(1.0 / cap, reads) if g.serial_steps else None, cycle=self._cycle(w, reads, stored),
                    cap_at_latency=lambda extra_s, g=g, w=w: wave_cap_per_s(g, w, self._latency + extra_s))
        self.flow, self.run_start = flow, w
        if self.on_wave is not None:
            for i in range(1, n + 1):
                if self.marks_at is None or w + i - 1 in self.marks_at:
                    engine.mark(flow, i, lambda e, f, wave=w + i - 1: self.on_wave(e, wave))
        engine.start(flow, self._run_done)
        if self.on_run is not None:
            self.on_run(engine, flow, w, n)

    def _cycle(self, w: int, reads: float, stored: float) -> dict | None:
        """A wave as the cycle-level DRAM sees one channel of it (requests, cycles)."""
        sub, g = self.sub, self.gemm
        if not sub.cycle_mode:
            return None
        per_request = sub.gpu.dram_request_bytes * sub.gpu.hbm_channels
        tiles = g.wave_tiles[w]
        miss = reads / (tiles * g.cu_load_bytes_per_tile) if tiles else 0.0
        stages = [s for s, b in g.stage_bytes_by_wave[w].items() if b > 0]
        return {"reads": reads / per_request, "stores": stored / per_request,
                "stores_nmc": self.store_units > 1 or not g.stores_cached,
                "compute_cycles": g.tile_compute_s * sub.gpu.mc_clock_GHz * 1e9,
                "outstanding": max(1, round(tiles * g.prefetch_bytes_per_cu * miss / per_request)),
                "k_steps": g.k_steps_per_tile if g.stepwise else 0,
                # Where the run's reads and stores go, for a channel with rows.
                "read_start": round(sum(g.wave_reads[:w]) / per_request), "stage": min(stages, default=0),
                "waves": self._segments_waves(w)}

    def _segments_waves(self, w: int) -> int:
        return next((n for first, n, _ in self.gemm.segments if first == w), 1)

    def _run_done(self, engine: Engine, flow: Flow) -> None:
        if self._segments:
            self._next_run(engine)
        else:
            self._finish(engine)

    def _finish(self, engine: Engine) -> None:
        self.end_s = engine.now
        if self.on_end is not None:
            self.on_end(engine)


def start_collective(engine: Engine, sub: Sublayer, p: Plan, *, name: str, lane: str = "link",
                     extra_latency_s: float = 0.0, on_end: Callable | None = None,
                     timeline: list | None = None) -> None:
    """The library's collective ``p`` on the timeline: its latency, then its payload at its
    rate alone at most, sharing the links and the DRAM."""
    demand = dict(sub.ring_demand(sub.transport.sm_link_efficiency))
    d = p.demand(sub.transport.sm_link_efficiency)
    demand[DRAM], demand[GRANTS] = d[DRAM], d[GRANTS]
    begin = engine.now

    def go(e: Engine) -> None:
        def done(e2: Engine, f: Flow) -> None:
            if timeline is not None:
                timeline.append((lane, name, begin, e2.now))
            if on_end is not None:
                on_end(e2)
        e.start(Flow(name, p.egress_bytes, demand, cap=p.rate_Bps, lane=lane), done)
    engine.after(p.latency_s + extra_latency_s, go)
