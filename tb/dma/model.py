"""Cycle-accurate golden models of the DMA command table, the DMA engine and their join.

Pure Python, written from the port-level behaviour documented in ``rtl/dma_table.py`` and
``rtl/dma_engine.py``: descriptors are a dict, queues are deques, the memory pipeline is a
list of slots. Per cycle a bench calls ``outputs()`` and then ``step(...)`` with the inputs
of the same cycle; ``step`` returns the events that depend combinationally on this cycle's
inputs (the handshakes, and ``done``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["DmaCommandTableModel", "DmaEngineModel", "DmaPathModel", "STORE", "UPDATE"]

STORE = 0
UPDATE = 1
COUNTER_MASK = (1 << 32) - 1

#: Specified latencies (cycles), from the blocks' documentation.
SPEC_LOOKUP_LATENCY = 2


def spec_start_latency(read_latency: int) -> int:
    """Engine: edge accepting a command (idle) to first ``egress.valid``."""
    return read_latency + 2


class TableOutputs(NamedTuple):
    program_ready: int
    trigger_ready: int
    issue_valid: int
    issue: dict | None
    status: dict


class DmaCommandTableModel:
    """Reference behaviour of :class:`rtl.dma_table.DmaCommandTable`."""

    def __init__(self, *, max_beats: int, queue_depth: int):
        self._outputs: TableOutputs | None = None
        self.max_beats = max_beats
        self.queue_depth = queue_depth
        self.descriptors: dict[int, dict] = {}
        self.in_flight: dict | None = None   # looked up last cycle, enters the queue now
        self.queue: deque[dict] = deque()
        self.status = {
            "err_unprogrammed": 0, "err_unprogrammed_index": 0,
            "err_bad_descriptor": 0, "err_bad_descriptor_index": 0,
            "triggers": 0, "issued": 0,
        }

    def outputs(self) -> TableOutputs:
        """This cycle's outputs, memoised until the next :meth:`step` (the bench and ``step`` both read them)."""
        if self._outputs is None:
            self._outputs = self._compute_outputs()
        return self._outputs

    def _compute_outputs(self) -> TableOutputs:
        pending = len(self.queue) + (self.in_flight is not None)
        return TableOutputs(
            program_ready=1,
            trigger_ready=int(pending < self.queue_depth),
            issue_valid=int(bool(self.queue)),
            issue=self.queue[0] if self.queue else None,
            status=dict(self.status),
        )

    def _flag(self, name: str, index: int) -> None:
        if not self.status[name]:
            self.status[name] = 1
            self.status[name + "_index"] = index

    def step(self, *, program: dict | None, trigger: dict | None, issue_ready: int) -> dict | None:
        """Advance one edge; return the command handed to ``issue`` in this cycle, if any."""
        out = self.outputs()
        st = self.status
        issued = None
        self._outputs = None
        if out.issue_valid and issue_ready:
            issued = self.queue.popleft()
            st["issued"] = (st["issued"] + 1) & COUNTER_MASK
        if self.in_flight is not None:
            self.queue.append(self.in_flight)
            self.in_flight = None
        assert len(self.queue) <= self.queue_depth, "model: issue queue overflow"
        if program is not None:  # ordered before a trigger of the same cycle
            desc = program["desc"]
            if desc["beats"] == 0 or desc["beats"] > self.max_beats:
                self._flag("err_bad_descriptor", program["index"])
            else:
                self.descriptors[program["index"]] = dict(desc)
        if trigger is not None and out.trigger_ready:
            st["triggers"] = (st["triggers"] + 1) & COUNTER_MASK
            index = trigger["dma_cmd"]
            if index in self.descriptors:
                self.in_flight = {"dma_cmd": index, "desc": dict(self.descriptors[index])}
            else:
                self._flag("err_unprogrammed", index)
        return issued


class EngineOutputs(NamedTuple):
    cmd_ready: int
    mem_en: int
    mem_addr: int | None   # meaningful only when mem_en
    egress_valid: int
    egress: dict | None
    status: dict


class DmaEngineModel:
    """Reference behaviour of :class:`rtl.dma_engine.DmaEngine`.

    Parameters
    ----------
    read_latency : int
        Cycles from a read to its data.
    addr_width : int
        Addresses wrap modulo ``2**addr_width``.
    memory : callable
        ``memory(addr)`` gives the word at ``addr``: the bench's memory, read when the
        model issues the read.
    """

    def __init__(self, *, read_latency: int, addr_width: int, memory: Callable[[int], int]):
        self._outputs: EngineOutputs | None = None
        self.read_latency = read_latency
        self.buffer_depth = read_latency + 2
        self.addr_mask = (1 << addr_width) - 1
        self.memory = memory
        self.current: dict | None = None
        self.reads: list[tuple[dict, int] | None] = [None] * read_latency  # newest first
        self.buffer: deque[tuple[dict, int]] = deque()  # (packet, dma_cmd)
        self.status = {"err_overflow": 0, "busy": 0, "commands": 0, "beats": 0}

    def _in_flight(self) -> int:
        return sum(slot is not None for slot in self.reads)

    def _can_read(self) -> bool:
        return self.current is not None and len(self.buffer) + self._in_flight() < self.buffer_depth

    def outputs(self) -> EngineOutputs:
        """This cycle's outputs, memoised until the next :meth:`step` (the bench and ``step`` both read them)."""
        if self._outputs is None:
            self._outputs = self._compute_outputs()
        return self._outputs

    def _compute_outputs(self) -> EngineOutputs:
        can_read = self._can_read()
        cur = self.current
        status = dict(self.status)
        status["busy"] = int(cur is not None or self._in_flight() > 0 or bool(self.buffer))
        return EngineOutputs(
            cmd_ready=int(cur is None or (can_read and cur["left"] == 1)),
            mem_en=int(can_read),
            mem_addr=cur["src"] if can_read else None,
            egress_valid=int(bool(self.buffer)),
            egress=self.buffer[0][0] if self.buffer else None,
            status=status,
        )

    def step(self, *, cmd: dict | None, egress_ready: int) -> tuple[dict | None, int | None]:
        """Advance one edge; return ``(packet sent, dma_cmd done)`` of this cycle."""
        out = self.outputs()
        st = self.status
        sent = done = None
        self._outputs = None
        if out.egress_valid and egress_ready:
            sent, index = self.buffer.popleft()
            st["beats"] = (st["beats"] + 1) & COUNTER_MASK
            if sent["last"]:
                done = index
                st["commands"] = (st["commands"] + 1) & COUNTER_MASK
        returning = self.reads[-1]
        if returning is not None:
            self.buffer.append(returning)
        assert len(self.buffer) <= self.buffer_depth, "model: beat buffer overflow"
        issued = None
        if out.mem_en:
            cur = self.current
            last = cur["left"] == 1
            packet = {"dst_port": cur["port"], "dst_addr": cur["dst"], "op": cur["op"],
                      "last": int(last), "data": self.memory(cur["src"])}
            issued = (packet, cur["cmd"])
            cur["src"] = (cur["src"] + 1) & self.addr_mask
            cur["dst"] = (cur["dst"] + 1) & self.addr_mask
            cur["left"] -= 1
            if last:
                self.current = None
        self.reads = [issued] + self.reads[:-1]
        if cmd is not None and out.cmd_ready:
            desc = cmd["desc"]
            self.current = {"src": desc["src_addr"], "dst": desc["dst_addr"], "left": desc["beats"],
                            "port": desc["dst_port"], "op": desc["op"], "cmd": cmd["dma_cmd"]}
        return sent, done

    def idle(self) -> bool:
        return self.current is None and self._in_flight() == 0 and not self.buffer


class DmaPathModel:
    """The table feeding the engine, as :class:`rtl.dma_path.DmaPath` joins them."""

    def __init__(self, *, max_beats: int, queue_depth: int, read_latency: int, addr_width: int,
                 memory: Callable[[int], int]):
        self.table = DmaCommandTableModel(max_beats=max_beats, queue_depth=queue_depth)
        self.engine = DmaEngineModel(read_latency=read_latency, addr_width=addr_width, memory=memory)

    def outputs(self) -> tuple[TableOutputs, EngineOutputs]:
        return self.table.outputs(), self.engine.outputs()

    def step(self, *, program: dict | None, trigger: dict | None,
             egress_ready: int) -> tuple[dict | None, int | None]:
        table_out, engine_out = self.outputs()
        self.table.step(program=program, trigger=trigger, issue_ready=engine_out.cmd_ready)
        return self.engine.step(cmd=table_out.issue, egress_ready=egress_ready)

    def idle(self) -> bool:
        t = self.table
        return t.in_flight is None and not t.queue and self.engine.idle()
