"""Everything a sublayer evaluation needs besides the sublayer itself.

The hardware (:class:`~.hardware.SystemConfig`: GPU, fabric, transports), the GEMM
library's kernels, the T3 blocks' timing, the workload, the DRAM arbiter's parameters and
what the peers' published designs leave to the implementation. Frozen, hashable: results
are cached by it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .block_timing import BlockTiming
from .hardware import SystemConfig
from .kernels import GemmKernelConfig
from .models import WorkloadConfig
from .units import check_int_range, check_range

__all__ = ["ArbiterConfig", "PeerConfig", "CycleRows", "StudyConfig", "DRAM_MODELS", "ALL_GATHERS"]

#: How the timeline serves the DRAM (``StudyConfig.dram_model``).
DRAM_MODELS = ("fluid", "rows", "cycle")
#: Which all-gather completes a reduce-scatter (:class:`PeerConfig`).
ALL_GATHERS = ("library", "fastest")


@dataclass(frozen=True)
class ArbiterConfig:
    """T3-MCA's parameters (``rtl.arbiter.MemoryArbiter``'s inputs).

    Attributes
    ----------
    starvation_limit_cycles : int
        Longest wait of a communication request at the head of its queue.
    threshold : int or None
        Queue occupancy below which communication may issue (the cycle-level channel
        only; None: set per GEMM from its memory intensity).
    """

    starvation_limit_cycles: int = 64
    threshold: int | None = None

    def __post_init__(self):
        check_int_range("starvation_limit_cycles", self.starvation_limit_cycles, 1, 1 << 16)
        if self.threshold is not None:
            check_int_range("threshold", self.threshold, 1, 4096)


@dataclass(frozen=True)
class PeerConfig:
    """What the peers' published designs leave to the implementation (each in the calibration table).

    Attributes
    ----------
    launch_gap_us : float
        A dependent kernel or copy launched on another stream: the host-side launch and the
        stream-event wait before it starts (async-TP pays one per chunk matmul and copy).
    groups_per_gemm : int
        The most groups of whole waves FlashOverlap's search tries (each group signalled and
        reduce-scattered on its own); it keeps the fastest of 1 to this many.
    nccl_sms : int
        SMs NCCL's kernel holds while it overlaps the GEMM (FlashOverlap).
    all_gather : str
        The all-gather that completes a reduce-scatter (every scheme that hides only the
        reduce-scatter runs one after it): ``"library"``, NCCL's or RCCL's own (the
        training and prefill studies); ``"fastest"``, the faster of the library's and a
        load-based one where every peer is one load away (the serving study: serving
        engines run their own small all-reduces and all-gathers,
        :mod:`system_model.kernels.custom_allreduce`).
    ll_tile_compute_efficiency : float
        Fraction of the matrix-core peak that Triton-distributed's low-latency GEMM tile
        (32 x 64, its fused GEMM + AR at M <= 256 on NVIDIA;
        :mod:`system_model.kernels.triton_gemm`) reaches when compute-bound: not published;
        assumed that of the presets' library kernels (0.8).
    tokenweave_slice_GBps_per_cta : float
        GB/s of its GPU's slice of the tensor that one CTA of TokenWeave's fused all-reduce +
        add + RMSNorm kernel works through (``multimem.ld_reduce``, the add and the norm,
        ``multimem.st``), below the CTA count at which the switch's rate binds: its
        figure_10.csv, 2 CTAs, 32K tokens of 8,192 bf16 on 8 x H100 (a 64 MiB slice in
        6,240.8 us); taken for every platform.
    """

    launch_gap_us: float = 5.0
    groups_per_gemm: int = 8
    nccl_sms: int = 16
    all_gather: str = "library"
    ll_tile_compute_efficiency: float = 0.8
    tokenweave_slice_GBps_per_cta: float = 5.38

    def __post_init__(self):
        if self.all_gather not in ALL_GATHERS:
            raise ValueError(f"all_gather must be one of {', '.join(ALL_GATHERS)}, not {self.all_gather!r}")
        check_range("launch_gap_us", self.launch_gap_us, 0.0, 1e4)
        check_int_range("groups_per_gemm", self.groups_per_gemm, 1, 4096)
        check_int_range("nccl_sms", self.nccl_sms, 1, 1024)
        check_range("ll_tile_compute_efficiency", self.ll_tile_compute_efficiency, 0.01, 1.0)
        check_range("tokenweave_slice_GBps_per_cta", self.tokenweave_slice_GBps_per_cta, 0.01, 1e4)


@dataclass(frozen=True)
class CycleRows:
    """Row state at the cycle-level channel's door (``dram_model = "cycle"`` only): the
    micro-system's DRAM-like memory, banks with an open row each, whose first access to
    a closed row waits ``miss_cycles`` (precharge and activate) before it may go.

    The mapping of a request address ``a`` (in requests): row ``a // (row_requests *
    banks)``; bank ``((a // row_requests) XOR fold(row)) mod banks`` with ``bank_hash``,
    else ``(a // row_requests) mod banks``. ``fold(row)`` is the XOR of the row's bits
    ``log2(banks)`` at a time: the permutation-based interleaving controllers use, hashing
    every row bit as GPU address maps do. The same offset of two regions then falls in
    different banks unless their rows fold alike: always for rows 1 to ``banks - 1`` apart
    (as with the row's low bits alone), and now also for regions ``banks`` rows apart
    (the crosscheck's chunks of 4 rows of 4 banks), which the low bits alone put in one
    bank offset for offset; rows that fold alike still meet (rows 0 and 5 of 4 banks). The
    addresses each stream uses are the micro-system's (:mod:`system_model.engine.dram_door`):
    the GEMM reads ``0, 1, 2, ...`` modulo ``bank_requests``; its stores and the DMA's reads
    walk the chunk of the GEMM's stage, the incoming updates the next stage's.

    Attributes
    ----------
    banks : int
        Banks, each with its own open row: a power of two (the mapping takes the bank from
        address bits).
    row_requests : int
        Requests (beats) in one row.
    miss_cycles : int
        Cycles a request to a closed row waits at the door (tRP + tRCD in a DRAM).
    bank_requests : int
        Requests the memory holds (the GEMM's reads wrap around it).
    chunk_requests : int
        Requests in one chunk of the reduce-scatter (the region a stage's stores, DMA reads
        and updates share).
    bank_hash : bool
        Whether the bank is hashed with the row (see above).
    chunk_order : tuple of int
        The chunk each stage of the GEMM fills, in stage order (the modelled GPU's place in
        the ring: GPU ``g`` of ``N`` fills chunk ``(g - 1 - s) mod N`` in stage ``s``); chunk
        ``c`` is the ``chunk_requests`` addresses from ``c * chunk_requests``. Empty: a
        chunk in the middle of the memory, away from the reads (a typical GPU).
    """

    banks: int = 4
    row_requests: int = 16
    miss_cycles: int = 8
    bank_requests: int = 256
    chunk_requests: int = 64
    bank_hash: bool = True
    chunk_order: tuple[int, ...] = ()

    def __post_init__(self):
        check_int_range("banks", self.banks, 1, 64)
        if self.banks & (self.banks - 1):
            raise ValueError(f"banks must be a power of two, not {self.banks}")
        check_int_range("row_requests", self.row_requests, 1, 1 << 16)
        check_int_range("miss_cycles", self.miss_cycles, 1, 1 << 12)
        check_int_range("bank_requests", self.bank_requests, 2 * self.row_requests * self.banks, 1 << 32)
        check_int_range("chunk_requests", self.chunk_requests, 1, self.bank_requests // 2)
        if not isinstance(self.bank_hash, bool):
            raise TypeError(f"bank_hash must be a bool, not {self.bank_hash!r}")
        if not isinstance(self.chunk_order, tuple):
            raise TypeError(f"chunk_order must be a tuple, not {self.chunk_order!r}")
        for c in self.chunk_order:
            check_int_range("chunk_order[]", c, 0, self.bank_requests // self.chunk_requests - 1)

    def chunk_base(self, stage: int) -> int:
        """First address of the chunk stage ``stage`` fills (wrapping around the order)."""
        if not self.chunk_order:
            stripe = self.row_requests * self.banks
            middle = (self.bank_requests // 2) // stripe * stripe
            return (middle + stage * self.chunk_requests) % self.bank_requests
        return self.chunk_order[stage % len(self.chunk_order)] * self.chunk_requests

    def bank_row(self, addr: int) -> tuple[int, int]:
        """(bank, row) of a request address."""
        row = addr // (self.row_requests * self.banks)
        block = addr // self.row_requests
        if not self.bank_hash:
            return block % self.banks, row
        folded, digits = 0, row
        while digits and self.banks > 1:
            folded ^= digits % self.banks
            digits //= self.banks
        return (block ^ folded) % self.banks, row


@dataclass(frozen=True)
class StudyConfig:
    """The configuration of an evaluation.

    Attributes
    ----------
    system : SystemConfig
        GPU, fabric, transports.
    block : BlockTiming
        T3's tracker, DMA and reducer timing.
    kernels : tuple of GemmKernelConfig
        The GEMM library's kernels; each GEMM runs the fastest (by modelled time).
    cu_sharing_cus : int
        CUs given to communication in ``cu_sharing`` (8 of 80, as in the paper's study).
    t3_blocks : bool
        Whether the GPU has T3's tracker and near-memory reducer (the T3 schemes run only then).
    dram_model : str
        How the timeline serves the DRAM: ``fluid`` (the study's: shared by the arbiter's
        policy, every byte the same bank time whatever it is mixed with), ``rows`` (the fluid
        rule, checked in every interval where the GEMM and communication share the DRAM
        against the row-aware channel, with its banks, rows, FR-FCFS and turnarounds;
        :mod:`system_model.engine.dram_rows`; not yet the default: its served fraction of a
        saturated mix is too noisy for the invariants, docs/model.md) or ``cycle`` (a channel simulated
        cycle by cycle: micro-systems whose waves last tens of cycles, the crosscheck's).
    cycle_rows : CycleRows or None
        With ``dram_model = "cycle"``: the channel's memory has banks and rows that pace
        its door (the crosscheck's RTL harness with DRAM-like memory); None: every request
        goes at the channel's rate.
    """

    system: SystemConfig
    block: BlockTiming
    kernels: tuple[GemmKernelConfig, ...] = (GemmKernelConfig(),)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    arbiter: ArbiterConfig = field(default_factory=ArbiterConfig)
    peer: PeerConfig = field(default_factory=PeerConfig)
    cu_sharing_cus: int = 8
    t3_blocks: bool = True
    dram_model: str = "fluid"
    cycle_rows: CycleRows | None = None

    def __post_init__(self):
        if self.dram_model not in DRAM_MODELS:
            raise ValueError(f"dram_model must be one of {', '.join(DRAM_MODELS)}, not {self.dram_model!r}")
        if self.cycle_rows is not None:
            if not isinstance(self.cycle_rows, CycleRows):
                raise TypeError(f"cycle_rows must be a CycleRows or None, not {self.cycle_rows!r}")
            if self.dram_model != "cycle":
                raise ValueError(f"cycle_rows needs dram_model 'cycle', not {self.dram_model!r}")
        check_int_range("cu_sharing_cus", self.cu_sharing_cus, 1, self.system.gpu.cus - 1)
        if not self.kernels:
            raise ValueError("kernels must hold at least one kernel")
        for k in self.kernels:
            if not isinstance(k, GemmKernelConfig):
                raise TypeError(f"kernels must be GemmKernelConfig, not {k!r}")

    @property
    def kernel(self) -> GemmKernelConfig:
        """The library's first (large-tile) kernel: element size and the defaults."""
        return self.kernels[0]
