# amaranth: UnusedElaboratable=no
"""Formal check of the near-memory reducer: memory = the requests applied in order.

The reducer is built with a small wrapping integer adder in place of the floating-point
one (``int_lane_width``): the pipeline, the forwarding and the hazard handling are the
same code, but integer addition is exact and associative, so "the word equals the sum of
its updates" is a property a solver can check (through an IEEE adder the sum depends on
the order and rounding, and the solver would have to model the rounding). The FP datapath
itself is checked against a reference model in its own bench.

The harness keeps a shadow of every word from the ports only: a ``STORE`` sets it, an
``UPDATE`` adds to it, in acceptance order. The reducer's promise is that a request
accepted in cycle *c* is visible to a read issued in *c + write_latency - read_latency +
1* or later, and to no read before, so the harness keeps the shadow delayed
(``committed``: the requests accepted up to that many cycles ago) and asserts that every
read returns, ``read_latency`` cycles later, the committed word of its address. The read
address is free, so every word is checked in every cycle; the requests are free too (any
address, op and data, back to back or with gaps), so every hazard pattern (same address
one, two or more cycles apart, across both words; an update refused while its word's sum
is in the adder, then forwarded from each source) is within the depth. Nothing is assumed
of the environment: the request port takes any payload, and an update it refuses is
offered again or replaced, as the port allows. Memory starts at zero, as the shadow does
(the bank's "no promise at power-up" is about its contents, not its arithmetic). Reset is
held low: a reset may drop the write-back of the last requests by design (the reducer's
docstring), which this contract does not describe.

Three broken reducers must be refuted: one with the forwarding removed (an update soon after
its word's previous request reads the stale word from the bank), one that forwards
whatever the address (requests to two words mix), and one that never waits (an update
enters the adder before its operand exists). The fast test
uses two lanes, so a carry that crossed lanes would fail it too.
"""

from __future__ import annotations

import importlib

import pytest
from amaranth.hdl import Array, Assert, Assume, Cat, Elaboratable, Module, Mux, ResetSignal, Signal, Value

from tb.formal.engine import prove
from tb.formal.variants import Patch, load_variant

#: Bits of the integer lane, words in the bank.
LANE_BITS = 3
DEPTH_WORDS = 2

#: The adder latency of the checked reducer: 2, the smallest with a hazard window (an
#: update one cycle after a request to its word waits), every forwarding source (the
#: write-back now, one and two cycles before) and a write latency of 4.
ADDER_LATENCY = 2

#: Cycles of every trace the fast test checks (``make formal`` goes deeper): the 4-cycle
#: write latency plus room for three dependent updates of a word (one per 2 cycles), a
#: request to the other word between them, and a read after them.
BMC_DEPTH = 14

#: Reducers that must fail the check.
BROKEN = {
    "no_forwarding": (Patch(
        "nmc.py", "m.d.comb += stored[bits].eq(Mux(from_writeback[c], writeback[bits], missed_or_bank))",
        "m.d.comb += stored[bits].eq(p2_bank[bits])",
        "no result is forwarded: an update soon after its word's previous request loses it"),),
    "forwards_any_address": (Patch(
        "nmc.py",
        'writeback_next = _matches(m, "writeback_next", copies, valid_at[L], addr_at[L], request.addr)',
        'writeback_next = _matches(m, "writeback_next", copies, valid_at[L], addr_at[L][:0], request.addr[:0])',
        "the write-back is forwarded whatever its address: requests to two words mix"),),
    "no_hazard_wait": (Patch(
        "nmc.py", "conflicts = [valid_at[k] & (addr_at[k] == request.addr) for k in range(1, L)]",
        "conflicts = []",
        "an update never waits: it enters the adder before its word's previous sum exists"),),
}


class Harness(Elaboratable):
    def __init__(self, *, rtl=None, lanes: int = 1, false_property: bool = False):
        nmc = importlib.import_module(f"{rtl.__name__}.nmc" if rtl else "rtl.nmc")
        self.update_op = nmc.WriteOp.UPDATE  # the variant's own enum
        self.false_property = false_property
        self.nmc = nmc.NearMemoryReducer(beat_width=LANE_BITS * lanes, depth=DEPTH_WORDS,
                                         int_lane_width=LANE_BITS, adder_latency=ADDER_LATENCY)

    def ports(self):
        return [Value.cast(v) for _, _, v in self.nmc.signature.flatten(self.nmc)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.nmc = r = self.nmc
        m.d.comb += Assume(~ResetSignal())
        width, lane = r.beat_width, r.lane_width

        shadow = Array(Signal(width, name=f"shadow{i}") for i in range(r.depth))
        committed = Array(Signal(width, name=f"committed{i}") for i in range(r.depth))
        req = r.request.payload
        with m.If(r.request.valid & r.request.ready):
            # Lane by lane, wrapping, like the integer lanes; a STORE replaces the word.
            lanes = [(shadow[req.addr][i * lane:(i + 1) * lane] + req.data[i * lane:(i + 1) * lane])[:lane]
                     for i in range(r.lanes)]
            m.d.sync += shadow[req.addr].eq(Mux(req.op == self.update_op, Cat(*lanes), req.data))
        # committed: the shadow a read issued now must show, as of write_latency - read_latency
        # cycles ago (a chain of copies): the docstring's "a request accepted in cycle c is
        # visible to a read issued in c + write_latency - read_latency + 1 or later".
        older = shadow
        for stage in range(r.write_latency - r.read_latency - 1):
            copy = Array(Signal(width, name=f"shadow{i}_d{stage + 1}") for i in range(r.depth))
            for i in range(r.depth):
                m.d.sync += copy[i].eq(older[i])
            older = copy
        for i in range(r.depth):
            m.d.sync += committed[i].eq(older[i])

        # The read's data shows read_latency cycles after it is issued.
        expect, reading = committed[r.read.addr], r.read.en
        for stage in range(r.read_latency):
            expect_next, reading_next = Signal(width, name=f"expect_{stage}"), Signal(name=f"reading_{stage}")
            m.d.sync += [expect_next.eq(expect), reading_next.eq(reading)]
            expect, reading = expect_next, reading_next
        if self.false_property:
            # Reachability of the set-up: an updated word is read back, so this must fail.
            m.d.comb += Assert(~reading | (r.read.data == 0), "deliberately false: every read returns 0")
        else:
            m.d.comb += Assert(~reading | (r.read.data == expect), "a read returns the requests applied in order")
        return m


def check(harness: Harness, tmp_path, depth: int = BMC_DEPTH):
    return prove(harness, harness.ports(), tmp_path, mode="bmc", depth=depth)


def test_reducer_memory_is_the_ordered_sum(tmp_path):
    result = check(Harness(lanes=2), tmp_path)
    assert result.proven, result.log[-4000:]


def test_set_up_reads_back_sums(tmp_path):
    result = check(Harness(false_property=True), tmp_path)
    assert result.refuted, result.log[-4000:]


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_reducer_is_refuted(name, tmp_path):
    result = check(Harness(rtl=load_variant(BROKEN[name])), tmp_path)
    assert result.refuted, result.log[-4000:]


def test_int_lane_width_is_validated():
    from rtl.nmc import NearMemoryReducer
    with pytest.raises(ValueError, match="int_lane_width must be between 1 and 64, not 0"):
        NearMemoryReducer(int_lane_width=0)
    with pytest.raises(ValueError, match="beat_width must be a multiple of 3 between 3 and 1024, not 4"):
        NearMemoryReducer(int_lane_width=3, beat_width=4)
    assert NearMemoryReducer(int_lane_width=3, beat_width=6, depth=2).lanes == 2


def test_broken_patches_still_apply():
    """A patch that no longer matches the RTL raises, instead of testing the unpatched reducer."""
    for patches in BROKEN.values():
        assert load_variant(patches).__name__.startswith("rtl_variant_")
