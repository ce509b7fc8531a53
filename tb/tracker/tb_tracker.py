# amaranth: UnusedElaboratable=no
"""cocotb bench of the tracker table, compared with the golden model on every cycle.

Run through ``tb/tracker/test_tracker.py`` (pytest), never collected by pytest itself.
"""

from __future__ import annotations

import cocotb

from rtl.tracker import TrackerTable
from tb.common.lockstep import LockstepTB, register_tests
from tb.common.packing import field_diff, pack, unpack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.runner import bench_params
from tb.common.streams import StreamSink, StreamSource
from tb.tracker.model import LOCAL, REMOTE, TrackerTableModel
from tb.tracker.scenarios import DIRECTED_TESTS, RANDOM_TESTS
from tb.tracker.traffic import LegalTraffic


class TB(LockstepTB):
    """Tracker bench: arm and update sources, trigger sink, golden model, scoreboard."""

    def __init__(self, dut, *, arm_p=1.0, update_p=1.0, trigger_p=1.0):
        super().__init__(dut)
        self.params = bench_params()
        self.spec = TrackerTable(**self.params)  # public port layouts and timing properties
        self.model = TrackerTableModel(entries=self.spec.entries, trigger_depth=self.spec.trigger_depth)
        self.traffic: LegalTraffic | None = None
        self.arm_src = StreamSource(dut, "arm", self.spec.arm_layout, self.rng, arm_p,
                                    next_item=lambda: self.traffic and self.traffic.next_arm())
        self.update_src = StreamSource(dut, "update", self.spec.update_layout, self.rng, update_p,
                                       next_item=lambda: self.traffic and self.traffic.next_update())
        self.trigger_sink = StreamSink(dut, "trigger", self.spec.trigger_layout, self.rng, trigger_p)
        self.force_trigger_ready: int | None = None
        self.arms_accepted: list[dict] = []
        self.updates_accepted = 0
        self.update_accept_cycle: dict[int, int] = {}   # tile -> cycle of its latest update
        self.trigger_valid_rise: list[tuple[int, int]] = []  # (tile, cycle its trigger was first valid)
        self.update_ready_low_cycles = 0
        self.max_armed_entries = 0
        self._prev_trigger_valid = 0
        self._popped_last_cycle = False

    def use_traffic(self, **kwargs) -> LegalTraffic:
        self.traffic = LegalTraffic(
            self.rng, max_threshold=2**self.spec.count_width - 1,
            dma_cmd_limit=2**self.spec.dma_cmd_width, **kwargs)
        return self.traffic

    def reset_inputs(self) -> None:
        for name in ("arm__valid", "update__valid", "trigger__ready"):
            getattr(self.dut, name).value = 0

    def drive(self) -> None:
        self.arm_src.drive()      # first: an update may target the tile armed this cycle
        self.update_src.drive()
        self.trigger_sink.drive(self.force_trigger_ready)

    def check(self) -> None:
        dut, sb, cycle = self.dut, self.scoreboard, self.cycle
        expected = self.model.outputs()
        sb.check(cycle, "arm.ready", int(dut.arm__ready.value), expected.arm_ready)
        update_ready = int(dut.update__ready.value)
        sb.check(cycle, "update.ready", update_ready, expected.update_ready)
        trigger_valid, trigger_raw = self.trigger_sink.sample()
        sb.check(cycle, "trigger.valid", trigger_valid, expected.trigger_valid)
        if trigger_valid and expected.trigger_valid:
            got = unpack(self.spec.trigger_layout, trigger_raw)
            sb.check(cycle, "trigger.payload", (got["tile"], got["dma_cmd"]), expected.trigger)
        status = int(dut.status.value)
        layout = self.spec.status_layout
        sb.check(cycle, "status", status, pack(layout, expected.status),
                 explain=lambda g, e: field_diff(layout, g, e))

        # Observations for the directed checks, independent of the model.
        # A trigger is new when valid rises or the previous one was taken last cycle.
        if trigger_valid and (not self._prev_trigger_valid or self._popped_last_cycle):
            self.trigger_valid_rise.append((unpack(self.spec.trigger_layout, trigger_raw)["tile"], cycle))
        self._prev_trigger_valid = trigger_valid
        self.update_ready_low_cycles += not update_ready
        self.max_armed_entries = max(self.max_armed_entries, unpack(layout, status)["armed_entries"])

        # Handshakes as the DUT saw them; the model uses the same offered items.
        arm_offered, arm_taken = self.arm_src.handshake()
        update_offered, update_taken = self.update_src.handshake()
        self._popped_last_cycle = bool(trigger_valid and self.trigger_sink.current_ready)
        if self._popped_last_cycle:
            self.trigger_sink.record(trigger_raw)
        self.model.step(
            arm=arm_offered and (arm_offered["tile"], arm_offered["threshold"], arm_offered["dma_cmd"]),
            update=update_offered and (update_offered["tile"], update_offered["source"]),
            trigger_ready=self.trigger_sink.current_ready,
        )
        if arm_taken:
            self.arms_accepted.append(arm_taken)
        if update_taken:
            self.updates_accepted += 1
            self.update_accept_cycle[update_taken["tile"]] = cycle
            if self.traffic is not None:
                self.traffic.on_update_accepted(update_taken)

    def quiescent(self) -> bool:
        m = self.model
        return (self.arm_src.idle() and self.update_src.idle()
                and (self.traffic is None or self.traffic.done())
                and not m.armed and m.in_flight is None and not m.queue)

    def final_check(self, *, errors_expected: bool = False) -> None:
        status = unpack(self.spec.status_layout, int(self.dut.status.value))
        self.log.info("cycles=%d updates=%d arms=%d triggers=%d checks=%d mismatches=%d",
                      self.cycle, self.updates_accepted, len(self.arms_accepted),
                      len(self.trigger_sink.received), self.scoreboard.checks, self.scoreboard.mismatches)
        assert status["armed_entries"] == 0, f"{status['armed_entries']} entries left armed"
        assert status["triggers"] == len(self.trigger_sink.received)
        if not errors_expected:
            for flag in ("err_unarmed_update", "err_rearm", "err_zero_threshold"):
                assert status[flag] == 0, f"unexpected {flag} (tile {status[flag + '_tile']})"
            # Every arm produced exactly one trigger, with the programmed command.
            armed = sorted((a["tile"], a["dma_cmd"]) for a in self.arms_accepted)
            fired = sorted((t["tile"], t["dma_cmd"]) for t in self.trigger_sink.received)
            assert fired == armed, "triggers differ from arms"
        self.write_stats(updates=self.updates_accepted, arms=len(self.arms_accepted),
                         triggers=len(self.trigger_sink.received))
        self.scoreboard.assert_clean()



# -- random traffic crossed with the idle/back-pressure matrix ------------------------------

async def random_test(dut, source, sink):
    tb = TB(dut, arm_p=SOURCE_PATTERNS[source], update_p=SOURCE_PATTERNS[source],
            trigger_p=SINK_PATTERNS[sink])
    entries = tb.spec.entries
    # Fewer arms when the sources idle, so that each test simulates a similar time.
    arms = {"full": 700, "gaps": 450, "idle": 90}[source]
    tb.use_traffic(tiles=range(entries), arms=arms, max_in_flight=tb.rng.choice([4, entries // 2, entries]))
    await tb.start()
    await tb.drain()
    tb.final_check()


register_tests(globals(), RANDOM_TESTS, random_test)


# -- directed tests -------------------------------------------------------------------------

@cocotb.test()
async def back_to_back_same_tile(dut):
    """One tile at full rate to its maximum threshold, then two tiles interleaved."""
    tb = TB(dut)
    top = min(200, 2**tb.spec.count_width - 1)
    tb.arm_src.queue.append({"tile": 1, "threshold": top, "dma_cmd": 1})
    await tb.start()
    await tb.run(cycles=1)
    tb.update_src.queue.extend({"tile": 1, "source": LOCAL} for _ in range(top))
    await tb.drain()
    last_update = tb.update_accept_cycle[1]
    rise = [c for tile, c in tb.trigger_valid_rise if tile == 1]
    assert rise == [last_update + tb.spec.trigger_latency], (
        f"trigger rose at {rise}, last update at {last_update}, trigger_latency {tb.spec.trigger_latency}")
    # Hazard distance 1 and 2: A B A B ...
    tb.arm_src.queue.extend([{"tile": 2, "threshold": top, "dma_cmd": 2},
                             {"tile": 3, "threshold": top, "dma_cmd": 3}])
    await tb.run(cycles=2)
    tb.update_src.queue.extend({"tile": t, "source": REMOTE} for _ in range(top) for t in (2, 3))
    start = tb.cycle
    await tb.drain()
    # Full rate: 2*top updates in 2*top cycles (plus the drain tail), no bubbles.
    busy = tb.update_accept_cycle[3] - start + 1
    assert busy == 2 * top, f"{2 * top} updates took {busy} cycles"
    tb.final_check()


@cocotb.test()
async def all_entries_in_flight(dut):
    """Arm every entry, then update them round robin so that all are armed at once."""
    tb = TB(dut)
    entries = tb.spec.entries
    rounds = min(3, 2**tb.spec.count_width - 1)
    tb.arm_src.queue.extend({"tile": t, "threshold": rounds, "dma_cmd": t % 2**tb.spec.dma_cmd_width}
                            for t in range(entries))
    tb.update_src.queue.extend({"tile": t, "source": (t + r) % 2} for r in range(rounds) for t in range(entries))
    await tb.start()
    await tb.drain()
    assert tb.max_armed_entries == entries, f"peak armed entries {tb.max_armed_entries} != {entries}"
    tb.final_check()


@cocotb.test()
async def rearm_right_after_trigger(dut):
    """One tile re-armed in the cycle after its last update, with arm and update together."""
    tb = TB(dut)
    tb.use_traffic(tiles=[5], arms=120, max_in_flight=1, repeat_tile=1.0)
    await tb.start()
    await tb.drain()
    assert len(tb.trigger_sink.received) == 120
    tb.final_check()


@cocotb.test()
async def trigger_stalled_until_queue_full(dut):
    """A stalled trigger sink fills the queue; update.ready falls and nothing is lost."""
    tb = TB(dut)
    tiles = min(40, tb.spec.entries)
    tb.arm_src.queue.extend({"tile": t, "threshold": 1, "dma_cmd": 0} for t in range(tiles))
    tb.update_src.queue.extend({"tile": t, "source": LOCAL} for t in range(tiles))
    tb.force_trigger_ready = 0
    await tb.start()
    await tb.run(cycles=100)
    assert tb.updates_accepted == tb.spec.trigger_depth, (
        f"accepted {tb.updates_accepted} updates into a {tb.spec.trigger_depth}-deep stalled queue")
    assert tb.update_ready_low_cycles > 0
    tb.force_trigger_ready = None
    await tb.drain()
    tb.final_check()


async def _error_prologue(tb: TB, arms, updates):
    tb.arm_src.queue.extend(arms)
    await tb.start()
    await tb.run(cycles=len(arms))
    tb.update_src.queue.extend(updates)
    await tb.drain()
    return unpack(tb.spec.status_layout, int(tb.dut.status.value))


@cocotb.test()
async def error_unarmed_update(dut):
    """Updates to unarmed tiles flag the first one; armed tiles keep working."""
    tb = TB(dut)
    status = await _error_prologue(
        tb, [{"tile": 3, "threshold": 2, "dma_cmd": 1}],
        [{"tile": 3, "source": LOCAL}, {"tile": 6, "source": LOCAL},
         {"tile": 7, "source": REMOTE}, {"tile": 3, "source": REMOTE}])
    assert status["err_unarmed_update"] == 1 and status["err_unarmed_update_tile"] == 6
    assert status["local_updates"] == 2 and status["remote_updates"] == 2
    assert [t["tile"] for t in tb.trigger_sink.received] == [3]
    tb.final_check(errors_expected=True)


@cocotb.test()
async def error_rearm(dut):
    """Arming an armed tile is flagged and keeps the first arm's threshold and command."""
    tb = TB(dut)
    status = await _error_prologue(
        tb, [{"tile": 4, "threshold": 3, "dma_cmd": 2}, {"tile": 4, "threshold": 1, "dma_cmd": 5}],
        [{"tile": 4, "source": LOCAL}] * 3)
    assert status["err_rearm"] == 1 and status["err_rearm_tile"] == 4
    assert status["err_unarmed_update"] == 0
    assert [(t["tile"], t["dma_cmd"]) for t in tb.trigger_sink.received] == [(4, 2)]
    tb.final_check(errors_expected=True)


@cocotb.test()
async def error_zero_threshold(dut):
    """A zero threshold is flagged and does not arm the entry; a later proper arm works."""
    tb = TB(dut)
    status = await _error_prologue(
        tb, [{"tile": 9 % tb.spec.entries, "threshold": 0, "dma_cmd": 1}],
        [{"tile": 9 % tb.spec.entries, "source": LOCAL}])
    assert status["err_zero_threshold"] == 1 and status["err_zero_threshold_tile"] == 9 % tb.spec.entries
    assert status["err_unarmed_update"] == 1 and status["armed_entries"] == 0
    tb.arm_src.queue.append({"tile": 9 % tb.spec.entries, "threshold": 1, "dma_cmd": 1})
    tb.update_src.queue.append({"tile": 9 % tb.spec.entries, "source": LOCAL})
    await tb.drain()
    assert len(tb.trigger_sink.received) == 1
    tb.final_check(errors_expected=True)


assert set(RANDOM_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
