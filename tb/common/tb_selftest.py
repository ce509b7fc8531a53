# amaranth: UnusedElaboratable=no
"""cocotb tests of the bench library itself, on a tiny DUT (run by ``tests/test_sim_checks.py``).

The DUT is a counter stream ``out`` (payload = number of transfers so far) with knobs that
break it on purpose: ``drop`` forces ``valid`` low, ``bump`` advances the payload without a
transfer, and the RTL ``Assert(~a)`` fails while ``a`` is high. The tests show that the
stream protocol checker, the fail-fast scoreboard, the mid-run reset and the simulation
rewrite of RTL assertions (``rtl.flow.generate.simulation_asserts``) work end to end.
"""

from __future__ import annotations

import cocotb
from amaranth.hdl import Assert, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.types import Logic

from tb.common.lockstep import CLOCK_PERIOD_NS, LockstepTB
from tb.common.protocol import ProtocolViolation
from tb.common.streams import StreamSink

LAYOUT = data.StructLayout({"n": 8})


class SelfTestDut(wiring.Component):
    """``out``: a counter stream; ``drop``, ``bump`` and ``a`` break it (see the module doc)."""

    def __init__(self):
        super().__init__({"a": In(1), "drop": In(1), "bump": In(1), "out": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        count = Signal(8)
        m.d.comb += [self.out.valid.eq(~self.drop), self.out.payload.eq(count)]
        with m.If((self.out.valid & self.out.ready) | self.bump):
            m.d.sync += count.eq(count + 1)
        m.d.sync += Assert(~self.a, "a is high")
        return m


class TB(LockstepTB):
    def __init__(self, dut, *, p_ready=0.5):
        super().__init__(dut)
        self.sink = StreamSink(dut, "out", LAYOUT, self.rng, p_ready)
        self.force_ready: int | None = None
        self.a = self.drop = self.bump = 0
        self.expected = 0
        self.model_error = 0

    def reset_inputs(self):
        for name in ("a", "drop", "bump", "out__ready"):
            getattr(self.dut, name).value = 0

    def drive(self):
        self.sink.drive(self.force_ready)
        self.dut.a.value = self.a
        self.dut.drop.value = self.drop
        self.dut.bump.value = self.bump

    def check(self):
        valid, raw = self.sink.sample()
        self.scoreboard.check(self.cycle, "out.valid", valid, int(not self.drop))
        if valid:
            self.scoreboard.check(self.cycle, "out.payload", raw, (self.expected + self.model_error) & 0xFF,
                                  explain=lambda g, e: f"n: {g} != {e}")
        if (valid and self.sink.current_ready) or self.bump:
            self.expected += 1

    def on_reset(self):
        self.expected = 0


async def _stall(tb: TB, cycles: int = 3) -> None:
    """Run until ``out`` has a stalled item: valid high and ready forced low."""
    tb.force_ready = 0
    await tb.run(cycles=cycles)
    assert tb.sink.checker.stall_cycles >= cycles


@cocotb.test()
async def legal_traffic_with_midrun_reset(dut):
    """Random back-pressure, a reset while an item is stalled, more traffic: no violation."""
    tb = TB(dut)
    await tb.start()
    await tb.run(cycles=60)
    await _stall(tb)
    await tb.reset_dut(3)   # the held payload restarts at 0: the checker must restart too
    tb.force_ready = None
    await tb.run(cycles=60)
    c = tb.sink.checker
    assert c.transfers > 20 and c.stall_cycles > 3 and tb.resets == 1, vars(c)
    tb.scoreboard.assert_clean()


async def _expect_violation(tb: TB, *phrases: str) -> None:
    try:
        await tb.run(cycles=2)
    except ProtocolViolation as exc:
        message = str(exc)
        for phrase in (*phrases, "'out'", "replay: SEED="):
            assert phrase in message, f"{phrase!r} not in {message!r}"
        return
    raise AssertionError("the protocol violation was not caught")


@cocotb.test()
async def valid_drop_is_caught(dut):
    tb = TB(dut)
    await tb.start()
    await _stall(tb)
    tb.drop = 1
    await _expect_violation(tb, "valid fell before the transfer", "valid=0 ready=0")


@cocotb.test()
async def payload_change_is_caught(dut):
    tb = TB(dut)
    await tb.start()
    await _stall(tb)
    tb.bump = 1
    await _expect_violation(tb, "payload changed while waiting for ready")


@cocotb.test()
async def mismatch_fails_fast(dut):
    """Fails on purpose: the model is off by one from cycle 0 (the pytest side checks the message)."""
    tb = TB(dut)
    tb.model_error = 1
    await tb.start()
    await tb.run(cycles=1000)


@cocotb.test()
async def rtl_assert_fails(dut):
    """Fails on purpose: ``a`` goes high after reset, the RTL assertion stops the simulator."""
    tb = TB(dut)
    await tb.start()
    await tb.run(cycles=5)
    tb.a = 1
    await tb.run(cycles=5)


@cocotb.test()
async def rtl_assert_x_after_reset_fails(dut):
    """Fails on purpose (4-state simulators): ``a`` is X after reset, so the assertion is not 1."""
    tb = TB(dut)
    await tb.start()
    await tb.run(cycles=5)
    tb.a = Logic("X")
    await tb.run(cycles=5)


@cocotb.test()
async def rtl_assert_x_before_reset_passes(dut):
    """Inputs are X for a few edges before the first reset: the assertion does not count them."""
    Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start()
    await ClockCycles(dut.clk, 3)
    for name in ("a", "drop", "bump", "out__ready"):
        getattr(dut, name).value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 10)
    await RisingEdge(dut.clk)
