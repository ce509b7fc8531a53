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
from cocotb.utils import get_sim_time

from . import protocol
from .protocol import BenchRegistry, ProtocolViolation
from .scoreboard import Scoreboard

__all__ = ["LockstepTB", "RunTimeout", "CLOCK_PERIOD_NS", "PARAMS_ENV", "STATS_ENV", "REPLAY_ENV", "STREAMS_ENV",
           "bench_params", "register_tests", "replay_line"]

CLOCK_PERIOD_NS = 10
#: Environment variable naming the JSON file where a test leaves its cycle counts.
STATS_ENV = "T3_BENCH_STATS"
#: Environment variable with the pytest runner's replay line of the running test.
REPLAY_ENV = "T3_REPLAY"
#: Environment variable with the top module's valid/ready streams (JSON, :func:`protocol.stream_ports`).
STREAMS_ENV = "T3_BENCH_STREAMS"
#: Environment variable carrying the bench's parameter set (JSON) into the simulator.
PARAMS_ENV = "T3_BENCH_PARAMS"


def bench_params() -> dict:
    """Inside the simulator: the parameter set the runner passed in. (Here, not beside the
    runner: the simulator's Python imports only this side, and the runner's imports, every
    block's Amaranth code and its converter, cost every cocotb test a quarter of a second.)"""
    return json.loads(os.environ.get(PARAMS_ENV, "{}"))


class RunTimeout(AssertionError):
    """:meth:`LockstepTB.run` did not reach its condition in time."""


def replay_line(explicit_seed: int | None = None) -> str:
    """How to replay the running test: the runner's line (``replay: SEED=...``), or the
    cocotb seed when the test was not started by the pytest runner. A bench seed that did
    not come from cocotb (``LockstepTB(seed=...)``) is added."""
    line = os.environ.get(REPLAY_ENV) or (
        f"replay: COCOTB_RANDOM_SEED={os.environ.get('COCOTB_RANDOM_SEED', '?')} (not started by the pytest runner)")
    if explicit_seed is not None:
        line += f", bench seed {explicit_seed}"
    return line


class LockstepTB:
    """Owns the cycle loop: after each rising edge :meth:`drive`, then :meth:`check`.

    Subclasses implement :meth:`drive` (write every input for the coming cycle) and
    :meth:`check` (in the read-only phase: read every output, compare it with the golden
    model through :attr:`scoreboard`, and advance the model by one edge).

    Every stream endpoint built after ``LockstepTB.__init__`` joins :attr:`streams` (a
    :class:`~tb.common.protocol.BenchRegistry`): its protocol checker sees every cycle of
    :meth:`run`, and :meth:`reset_dut` resets it. Streams of the top module that no endpoint
    drives or samples get a :class:`~tb.common.streams.StreamMonitor` at the first cycle.
    The first mismatch or protocol violation fails the test, with the replay line.
    """

    #: Streams whose hold rule is not checked, each with the reason (e.g. a port the RTL
    #: documents as re-decided every cycle). Their X/Z checks stay.
    relaxed_streams: dict[str, str] = {}

    def __init__(self, dut, *, seed: int | None = None):
        self.dut = dut
        self.seed = cocotb.RANDOM_SEED if seed is None else seed
        self.rng = random.Random(self.seed)
        self.log = logging.getLogger(f"cocotb.tb.{type(self).__name__}")
        self.log.info("random seed %d (replay with the SEED= line that pytest printed)", self.seed)
        self.replay = replay_line(seed)
        self.scoreboard = Scoreboard(self.log, context=self.context)
        self.streams = BenchRegistry(cycle=lambda: self.cycle, context=self.context)
        protocol.activate(self.streams)
        self._monitored = False
        self.resets = 0
        self.cycle = 0
        self._started = time.perf_counter()

    def context(self) -> str:
        """Where a failure happened and how to replay it (for failure messages)."""
        return f"sim time {get_sim_time('ns'):.0f} ns\n  {self.replay}"

    def monitor_unclaimed_streams(self) -> None:
        """Put a :class:`~tb.common.streams.StreamMonitor` on each top-level stream (from the
        runner's list) that no source, sink or monitor of this bench covers."""
        from .streams import StreamMonitor  # streams imports protocol only; avoid a cycle at import

        self._monitored = True
        listed = json.loads(os.environ.get(STREAMS_ENV, "[]"))
        claimed = self.streams.names()
        added = []
        for port in listed:
            if port["name"] not in claimed:
                StreamMonitor(self.dut, port["name"], ready=port["ready"], payload=port["payload"],
                              check_payload_x=port["dir"] == "out", registry=self.streams)
                added.append(port["name"])
        for endpoint in self.streams.endpoints:
            reason = self.relaxed_streams.get(endpoint.name)
            if reason:
                endpoint.checker.relax(reason)
                self.log.warning("stream %s: hold rule not checked (%s)", endpoint.name, reason)
        self.log.info("stream protocol checks on %d streams: %s; by monitor: %s", len(self.streams.endpoints),
                      ", ".join(sorted(claimed)) or "-", ", ".join(added) or "-")

    async def reset_dut(self, cycles: int = 2) -> None:
        """Reset the DUT in the middle of a run: ``rst`` high for ``cycles`` rising edges.

        Call it between :meth:`run` calls. The edge that ends the current cycle passes as
        usual (the model stepped over it in :meth:`check`), then :meth:`reset_inputs` and
        ``rst`` are driven for ``cycles`` edges, every stream endpoint is reset (checkers
        restart, drivers drive anew; an item offered but not taken stays queued), and
        :meth:`on_reset` resets the bench's model. Like :meth:`start`, it returns right
        after the edge that releases reset; the next :meth:`run` cycle follows one idle edge.
        """
        await RisingEdge(self.dut.clk)
        self.streams.reset()
        self.reset_inputs()
        self.dut.rst.value = 1
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.streams.reset()
        self.resets += 1
        self.on_reset()

    def on_reset(self) -> None:
        """Called after :meth:`reset_dut`: put the golden model (and bench state) back to reset."""

    async def start(self, *, reset_cycles: int = 2) -> None:
        self._started = time.perf_counter()
        Clock(self.dut.clk, CLOCK_PERIOD_NS, unit="ns").start()
        self.reset_inputs()
        self.dut.rst.value = 1
        for _ in range(reset_cycles):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        self.streams.reset()

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

        Returns the number of cycles run. Raises :class:`RunTimeout` if ``until`` is not met
        within ``timeout``. Each cycle ends with the protocol check of every stream endpoint
        that :meth:`check` did not sample.
        """
        if not self._monitored:
            self.monitor_unclaimed_streams()
        ran = 0
        while True:
            if cycles is not None and ran >= cycles:
                return ran
            if until is not None and until():
                return ran
            if ran >= timeout:
                raise RunTimeout(f"no progress after {timeout} cycles (stopped at cycle {self.cycle})"
                                 f"\n  {self.context()}")
            await RisingEdge(self.dut.clk)
            self.drive()
            await ReadOnly()
            try:
                self.check()
                self.streams.end_cycle(self.cycle)
            except ProtocolViolation as exc:
                self.log.error("%s", exc)
                raise
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
