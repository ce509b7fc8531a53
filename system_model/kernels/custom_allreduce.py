"""All-reduce as one kernel of loads from the peers' memory: the one-shot and two-shot
all-reduce that serving engines run for small tensors instead of NCCL's ring.

vLLM's custom all-reduce (``csrc/custom_all_reduce.cuh``: ``cross_device_reduce_1stage`` and
``_2stage``), TensorRT-LLM's and PyTorch SymmetricMemory's ``one_shot_all_reduce`` /
``two_shot_all_reduce`` all work the same way, on buffers every GPU of the group has mapped
(CUDA IPC or symmetric memory, registered once, as under CUDA graphs):

* **one-shot**: a barrier (every GPU stores a flag into every peer and waits for theirs),
  then every GPU loads the whole tensor from every peer and sums it in registers, then a
  barrier before the buffers are reused. A GPU receives ``(n - 1) x S``.
* **two-shot**: a barrier; every GPU loads its ``1/n`` slice from every peer and sums it (a
  reduce-scatter); a barrier; every GPU loads the other ``n - 1`` reduced slices (an
  all-gather); a barrier. A GPU receives ``2 (n - 1) / n x S``.

The cost is built from the platform's own latencies, with nothing fitted
(:func:`custom_all_reduce`):

* a barrier: a flag store's flight to the peer (the fabric's hop latency) and the waiting
  GPU's poll that sees it (one memory latency), as :attr:`~..schemes.context.Sublayer.signal_s`;
* a phase of loads: one remote load's round trip (the request's flight, the peer's memory
  read, the data's flight back), then the bytes at the links' payload rate for SM-issued
  transfers (``sm_link_efficiency``): the loads of a phase are issued together, so only
  the first pays the round trip.

The same loads make an all-gather (:func:`custom_all_gather`, PyTorch SymmetricMemory's and
TensorRT-LLM's): a barrier, one phase of loads of every peer's slice, a barrier.

It runs only where every peer is one load away: inside a switch or fully connected domain,
not on a ring and not across nodes (vLLM and TensorRT-LLM fall back to NCCL there).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..describe.fabric import FabricConfig
from ..describe.transport import TransportConfig
from ..describe.units import check_int_range

__all__ = ["CUSTOM_ALGORITHMS", "CustomPlan", "custom_all_reduce", "custom_all_gather", "custom_na_reason", "barrier_s",
           "round_trip_s", "VLLM_MAX_BYTES", "VLLM_GROUP_SIZES", "vllm_algorithm"]

CUSTOM_ALGORITHMS = ("one_shot", "two_shot")

#: vLLM's custom all-reduce takes tensors below 8 MiB (``CustomAllreduce(max_size=8192 * 1024)``,
#: ``vllm/distributed/device_communicators/custom_all_reduce.py``); larger ones go to NCCL.
VLLM_MAX_BYTES = 8 * 1024 * 1024
#: ... on groups of these sizes (``_SUPPORTED_WORLD_SIZES``).
VLLM_GROUP_SIZES = (2, 4, 6, 8)


def vllm_algorithm(bytes_: float, n: int) -> str | None:
    """The algorithm vLLM's custom all-reduce runs for a ``bytes_`` tensor on ``n`` fully
    connected GPUs, by its fixed rule (``csrc/custom_all_reduce.cuh``, ``REDUCE_CASE``):
    one-shot on 2 GPUs, or below 512 KiB on up to 4, or below 256 KiB on up to 8; two-shot
    otherwise. None where vLLM does not run it (a tensor of :data:`VLLM_MAX_BYTES` or more,
    or a group size it does not support): it calls NCCL there. The rule is by size only, the
    same on every GPU; :func:`custom_all_reduce` takes the faster of the two instead."""
    check_int_range("n", n, 2, 1 << 16)
    if not bytes_ > 0:
        raise ValueError(f"bytes must be greater than 0, not {bytes_}")
    if n not in VLLM_GROUP_SIZES or bytes_ >= VLLM_MAX_BYTES:
        return None
    if n == 2 or (n <= 4 and bytes_ < 512 * 1024) or (n <= 8 and bytes_ < 256 * 1024):
        return "one_shot"
    return "two_shot"


@dataclass(frozen=True)
class CustomPlan:
    """One custom all-reduce of ``bytes`` on one GPU of ``n``.

    ``time_s`` alone; ``latency_s``: its barriers and round trips (what remains at zero
    bytes); ``egress_bytes``: payload this GPU's memory sends to its peers (by symmetry, what
    it receives); DRAM traffic of this GPU's memory (its peers' loads of it included).
    """

    algorithm: str
    bytes: float
    n: int
    latency_s: float
    time_s: float
    egress_bytes: float
    dram_read_bytes: float
    dram_write_bytes: float


def custom_na_reason(fabric: FabricConfig, n: int) -> str | None:
    """Why a load-based all-reduce cannot run on ``n`` GPUs of ``fabric``; None where it can."""
    if fabric.topology == "ring":
        return "a ring reaches only its two neighbours: a load-based all-reduce loads from every peer"
    if not fabric.in_domain(n):
        return (f"TP {n} spans more than the {fabric.domain_gpus}-GPU domain: peer loads reach the domain only "
                f"(vLLM and TensorRT-LLM fall back to NCCL)")
    return None


def custom_all_reduce(bytes_: float, n: int, fabric: FabricConfig, transport: TransportConfig,
                      dram_latency_ns: float, *, algorithm: str | None = None) -> CustomPlan:
    """The faster of one-shot and two-shot (``algorithm`` forces one) for a ``bytes_`` tensor
    on ``n`` GPUs; ``ValueError`` where none can run (:func:`custom_na_reason`)."""
    check_int_range("n", n, 2, 1 << 16)
    if not bytes_ > 0:
        raise ValueError(f"bytes must be greater than 0, not {bytes_}")
    if algorithm is not None and algorithm not in CUSTOM_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(CUSTOM_ALGORITHMS)}, not {algorithm!r}")
    reason = custom_na_reason(fabric, n)
    if reason is not None:
        raise ValueError(reason)
    return _custom(float(bytes_), n, fabric, transport, float(dram_latency_ns), algorithm)


def barrier_s(fabric: FabricConfig, n: int, dram_latency_ns: float) -> float:
    """A barrier among ``n`` GPUs: a flag store's flight to the peer, then the poll that sees it."""
    return fabric.hop_latency_s(n) + dram_latency_ns * 1e-9


def round_trip_s(fabric: FabricConfig, n: int, dram_latency_ns: float) -> float:
    """One remote load: the request's flight, the peer's memory read, the data's flight back."""
    return 2 * fabric.hop_latency_s(n) + dram_latency_ns * 1e-9


@functools.lru_cache(maxsize=16384)
def _custom(S: float, n: int, fabric: FabricConfig, transport: TransportConfig, dram_latency_ns: float,
            algorithm: str | None) -> CustomPlan:
    barrier = barrier_s(fabric, n, dram_latency_ns)
    trip = round_trip_s(fabric, n, dram_latency_ns)
    rate = fabric.group_egress_Bps(n) * transport.sm_link_efficiency
    plans = []
    if algorithm in (None, "one_shot"):
        latency = 2 * barrier + trip
        received = (n - 1) * S
        # Every peer loads this GPU's whole buffer, and it loads its own; the sum is stored once.
        plans.append(CustomPlan("one_shot", S, n, latency, latency + received / rate, received, n * S, S))
    if algorithm in (None, "two_shot"):
        latency = 3 * barrier + 2 * trip
        received = 2 * (n - 1) / n * S
        # Reduce-scatter: its buffer read once (by the peers and itself, a slice each), its
        # slice's sum stored; all-gather: that sum read by every peer, their sums stored.
        reads = S + (n - 1) / n * S
        plans.append(CustomPlan("two_shot", S, n, latency, latency + received / rate, received, reads, S))
    return min(plans, key=lambda p: p.time_s)


def custom_all_gather(bytes_: float, n: int, fabric: FabricConfig, transport: TransportConfig,
                      dram_latency_ns: float) -> CustomPlan:
    """An all-gather of a ``bytes_`` output (nccl-tests' size: ``n`` slices) by loads: a
    barrier, every peer's slice loaded at once, a barrier."""
    check_int_range("n", n, 2, 1 << 16)
    if not bytes_ > 0:
        raise ValueError(f"bytes must be greater than 0, not {bytes_}")
    reason = custom_na_reason(fabric, n)
    if reason is not None:
        raise ValueError(reason)
    latency = 2 * barrier_s(fabric, n, dram_latency_ns) + round_trip_s(fabric, n, dram_latency_ns)
    received = (n - 1) / n * bytes_
    rate = fabric.group_egress_Bps(n) * transport.sm_link_efficiency
    # Its slice read by every peer; every peer's slice stored here.
    return CustomPlan("all_gather", float(bytes_), n, latency, latency + received / rate, received, received,
                      received)
