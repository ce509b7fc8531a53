# amaranth: UnusedElaboratable=no
# (The ring and the sources are built in __init__ so that their layouts are readable before elaboration.)
"""The T3 ring with a GEMM traffic source in front of every GPU's slice."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .gemm_source import GemmTrafficSource
from .ports import ValidSignature
from .ring import T3Ring

__all__ = ["GemmRing"]

#: Per-GPU ports taken from the ring as they are.
RING_PORTS = ("arm", "program", "notify", "status")


class GemmRing(wiring.Component):
    """A :class:`~rtl.ring.T3Ring` whose GPUs each run a :class:`~rtl.gemm_source.GemmTrafficSource`.

    GPU *g*'s source takes the driver's local stores (``store[g]``), stage-1 remote stores
    (``remote[g]``) and read-backs (``host_read[g]``) and issues them, with its own operand
    reads, to slice *g* when the GEMM's timing allows. ``read_data[g]`` shows the slice's
    read data (operand reads and read-backs, in order). ``arm``, ``program``, ``notify``
    and ``status`` are the ring's, and so are ``dram_request`` and ``dram_ready`` where the
    slices have a memory beyond them (``dram_ready=True``). ``run``, ``setup`` and the arbiter settings are shared
    by every GPU, as the GPUs of a tensor-parallel group run the same kernel at once.

    Parameters
    ----------
    gpus, link_latency, link_cycles_per_beat, **slice_params
        The ring (:class:`~rtl.ring.T3Ring`).
    tiles_width : int
        Width of the sources' tile counts.
    """

    def __init__(self, *, gpus: int = 2, link_latency: int = 8, link_cycles_per_beat: int = 2, tiles_width: int = 12,
                 **slice_params):
        self.ring = T3Ring(gpus=gpus, link_latency=link_latency, link_cycles_per_beat=link_cycles_per_beat,
                           **slice_params)
        s = self.ring.slices[0]
        self.sources = [GemmTrafficSource(gemm_layout=s.gemm_layout, packet_layout=s.packet_layout,
                                          addr_width=s.nmc.addr_width, data_width=s.nmc.beat_width,
                                          tile_beats_log2=s.tile_beats_log2, tiles_width=tiles_width)
                        for _ in range(gpus)]
        src = self.sources[0].signature.members
        ring = self.ring.signature.members
        ports = {name: ring[name] for name in RING_PORTS}
        ports.update({name: src[name].array(gpus) for name in ("store", "remote", "host_read")})
        ports["read_data"] = Out(ValidSignature(src["read_data"].signature.payload_shape)).array(gpus)
        ports["gemm_status"] = Out(self.sources[0].status_layout).array(gpus)
        ports.update({name: ring[name] for name in ("threshold", "starvation_limit", "mode")})
        ports.update({"run": In(1), "setup": In(self.sources[0].setup_layout)})
        ports.update({name: ring[name] for name in ("dram_request", "dram_ready") if name in ring})
        super().__init__(ports)

    gpus = property(lambda self: self.ring.gpus, doc="GPUs in the ring.")

    def elaborate(self, platform):
        m = Module()
        m.submodules.ring = ring = self.ring
        for name in ("threshold", "starvation_limit", "mode"):
            m.d.comb += getattr(ring, name).eq(getattr(self, name))
        for g, source in enumerate(self.sources):
            m.submodules[f"gemm{g}"] = source
            m.d.comb += [source.run.eq(self.run), source.setup.eq(self.setup),
                         self.gemm_status[g].eq(source.status)]
            for name in ("store", "remote", "host_read"):
                wiring.connect(m, wiring.flipped(getattr(self, name)[g]), getattr(source, name))
            wiring.connect(m, source.gemm, ring.gemm[g])
            wiring.connect(m, source.gemm_remote, ring.gemm_remote[g])
            wiring.connect(m, source.gemm_read, ring.gemm_read[g])
            m.d.comb += [source.read_data.valid.eq(ring.gemm_read_data[g].valid),
                         source.read_data.payload.eq(ring.gemm_read_data[g].payload),
                         self.read_data[g].valid.eq(ring.gemm_read_data[g].valid),
                         self.read_data[g].payload.eq(ring.gemm_read_data[g].payload)]
            for name in ("arm", "program"):
                wiring.connect(m, wiring.flipped(getattr(self, name)[g]), getattr(ring, name)[g])
            m.d.comb += self.status[g].eq(ring.status[g])
            if "dram_ready" in self.signature.members:
                m.d.comb += [ring.dram_ready[g].eq(self.dram_ready[g]),
                             self.dram_request[g].valid.eq(ring.dram_request[g].valid),
                             self.dram_request[g].payload.eq(ring.dram_request[g].payload)]
            m.d.comb += [self.notify[g].valid.eq(ring.notify[g].valid),
                         self.notify[g].payload.eq(ring.notify[g].payload)]
        return m
