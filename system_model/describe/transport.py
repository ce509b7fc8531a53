"""How a platform's transports really move data: the ``[transport]`` table of a hardware file.

A link's signalling rate is not what a transfer gets. What each transport reaches, and why:

* **Kernel (SM/CU) transfers** (NCCL/RCCL collectives, Flux's pulls, FlashOverlap) write
  128-byte payloads: an NVLink packet carries 128 bytes of data for 160 on the wire, so
  "each NVLink has a line rate of 25GB/s (in each direction) which converts to ~20GB/s
  effective bandwidth with a 128B payload size" (NCCL maintainer, NVIDIA/nccl-tests issue
  149): ``sm_link_efficiency`` 0.8, which is NCCL's own per-link constant
  (``SM80_NVLINK_BW`` 20.0, ``SM90_NVLINK_BW`` 20.6, ``SM100_NVLINK_BW`` 40.1 GB/s per link,
  ``src/graph/topo.h``). On xGMI, "CRC bit correction and protocol overhead ... reduce the
  usable bandwidth to approximately 48 GB/s per link" of 64 (ROCm blog on MI300X RCCL
  bandwidth, 2025; RCCL's ``GFX94X_XGMI_WIDTH`` 48.0): 0.75.
* **Copy and DMA engines** write 256-byte payloads ("SMs are limited to 128B payload
  size, when Copy Engines can use 256B", same NCCL comment): 256 / 288 = 0.889 on NVLink.
  xGMI publishes no separate figure; its 0.75 is taken for every agent.
* **The library's channels**: a collective kernel runs one CTA per channel, and a channel
  moves at most ``channel_GBps``: NCCL spreads the ring's 360 GB/s over 24 channels on H100
  (12 search channels of 30 GB/s, doubled: NVIDIA/nccl issue 1197's log), RCCL 336 GB/s over
  56 on MI300X (28 rings of 12 GB/s, doubled: ``rome_models.cc`` model 79). A collective
  given fewer CUs (CU sharing, FlashOverlap) runs at ``k x channel_GBps`` at most.
* **The algorithm and protocol** a library picks for a message (ring, tree, NVLS;
  Simple, LL128, LL) come from its own tuning model (:mod:`system_model.kernels.collectives`);
  ``library`` and ``generation`` select its tables.
* **NVLS** (NVLink SHARP): NCCL derates the switch's reduction by ``nvls_efficiency``
  (``nvlsEfficiency``: 0.85 Hopper, 0.74 Blackwell, ``src/graph/tuning.cc``); 0 where the
  switch does not reduce.
* **The NIC** reaches ``nic_efficiency`` of its line rate (NCCL's ``NET_BW`` 12.0 GB/s for
  100 Gbit/s, 0.96), and a transfer a GPU engine starts through it pays a doorbell and a
  work-request fetch over PCIe (``nic_doorbell_ns``) before its RDMA write.
"""

from __future__ import annotations

from dataclasses import dataclass

from .units import check_int_range, check_range

__all__ = ["TransportConfig", "LIBRARIES", "GENERATIONS"]

LIBRARIES = ("nccl", "rccl")
#: Whose tuning tables apply (NCCL's per-architecture caps; RCCL's tuning models).
GENERATIONS = ("volta", "ampere", "hopper", "blackwell", "cdna2", "cdna3", "cdna4")


@dataclass(frozen=True)
class TransportConfig:
    """What a platform's links, engines and collective library reach (see the module doc).

    Attributes
    ----------
    library : str
        ``nccl`` or ``rccl``: whose algorithm and protocol choice the collectives follow.
    generation : str
        The GPU generation the library's tables are indexed by (one of :data:`GENERATIONS`).
    sm_link_efficiency : float
        Payload over line rate of one link, one direction, for transfers the CUs issue.
    ce_link_efficiency : float
        The same for copy and DMA engines (T3's DMA included).
    channels : int
        The library's channels (CTAs, one CU each) for a ring collective over the domain.
    channel_GBps : float
        Payload one channel moves at most, per direction.
    nvls_efficiency : float
        NCCL's NVLS efficiency (0: no in-switch reduction).
    nic_efficiency : float
        Payload over line rate of the scale-out NIC.
    nic_doorbell_ns : float
        A GPU engine's transfer through the NIC: doorbell write and work-request fetch.
    """

    library: str = "nccl"
    generation: str = "hopper"
    sm_link_efficiency: float = 0.8
    ce_link_efficiency: float = 0.889
    channels: int = 24
    channel_GBps: float = 15.0
    nvls_efficiency: float = 0.0
    nic_efficiency: float = 0.96
    nic_doorbell_ns: float = 1500.0

    def __post_init__(self):
        if self.library not in LIBRARIES:
            raise ValueError(f"library must be one of {', '.join(LIBRARIES)}, not {self.library!r}")
        if self.generation not in GENERATIONS:
            raise ValueError(f"generation must be one of {', '.join(GENERATIONS)}, not {self.generation!r}")
        check_range("sm_link_efficiency", self.sm_link_efficiency, 0.05, 1.0)
        check_range("ce_link_efficiency", self.ce_link_efficiency, 0.05, 1.0)
        check_int_range("channels", self.channels, 1, 1024)
        check_range("channel_GBps", self.channel_GBps, 0.01, 1e5)
        check_range("nvls_efficiency", self.nvls_efficiency, 0.0, 1.0)
        check_range("nic_efficiency", self.nic_efficiency, 0.05, 1.0)
        check_range("nic_doorbell_ns", self.nic_doorbell_ns, 0.0, 1e6)
