# amaranth: UnusedElaboratable=no
# (Slices and links are built in __init__ so that their layouts are readable before elaboration.)
"""N GPUs' memory-controller slices joined in a ring by link models."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from .link import LinkModel
from .params import check_int
from .t3_slice import T3Slice

__all__ = ["T3Ring"]

#: Per-GPU ports of the ring, taken from the slice ...
PER_GPU = ("gemm", "gemm_read", "gemm_read_data", "gemm_remote", "arm", "program", "notify", "status")
#: ... and, where the slices have a memory beyond them (``dram_ready=True``), its door.
DRAM_PORTS = ("dram_request", "dram_ready")


class T3Ring(wiring.Component):
    """``gpus`` :class:`~rtl.t3_slice.T3Slice` instances; slice *g*'s ``egress`` feeds slice
    *g + 1*'s ``ingress`` through a :class:`~rtl.link.LinkModel`.

    Every per-GPU port of the slice appears as an array indexed by GPU (``gemm[g]`` ...);
    the arbiter settings are shared.

    Parameters
    ----------
    gpus : int
        Ring size, 2..16.
    link_latency, link_cycles_per_beat : int
        The links (:class:`~rtl.link.LinkModel`).
    **slice_params
        Passed to every :class:`~rtl.t3_slice.T3Slice`, ``power_up_seed`` included: every
        slice is built from the same parameters and powers up with the same words, so that
        a ring's Verilog can hold one slice module that every GPU instantiates
        (:mod:`rtl.flow.compose`; a ring of 16 converts in a sixteenth of the time).
    """

    def __init__(self, *, gpus: int = 4, link_latency: int = 8, link_cycles_per_beat: int = 2, **slice_params):
        self._gpus = check_int("gpus", gpus, 2, 16)
        self.slices = [T3Slice(**slice_params) for _ in range(gpus)]
        self.links = [LinkModel(payload_shape=self.slices[0].packet_layout, latency=link_latency,
                                cycles_per_beat=link_cycles_per_beat) for _ in range(gpus)]
        members = self.slices[0].signature.members
        self._per_gpu = PER_GPU + (DRAM_PORTS if self.slices[0].has_dram_ready else ())
        ports = {name: members[name].array(gpus) for name in self._per_gpu}
        ports.update({name: members[name] for name in ("threshold", "starvation_limit", "mode")})
        super().__init__(ports)

    gpus = property(lambda self: self._gpus, doc="GPUs in the ring.")

    def elaborate(self, platform):
        m = Module()
        for g, (slice_, link) in enumerate(zip(self.slices, self.links, strict=True)):
            m.submodules[f"slice{g}"] = slice_
            m.submodules[f"link{g}"] = link
        for g, slice_ in enumerate(self.slices):
            for name in self._per_gpu:
                port, member = getattr(self, name)[g], slice_.signature.members[name]
                if member.is_port and member.flow == In:  # dram_ready
                    m.d.comb += getattr(slice_, name).eq(port)
                elif member.is_port:  # the status word
                    m.d.comb += port.eq(getattr(slice_, name))
                elif member.flow == In:
                    wiring.connect(m, wiring.flipped(port), getattr(slice_, name))
                else:
                    wiring.connect(m, getattr(slice_, name), wiring.flipped(port))
            m.d.comb += [slice_.threshold.eq(self.threshold), slice_.starvation_limit.eq(self.starvation_limit),
                         slice_.mode.eq(self.mode)]
            wiring.connect(m, slice_.egress, self.links[g].input)
            wiring.connect(m, self.links[g].output, self.slices[(g + 1) % self._gpus].ingress)
        return m
