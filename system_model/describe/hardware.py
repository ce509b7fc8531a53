"""The GPU and its memory; a system is a GPU, its fabric and its transports.

Every field carries its unit in its name. The presets live in ``describe/presets/`` (one
file per platform, with a source for every figure; :mod:`.files`): ``t3-paper`` is the GPU
the T3 paper simulates (80 CUs, 1.4 GHz, 16 MB L2, 1 TB/s HBM2; ring links of 150 GB/s
bidirectional and 500 ns), the others today's GPUs. Where a source gives no number the file
says what was chosen and why (see also the calibration table in the README).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .dram_timing import dram_timing
from .fabric import FabricConfig
from .transport import TransportConfig
from .units import check_int_range, check_positive, check_range

__all__ = ["GpuConfig", "SystemConfig"]


@dataclass(frozen=True)
class GpuConfig:
    """One GPU.

    Attributes
    ----------
    cus : int
        Compute units (AMD CUs / NVIDIA SMs).
    clock_GHz : float
        Shader clock.
    fp16_flops_per_cycle_per_cu : int
        Dense fp16 matrix throughput per CU per cycle.
    l2_MB : float
        Last-level cache that GEMM operand panels can reuse.
    hbm_GBps : float
        Peak DRAM bandwidth.
    hbm_efficiency : float
        Fraction of the peak that streaming traffic achieves (row misses, refresh, turnarounds).
    mc_clock_GHz : float
        Memory-controller clock: converts the RTL blocks' cycle counts to time.
    hbm_channels : int
        Independent memory channels, each with one tracker slice and near-memory reducer.
    dram_latency_ns : float
        Unloaded latency of an L2 miss as a CU sees it (request to data). With the requests a
        kernel keeps in flight it sets the kernel's achievable bandwidth (Little's law); the
        DRAM queue model adds the queueing delay on top.
    dram_queue_entries : int
        Depth of one channel's DRAM command queue, into which the arbiter grants requests.
    dram_request_bytes : int
        Bytes one DRAM request moves (a 64-byte access: two HBM2 32-byte bursts).
    nmc_update_units : int
        Units of a channel's service one near-memory update takes: 2 on DRAM (the bank's
        internal read, then its write: two column accesses); 1 on the RTL's dual-ported
        block-RAM bank, whose pipelined reducer issues one update per cycle
        (``rtl.nmc.NearMemoryReducer.requests_per_cycle``; the crosscheck's micro-system).
    dram_standard : str
        The HBM generation whose JEDEC timing the row-aware channel schedules against
        (``HBM2``, ``HBM2e``, ``HBM3``, ``HBM3e``; :mod:`.dram_timing`).
    dram_page_policy : str
        ``open`` (a row stays open until another row of its bank is needed) or ``closed``
        (precharged once no queued request hits it); the row-aware channel's.
    mc_reads_first : bool
        The controller serves a kernel's reads before its buffered writes (True, as GPU
        memory controllers drain writes in batches), or alternates them (False: the RTL
        slice's compute queue is fed by a round-robin ``StreamMux`` of the GEMM's writes and
        reads).
    """

    cus: int
    clock_GHz: float
    fp16_flops_per_cycle_per_cu: int
    l2_MB: float
    hbm_GBps: float
    hbm_efficiency: float
    mc_clock_GHz: float
    hbm_channels: int
    dram_latency_ns: float = 400.0
    dram_queue_entries: int = 64
    dram_request_bytes: int = 64
    nmc_update_units: int = 2
    mc_reads_first: bool = True
    dram_standard: str = "HBM2"
    dram_page_policy: str = "open"

    def __post_init__(self):
        check_int_range("cus", self.cus, 1, 10_000)
        check_positive("clock_GHz", self.clock_GHz)
        # Physical bounds (a clock of 1e300 GHz or 1e-300 GHz is a typing slip, and the
        # channel model would divide by it or run for ever).
        check_range("clock_GHz", self.clock_GHz, 0.01, 100)
        check_int_range("fp16_flops_per_cycle_per_cu", self.fp16_flops_per_cycle_per_cu, 1, 1 << 20)
        check_positive("l2_MB", self.l2_MB)
        check_range("l2_MB", self.l2_MB, 0.001, 1e6)
        check_positive("hbm_GBps", self.hbm_GBps)
        # The channel model simulates requests one by one: below 1 GB/s it would run for ever.
        check_range("hbm_GBps", self.hbm_GBps, 1, 1e6)
        check_range("hbm_efficiency", self.hbm_efficiency, 0.05, 1.0)
        check_positive("mc_clock_GHz", self.mc_clock_GHz)
        check_range("mc_clock_GHz", self.mc_clock_GHz, 0.01, 100)
        check_int_range("hbm_channels", self.hbm_channels, 1, 1024)
        check_range("dram_latency_ns", self.dram_latency_ns, 1, 1e5)
        check_int_range("dram_queue_entries", self.dram_queue_entries, 2, 4096)
        check_int_range("dram_request_bytes", self.dram_request_bytes, 8, 4096)
        check_int_range("nmc_update_units", self.nmc_update_units, 1, 2)
        dram_timing(self.dram_standard)
        if self.dram_page_policy not in ("open", "closed"):
            raise ValueError(f"dram_page_policy must be open or closed, not {self.dram_page_policy!r}")

    @property
    def peak_fp16_flops(self) -> float:
        return self.cus * self.clock_GHz * 1e9 * self.fp16_flops_per_cycle_per_cu

    @property
    def dram_bytes_per_s(self) -> float:
        """Achievable DRAM bandwidth."""
        return self.hbm_GBps * 1e9 * self.hbm_efficiency

    @property
    def channel_requests_per_cycle(self) -> float:
        """Requests one channel serves per memory-controller cycle at its achievable bandwidth."""
        return self.dram_bytes_per_s / self.hbm_channels / self.dram_request_bytes / (self.mc_clock_GHz * 1e9)


@dataclass(frozen=True)
class SystemConfig:
    """A GPU, the fabric its group runs on and what its transports reach."""

    name: str
    gpu: GpuConfig
    fabric: FabricConfig
    transport: TransportConfig
    source: str = ""

    def with_changes(self, **changes) -> SystemConfig:
        """A copy with GPU, fabric or transport fields changed by name (``hbm_GBps=...``)."""
        parts = {"gpu": self.gpu, "fabric": self.fabric, "transport": self.transport}
        new = {}
        for part, obj in parts.items():
            mine = {k: v for k, v in changes.items() if k in type(obj).__dataclass_fields__}
            new[part] = replace(obj, **mine) if mine else obj
        known = {k for obj in parts.values() for k in type(obj).__dataclass_fields__}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown hardware field(s): {', '.join(sorted(unknown))}")
        return replace(self, **new)
