"""Base class of the lock-step cocotb benches: clock, reset and the per-cycle loop."""

from __future__ import annotations

import json
import logging
import os
import random
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from .scoreboard import Scoreboard

__all__ = ["LockstepTB", "CLOCK_PERIOD_NS", "STATS_ENV", "register_tests"]

CLOCK_PERIOD_NS = 10
#: Environment variable naming the JSON file where a test leaves its cycle counts.
STATS_ENV = "T3_BENCH_STATS"


class LockstepTB:
    """Owns the cycle loop: after each rising edge :meth:`drive`, then :meth:`check`.

    Subclasses implement :meth:`drive` (write every input for the coming cycle) and
    :meth:`check` (in the read-only phase: read every output, compare it with the golden
    model through :attr:`scoreboard`, and advance the model by one edge).
    """

    def __init__(self, dut, *, seed: int | None = None):
        self.dut = dut
        self.seed = cocotb.RANDOM_SEED if seed is None else seed
        self.rng = random.Random(self.seed)
        self.log = logging.getLogger(f"cocotb.tb.{type(self).__name__}")
        self.log.info("random seed %d (replay with the SEED= line that pytest printed)", self.seed)
        self.scoreboard = Scoreboard(self.log)
        self.cycle = 0
        self._started = time.perf_counter()

    async def start(self, *, reset_cycles: int = 2) -> None:
        self._started = time.perf_counter()
        Clock(self.dut.clk, CLOCK_PERIOD_NS, unit="ns").start()
        self.reset_inputs()
        self.dut.rst.value = 1
        for _ in range(reset_cycles):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    def write_stats(self, **counts: int) -> None:
        """Leave this test's figures for the pytest runner's summary (cycles, checks, ...).

        ``wall_s`` is the wall time since :meth:`start`: ``make bench`` divides the cycles by
        it for a simulation rate free of the simulator's start-up.
        """
        path = os.environ.get(STATS_ENV)
        stats = {"cycles": self.cycle, "checks": self.scoreboard.checks,
                 "mismatches": self.scoreboard.mismatches, **counts,
                 "wall_s": round(time.perf_counter() - self._started, 4)}
        self.log.info("stats: %s", stats)
        if path:
            with open(path, "w") as f:
                json.dump(stats, f)

    def reset_inputs(self) -> None:
        """Drive every input to its idle value during reset."""

    def drive(self) -> None:
        raise NotImplementedError

    def quiescent(self) -> bool:
        """True once all stimulus is consumed and the model owes no more output (for :meth:`drain`)."""
        raise NotImplementedError

    @property
    def settle_cycles(self) -> int:
        """Idle cycles :meth:`drain` runs after :meth:`quiescent`: the DUT's longest latency and a margin.

        Nothing may appear on an output in them, and the per-cycle checks go on.
        """
        return 4

    async def drain(self, *, timeout: int = 300_000) -> None:
        """Run until :meth:`quiescent`, then :attr:`settle_cycles` more."""
        await self.run(until=self.quiescent, timeout=timeout)
        await self.run(cycles=self.settle_cycles)

    def check(self) -> None:
        raise NotImplementedError

    async def run(self, *, cycles: int | None = None, until=None, timeout: int = 1_000_000) -> int:
        """Run whole cycles: ``cycles`` of them, or until ``until()`` is true.

        Returns the number of cycles run. Fails if ``until`` is not met within ``timeout``.
        """
        ran = 0
        while True:
            if cycles is not None and ran >= cycles:
                return ran
            if until is not None and until():
                return ran
            assert ran < timeout, f"no progress after {timeout} cycles (stopped at cycle {self.cycle})"
            await RisingEdge(self.dut.clk)
            self.drive()
            await ReadOnly()
            self.check()
            self.cycle += 1
            ran += 1


def register_tests(namespace: dict, names, body) -> None:
    """Define one cocotb test per name in ``namespace`` (a bench module's ``globals()``).

    A name is ``prefix__field1__field2...``; each test runs ``body(dut, field1, field2, ...)``.
    This is how the benches cross a scenario with the idle/back-pressure matrix.
    """
    for name in names:
        fields = name.split("__")[1:]

        async def test(dut, _fields=tuple(fields)):
            await body(dut, *_fields)

        test.__name__ = test.__qualname__ = name
        test.__module__ = namespace["__name__"]
        test.__doc__ = body.__doc__
        namespace[name] = cocotb.test(test)
