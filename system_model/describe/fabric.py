"""Scale-up fabrics: ring, fully connected and switch, and the scale-out network beyond them.

The paper's T3 runs on a ring of point-to-point links. Today's 8-GPU platforms are either
fully connected (AMD MI300X/MI355X: seven xGMI links per GPU, one to every peer) or hang
off a switch (NVIDIA HGX: every NVLink of a GPU goes to the NVSwitches, so a GPU reaches
any peer with its whole NVLink bandwidth). What a scheme gets from a fabric depends on how
it sends:

* **A ring collective** (NCCL/RCCL, T3's ring) runs as several rings at once, one per
  channel, laid over every link a GPU has into the group (on a complete graph the ``n - 1``
  directed Hamiltonian cycles use every link once; on a switch every ring hop is a full
  NVLink path). So it sends with :meth:`FabricConfig.group_egress_Bps`.
* **Direct sends to every owner at once** (T3's direct updates, Flux's remote stores) use
  the same egress, without the ring's forwarding.
* **A copy to one peer at a time** (PyTorch async-TP's copy-engine pushes, one peer per
  step) gets :meth:`FabricConfig.pair_Bps`: the links to that peer on a fully connected
  fabric (one xGMI link of seven), all of them through a switch.
* **Beyond the fabric's domain** (TP larger than ``domain_gpus``) the group spans nodes.
  NCCL lays one ring per NIC, each crossing between nodes once per node, so the node's
  NICs together carry one GPU's ring traffic (the multi-node all-reduce bus bandwidth is
  the node's NIC bandwidth, as NCCL's tests show; :mod:`system_model.kernels.collectives`). A reduction that first
  reduces inside the node sends only ``1/domain`` of the tensor between nodes
  (:meth:`hierarchical_rs_s`). Direct sends reach the peers outside the domain through the
  GPU's own NIC (:meth:`direct_send_s`).

Bandwidths are quoted as vendors quote them (a link's two directions together); a transfer
uses one direction, so a rate is half the quote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .units import check_int_range, check_positive, check_range

__all__ = ["TOPOLOGIES", "FabricConfig"]

TOPOLOGIES = ("ring", "fully_connected", "switch")


@dataclass(frozen=True)
class FabricConfig:
    """One GPU's scale-up fabric and its scale-out NIC.

    Attributes
    ----------
    topology : str
        ``ring`` (each GPU linked to two neighbours), ``fully_connected`` (links to every
        peer) or ``switch`` (every link to a switch).
    link_bw_GBps_per_link : float
        One link, both directions together (the vendor's figure).
    links_per_gpu : int
        Links a GPU has into the fabric.
    link_latency_ns : float
        A GPU-to-GPU hop: a store's flight to the peer's memory (through the switch).
    domain_gpus : int
        GPUs the fabric connects (8 on HGX and MI300X platforms).
    switch_reduction : bool
        The switch can reduce (NVLink SHARP, NVSwitch gen 3 and later).
    switch_reduce_latency_ns : float
        What an in-switch reduction adds to a hop (the switch gathers every GPU's operand).
    scale_out_GBps_per_gpu : float
        One GPU's NIC, one direction (400 Gb/s InfiniBand NDR: 50 GB/s).
    scale_out_latency_ns : float
        A hop through the NICs and the network.
    ring_directions : int
        Rings a ring collective runs at once on a ``ring`` topology: 1 (one neighbour's link
        carries it) or 2 (counter-rotating rings use both neighbours' links).
    """

    topology: str
    link_bw_GBps_per_link: float
    links_per_gpu: int
    link_latency_ns: float
    domain_gpus: int
    scale_out_GBps_per_gpu: float
    scale_out_latency_ns: float
    switch_reduction: bool = False
    switch_reduce_latency_ns: float = 0.0
    ring_directions: int = 2

    def __post_init__(self):
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"topology must be one of {', '.join(TOPOLOGIES)}, not {self.topology!r}")
        check_positive("link_bw_GBps_per_link", self.link_bw_GBps_per_link)
        check_range("link_bw_GBps_per_link", self.link_bw_GBps_per_link, 1e-3, 1e6)
        check_int_range("links_per_gpu", self.links_per_gpu, 1, 1024)
        check_range("link_latency_ns", self.link_latency_ns, 0, 1e6)
        check_int_range("domain_gpus", self.domain_gpus, 2, 1 << 16)
        check_positive("scale_out_GBps_per_gpu", self.scale_out_GBps_per_gpu)
        check_range("scale_out_GBps_per_gpu", self.scale_out_GBps_per_gpu, 1e-3, 1e6)
        check_range("scale_out_latency_ns", self.scale_out_latency_ns, 0, 1e7)
        check_range("switch_reduce_latency_ns", self.switch_reduce_latency_ns, 0, 1e6)
        check_int_range("ring_directions", self.ring_directions, 1, 2)
        if self.topology == "ring" and self.links_per_gpu != 2:
            raise ValueError(f"links_per_gpu must be 2 on a ring, not {self.links_per_gpu}")
        if self.topology == "fully_connected" and self.links_per_gpu < self.domain_gpus - 1:
            raise ValueError(f"links_per_gpu must be at least domain_gpus - 1 = {self.domain_gpus - 1} when fully "
                             f"connected, not {self.links_per_gpu}")
        if self.switch_reduction and self.topology != "switch":
            raise ValueError("switch_reduction needs topology 'switch'")

    # -- one direction of one link, and what a group of ``n`` GPUs gets -------------------
    @property
    def link_Bps(self) -> float:
        """One link, one direction."""
        return self.link_bw_GBps_per_link * 1e9 / 2

    def in_domain(self, n: int) -> bool:
        return n <= self.domain_gpus

    def group_egress_Bps(self, n: int) -> float:
        """A GPU's sending bandwidth to the other ``n - 1`` GPUs of its group, inside the domain."""
        self._check_group(n)
        if self.topology == "ring":
            return self.ring_directions * self.link_Bps   # one neighbour's link, or both (counter-rotating rings)
        if self.topology == "fully_connected":
            return (n - 1) * self._pair_links * self.link_Bps
        return self.links_per_gpu * self.link_Bps

    def pair_Bps(self, n: int) -> float | None:
        """A copy to one peer at a time; None on a ring, where most peers are hops away."""
        self._check_group(n)
        if self.topology == "ring":
            return None
        if self.topology == "fully_connected":
            return self._pair_links * self.link_Bps
        return self.links_per_gpu * self.link_Bps

    def hop_latency_ns(self, n: int) -> float:
        """One hop of a group of ``n``: through the fabric inside the domain, the NICs beyond."""
        return self.link_latency_ns if self.in_domain(n) else self.scale_out_latency_ns

    def direct_send_s(self, bytes_per_peer: float, n: int) -> float:
        """Sending ``bytes_per_peer`` to each of the other ``n - 1`` GPUs at once, without the
        hop latency: the peers inside the domain over the fabric, the others over the NIC."""
        check_int_range("tp", n, 2, 1 << 16)
        if self.topology == "ring":
            raise ValueError("direct sends need a fully connected or switch fabric, not a ring")
        inside = min(n, self.domain_gpus)
        fabric_s = (inside - 1) * bytes_per_peer / self.group_egress_Bps(inside)
        outside_s = (n - inside) * bytes_per_peer / (self.scale_out_GBps_per_gpu * 1e9)
        return max(fabric_s, outside_s)

    def hierarchical_rs_s(self, total_bytes: float, n: int) -> float:
        """A reduce-scatter of ``total_bytes`` per GPU that reduces inside each node, then
        between nodes (its two phases pipelined), without hop latencies."""
        check_int_range("tp", n, 2, 1 << 16)
        d = min(n, self.domain_gpus)
        nodes = math.ceil(n / d)
        inside = (d - 1) / d * total_bytes / self.group_egress_Bps(d) if d > 1 else 0.0
        between = (nodes - 1) / nodes * total_bytes / d / (self.scale_out_GBps_per_gpu * 1e9)
        return max(inside, between)

    def hop_latency_s(self, n: int) -> float:
        return self.hop_latency_ns(n) * 1e-9

    @property
    def _pair_links(self) -> int:
        return self.links_per_gpu // (self.domain_gpus - 1)

    def _check_group(self, n: int) -> None:
        check_int_range("tp", n, 2, self.domain_gpus)
