"""Valid/ready stream protocol checker, and the registry that puts one on every stream of a bench.

:class:`StreamProtocolChecker` is fed one sample per cycle (in the read-only phase) of a
stream's ``valid``, ``ready`` and ``payload`` and raises :class:`ProtocolViolation` (an
``AssertionError``) on the first broken rule:

* ``valid`` is never X/Z; ``ready`` is never X/Z;
* once ``valid`` is high without ``ready``, ``valid`` stays high in the next cycle and the
  payload stays bit-identical until the transfer;
* optionally (``check_payload_x``) the payload of a valid item has no X/Z bit.

It knows nothing of Amaranth or cocotb: a value is an ``int``, a string of ``01xz`` bits or
anything ``int()`` converts and that raises ``ValueError`` on X/Z (cocotb's ``Logic`` and
``LogicArray``). :meth:`~StreamProtocolChecker.reset` forgets the transfer in progress (a DUT
reset).

:class:`BenchRegistry` holds a bench's stream endpoints (``tb.common.streams``); the
:class:`~tb.common.lockstep.LockstepTB` creates one and makes it *active*, so every
``StreamSource``, ``StreamSink`` and ``StreamMonitor`` built afterwards registers itself. At
the end of each cycle the registry makes sure every endpoint's checker saw that cycle, and
on a DUT reset it resets them all. :func:`stream_ports` lists the streams of a Verilog top
module (the runner passes them to the bench, which monitors the ones no endpoint drives).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["ProtocolViolation", "StreamProtocolChecker", "BenchRegistry", "active_registry",
           "stream_ports", "bits"]


class ProtocolViolation(AssertionError):
    """A stream broke the valid/ready rules."""


def bits(value) -> int | None:
    """``value`` as an ``int``, or ``None`` if it has an X/Z (or other non-0/1) bit.

    Endpoints in the per-cycle loop convert cocotb values with :func:`bits` once and pass
    ints on (the checker's fast path); an unresolvable value goes to the checker as it is.
    """
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return int(value, 2) if value and set(value) <= {"0", "1"} else None
    try:
        return int(value)
    except ValueError:
        return None


def _norm(payload):
    """A payload in a form that compares bit for bit: an ``int``, or its bit string if it has X/Z."""
    if payload is None:
        return None
    value = bits(payload)
    return value if value is not None else str(payload).upper()


def _show(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:#x}" if value > 9 else str(value)
    return str(value)


class StreamProtocolChecker:
    """Checks one valid/ready stream, one :meth:`sample` per cycle.

    Parameters
    ----------
    name : str
        The stream's name in messages (e.g. ``"trigger"``).
    has_ready : bool
        False for a stream without ``ready`` (always-ready): only ``valid`` is checked.
    check_payload_x : bool
        Also fail when the payload of a valid item has an X/Z bit.
    hold : bool
        Check the hold rule (valid and payload kept until ``ready``). Only a port documented
        as not a stream in this sense turns it off (:attr:`relaxed`, the reason, says why).
    cycle : callable, optional
        Returns the current cycle number when :meth:`sample` is not given one.
    context : callable or str, optional
        Extra lines for the message (simulation time, replay line).
    """

    def __init__(self, name: str, *, has_ready: bool = True, check_payload_x: bool = False, hold: bool = True,
                 cycle: Callable[[], int] | None = None, context: Callable[[], str] | str | None = None):
        self.name = name
        self.hold = hold
        self.relaxed: str | None = None
        self.has_ready = has_ready
        self.check_payload_x = check_payload_x
        self.cycle = cycle
        self.context = context
        self.samples = 0
        self.transfers = 0
        self.stall_cycles = 0
        self.resets = 0
        self.last_cycle: int | None = None
        self._pending: tuple[int, object] | None = None  # (offered since cycle, normalised payload)

    def relax(self, reason: str) -> None:
        """Stop checking the hold rule on this stream (the X/Z rules stay), for ``reason``."""
        self.hold = False
        self.relaxed = reason
        self._pending = None

    def reset(self) -> None:
        """Forget the transfer in progress: call while or right after the DUT is reset."""
        self._pending = None
        self.last_cycle = None
        self.resets += 1

    def sample(self, valid, ready=1, payload=None, *, cycle: int | None = None) -> None:
        """Check this cycle's ``valid``, ``ready`` and ``payload`` (payload only matters while valid).

        A second sample in the same cycle is ignored. After a gap (a cycle without a sample)
        the hold rule restarts, as after :meth:`reset`.
        """
        if cycle is None:
            if self.cycle is not None:
                cycle = self.cycle()
            else:
                cycle = 0 if self.last_cycle is None else self.last_cycle + 1
        last = self.last_cycle
        if cycle == last:
            return
        if last is not None and cycle != last + 1:
            self._pending = None
        self.last_cycle = cycle
        self.samples += 1

        # Plain ints (what the stream endpoints pass) take the fast path.
        v = valid if type(valid) is int else bits(valid)
        if v is None:
            self._fail(cycle, "valid is X/Z", valid, ready, payload)
        if self.has_ready:
            r = ready if type(ready) is int else bits(ready)
            if r is None:
                self._fail(cycle, "ready is X/Z", valid, ready, payload)
        else:
            r = 1
        held = None
        if v:
            held = payload if type(payload) is int else _norm(payload)
            if self.check_payload_x and type(held) is not int:
                self._fail(cycle, "payload has X/Z bits while valid", valid, ready, payload)
        pending = self._pending
        if pending is not None:
            since, before = pending
            if not v:
                self._fail(cycle, f"valid fell before the transfer (offered since cycle {since}, "
                                  f"never ready)", valid, ready, payload, before)
            if held != before:
                self._fail(cycle, f"payload changed while waiting for ready (offered since cycle {since})",
                           valid, ready, payload, before)
        if v and not r and self.hold:
            self._pending = (pending[0] if pending else cycle, held)
            self.stall_cycles += 1
        else:
            self._pending = None
            if v:
                self.transfers += 1

    def _fail(self, cycle, rule, valid, ready, payload, held=None):
        values = f"valid={_show(valid)} ready={_show(ready) if self.has_ready else '(none)'} payload={_show(payload)}"
        if held is not None:
            values += f" (held payload {_show(held)})"
        message = f"stream protocol violation on '{self.name}' at cycle {cycle}: {rule}; {values}"
        context = self.context() if callable(self.context) else self.context
        if context:
            message += f"\n  {context}"
        raise ProtocolViolation(message)


class BenchRegistry:
    """The stream endpoints of one bench: checked every cycle, reset with the DUT.

    An endpoint is any object with ``name``, ``reset()`` and ``end_cycle(cycle)``. ``cycle``
    and ``context`` are what the endpoints' checkers use for their messages.
    """

    def __init__(self, *, cycle: Callable[[], int] | None = None,
                 context: Callable[[], str] | str | None = None):
        self.cycle = cycle
        self.context = context
        self.endpoints: list = []

    def add(self, endpoint) -> None:
        self.endpoints.append(endpoint)

    def names(self) -> set[str]:
        return {e.name for e in self.endpoints}

    def end_cycle(self, cycle: int) -> None:
        """Check every endpoint whose checker has not sampled ``cycle`` yet."""
        for endpoint in self.endpoints:
            endpoint.end_cycle(cycle)

    def reset(self) -> None:
        for endpoint in self.endpoints:
            endpoint.reset()


_active: BenchRegistry | None = None


def active_registry() -> BenchRegistry | None:
    """The registry new stream endpoints join (the latest bench's), or ``None``."""
    return _active


def activate(registry: BenchRegistry | None) -> None:
    global _active
    _active = registry


_PORT_RE = re.compile(r"^\s*(input|output)\s+(?:\[[^\]]*\]\s*)?([A-Za-z_][A-Za-z0-9_$]*)\s*;", re.MULTILINE)


def stream_ports(verilog: str, top: str) -> list[dict]:
    """The valid/ready streams among the ports of module ``top``.

    Returns ``[{"name": ..., "dir": "in" | "out", "ready": bool, "payload": bool}]`` for
    every ``<name>__valid`` port (``dir`` is the direction of ``valid``).
    """
    match = re.search(rf"^module {re.escape(top)}\s*\(.*?^endmodule", verilog, re.MULTILINE | re.DOTALL)
    if match is None:
        raise ValueError(f"no module {top!r} in the Verilog")
    ports = {name: d for d, name in _PORT_RE.findall(match.group(0))}
    streams = []
    for port, direction in sorted(ports.items()):
        if port.endswith("__valid"):
            name = port[: -len("__valid")]
            streams.append({"name": name, "dir": "in" if direction == "input" else "out",
                            "ready": f"{name}__ready" in ports, "payload": f"{name}__payload" in ports})
    return streams
