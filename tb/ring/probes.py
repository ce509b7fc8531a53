"""Read-only stream probes for the ring bench: one sample per cycle, with the protocol check.

A :class:`Probe` reads a stream's ``valid`` (``ready``, ``payload``) once per cycle, feeds
:class:`~tb.common.protocol.StreamProtocolChecker` (valid and ready never X/Z, valid and
payload held until ready, no X/Z in a valid payload) and returns the payload of a
transfer. It joins the bench's :class:`~tb.common.protocol.BenchRegistry` like the
endpoints of :mod:`tb.common.streams`, so a DUT reset restarts its checker and a cycle the
bench skips is still checked.

The ring's links are not top-level ports: ``egress`` of slice g is link g's ``input`` and
``ingress`` of slice g + 1 is link g's ``output``. The bench probes them inside the
Verilog hierarchy (``dut.link<g>.input__valid`` ...), the names Amaranth gives the link
module's ports; it drives nothing there.
"""

from __future__ import annotations

from tb.common.protocol import StreamProtocolChecker, bits

__all__ = ["Probe"]


class Probe:
    """Samples ``<prefix>__valid`` / ``__ready`` / ``__payload`` of ``scope`` (a DUT handle)."""

    def __init__(self, scope, prefix: str, *, name: str, registry, ready: bool = True, payload: bool = True):
        self.name = name
        self.valid = getattr(scope, f"{prefix}__valid")
        self.ready = getattr(scope, f"{prefix}__ready") if ready else None
        self.payload = getattr(scope, f"{prefix}__payload") if payload else None
        self.checker = StreamProtocolChecker(name, has_ready=ready, check_payload_x=payload, cycle=registry.cycle,
                                             context=registry.context)
        self.transfers = 0
        registry.add(self)

    def reset(self) -> None:
        self.checker.reset()

    def end_cycle(self, cycle: int) -> None:
        if self.checker.last_cycle != cycle:
            self.sample(cycle)

    def sample(self, cycle: int | None = None) -> int | None:
        """This cycle's transferred payload (``0`` for a stream without payload), or ``None``."""
        valid = self.valid.value
        v = bits(valid)
        ready = self.ready.value if self.ready is not None else 1
        payload = self.payload.value if v and self.payload is not None else None
        self.checker.sample(valid, ready, payload, cycle=cycle)
        if v and (self.ready is None or bits(ready)):
            self.transfers += 1
            return int(payload) if payload is not None else 0
        return None
