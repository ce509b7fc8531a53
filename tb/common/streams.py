"""Lock-step stream driver (source) and ready driver / monitor (sink) for cocotb benches.

Both follow the Amaranth stream rules: a source holds ``valid`` and its payload until the
handshake, and a transfer happens in a cycle where ``valid`` and ``ready`` are both high.
They are *lock-step*: the bench calls :meth:`drive` right after each rising edge and
:meth:`handshake` in the read-only phase of the same cycle, so the bench owns the cycle
loop and can compare every port with the golden model in every cycle.

Every endpoint owns a :class:`~tb.common.protocol.StreamProtocolChecker` and joins the active
bench's registry (:mod:`tb.common.protocol`): the source checks what it drives and the DUT's
``ready`` in :meth:`StreamSource.handshake`, the sink checks the DUT's ``valid`` and payload
in :meth:`StreamSink.sample`, and :class:`StreamMonitor` watches a stream that the bench
reads or drives by hand. If a bench skips the call in some cycle, the registry checks the
endpoint at the end of that cycle (:meth:`end_cycle`).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable

from amaranth.lib import data

from .packing import pack, unpack
from .protocol import ProtocolViolation, StreamProtocolChecker, active_registry

__all__ = ["StreamSource", "StreamSink", "StreamMonitor", "ProtocolViolation"]


def _checker(name: str, registry=None, **kwargs) -> StreamProtocolChecker:
    registry = registry or active_registry()
    if registry is None:
        return StreamProtocolChecker(name, **kwargs)
    return StreamProtocolChecker(name, cycle=registry.cycle, context=registry.context, **kwargs)


def _join(endpoint, registry=None) -> None:
    registry = registry or active_registry()
    if registry is not None:
        registry.add(endpoint)


class StreamSource:
    """Drives ``<name>__valid`` / ``<name>__payload`` of a DUT input stream.

    Items come from :attr:`queue` first, then from ``next_item()`` if given (reactive
    stimulus). In a cycle where it holds no item, the source takes a new one with
    probability ``p_valid``; once offered, an item stays until accepted. An item is packed
    once, when first offered, with :attr:`packer` (``pack`` of the layout unless a bench
    sets a faster one); :attr:`ready_seen` is the ``ready`` sampled by the last handshake.
    """

    def __init__(self, dut, name: str, layout: data.StructLayout, rng: random.Random,
                 p_valid: float = 1.0, next_item: Callable[[], dict | None] | None = None):
        self.name = name
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
        self.packer: Callable[[dict], int] = lambda item: pack(self.layout, item)
        self._word_of: tuple[dict, int] | None = None   # (the item offered, its word)
        self.ready_seen = 0
        self.checker = _checker(name)
        _join(self)

    def reset(self) -> None:
        """After a DUT reset: drive valid and payload anew (the reset path wrote them) and
        restart the checker. An item offered but not taken stays and is offered again."""
        self._driven_valid = None
        self._driven_payload = None
        self.checker.reset()

    def end_cycle(self, cycle: int) -> None:
        if self.checker.last_cycle != cycle:
            self._check(cycle)

    def _check(self, cycle=None) -> int:
        """Check this cycle (the DUT's ``ready``, what the source drives); return ``ready``."""
        raw = self.ready.value
        try:
            ready = int(raw)
        except ValueError:
            ready = raw     # X/Z: the checker fails on it
        offered = self.current is not None
        self.checker.sample(int(offered), ready, self._driven_payload if offered else None, cycle=cycle)
        return ready

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
            if self._word_of is None or self._word_of[0] is not self.current:
                self._word_of = (self.current, self.packer(self.current))
            word = self._word_of[1]
            if word != self._driven_payload:
                self.payload.value = word
                self._driven_payload = word

    def handshake(self) -> tuple[dict | None, dict | None]:
        """Sample ``ready``; return ``(offered, accepted)`` items of this cycle."""
        ready = self.ready_seen = self._check()
        offered = self.current
        if offered is None:
            return None, None
        if ready:
            self.current = None
            self.sent += 1
            return offered, offered
        return offered, None


class StreamSink:
    """Drives ``<name>__ready`` of a DUT output stream and samples its valid and payload.

    :meth:`sample` checks the stream's protocol (the DUT's side: valid never X/Z, valid and a
    bit-identical payload held until ``ready``, no X/Z in a valid payload).
    """

    def __init__(self, dut, name: str, layout: data.StructLayout, rng: random.Random,
                 p_ready: float = 1.0):
        self.name = name
        self.valid = getattr(dut, f"{name}__valid")
        self.payload = getattr(dut, f"{name}__payload")
        self.ready = getattr(dut, f"{name}__ready")
        self.layout = layout
        self.rng = rng
        self.p_ready = p_ready
        self.current_ready = 0
        self.received: list[dict] = []
        self._driven_ready = None
        self.checker = _checker(name, check_payload_x=True)
        _join(self)

    def reset(self) -> None:
        """After a DUT reset: drive ready anew and restart the checker."""
        self._driven_ready = None
        self.checker.reset()

    def end_cycle(self, cycle: int) -> None:
        if self.checker.last_cycle != cycle:
            self._sample(cycle)

    def drive(self, force: int | None = None) -> None:
        ready = int(self.rng.random() < self.p_ready) if force is None else force
        self.current_ready = ready
        if ready != self._driven_ready:
            self.ready.value = ready
            self._driven_ready = ready

    def sample(self) -> tuple[int, int | None]:
        """Return ``(valid, raw payload or None)`` as seen in this cycle; check the protocol."""
        return self._sample(None)

    def _sample(self, cycle) -> tuple[int, int | None]:
        valid = _resolve(self.valid.value)
        payload = _resolve(self.payload.value) if valid == 1 else None
        self.checker.sample(valid, self.current_ready, payload, cycle=cycle)
        return valid, payload

    def record(self, raw: int) -> dict:
        item = unpack(self.layout, raw)
        self.received.append(item)
        return item


class StreamMonitor:
    """Watches ``<name>__valid`` (``__ready``, ``__payload`` where they exist) without driving.

    For a stream the bench reads or drives by hand; the registry samples it once per cycle.
    ``check_payload_x`` defaults to True: the payload of a valid DUT output has no X/Z bit.
    """

    def __init__(self, dut, name: str, *, ready: bool | None = None, payload: bool | None = None,
                 check_payload_x: bool = True, registry=None):
        self.name = name
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = _port(dut, f"{name}__ready", ready)
        self.payload = _port(dut, f"{name}__payload", payload)
        self.checker = _checker(name, registry, has_ready=self.ready is not None,
                                check_payload_x=check_payload_x and self.payload is not None)
        _join(self, registry)

    def reset(self) -> None:
        self.checker.reset()

    def end_cycle(self, cycle: int) -> None:
        if self.checker.last_cycle != cycle:
            self.sample(cycle)

    def sample(self, cycle: int | None = None) -> None:
        valid = _resolve(self.valid.value)
        ready = _resolve(self.ready.value) if self.ready is not None else 1
        payload = _resolve(self.payload.value) if self.payload is not None and valid == 1 else None
        self.checker.sample(valid, ready, payload, cycle=cycle)


def _resolve(value):
    """A cocotb value as an ``int``, or unchanged if it has X/Z bits (for the checker to report)."""
    try:
        return int(value)
    except ValueError:
        return value


def _port(dut, name: str, present: bool | None):
    if present is False:
        return None
    try:
        return getattr(dut, name)
    except AttributeError:
        if present:
            raise
        return None
