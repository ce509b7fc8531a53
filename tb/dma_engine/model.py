"""Cycle-accurate golden model of :class:`rtl.dma_engine.DmaEngine` with ``arbitrated_reads=True``.

The mode the T3 slice uses: the memory read port (:class:`rtl.ports.ReadPortSignature`,
``arbitrated=True``) has a ``ready`` input and a read happens in a cycle where ``en`` and
``ready`` are both high, as on a stream; ``en`` is a request that does not depend on
``ready``. Written from the two docstrings, independently of ``tb/dma/model.py`` (whose
model assumes every ``en`` is a read):

* commands run in order; a command reads ``beats`` words from ``src_addr`` upward and emits
  one ``egress`` packet per word to ``dst_addr`` upward (addresses wrap modulo
  ``2**addr_width``), ``last`` on the final beat; ``done`` carries the command's index in
  the cycle its last beat is taken;
* a read is requested only while the beat buffer (``read_latency + 2`` beats) has room for
  its data: buffered beats plus reads in flight < buffer depth (counted at the start of the
  cycle); the word read in cycle *c* enters the buffer at the edge ending cycle
  *c + read_latency*, and ``egress`` offers the oldest buffered beat;
* the next command is accepted while no command is active, or in the cycle the active one
  issues its last read (``cmd.ready`` then depends on ``mem_read.ready``);
* ``status``: ``busy`` (a command active, a read in flight or a beat buffered), counters of
  beats and commands sent (32 bits), ``err_overflow`` (stays 0).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["ArbitratedEngineModel", "ArbitratedEngineOutputs", "COUNTER_MASK"]

COUNTER_MASK = (1 << 32) - 1


class ArbitratedEngineOutputs(NamedTuple):
    cmd_ready: int
    mem_en: int
    mem_addr: int | None   # meaningful only when mem_en
    egress_valid: int
    egress: dict | None
    status: dict


class ArbitratedEngineModel:
    def __init__(self, *, read_latency: int, addr_width: int, memory: Callable[[int], int]):
        self.read_latency = read_latency
        self.buffer_depth = read_latency + 2
        self.addr_mask = (1 << addr_width) - 1
        self.memory = memory
        self.reset()

    def reset(self) -> None:
        self.active: dict | None = None
        self.in_flight: deque[tuple[dict, int] | None] = deque([None] * self.read_latency)  # oldest first
        self.reads = 0                                   # reads in flight (entries of in_flight not None)
        self.buffer: deque[tuple[dict, int]] = deque()   # (packet, dma_cmd)
        self.status = {"err_overflow": 0, "busy": 0, "commands": 0, "beats": 0}

    def _requesting(self) -> bool:
        return self.active is not None and len(self.buffer) + self.reads < self.buffer_depth

    def _cmd_ready(self, request: bool, mem_ready: int) -> bool:
        """No command active, or the active one issues its last read in this cycle."""
        return self.active is None or bool(request and mem_ready and self.active["left"] == 1)

    def outputs(self, *, mem_ready: int) -> ArbitratedEngineOutputs:
        request = self._requesting()
        act = self.active
        status = dict(self.status)
        status["busy"] = int(act is not None or self.reads > 0 or bool(self.buffer))
        return ArbitratedEngineOutputs(
            cmd_ready=int(self._cmd_ready(request, mem_ready)),
            mem_en=int(request),
            mem_addr=act["src"] if request else None,
            egress_valid=int(bool(self.buffer)),
            egress=self.buffer[0][0] if self.buffer else None,
            status=status,
        )

    def step(self, *, cmd: dict | None, mem_ready: int, egress_ready: int) -> tuple[dict | None, int | None]:
        """Advance one edge; return ``(packet taken from egress, dma_cmd done)`` of this cycle."""
        request = self._requesting()
        cmd_ready = self._cmd_ready(request, mem_ready)
        st = self.status
        sent = done = None
        if self.buffer and egress_ready:
            sent, index = self.buffer.popleft()
            st["beats"] = (st["beats"] + 1) & COUNTER_MASK
            if sent["last"]:
                done = index
                st["commands"] = (st["commands"] + 1) & COUNTER_MASK
        arriving = self.in_flight.popleft()
        if arriving is not None:
            self.reads -= 1
            self.buffer.append(arriving)
        assert len(self.buffer) <= self.buffer_depth, "model: beat buffer overflow"
        read = None
        if request and mem_ready:
            act = self.active
            last = act["left"] == 1
            packet = {"dst_port": act["port"], "dst_addr": act["dst"], "op": act["op"], "last": int(last),
                      "data": self.memory(act["src"])}
            read = (packet, act["cmd"])
            act["src"] = (act["src"] + 1) & self.addr_mask
            act["dst"] = (act["dst"] + 1) & self.addr_mask
            act["left"] -= 1
            if last:
                self.active = None
        self.in_flight.append(read)
        if read is not None:
            self.reads += 1
        if cmd is not None and cmd_ready:
            desc = cmd["desc"]
            self.active = {"src": desc["src_addr"], "dst": desc["dst_addr"], "left": desc["beats"],
                           "port": desc["dst_port"], "op": desc["op"], "cmd": cmd["dma_cmd"]}
        return sent, done

    def idle(self) -> bool:
        return self.active is None and self.reads == 0 and not self.buffer
