"""A register in front of every input of a block, so that place and route can time its input paths.

Out-of-context place and route times only register-to-register paths: a path that starts
at a top-level input port is unconstrained. In a chip, a block's inputs come from the
registers of the block that drives it, so wrapping the block in one register per input
bit gives the Fmax it would reach there. ``make synth`` uses it for the floating-point
adders, whose ``latency=1`` build has only a register at the output (without the wrapper
nothing inside it would be timed).
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

__all__ = ["InputRegisters"]


def _member_of(obj, path: tuple):
    """The port of ``obj`` at ``path``, a tuple of names and array indices from ``Signature.flatten``."""
    for step in path:
        obj = obj[step] if isinstance(step, int) else getattr(obj, step)
    return obj


class InputRegisters(wiring.Component):
    """``block`` with its signature, behind one ``sync`` register per input bit.

    Every input reaches ``block`` one cycle later than it reaches the wrapper; outputs pass
    through unchanged. The wrapper is a timing harness: the protocol of a stream with
    ``ready`` is not preserved (``ready`` is not delayed with ``valid``), so it is for
    synthesis and timing, never for a bench.

    Latency: ``block``'s latency plus one cycle on every input-to-output path.

    Parameters
    ----------
    block : wiring.Component
        The block to wrap.
    """

    def __init__(self, *, block):
        if not isinstance(block, wiring.Component):
            raise TypeError(f"block must be an Amaranth wiring.Component, not {block!r}")
        self._block = block
        super().__init__(wiring.Signature(dict(block.signature.members)))

    @property
    def block(self) -> wiring.Component:
        """The wrapped block."""
        return self._block

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = self._block
        for path, member, outer in self.signature.flatten(self):
            inner = _member_of(self._block, path)
            if member.flow == In:
                m.d.sync += inner.eq(outer)
            else:
                m.d.comb += outer.eq(inner)
        return m
