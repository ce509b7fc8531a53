"""Ring collectives: reduce-scatter (RS) and all-gather (AG) in ``n - 1`` steps.

Each step moves one chunk (``bytes / n``) to the next GPU, paying the link latency plus the
chunk's transfer time, or the DRAM time of the step's memory traffic when that is longer
(the reduction of a step overlaps the transfer of the next, as in ring implementations
that split chunks into slices).

DRAM traffic per step and GPU, in chunks:

* software RS (a reduction kernel on the CUs): the DMA reads the chunk it sends (1), the
  incoming chunk is written (1), the kernel reads both operands (2) and writes the sum (1);
* RS with near-memory reduction (NMC): the chunk sent is read (1) and the incoming chunk
  arrives as an update, crossing the channel once (1); the read of the add happens inside
  the memory;
* AG: the chunk sent is read (1) and the incoming one written (1).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import GpuConfig, LinkConfig

__all__ = ["RingTraffic", "ring_reduce_scatter", "ring_all_gather", "RS_SOFTWARE_CHUNKS", "RS_NMC_CHUNKS"]

#: (reads, writes) per step, in chunks.
RS_SOFTWARE_CHUNKS = (3, 2)
RS_NMC_CHUNKS = (1, 1)
AG_CHUNKS = (1, 1)


@dataclass(frozen=True)
class RingTraffic:
    time_s: float
    read_bytes: float
    write_bytes: float
    step_s: float


def _ring(total_bytes: float, n: int, link: LinkConfig, gpu: GpuConfig, chunks: tuple[int, int], *,
          dram_bytes_per_s: float | None = None, step_overhead_s: float = 0.0,
          update_bytes_per_s: float = float("inf")) -> RingTraffic:
    if n < 2:
        raise ValueError(f"n must be at least 2, not {n}")
    chunk = total_bytes / n
    dram = gpu.dram_bytes_per_s if dram_bytes_per_s is None else dram_bytes_per_s
    step = (link.link_latency_ns * 1e-9 + step_overhead_s
            + max(chunk / link.ring_bytes_per_s, sum(chunks) * chunk / dram, chunk / update_bytes_per_s))
    return RingTraffic(time_s=(n - 1) * step, read_bytes=(n - 1) * chunks[0] * chunk,
                       write_bytes=(n - 1) * chunks[1] * chunk, step_s=step)


def ring_reduce_scatter(total_bytes: float, n: int, link: LinkConfig, gpu: GpuConfig, *, nmc: bool,
                        **kwargs) -> RingTraffic:
    """RS of ``total_bytes`` (the whole tensor on each GPU) over ``n`` GPUs.

    With ``nmc``, ``update_bytes_per_s`` caps the rate at which the near-memory reducers
    absorb the incoming updates.
    """
    return _ring(total_bytes, n, link, gpu, RS_NMC_CHUNKS if nmc else RS_SOFTWARE_CHUNKS, **kwargs)


def ring_all_gather(total_bytes: float, n: int, link: LinkConfig, gpu: GpuConfig, **kwargs) -> RingTraffic:
    """AG that leaves the whole ``total_bytes`` tensor on each GPU."""
    return _ring(total_bytes, n, link, gpu, AG_CHUNKS, **kwargs)
