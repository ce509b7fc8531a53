"""Port signatures shared by several blocks."""

from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["WriteOp", "ReadPortSignature", "ValidSignature"]


class WriteOp(enum.Enum, shape=1):
    """What a memory does with a written beat (a DMA packet or a reducer request)."""

    #: Overwrite the destination word.
    STORE = 0
    #: Add the beat to the destination word (near-memory reduction).
    UPDATE = 1


class ReadPortSignature(wiring.Signature):
    """A synchronous memory read port with a fixed latency, seen from the reader.

    In a cycle where ``en`` is high the port reads the word at ``addr``; the word appears on
    ``data`` exactly ``latency`` cycles later (``latency = 1`` is an
    :class:`amaranth.lib.memory.Memory` read port). Addresses count words (beats).

    With ``arbitrated=True`` the port has a ``ready`` input as well: ``en`` then *requests*
    a read (and does not depend on ``ready``), and the read happens in a cycle where both
    are high, as on a stream. This lets a memory arbiter hold a reader off.

    Members
    -------
    addr : ``Out(addr_width)``
    en : ``Out(1)``
    data : ``In(data_width)``
    ready : ``In(1)``, only if ``arbitrated``
    """

    def __init__(self, *, addr_width: int, data_width: int, arbitrated: bool = False):
        self.addr_width = addr_width
        self.data_width = data_width
        self.arbitrated = arbitrated
        members = {
            "addr": Out(unsigned(addr_width)),
            "en": Out(1),
            "data": In(unsigned(data_width)),
        }
        if arbitrated:
            members["ready"] = In(1)
        super().__init__(members)

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_width == self.addr_width
                and other.data_width == self.data_width and other.arbitrated == self.arbitrated)

    def __repr__(self):
        return (f"ReadPortSignature(addr_width={self.addr_width}, data_width={self.data_width}, "
                f"arbitrated={self.arbitrated})")


class ValidSignature(wiring.Signature):
    """A payload qualified by ``valid``, without back-pressure.

    Used for completion events (``done``), which a receiver only counts, and for pipelines
    that never stall (the floating-point adder). Unlike an ``always_ready`` stream it has no
    constant ``ready`` member, so it converts to Verilog as a top-level port.

    Members
    -------
    valid : ``Out(1)``
        High in each cycle that carries a payload.
    payload : ``Out(payload_shape)``
    """

    def __init__(self, payload_shape):
        self.payload_shape = payload_shape
        super().__init__({"valid": Out(1), "payload": Out(payload_shape)})

    def __eq__(self, other):
        return type(other) is type(self) and other.payload_shape == self.payload_shape

    def __repr__(self):
        return f"ValidSignature({self.payload_shape!r})"
