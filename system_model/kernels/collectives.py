"""Collectives as the libraries run them: algorithm and protocol by NCCL's / RCCL's own cost
model, at the rates the platform's transports reach, as flows for the timeline.

**What a library picks** (:func:`plan`). NCCL fills a table of predicted times for every
enabled (algorithm, protocol), ``time = latency + bytes / bus bandwidth`` with its own
constants (:mod:`.library_tables`), and runs the minimum; RCCL does the same with its own
latencies. The model makes the same choice with the same constants, and uses the same
prediction as the collective's time alone (so a collective never takes longer for fewer
bytes: each choice's time grows with the bytes, and the minimum does too):

* **ring** (reduce-scatter, all-gather, all-reduce): ``n - 1`` steps per phase; bus
  bandwidth = the ring's payload rate per GPU: the links into the group at their kernel
  payload efficiency (:class:`~system_model.describe.transport.TransportConfig`), beyond a
  node the node's NICs, at most the channels' rate; Simple at that rate, LL128 x 0.92
  (capped per channel), LL x 0.5 (capped in all; RCCL's LL likewise: its own ``bwRatio``
  of 0.08 is a steering value paired with table-driven size overrides, not a rate);
* **tree** (all-reduce): NCCL's factors and size corrections; half the bus bandwidth;
* **NVLS** (all-reduce in one NVSwitch domain that reduces): each GPU sends its buffer to
  the switch and receives the sum: per NVLS channel the links' payload share times NCCL's
  ``nvlsEfficiency``; a flat 25 us;
* **NVLS-tree** (all-reduce across nodes with NVLS inside them).

**What it costs the GPU** (:class:`Plan`): the payload each GPU sends (its egress), the DRAM
it reads and writes (a ring's FIFO in the next GPU's memory: RS reads ``2n - 1`` chunks and
writes ``n``; AG reads ``n`` and writes ``2(n - 1)``; NVLS reads the buffer once and writes the
sum once), and the CUs it holds. :meth:`Plan.flow` turns it into a flow: its latency as a
delay, then its payload on the egress link (``1 / sm_link_efficiency`` wire bytes per
payload byte), DRAM and nothing faster than its rate alone. Given fewer channels than the
library's (CU sharing, FlashOverlap), the rate falls to ``channels x channel_GBps``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from ..describe.fabric import FabricConfig
from ..describe.transport import TransportConfig
from ..describe.units import check_int_range
from .library_tables import NCCL, PROTOCOLS, RCCL, TREE_CORRECTION_NCCL

__all__ = ["OPS", "ALGORITHMS", "Plan", "plan", "ring_bus_Bps", "crossings", "hardware_rs_crossings"]

OPS = ("all_reduce", "reduce_scatter", "all_gather")
#: CTAs NCCL's NVLS kernel runs on one node (``NVLS_NCHANNELS_SM90``, src/transport/nvls.cc).
NVLS_CTAS = 16
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree")


@dataclass(frozen=True)
class Plan:
    """One collective as the library runs it on one GPU of ``n``.

    Attributes
    ----------
    op, algorithm, protocol : str
    bytes : float
        The whole buffer (nccl-tests' size: the all-reduced tensor, the all-gather's output,
        the reduce-scatter's input).
    n : int
    latency_s : float
        The library's latency term.
    bus_Bps : float
        Its bus bandwidth (nccl-tests' busBw at large sizes).
    time_s : float
        Alone: ``latency + bytes x factor / bus bandwidth``.
    egress_bytes : float
        Payload this GPU sends (and, by symmetry, receives).
    dram_read_bytes, dram_write_bytes : float
        DRAM traffic of this GPU.
    channels : int
        CTAs (one CU each) the kernel holds.
    """

    op: str
    algorithm: str
    protocol: str
    bytes: float
    n: int
    latency_s: float
    bus_Bps: float
    time_s: float
    egress_bytes: float
    dram_read_bytes: float
    dram_write_bytes: float
    channels: int

    @property
    def transfer_s(self) -> float:
        return self.time_s - self.latency_s

    @property
    def rate_Bps(self) -> float:
        """Egress payload per second while it transfers, alone."""
        return self.egress_bytes / self.transfer_s if self.transfer_s > 0 else math.inf

    @property
    def busbw_GBps(self) -> float:
        """nccl-tests' busbw of this run: ``bytes x factor / time``."""
        return self.bytes * _bus_factor(self.op, self.n) / self.time_s / 1e9

    def demand(self, sm_link_efficiency: float) -> dict[str, float]:
        """Per payload byte sent: wire bytes on the egress link, DRAM units and grants."""
        dram = (self.dram_read_bytes + self.dram_write_bytes) / self.egress_bytes if self.egress_bytes else 0.0
        return {"link": 1.0 / sm_link_efficiency, "dram": dram, "dram_grants": dram}


def _bus_factor(op: str, n: int) -> float:
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def crossings(op: str, n: int) -> tuple[float, float]:
    """(reads, writes) of a software ring per GPU, in chunks of ``bytes / n``."""
    rs, ag = (2 * n - 1, n), (n, 2 * (n - 1))
    if op == "reduce_scatter":
        return rs
    if op == "all_gather":
        return ag
    return rs[0] + ag[0], rs[1] + ag[1]


def hardware_rs_crossings(n: int) -> tuple[int, int]:
    """(reads, writes) of T3's RS on a GEMM output already in memory, per GPU, in chunks:
    the DMA reads every chunk it forwards; every arrival is a near-memory update."""
    return n - 1, n - 1


def ring_bus_Bps(fabric: FabricConfig, transport: TransportConfig, n: int, *, channels: int | None = None) -> float:
    """A ring's payload rate per GPU over ``n`` GPUs (Simple protocol): the links into the
    group at the kernels' payload efficiency, beyond the domain the node's NICs, and at
    most ``channels x channel_GBps``."""
    check_int_range("n", n, 2, 1 << 16)
    ppn = min(n, fabric.domain_gpus)
    rate = fabric.group_egress_Bps(ppn) * transport.sm_link_efficiency
    if n > fabric.domain_gpus:
        rate = min(rate, ppn * fabric.scale_out_GBps_per_gpu * 1e9 * transport.nic_efficiency)
    k = transport.channels if channels is None else channels
    return min(rate, k * transport.channel_GBps * 1e9)


def _nodes(fabric: FabricConfig, n: int) -> int:
    return math.ceil(n / fabric.domain_gpus)


def _index(nodes: int) -> int:
    return 0 if nodes <= 1 else 1 if nodes == 2 else 2


def _log2i(x: float) -> int:
    return int(x).bit_length() - 1 if x >= 1 else -1


@functools.lru_cache(maxsize=65536)
def _candidates(op: str, S: float, n: int, fabric: FabricConfig, t: TransportConfig, channels: int | None):
    """(algorithm, protocol, latency us, algorithm bandwidth GB/s) of every enabled choice."""
    nodes = _nodes(fabric, n)
    ppn = min(n, fabric.domain_gpus)
    idx = _index(nodes)
    bus = ring_bus_Bps(fabric, t, n, channels=channels) / 1e9
    k = t.channels if channels is None else channels
    graph_channels = max(1, k // 2)
    nsteps = 2 * (n - 1) if op == "all_reduce" else n - 1
    inter_steps = 0 if nodes == 1 else (2 * (nodes - 1) if op == "all_reduce" else nodes - 1)
    out = []
    gen = t.generation
    if t.library == "nccl":
        lib = NCCL
        intra, base = lib["nvlink"], lib["base"]
        for p, proto in enumerate(PROTOCOLS):
            b = bus
            if proto == "ll":
                b = min(lib["ll_max"][gen][idx], bus * lib["ll_factor"])
            elif proto == "ll128":
                b = min(bus * lib["ll128_factor"], graph_channels * lib["ring_ll128_per_channel"][gen][idx])
            lat = base["ring"][p] + (nsteps - inter_steps) * intra["ring"][p] + inter_steps * lib["net"]["ring"][p]
            if proto == "simple" and nodes > 1 and op == "all_reduce" and S / (k * n) >= 64:
                lat *= lib["ring_plateau"]
            out.append(("ring", proto, lat, b * n / nsteps))
        if op == "all_reduce":
            for p, proto in enumerate(PROTOCOLS):
                b = min(bus * lib["tree_factor"], graph_channels * lib["tree_per_channel"][gen][idx])
                if proto == "ll":
                    b = min(b / lib["tree_ll_divisor"], lib["ll_max"][gen][idx])
                elif proto == "ll128":
                    f = lib["tree_ll128_factor_one_node"] if nodes == 1 else lib["tree_ll128_factor_nodes"]
                    b = min(b * f, graph_channels * lib["tree_ll128_per_channel"][gen][idx])
                if nodes > 1:
                    b *= lib["tree_pattern_factor"]
                lat = base["tree"][p] + 2 * ((ppn - 1) * intra["tree"][p]
                                             + max(0, _log2i(nodes)) * lib["net"]["tree"][p])
                alg = b * 0.5
                size_index = _log2i(S / 64)
                if 0 <= size_index < len(TREE_CORRECTION_NCCL[proto]):
                    alg *= TREE_CORRECTION_NCCL[proto][size_index]
                out.append(("tree", proto, lat, alg))
            if t.nvls_efficiency > 0 and fabric.switch_reduction:
                nvls = _nvls_bus_GBps(fabric, t, ppn)
                if channels is not None and channels < NVLS_CTAS:
                    # NVLS runs on NCCL's NVLS CTAs: fewer SMs, a proportional share of its rate.
                    nvls *= channels / NVLS_CTAS
                if nodes == 1:
                    out.append(("nvls", "simple", lib["nvls_latency"], nvls * n / nsteps))
                else:
                    inter = ppn * fabric.scale_out_GBps_per_gpu * t.nic_efficiency
                    cap = lib["nvls_tree_per_channel"].get(gen, (0.0, 0.0, 0.0))[idx] * min(ppn, 32)
                    b = min(nvls, 2 * inter if nodes <= 2 else inter, cap if cap > 0 else math.inf)
                    lat = lib["nvls_latency"] + 2 * _log2i(nodes) * lib["net"]["nvls_tree"]
                    out.append(("nvls_tree", "simple", lat, b * n / nsteps))
        return out
    # RCCL: its latencies; its protocols at their payload efficiency (LL: 8 bytes of data
    # per 16-byte line, as NCCL's x 0.5). RCCL's own ``bwRatio`` (LL 0.08) is a steering
    # value that its size-range overrides pair with, not a rate: with it, the overrides'
    # LL messages would take ten times their Simple time. LL128 is off by default on CDNA,
    # and tree is not taken on one node.
    lib = RCCL
    for p, proto in enumerate(PROTOCOLS):
        if proto == "ll128" and not lib["ll128"]:
            continue
        b = bus * (NCCL["ll_factor"] if proto == "ll" else 1.0)
        lat = (lib["base"]["ring"][p] + (nsteps - inter_steps) * lib["xgmi"]["ring"][p]
               + inter_steps * NCCL["net"]["ring"][p])
        out.append(("ring", proto, lat, b * n / nsteps))
    return out


def _nvls_bus_GBps(fabric: FabricConfig, t: TransportConfig, ppn: int) -> float:
    """NVLS all-reduce bus bandwidth in one domain: one NVLS channel per GPU (at most 32);
    each link carries every channel once and its own twice, so a channel gets the GPU's
    payload rate over ``ppn + 1``; x ``nvlsEfficiency`` x (channels - 1) / channels x 2."""
    channels = min(ppn, 32)
    edge = fabric.group_egress_Bps(ppn) * t.sm_link_efficiency / 1e9
    per_channel = edge / (ppn + 1) * t.nvls_efficiency * (channels - 1) / channels * 2
    return channels * per_channel


def _traffic(op: str, algorithm: str, S: float, n: int) -> tuple[float, float, float]:
    """(egress, DRAM reads, DRAM writes) per GPU, in bytes."""
    if algorithm in ("nvls", "nvls_tree"):
        return S * (n + 1) / n, S, S
    reads, writes = crossings(op, n)
    chunk = S / n
    return S * _bus_factor(op, n), reads * chunk, writes * chunk


def _time_us(a, p, lat, alg, bytes_, op, n, fabric, transport, channels) -> float:
    """A choice's time; a tree's size correction can fall with the bytes, and a buffer can
    always be sent as a larger one, so a tree takes the least time of its size and of every
    larger size where its correction changes (powers of two of 64 bytes)."""
    t = lat + bytes_ / (1000 * alg)
    if a != "tree":
        return t
    size = 64
    while size < bytes_:
        size *= 2
    while size <= 64 << 24:
        for a2, p2, lat2, alg2 in _candidates(op, size, n, fabric, transport, channels):
            if a2 == a and p2 == p and alg2 > 0:
                t = min(t, lat2 + size / (1000 * alg2))
        size *= 2
    return t


def plan(op: str, bytes_: float, n: int, fabric: FabricConfig, transport: TransportConfig, *,
         channels: int | None = None, algorithm: str | None = None) -> Plan:
    """The library's choice for ``op`` on a ``bytes_`` buffer over ``n`` GPUs (``algorithm``
    forces one, as ``NCCL_ALGO`` does); ``channels`` limits its CTAs."""
    # Checked before the cache: 8.0 hashes as 8 and would find a plan for n = 8.
    check_int_range("n", n, 2, 1 << 16)
    if channels is not None:
        check_int_range("channels", channels, 1, 1 << 16)
    return _plan(op, float(bytes_), n, fabric, transport, channels, algorithm)


@functools.lru_cache(maxsize=65536)
def _plan(op: str, bytes_: float, n: int, fabric: FabricConfig, transport: TransportConfig,
          channels: int | None, algorithm: str | None) -> Plan:
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}, not {op!r}")
    check_int_range("n", n, 2, 1 << 16)
    if channels is not None:
        check_int_range("channels", channels, 1, 1 << 16)
    if not (bytes_ > 0 and math.isfinite(bytes_)):
        raise ValueError(f"bytes must be finite and greater than 0, not {bytes_}")
    options = _candidates(op, bytes_, n, fabric, transport, channels)
    if algorithm is not None:
        options = [o for o in options if o[0] == algorithm]
        if not options:
            raise ValueError(f"algorithm {algorithm!r} cannot run {op} on {n} GPUs here")
    times = [(_time_us(a, p, lat, alg, bytes_, op, n, fabric, transport, channels), (a, p, lat, alg))
             for a, p, lat, alg in options if alg > 0]
    _, (a, p, lat, alg) = min(times, key=lambda x: x[0])
    time_us = _time_us(a, p, lat, alg, bytes_, op, n, fabric, transport, channels)
    egress, reads, writes = _traffic(op, a, bytes_, n)
    bus = bytes_ * _bus_factor(op, n) / ((time_us - lat) * 1e-6)
    k = transport.channels if channels is None else channels
    return Plan(op, a, p, bytes_, n, lat * 1e-6, bus, time_us * 1e-6, egress, reads, writes,
                min(k, transport.channels) if a != "nvls" else min(k, 16))


def with_channels(p: Plan, fabric: FabricConfig, transport: TransportConfig, channels: int) -> Plan:
    """The same algorithm and protocol on ``channels`` CTAs."""
    q = plan(p.op, p.bytes, p.n, fabric, transport, channels=channels, algorithm=p.algorithm)
    return replace(q, protocol=q.protocol)
