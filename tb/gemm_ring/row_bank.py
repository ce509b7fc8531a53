# amaranth: UnusedElaboratable=no
"""A DRAM-like memory behind a slice's door, for the GEMM ring's test harness (not synthesised).

Why: the slice's bank is a block RAM with a fixed latency, so the RTL cannot show what rows
do to the GEMM and T3's traffic, and the system model's row-aware channel had nothing in
the RTL to be checked against. This block gives each slice the part of a DRAM that
decides *when* a request may go: banks with an open row each. It paces the slice's grants
through the slice's ``dram_request``/``dram_ready`` door (``T3Slice(dram_ready=True)``);
the data still comes from the slice's block RAM, so every word stays bit-exact.

The rule (:class:`RowTiming`; a word address ``a``, the slice's beat address):

* mapping ``row | bank | column``: column ``a mod row_beats``, row ``a // (row_beats *
  banks)``, bank ``((a // row_beats) XOR fold(row)) mod banks`` (``bank_hash``, the
  default) or ``(a // row_beats) mod banks``, where ``fold(row)`` is the XOR of the row's
  bits taken ``log2(banks)`` at a time (the row's low bits, XOR the next ones, ...). The
  XOR is the permutation-based interleaving real controllers use (Zhang, Zhu and Zhang,
  MICRO 2000): without it the same offset in two chunks that start on a stripe boundary is
  always in one bank, so two streams walking two chunks a few beats apart (a
  reduce-scatter's DMA reads and its incoming updates) meet in one bank on almost every
  turn, or never, by their phase alone. The fold takes every row bit, as GPU address maps
  hash many high bits into the channel and bank: with the row's low bits alone, chunks
  ``banks`` rows apart (the crosscheck's 256-beat chunks, 4 rows of 4 banks) would again
  share their banks offset for offset;
* per bank an open row (none after reset) and a countdown;
* in every cycle, the request offered at the door may be granted (``ready``) when its bank
  has its row open and the bank's countdown is zero. If the bank's countdown is zero and
  another row (or none) is open, the bank starts opening the request's row: it is the open
  row from the next cycle, and the countdown is ``miss_cycles - 1``, one less each cycle.

So a request to an open row goes at once, and the first request to a closed row waits
exactly ``miss_cycles`` cycles at the door (precharge and activate, tRP + tRCD). Banks open
rows independently: an offer that changes while a bank opens (the arbiter's decision is
re-made every cycle) may start another bank's opening meanwhile.

Latency and throughput: ``ready`` is combinational from the request (no added cycle on a
hit); one request per cycle. ``misses`` counts the openings, ``wait_cycles`` the cycles an
offer was held.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Array, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.params import check_int, check_power_of_two
from rtl.ports import ValidSignature

__all__ = ["RowTiming", "RowBank", "RowBankReference"]

#: Width of the event counters.
COUNTER_WIDTH = 32


@dataclass(frozen=True)
class RowTiming:
    """The DRAM-like memory's geometry and row-miss cost (in slice cycles)."""

    banks: int = 4
    row_beats: int = 16
    miss_cycles: int = 8
    bank_hash: bool = True

    def __post_init__(self):
        check_power_of_two("banks", self.banks, 1, 64)
        check_power_of_two("row_beats", self.row_beats, 1, 4096)
        check_int("miss_cycles", self.miss_cycles, 1, 255)
        if not isinstance(self.bank_hash, bool):
            raise TypeError(f"bank_hash must be a bool, not {self.bank_hash!r}")

    def bank_row(self, addr: int) -> tuple[int, int]:
        """(bank, row) of a word address under the stated mapping."""
        row = addr // (self.row_beats * self.banks)
        block = addr // self.row_beats
        if not self.bank_hash:
            return block % self.banks, row
        folded, rest = 0, row
        while rest and self.banks > 1:
            folded ^= rest % self.banks
            rest //= self.banks
        return (block ^ folded) % self.banks, row


class RowBankReference:
    """The rule in plain Python, cycle by cycle (the unit test's reference; written from the
    module's docstring, not from :class:`RowBank`)."""

    def __init__(self, timing: RowTiming):
        self.timing = timing
        self.open = [None] * timing.banks
        self.count = [0] * timing.banks

    def cycle(self, request: int | None) -> int:
        """``ready`` for the request offered this cycle (None: none); then the edge."""
        ready = 0
        start = None
        if request is not None:
            bank, row = self.timing.bank_row(request)
            if self.count[bank] == 0:
                if self.open[bank] == row:
                    ready = 1
                else:
                    start = (bank, row)
        self.count = [max(0, c - 1) for c in self.count]
        if start is not None:
            self.open[start[0]] = start[1]
            self.count[start[0]] = self.timing.miss_cycles - 1
        return ready


class RowBank(wiring.Component):
    """Paces one slice's grants by the row state of ``timing.banks`` banks (see the module).

    Ports: ``request`` (in, valid with the slice's offer: ``{addr, write}``), ``ready``
    (out), ``status`` (``misses``, ``wait_cycles``).
    """

    def __init__(self, *, addr_width: int, timing: RowTiming):
        self.timing = timing
        self.addr_width = check_int("addr_width", addr_width, 1, 32)
        self.column_bits = (timing.row_beats - 1).bit_length()
        self.bank_bits = (timing.banks - 1).bit_length()
        if self.column_bits + self.bank_bits >= addr_width:
            raise ValueError(f"row_beats x banks must be below the bank's 2**{addr_width} words, not "
                             f"{timing.row_beats} x {timing.banks}")
        self.row_width = addr_width - self.column_bits - self.bank_bits
        self.status_layout = data.StructLayout({"misses": unsigned(COUNTER_WIDTH),
                                                "wait_cycles": unsigned(COUNTER_WIDTH)})
        super().__init__({
            "request": In(ValidSignature(data.StructLayout({"addr": unsigned(addr_width), "write": 1}))),
            "ready": Out(1),
            "status": Out(self.status_layout),
        })

    def elaborate(self, platform):
        m = Module()
        t = self.timing
        count_width = max(1, (t.miss_cycles - 1).bit_length())
        open_valid = Array(Signal(name=f"open_valid_{b}") for b in range(t.banks))
        open_row = Array(Signal(self.row_width, name=f"open_row_{b}") for b in range(t.banks))
        count = Array(Signal(count_width, name=f"count_{b}") for b in range(t.banks))
        addr = self.request.payload.addr
        bank = Signal(max(1, self.bank_bits))
        row = Signal(self.row_width)
        block = addr[self.column_bits:self.column_bits + self.bank_bits] if self.bank_bits else 0
        if self.timing.bank_hash and self.bank_bits:
            row_bits = addr[self.column_bits + self.bank_bits:]
            for low in range(0, len(row_bits), self.bank_bits):
                block = block ^ row_bits[low:low + self.bank_bits]
        m.d.comb += [bank.eq(block), row.eq(addr[self.column_bits + self.bank_bits:])]
        idle = count[bank] == 0
        hit = open_valid[bank] & (open_row[bank] == row)
        m.d.comb += self.ready.eq(self.request.valid & idle & hit)
        for b in range(t.banks):
            with m.If(count[b] != 0):
                m.d.sync += count[b].eq(count[b] - 1)
        with m.If(self.request.valid & idle & ~hit):
            m.d.sync += [open_valid[bank].eq(1), open_row[bank].eq(row), count[bank].eq(t.miss_cycles - 1),
                         self.status.misses.eq(self.status.misses + 1)]
        with m.If(self.request.valid & ~self.ready):
            m.d.sync += self.status.wait_cycles.eq(self.status.wait_cycles + 1)
        return m
