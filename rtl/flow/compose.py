# amaranth: UnusedElaboratable=no
# (The slices a stand-in replaces are converted once, as slice 0, or only read for their ports.)
"""A ring's Verilog with one slice module that every GPU instantiates.

Amaranth converts a design whole: a ring of N slices costs N slice conversions (the 16-GPU
ring about 25 s, most of it in the RTLIL back end), and its Verilog holds N copies of the
slice, which Icarus and Verilator then compile N times. The slices of a
:class:`~rtl.ring.T3Ring` are identical (same parameters, same power-up words), so
:func:`ring_verilog` converts slice 0 alone, as module ``<name>_slice``, and the ring around
instances of it: the ring's own ``elaborate`` wires the same ports to the same links, with
each slice replaced by a :class:`ModuleInstance` of its signature. The result is the design
the flat conversion gives, written once per module; the instance of GPU *g* is still named
``slice<g>``, so hierarchical names (``dut.slice0.nmc``) are unchanged.
"""

from __future__ import annotations

from amaranth.hdl import ClockSignal, Instance, ResetSignal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..ring import T3Ring

__all__ = ["ModuleInstance", "ring_verilog", "SLICE_SUFFIX"]

#: The slice module of ring ``t3_ring`` is ``t3_ring_slice``.
SLICE_SUFFIX = "_slice"


class ModuleInstance(wiring.Component):
    """A component of ``signature`` that elaborates to an instance of Verilog module ``module``:
    the stand-in for a component converted on its own by :func:`~rtl.flow.generate.component_verilog`.

    The instance's ports are named as Amaranth names a converted component's ports (the
    member path joined by ``__``), plus ``clk`` and ``rst`` of the sync domain.
    """

    def __init__(self, signature: wiring.Signature, *, module: str):
        self._module = module
        super().__init__(signature)

    def elaborate(self, platform):
        ports = {}
        for path, member, value in self.signature.flatten(self):
            name = "__".join(str(part) for part in path)
            ports[("i_" if member.flow == In else "o_") + name] = Value.cast(value)
        # The bare Instance, not a Module holding it: the ring's name for this submodule
        # (``slice<g>``) becomes the instance's name, with no level of hierarchy added.
        return Instance(self._module, i_clk=ClockSignal(), i_rst=ResetSignal(), **ports)


def ring_verilog(component: wiring.Component, name: str, *, convert) -> str:
    """The Verilog of ``component`` (a :class:`~rtl.ring.T3Ring`, or a component whose ``ring``
    is one or holds one the same way) as module ``name``, with one slice module
    ``name + SLICE_SUFFIX`` instantiated per GPU. ``convert(component, name)`` is the
    converter (:func:`~rtl.flow.generate.component_verilog`, passed in because
    :mod:`rtl.flow.generate` imports this module).

    The ring builds every slice from the same parameters (:class:`~rtl.ring.T3Ring`), which
    is what lets them share a module.
    """
    ring = component
    while not isinstance(ring, T3Ring):   # GemmRing holds its ring as .ring, the row harness a GemmRing
        ring = ring.ring
    slices = ring.slices
    if any(s.signature != slices[0].signature for s in slices):
        raise ValueError("the ring's slices have different ports: they cannot share one module")
    module = name + SLICE_SUFFIX
    slice_text = convert(slices[0], module)
    ring.slices = [ModuleInstance(s.signature, module=module) for s in slices]
    try:
        shell = convert(component, name)
    finally:
        ring.slices = slices
    return shell + "\n" + slice_text
