# amaranth: UnusedElaboratable=no
"""cocotb bench of the tracker table, compared with the golden model on every cycle.

Run through ``tb/tracker/test_tracker.py`` (pytest), never collected by pytest itself.
"""

from __future__ import annotations

from collections import Counter, deque

import cocotb

from rtl.tracker import TrackerTable
from tb.common.lockstep import LockstepTB, bench_params, register_tests
from tb.common.packing import field_diff, pack, unpack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.streams import StreamSink, StreamSource
from tb.tracker.model import LOCAL, REMOTE, TrackerTableModel
from tb.tracker.scenarios import DIRECTED_TESTS, HAZARD_TESTS, RANDOM_TESTS, RESET_TESTS, RESETS_PER_TEST
from tb.tracker.traffic import LegalTraffic


class TB(LockstepTB):
    """Tracker bench: arm and update sources, trigger sink, golden model, scoreboard.

    Reset: the model is in the first cycle after the edge that releases reset, and the
    first checked cycle follows one idle edge (:meth:`LockstepTB.start` and
    :meth:`LockstepTB.reset_dut`), so the bench steps the model over that edge. After a
    mid-run reset the sources *drop* what they held (the tracker forgot every arm, so an
    update offered before the reset would be an update of an unarmed tile) and the traffic
    generator frees the tiles it had armed; the run then goes on with fresh arms.
    """

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
        self.arms_accepted: list[dict] = []   # since the last reset
        self.totals = {"arms": 0, "triggers": 0}  # of the epochs that a reset ended
        self.updates_accepted = 0
        self.update_accept_cycle: dict[int, int] = {}   # tile -> cycle of its latest update
        self.trigger_valid_rise: list[tuple[int, int]] = []  # (tile, cycle its trigger was first valid)
        self.update_ready_low_cycles = 0
        self.arm_ready_low_cycles = 0
        self.arm_stalled_cycles = 0   # arm offered while arm.ready is low
        self.max_armed_entries = 0
        self._prev_trigger_valid = 0
        self._popped_last_cycle = False

    def use_traffic(self, **kwargs) -> LegalTraffic:
        self.traffic = LegalTraffic(
            self.rng, max_threshold=2**self.spec.count_width - 1,
            dma_cmd_limit=2**self.spec.dma_cmd_width, arm_accepting=self._arm_accepting, **kwargs)
        return self.traffic

    def _arm_accepting(self) -> int | None:
        """The tile of the arm offered now if it is taken now (the model's arm.ready: the
        scoreboard compares it with the DUT's in this very cycle, before any handshake)."""
        arm = self.arm_src.current
        if arm is None or not self.model.outputs().arm_ready:
            return None
        return arm["tile"]

    # -- reset ------------------------------------------------------------------------------

    def _idle_edge(self) -> None:
        """Step the model over the idle edge between reset release and the first checked cycle."""
        self.model.step(arm=None, update=None, trigger_ready=0)

    async def start(self, *, reset_cycles: int = 2) -> None:
        await super().start(reset_cycles=reset_cycles)
        self._idle_edge()

    async def sweep(self) -> None:
        """Run (checked) through the rest of the reset sweep."""
        await self.run(until=lambda: not self.model.sweep_left, timeout=self.spec.reset_cycles + 1)

    def on_reset(self) -> None:
        # The epoch that the reset ends: every trigger handed out came from one accepted arm.
        armed = Counter((a["tile"], a["dma_cmd"]) for a in self.arms_accepted)
        fired = Counter((t["tile"], t["dma_cmd"]) for t in self.trigger_sink.received)
        assert not fired - armed, f"triggers without an arm before reset {self.resets}: {fired - armed}"
        self.totals["arms"] += len(self.arms_accepted)
        self.totals["triggers"] += len(self.trigger_sink.received)
        self.arms_accepted = []
        self.trigger_sink.received = []
        # A real driver drops what it had offered: the tracker has forgotten every arm.
        held_update = self.update_src.current
        for src in (self.arm_src, self.update_src):
            src.current = None
            src.queue.clear()
        if self.traffic is not None:
            self.traffic.on_reset(held_update)
        self._prev_trigger_valid = 0
        self._popped_last_cycle = False
        self.model.reset()
        self._idle_edge()

    async def reset_mid_run(self, *, cycles: int | None = None) -> None:
        """Assert ``rst`` for 1..4 cycles (or ``cycles``) now, the model reset at the same edge."""
        await self.reset_dut(cycles=cycles or self.rng.randint(1, 4))

    # -- cycle loop -------------------------------------------------------------------------

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
        arm_ready = int(dut.arm__ready.value)
        sb.check(cycle, "arm.ready", arm_ready, expected.arm_ready)
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
        self.arm_ready_low_cycles += not arm_ready
        self.arm_stalled_cycles += self.arm_src.current is not None and not arm_ready
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
            if self.traffic is not None:
                self.traffic.on_arm_accepted(arm_taken)
        if update_taken:
            self.updates_accepted += 1
            self.update_accept_cycle[update_taken["tile"]] = cycle
            if self.traffic is not None:
                self.traffic.on_update_accepted(update_taken)

    def quiescent(self) -> bool:
        return (self.arm_src.idle() and self.update_src.idle()
                and (self.traffic is None or self.traffic.done()) and self.model.idle()
                and not self.model.sweep_left)

    def final_check(self, *, errors_expected: bool = False) -> None:
        status = unpack(self.spec.status_layout, int(self.dut.status.value))
        arms = self.totals["arms"] + len(self.arms_accepted)
        triggers = self.totals["triggers"] + len(self.trigger_sink.received)
        self.log.info("cycles=%d updates=%d arms=%d triggers=%d resets=%d checks=%d mismatches=%d",
                      self.cycle, self.updates_accepted, arms, triggers, self.resets,
                      self.scoreboard.checks, self.scoreboard.mismatches)
        assert status["clearing"] == 0, "the reset sweep never ended"
        assert status["armed_entries"] == 0, f"{status['armed_entries']} entries left armed"
        assert status["triggers"] == len(self.trigger_sink.received)
        if not errors_expected:
            for flag in ("err_unarmed_update", "err_rearm", "err_zero_threshold"):
                assert status[flag] == 0, f"unexpected {flag} (tile {status[flag + '_tile']})"
            # Every arm since the last reset produced exactly one trigger, with its command.
            armed = sorted((a["tile"], a["dma_cmd"]) for a in self.arms_accepted)
            fired = sorted((t["tile"], t["dma_cmd"]) for t in self.trigger_sink.received)
            assert fired == armed, "triggers differ from arms"
        self.write_stats(updates=self.updates_accepted, arms=arms, triggers=triggers, resets=self.resets)
        self.scoreboard.assert_clean()


# -- random traffic crossed with the idle/back-pressure matrix ------------------------------

async def random_test(dut, source, sink):
    tb = TB(dut, arm_p=SOURCE_PATTERNS[source], update_p=SOURCE_PATTERNS[source],
            trigger_p=SINK_PATTERNS[sink])
    entries = tb.spec.entries
    # Fewer arms when the sources idle, so that each test simulates a similar time. The volume
    # (a million cycles) is the trace run's (tb/tracker/trace.py); these cross the matrix.
    arms = {"full": 160, "gaps": 100, "idle": 20}[source]
    tb.use_traffic(tiles=range(entries), arms=arms, max_in_flight=tb.rng.choice([4, entries // 2, entries]))
    await tb.start()
    await tb.drain()
    tb.final_check()


register_tests(globals(), RANDOM_TESTS, random_test)


async def reset_test(dut, source, sink):
    """Random traffic with ``rst`` asserted for 1..4 cycles at three random points, each while
    tiles are armed, completing or queued; the model is reset at the same edge and the run
    goes on, checked every cycle, to the empty-table and exact-conservation checks."""
    tb = TB(dut, arm_p=SOURCE_PATTERNS[source], update_p=SOURCE_PATTERNS[source],
            trigger_p=SINK_PATTERNS[sink])
    entries = tb.spec.entries
    tb.use_traffic(tiles=range(entries), arms={"full": 260, "gaps": 200, "idle": 40}[source],
                   max_in_flight=tb.rng.choice([4, entries]))
    await tb.start()
    busy_resets = 0
    for _ in range(RESETS_PER_TEST):
        await tb.run(cycles=tb.spec.reset_cycles + tb.rng.randint(10, 400))
        await tb.run(until=lambda: not tb.model.idle() or tb.traffic.done(), timeout=10_000)
        busy_resets += not tb.model.idle()
        await tb.reset_mid_run()
    assert busy_resets > 0, "no reset hit the tracker with work in flight"
    tb.log.info("%d resets, %d with work in flight, %d arms lost", tb.resets, busy_resets, tb.traffic.arms_lost)
    await tb.drain()
    tb.final_check()


register_tests(globals(), RESET_TESTS, reset_test)


# -- directed tests -------------------------------------------------------------------------

@cocotb.test()
async def back_to_back_same_tile(dut):
    """One tile at full rate to its maximum threshold, then two tiles interleaved."""
    tb = TB(dut)
    top = min(200, 2**tb.spec.count_width - 1)
    tb.arm_src.queue.append({"tile": 1, "threshold": top, "dma_cmd": 1})
    await tb.start()
    await tb.sweep()
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
    """Arm as many entries as the trigger queue reserves (all of them by default), then update
    them round robin so that all are armed at once."""
    tb = TB(dut)
    tiles = min(tb.spec.entries, tb.spec.trigger_depth)
    rounds = min(3, 2**tb.spec.count_width - 1)
    await tb.start()
    await tb.sweep()
    tb.arm_src.queue.extend({"tile": t, "threshold": rounds, "dma_cmd": t % 2**tb.spec.dma_cmd_width}
                            for t in range(tiles))
    # Update t of round 0 is offered in the cycle of arm t, which is ordered first.
    tb.update_src.queue.extend({"tile": t, "source": (t + r) % 2} for r in range(rounds) for t in range(tiles))
    await tb.drain()
    assert tb.max_armed_entries == tiles, f"peak armed entries {tb.max_armed_entries} != {tiles}"
    assert tb.arm_stalled_cycles == 0
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
async def arm_backpressure_while_trigger_stalled(dut):
    """Arms reserve trigger-queue slots: with the trigger sink stalled, arm.ready falls once
    ``trigger_depth`` tiles are armed or queued, update.ready never falls, nothing is lost."""
    tb = TB(dut)
    depth, entries = tb.spec.trigger_depth, tb.spec.entries
    await tb.start()
    await tb.sweep()
    tb.force_trigger_ready = 0
    # Phase 1: `depth` tiles armed (threshold 2), one update each: every slot is reserved by
    # an armed entry while the trigger queue is still empty.
    tb.arm_src.queue.extend({"tile": t % entries, "threshold": 2, "dma_cmd": 1} for t in range(depth))
    tb.update_src.queue.extend({"tile": t % entries, "source": LOCAL} for t in range(depth))
    await tb.run(until=lambda: tb.arm_src.idle() and tb.update_src.idle(), timeout=depth + 10)
    assert len(tb.arms_accepted) == depth and tb.arm_stalled_cycles == 0
    extra = [{"tile": (depth + t) % entries, "threshold": 1, "dma_cmd": 2} for t in range(3)]
    tb.arm_src.queue.extend(extra)
    await tb.run(cycles=20)
    assert len(tb.arms_accepted) == depth and tb.arm_stalled_cycles == 20, "an arm beyond the reservations was taken"
    # Phase 2: the second updates complete every tile; the stalled queue fills up.
    tb.update_src.queue.extend({"tile": t % entries, "source": REMOTE} for t in range(depth))
    await tb.run(cycles=depth + 20)
    assert tb.model.status["armed_entries"] == 0 and len(tb.model.queue) == depth
    assert len(tb.arms_accepted) == depth, "an arm beyond the queue's free slots was taken"
    assert tb.update_ready_low_cycles == tb.spec.reset_cycles - 1, "update.ready fell after the sweep"
    # Phase 3: the sink drains the queue; the held arms go in as slots free up.
    # Each extra tile gets its update once its arm is in (it then holds a slot itself).
    tb.force_trigger_ready = None
    for n, arm in enumerate(extra):
        await tb.run(until=lambda n=n: len(tb.arms_accepted) > depth + n, timeout=depth + 50)
        tb.update_src.queue.append({"tile": arm["tile"], "source": LOCAL})
    await tb.drain()
    assert len(tb.trigger_sink.received) == depth + len(extra)
    tb.final_check()


@cocotb.test()
async def reset_clears_counts(dut):
    """Issue 11's reproduction: arm tile 1 with threshold 3, one update, reset, re-arm with
    threshold 3: the trigger fires after exactly 3 updates (it fired after 2 when the
    counters survived the reset). Once with the reset a few cycles after the update, once
    with the update still in the pipeline; the sweep lasts ``reset_cycles``."""
    tb = TB(dut)
    latency = tb.spec.trigger_latency
    await tb.start()
    await tb.sweep()
    for gap, rst_cycles in ((5, 2), (0, 1)):
        tb.arm_src.queue.append({"tile": 1, "threshold": 3, "dma_cmd": 1})
        tb.update_src.queue.append({"tile": 1, "source": LOCAL})
        arms = len(tb.arms_accepted)
        await tb.run(cycles=1)   # arm and first update in the same cycle
        assert len(tb.arms_accepted) == arms + 1 and tb.update_src.idle()
        await tb.run(cycles=gap)
        await tb.reset_mid_run(cycles=rst_cycles)
        low = tb.arm_ready_low_cycles
        await tb.sweep()
        # The sweep's first cycle is the idle one before the first checked cycle.
        assert tb.arm_ready_low_cycles - low == tb.spec.reset_cycles - 1, (
            f"arm.ready low for {tb.arm_ready_low_cycles - low + 1} cycles after reset, "
            f"reset_cycles {tb.spec.reset_cycles}")
        tb.arm_src.queue.append({"tile": 1, "threshold": 3, "dma_cmd": 2})
        await tb.run(cycles=1)
        for n in range(1, 4):
            tb.update_src.queue.append({"tile": 1, "source": REMOTE})
            await tb.run(cycles=1)
            await tb.run(cycles=latency + 3)
            fired = [t["dma_cmd"] for t in tb.trigger_sink.received]
            assert fired == ([2] if n == 3 else []), f"after {n} updates since reset, triggers {fired}"
        rise = [c for tile, c in tb.trigger_valid_rise if tile == 1]
        assert rise[-1] == tb.update_accept_cycle[1] + latency
        tb.final_check()


# -- pipeline hazards -------------------------------------------------------------------------
# The counter read-modify-write spans the cycles after an update's acceptance, so an update of
# a tile whose previous update (or completion, or arm) is still in flight must see its effect:
# every distance between two updates of a tile, with the completion at every position.

def round_robin_schedule(tiles: list[int], thresholds: dict[int, list[int]], dma_cmd_limit: int):
    """Cycle-exact legal stimulus: ``tiles``' updates round robin, one per cycle, no gap.

    Each tile is armed once per entry of ``thresholds[tile]``, with that threshold: first in
    a prologue (one arm per cycle, the first tile's in the cycle of its first update), then
    each re-arm in the cycle right after the update that completed the tile's previous arm.
    Returns the per-cycle ``[arm, update]`` list and the completions ``(tile, dma_cmd,
    index of the cycle of the last update)`` in order.
    """
    schedule: list[list] = []
    completions = []
    left = {t: list(thresholds[t]) for t in tiles}
    remaining: dict[int, int] = {}
    cmd_of: dict[int, int] = {}
    arms = 0

    def arm(tile):
        nonlocal arms
        remaining[tile] = left[tile].pop(0)
        cmd_of[tile] = arms % dma_cmd_limit
        arms += 1
        return {"tile": tile, "threshold": remaining[tile], "dma_cmd": cmd_of[tile]}

    def at(cycle):
        while len(schedule) <= cycle:
            schedule.append([None, None])
        return schedule[cycle]

    for tile in [*tiles[1:], tiles[0]]:
        schedule.append([arm(tile), None])
    cycle = len(schedule) - 1
    rotation = deque(tiles)
    while rotation:
        tile = rotation.popleft()
        at(cycle)[1] = {"tile": tile, "source": cycle % 2}
        remaining[tile] -= 1
        if remaining[tile] == 0:
            completions.append((tile, cmd_of[tile], cycle))
            if left[tile]:
                assert at(cycle + 1)[0] is None
                at(cycle + 1)[0] = arm(tile)
                rotation.append(tile)
        else:
            rotation.append(tile)
        cycle += 1
    return schedule, completions


async def play(tb: TB, schedule) -> int:
    """Offer each cycle's ``[arm, update]`` in that very cycle; each must be taken in it.

    Returns the cycle of the schedule's first entry."""
    start = tb.cycle
    for arm, update in schedule:
        if arm is not None:
            tb.arm_src.queue.append(arm)
        if update is not None:
            tb.update_src.queue.append(update)
        await tb.run(cycles=1)
        assert tb.arm_src.idle() and tb.update_src.idle(), f"cycle {tb.cycle - 1}: an offer was not taken in its cycle"
    return start


async def play_and_check_triggers(tb: TB, schedule, completions) -> None:
    """:func:`play`, drain, then: one trigger per completion, in order, with its command,
    each valid exactly ``trigger_latency`` cycles after its last update (the sink is ready)."""
    before = len(tb.trigger_sink.received)
    start = await play(tb, schedule)
    await tb.drain()
    got = [(t["tile"], t["dma_cmd"]) for t in tb.trigger_sink.received[before:]]
    assert got == [(tile, cmd) for tile, cmd, _ in completions], f"triggers {got}, completions {completions}"
    rises = [(tile, c) for tile, c in tb.trigger_valid_rise if c >= start]
    want = [(tile, start + c + tb.spec.trigger_latency) for tile, _, c in completions]
    assert rises == want, f"trigger valid rose at {rises}, expected {want}"


def hazard_thresholds(tb: TB) -> range:
    """Thresholds 1 .. trigger_latency + 2: the completion lands at every stage and after."""
    return range(1, min(tb.spec.trigger_latency + 2, 2**tb.spec.count_width - 1) + 1)


def hazard_gaps(tb: TB) -> range:
    """Distances 1 .. trigger_latency + 2 in cycles: in every stage of the pipeline and after."""
    return range(1, tb.spec.trigger_latency + 3)


@cocotb.test()
async def hazard_same_tile_runs(dut):
    """One tile updated on N consecutive cycles with threshold N, N = 1 .. latency + 2, armed
    three times in a row: each re-arm in the cycle right after the completing update,
    together with the next arm's first update. Then, for each N, a re-arm alone G cycles
    after the completing update, G = 1 .. latency + 2, and its N updates from the cycle after."""
    tb = TB(dut)
    tb.force_trigger_ready = 1
    await tb.start()
    await tb.sweep()
    limit = 2**tb.spec.dma_cmd_width
    for n in hazard_thresholds(tb):
        tile = (3 * n) % tb.spec.entries
        await play_and_check_triggers(tb, *round_robin_schedule([tile], {tile: [n, n, n]}, limit))
    for n in hazard_thresholds(tb):
        for gap in hazard_gaps(tb):
            tile = (5 * n + gap) % tb.spec.entries
            schedule = ([[{"tile": tile, "threshold": n, "dma_cmd": 1}, None]]
                        + [[None, {"tile": tile, "source": LOCAL}]] * n
                        + [[None, None]] * (gap - 1)
                        + [[{"tile": tile, "threshold": n, "dma_cmd": 2}, None]]
                        + [[None, {"tile": tile, "source": REMOTE}]] * n)
            await play_and_check_triggers(tb, schedule, [(tile, 1, n), (tile, 2, 2 * n + gap)])
    tb.final_check()


@cocotb.test()
async def hazard_alternating_tiles(dut):
    """2 .. latency + 2 tiles updated round robin (a tile's updates that many cycles apart),
    each with threshold N, N = 1 .. latency + 2, then re-armed in the cycle right after its
    completion with a threshold that makes the tiles complete at different times."""
    tb = TB(dut)
    tb.force_trigger_ready = 1
    await tb.start()
    await tb.sweep()
    top = max(hazard_thresholds(tb))
    for k in range(2, tb.spec.trigger_latency + 3):
        for n in hazard_thresholds(tb):
            tiles = [(7 * k + 3 * n + i) % tb.spec.entries for i in range(k)]
            thresholds = {t: [n, (n + i) % top + 1] for i, t in enumerate(tiles)}
            await play_and_check_triggers(tb, *round_robin_schedule(tiles, thresholds, 2**tb.spec.dma_cmd_width))
    tb.final_check()


@cocotb.test()
async def hazard_errors_at_completion(dut):
    """The driver errors next to an update still in the pipeline, G = 1 .. latency + 2 cycles
    after it, each case after a reset (the flags are sticky): an update of a tile G cycles
    after its last one (unarmed); a re-arm G cycles after an update that did not complete
    the tile (refused; the update of its cycle still counts for the first arm), then a legal
    re-arm the cycle after the completion; and, G = 1, a zero-threshold arm with an update
    of its tile the cycle after a completion (both errors)."""
    tb = TB(dut)
    tb.force_trigger_ready = 1
    await tb.start()
    await tb.sweep()
    t = 6 % tb.spec.entries

    def arm(threshold, cmd):
        return {"tile": t, "threshold": threshold, "dma_cmd": cmd}

    upd = {"tile": t, "source": LOCAL}
    idle = [None, None]
    cases = []   # (schedule, triggers (tile, cmd), the error flags expected set)
    for gap in hazard_gaps(tb):
        cases.append(([[arm(2, 1), upd], [None, upd]] + [idle] * (gap - 1) + [[None, upd]],
                      [(t, 1)], {"err_unarmed_update"}))
        cases.append(([[arm(3, 1), upd], [None, upd]] + [idle] * (gap - 1) + [[arm(1, 2), upd], [arm(1, 3), upd]],
                      [(t, 1), (t, 3)], {"err_rearm"}))
    cases.append(([[arm(1, 1), upd], [arm(0, 2), upd], [arm(2, 3), upd], [None, upd]], [(t, 1), (t, 3)],
                  {"err_zero_threshold", "err_unarmed_update"}))
    for n, (schedule, triggers, errors) in enumerate(cases):
        if n:
            await tb.reset_mid_run()
            await tb.sweep()
        await play(tb, schedule)
        await tb.drain()
        assert [(x["tile"], x["dma_cmd"]) for x in tb.trigger_sink.received] == triggers, f"case {n}"
        status = unpack(tb.spec.status_layout, int(tb.dut.status.value))
        for flag in ("err_unarmed_update", "err_rearm", "err_zero_threshold"):
            assert status[flag] == (flag in errors), f"case {n}: {flag} = {status[flag]}"
            assert status[flag + "_tile"] == (t if flag in errors else 0)
    tb.final_check(errors_expected=True)


async def _error_prologue(tb: TB, arms, updates):
    tb.arm_src.queue.extend(arms)
    await tb.start()
    await tb.sweep()
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


assert set(RANDOM_TESTS + RESET_TESTS + DIRECTED_TESTS + HAZARD_TESTS) <= set(globals()), (
    "scenarios name a missing test")
