# amaranth: UnusedElaboratable=no
"""Formal proof of the memory arbiter's properties with yosys ``sat -tempinduct``.

The RTL carries its own assertions (one grant per cycle, only from a requesting class,
requests unaltered). The harness counts the communication request's wait itself, from
the ports, and proves that ``status.comm_wait`` equals it; both are proven for any
``grant.ready`` behaviour. A second harness assumes a bank that never back-pressures
(``grant.ready`` high) and proves that this independently counted wait never exceeds
``starvation_limit`` in MCA mode. Both assume that mode and limit stay
constant (they are configuration) and prove every assertion for all reachable states by
induction. A deliberately false property shows that the set-up can fail, and two broken
arbiters (kept as source patches, :data:`BROKEN`) are refuted: one whose wait counter
never goes back to zero at a grant, one that lets a starving request wait one cycle past
its limit.
"""

from __future__ import annotations

import importlib

import pytest
from amaranth.hdl import Assert, Assume, Elaboratable, Module, Signal, Value

from tb.formal.sat import run_sat
from tb.formal.variants import Patch, load_variant

#: Broken arbiters the proofs must refute: name -> (patches, harness that refutes it).
BROKEN = {
    "wait_never_resets": ((Patch("arbiter.py", "            m.d.sync += wait.eq(0)\n",
                                 "            pass\n", why="the wait survives the grant"),), False),
    "starves_one_cycle_more": ((Patch("arbiter.py", "(wait >= self.starvation_limit)",
                                      "(wait > self.starvation_limit)", why="waits limit + 1"),), True),
}


class Harness(Elaboratable):
    def __init__(self, *, false_property: bool = False, bank_always_ready: bool = False, rtl=None):
        arbiter = importlib.import_module(f"{rtl.__name__}.arbiter" if rtl else "rtl.arbiter")
        self.arbiter = arbiter.MemoryArbiter(payload_shape=4, level_width=3, wait_width=5)
        self.mca = arbiter.ArbiterMode.MCA   # a variant package has its own enum
        self.false_property = false_property
        self.bank_always_ready = bank_always_ready

    def ports(self):
        return [Value.cast(value) for _, _, value in self.arbiter.signature.flatten(self.arbiter)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.arbiter = arb = self.arbiter
        started = Signal()
        limit = Signal.like(arb.starvation_limit)
        mode = Signal.like(arb.mode)
        m.d.sync += [started.eq(1), limit.eq(arb.starvation_limit), mode.eq(arb.mode)]
        with m.If(started):
            m.d.comb += [Assume(arb.starvation_limit == limit), Assume(arb.mode == mode)]
        # The wait as the docstring specifies it, counted here independently of the RTL's
        # counter: every cycle the communication request is valid and not granted, back to 0
        # at its grant, saturating at the counter's width.
        wait = Signal.like(arb.status.comm_wait)
        with m.If(arb.comm.ready):
            m.d.sync += wait.eq(0)
        with m.Elif(arb.comm.valid & (wait != (1 << len(wait)) - 1)):
            m.d.sync += wait.eq(wait + 1)
        m.d.comb += [Assert(started | (wait == 0), "reset state"),
                     Assert(arb.status.comm_wait == wait, "status.comm_wait counts the specified wait")]
        if not self.bank_always_ready:
            return m
        m.d.comb += Assume(arb.grant.ready)
        with m.If(arb.mode == self.mca):
            if self.false_property:
                m.d.comb += Assert(wait < arb.starvation_limit, "deliberately false")
            else:
                m.d.comb += Assert(wait <= arb.starvation_limit, "starvation bound")
        return m


def prove(harness: Harness, tmp_path) -> str:
    return run_sat(harness, harness.ports(), tmp_path,
                   "sat -tempinduct -prove-asserts -set-assumes -set-init-zero -maxsteps 20")


@pytest.mark.parametrize("bank_always_ready", [False, True], ids=["any-grant-ready", "grant-ready-high"])
def test_arbiter_properties_proven_by_induction(tmp_path, bank_always_ready):
    log = prove(Harness(bank_always_ready=bank_always_ready), tmp_path)
    assert "Induction step proven: SUCCESS!" in log, log[-3000:]


def test_false_property_is_refuted(tmp_path):
    log = prove(Harness(false_property=True, bank_always_ready=True), tmp_path)
    assert "SUCCESS" not in log
    assert "failed" in log.lower() or "FAIL" in log, log[-3000:]


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_arbiter_is_refuted(tmp_path, name):
    patches, bank_always_ready = BROKEN[name]
    log = prove(Harness(bank_always_ready=bank_always_ready, rtl=load_variant(patches)), tmp_path)
    assert "SUCCESS" not in log, f"{name} was not refuted"
    assert "failed" in log.lower() or "FAIL" in log, log[-3000:]
