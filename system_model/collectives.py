"""Ring collectives as RCCL/NCCL's ring kernels run them, and as T3's hardware runs the RS.

**Software (RCCL/NCCL ring, Simple protocol).** A collective runs on ``channels`` CUs, one
workgroup each. Every GPU sends through a FIFO in the next GPU's memory: the sender's
stores cross the link and land in the receiver's DRAM.

* Reduce-scatter, ``n - 1`` transfers per GPU: ``send`` (read the local partial slice, store
  it into the next GPU's FIFO), ``n - 2`` x ``recvReduceSend`` (read the FIFO and the local
  partial, add on the CU, store the sum into the next GPU's FIFO), and ``recvReduceCopy``
  (read both, add, write the result locally). Per GPU and chunk: reads ``2n - 1``, writes
  ``n`` (``n - 1`` arrivals into the FIFO plus the final result).
* All-gather: ``send`` of the GPU's own reduced chunk (1 read), then per arrival a copy
  from the FIFO into the output (1 read, 1 write), forwarded unless it is the last: reads
  ``n``, writes ``2(n - 1)`` (the arrivals and the copies).

A CU's achievable bandwidth follows Little's law: every thread keeps ``unroll`` 16-byte
loads per source in flight, so a channel moves ``threads x load_bytes x unroll`` bytes per
loaded memory latency. A step streams its chunk through the FIFO in slices (one FIFO slot
each): the CUs load, add and store element batches continuously, and the receiver consumes
a slice as soon as its flag lands, so slices overlap and the slice size drops out of the
step's time. The step costs its chunk at the slowest of link, CUs and DRAM, plus the fill
of the pipeline (the first bytes: a memory latency and a link hop), plus the step's flag
synchronisation (the sender's release fence waits for its remote stores to be
acknowledged, a link round trip; the receiver's poll sees the flag a memory latency after
it lands). The drain is inside the chunk time: the link is the stage every byte crosses.

**T3 hardware (tracker, DMA, near-memory reducer).** No CU and no flag: an incoming update
is added inside the memory, the tracker counts it, and the tile's DMA starts when its count
is complete. Per step: trigger and DMA issue (the RTL's measured cycles), the DMA's read
latency, a link hop, then the chunk at the slowest of link, reducers and DRAM, pipelined
at tile granularity, across steps too: a step starts at a GPU as soon as the previous
step's first tile has arrived and its link is free, so the per-step latency is paid once
unless a hop outlasts a chunk (checked against the RTL ring: ``python -m system_model
crosscheck``). DRAM: the DMA read of the chunk forwarded (1) and the incoming update
(1 crossing; 2 units of bank time, its internal read and write).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import GpuConfig, LinkConfig
from .units import check_int_range

__all__ = ["CollectiveKernelConfig", "RingCollective", "software_reduce_scatter", "software_all_gather",
           "hardware_reduce_scatter", "rs_software_crossings", "ag_software_crossings", "rs_nmc_crossings"]


@dataclass(frozen=True)
class CollectiveKernelConfig:
    """The software collective's kernel.

    Attributes
    ----------
    channels : int
        CUs (one workgroup per ring channel) the collective runs on when it has the GPU.
    threads_per_channel : int
        Threads of a channel's workgroup.
    load_bytes : int
        Bytes of one load per thread (a 128-bit vector load).
    unroll : int
        Loads per thread and source kept in flight (NCCL's COLL_UNROLL).
    """

    channels: int = 16
    threads_per_channel: int = 256
    load_bytes: int = 16
    unroll: int = 4

    def __post_init__(self):
        check_int_range("channels", self.channels, 1, 1024)
        check_int_range("threads_per_channel", self.threads_per_channel, 1, 4096)
        check_int_range("load_bytes", self.load_bytes, 1, 256)
        check_int_range("unroll", self.unroll, 1, 64)

    def cu_bytes_per_s(self, channels: int, latency_s: float) -> float:
        """Little's law: bytes per second ``channels`` CUs move at a loaded latency."""
        return channels * self.threads_per_channel * self.load_bytes * self.unroll / latency_s


def rs_software_crossings(n: int) -> tuple[int, int]:
    """(reads, writes) of a software ring RS per GPU, in chunks."""
    return 2 * n - 1, n


def ag_software_crossings(n: int) -> tuple[int, int]:
    """(reads, writes) of a software ring AG per GPU, in chunks."""
    return n, 2 * (n - 1)


def rs_nmc_crossings(n: int) -> tuple[int, int]:
    """(reads, writes) of T3's RS per GPU on a GEMM output already in memory, in chunks:
    the DMA reads every chunk it sends, every arrival is a near-memory update."""
    return n - 1, n - 1


@dataclass(frozen=True)
class RingCollective:
    """Time and DRAM traffic of one collective on one GPU.

    ``step_s`` is one of the ``steps`` transfers; ``rate_Bps`` the rate its chunk moves at
    and ``limit`` which resource set it ("link", "cus", "dram", "reducers");
    ``overhead_s`` what a step costs beyond its chunk at that rate.
    """

    time_s: float
    steps: int
    step_s: float
    rate_Bps: float
    limit: str
    overhead_s: float
    read_bytes: float
    write_bytes: float


def _rates(**limits: float) -> tuple[float, str]:
    limit = min(limits, key=limits.get)
    return limits[limit], limit


def _ring(total_bytes: float, n: int, crossings: tuple[int, int], rate: tuple[float, str],
          overhead_s: float) -> RingCollective:
    chunk = total_bytes / n
    step = overhead_s + chunk / rate[0]
    return RingCollective(time_s=(n - 1) * step, steps=n - 1, step_s=step, rate_Bps=rate[0], limit=rate[1],
                          overhead_s=overhead_s, read_bytes=crossings[0] * chunk, write_bytes=crossings[1] * chunk)


def _check(n: int) -> None:
    check_int_range("n", n, 2, 1 << 16)


def _software_overhead_s(link: LinkConfig, gpu: GpuConfig) -> float:
    latency = link.link_latency_ns * 1e-9
    memory = gpu.dram_latency_ns * 1e-9
    fill = memory + latency                    # the first bytes: loaded, sent, landed
    sync = 2 * latency + memory                # release fence round trip, then the flag poll
    return fill + sync


def _software_ring(total_bytes: float, n: int, link: LinkConfig, gpu: GpuConfig, kernel: CollectiveKernelConfig,
                   crossings: tuple[int, int], channels: int | None) -> RingCollective:
    _check(n)
    channels = kernel.channels if channels is None else channels
    # Per step and GPU the DRAM sees three chunk crossings: RS reads the FIFO and the local
    # partial; AG reads the FIFO and copies it into the output; either receives an arrival.
    rate = _rates(link=link.ring_bytes_per_s, cus=kernel.cu_bytes_per_s(channels, gpu.dram_latency_ns * 1e-9),
                  dram=gpu.dram_bytes_per_s / 3)
    return _ring(total_bytes, n, crossings, rate, _software_overhead_s(link, gpu))


def software_reduce_scatter(total_bytes: float, n: int, link: LinkConfig, gpu: GpuConfig,
                            kernel: CollectiveKernelConfig, *, channels: int | None = None) -> RingCollective:
    """RCCL's ring RS of ``total_bytes`` (the whole tensor on each GPU) over ``n`` GPUs on
    ``channels`` CUs (default: the kernel's)."""
    return _software_ring(total_bytes, n, link, gpu, kernel, rs_software_crossings(n), channels)


def software_all_gather(total_bytes: float, n: int, link: LinkConfig, gpu: GpuConfig,
                        kernel: CollectiveKernelConfig, *, channels: int | None = None) -> RingCollective:
    """RCCL's ring AG that leaves the whole ``total_bytes`` tensor on each GPU."""
    return _software_ring(total_bytes, n, link, gpu, kernel, ag_software_crossings(n), channels)


def hardware_reduce_scatter(total_bytes: float, n: int, link: LinkConfig, gpu: GpuConfig, *,
                            trigger_to_link_s: float, reducer_bytes_per_s: float, tile_bytes: float) -> RingCollective:
    """T3's RS of a GEMM output already in memory (``ideal_rs_nmc``): tracker, DMA and
    near-memory reducers, no CUs, no flags."""
    _check(n)
    # Bank time per chunk forwarded: its DMA read (1 unit) and the arrival's update
    # (``gpu.nmc_update_units``: 2 on DRAM).
    rate = _rates(link=link.ring_bytes_per_s, reducers=reducer_bytes_per_s,
                  dram=gpu.dram_bytes_per_s / (1 + gpu.nmc_update_units))
    chunk = total_bytes / n
    start = trigger_to_link_s + gpu.dram_latency_ns * 1e-9        # a trigger to its first beat on the link
    hop = tile_bytes / rate[0] + link.link_latency_ns * 1e-9 + start
    # Pipelined at tile granularity: step s + 1 starts at a GPU once the first tile of step
    # s has arrived there and been triggered (a hop) and its link has sent step s (a chunk);
    # the last step ends with its chunk and a link hop.
    step = max(hop, chunk / rate[0])
    time = start + (n - 2) * step + chunk / rate[0] + link.link_latency_ns * 1e-9
    return RingCollective(time_s=time, steps=n - 1, step_s=step, rate_Bps=rate[0], limit=rate[1],
                          overhead_s=max(0.0, hop - chunk / rate[0]), read_bytes=rs_nmc_crossings(n)[0] * chunk,
                          write_bytes=rs_nmc_crossings(n)[1] * chunk)
