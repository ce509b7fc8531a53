"""Lock-step stream driver (source) and ready driver / monitor (sink) for cocotb benches.

Both follow the Amaranth stream rules: a source holds ``valid`` and its payload until the
handshake, and a transfer happens in a cycle where ``valid`` and ``ready`` are both high.
They are *lock-step*: the bench calls :meth:`drive` right after each rising edge and
:meth:`handshake` in the read-only phase of the same cycle, so the bench owns the cycle
loop and can compare every port with the golden model in every cycle.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable

from amaranth.lib import data

from .packing import pack, unpack

__all__ = ["StreamSource", "StreamSink"]


class StreamSource:
    """Drives ``<name>__valid`` / ``<name>__payload`` of a DUT input stream.

    Items come from :attr:`queue` first, then from ``next_item()`` if given (reactive
    stimulus). In a cycle where it holds no item, the source takes a new one with
    probability ``p_valid``; once offered, an item stays until accepted.
    """

    def __init__(self, dut, name: str, layout: data.StructLayout, rng: random.Random,
                 p_valid: float = 1.0, next_item: Callable[[], dict | None] | None = None):
        self.valid = getattr(dut, f"{name}__valid")
        self.payload = getattr(dut, f"{name}__payload")
        self.ready = getattr(dut, f"{name}__ready")
        self.layout = layout
        self.rng = rng
        self.p_valid = p_valid
        self.next_item = next_item
        self.queue: deque[dict] = deque()
        self.current: dict | None = None
        self.sent = 0
        self._driven_valid = None
        self._driven_payload = None

    def idle(self) -> bool:
        return self.current is None and not self.queue

    def drive(self) -> None:
        if self.current is None and self.rng.random() < self.p_valid:
            if self.queue:
                self.current = self.queue.popleft()
            elif self.next_item is not None:
                self.current = self.next_item()
        valid = int(self.current is not None)
        if valid != self._driven_valid:
            self.valid.value = valid
            self._driven_valid = valid
        if valid:
            word = pack(self.layout, self.current)
            if word != self._driven_payload:
                self.payload.value = word
                self._driven_payload = word

    def handshake(self) -> tuple[dict | None, dict | None]:
        """Sample ``ready``; return ``(offered, accepted)`` items of this cycle."""
        offered = self.current
        if offered is None:
            return None, None
        if int(self.ready.value):
            self.current = None
            self.sent += 1
            return offered, offered
        return offered, None


class StreamSink:
    """Drives ``<name>__ready`` of a DUT output stream and samples its valid and payload."""

    def __init__(self, dut, name: str, layout: data.StructLayout, rng: random.Random,
                 p_ready: float = 1.0):
        self.valid = getattr(dut, f"{name}__valid")
        self.payload = getattr(dut, f"{name}__payload")
        self.ready = getattr(dut, f"{name}__ready")
        self.layout = layout
        self.rng = rng
        self.p_ready = p_ready
        self.current_ready = 0
        self.received: list[dict] = []
        self._driven_ready = None

    def drive(self, force: int | None = None) -> None:
        ready = int(self.rng.random() < self.p_ready) if force is None else force
        self.current_ready = ready
        if ready != self._driven_ready:
            self.ready.value = ready
            self._driven_ready = ready

    def sample(self) -> tuple[int, int | None]:
        """Return ``(valid, raw payload or None)`` as seen in this cycle."""
        valid = int(self.valid.value)
        return valid, (int(self.payload.value) if valid else None)

    def record(self, raw: int) -> dict:
        item = unpack(self.layout, raw)
        self.received.append(item)
        return item
