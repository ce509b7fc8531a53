# amaranth: UnusedElaboratable=no
"""cocotb bench of the tracker table, compared with the golden model on every cycle.

Run through ``tb/tracker/test_tracker.py`` (pytest), never collected by pytest itself.
"""

from __future__ import annotations

from rtl.tracker import TrackerTable
from tb.common.lockstep import LockstepTB, register_tests
from tb.common.packing import field_diff, pack, unpack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.runner import bench_params
from tb.common.streams import StreamSink, StreamSource
from tb.tracker.model import TrackerTableModel
from tb.tracker.scenarios import RANDOM_TESTS
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

    async def drain(self, timeout: int = 200_000) -> None:
        """Run until all stimulus is consumed and every trigger has been handed out."""
        await self.run(until=self.quiescent, timeout=timeout)
        await self.run(cycles=4)  # a few idle cycles: nothing may appear from nowhere

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
