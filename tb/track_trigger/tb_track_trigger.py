# amaranth: UnusedElaboratable=no
"""cocotb bench of track & trigger (tracker -> DMA command table -> DMA engine).

Random tiles are armed and their updates streamed in; every cycle every output is compared
with the composed golden model. Independently of the model, the bench checks that each
tile's DMA command leaves exactly once, after the tile's last update, with the memory's
data at the programmed addresses.
"""

from __future__ import annotations

from collections import deque

import cocotb

from rtl.track_trigger import TrackAndTrigger
from tb.common.lockstep import LockstepTB, bench_params, register_tests
from tb.common.memory import BenchMemory, ReadPortResponder
from tb.common.packing import field_diff, pack, unpack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.streams import StreamSink, StreamSource
from tb.dma.tb_dma import DmaChecks, random_descriptor
from tb.track_trigger.model import TrackAndTriggerModel
from tb.track_trigger.scenarios import DIRECTED_TESTS, RANDOM_TESTS, RESET_TESTS, RESETS_PER_TEST
from tb.tracker.model import LOCAL
from tb.tracker.traffic import LegalTraffic


class TB(LockstepTB, DmaChecks):
    """Track & trigger bench.

    Updates are legal by construction: random traffic comes from :class:`LegalTraffic`, and
    the directed tests' planned updates (:attr:`update_plan`) wait until their tile's arm is
    accepted (``arm`` can be back-pressured: the tracker reserves a trigger slot per arm).

    Reset: the model is in the first cycle after the edge that releases reset and the first
    checked cycle follows one idle edge, so the bench steps the model over it. After a
    mid-run reset the sources drop what they were offering (the tracker forgot every arm, the
    command table every descriptor), the traffic generator frees its tiles, and
    :meth:`reprogram_after_reset` programs the table anew while arms and updates wait.
    """

    def __init__(self, dut, *, source_p=1.0, egress_p=1.0):
        super().__init__(dut)
        self.params = bench_params()
        self.top = TrackAndTrigger(**self.params)
        self.spec = self.top.dma  # DmaChecks reads the DMA path's layouts
        tracker, table, engine = self.top.tracker, self.top.dma.table, self.top.dma.engine
        self.memory = BenchMemory(self.rng, addr_width=engine.addr_width, data_width=engine.data_width)
        self.model = TrackAndTriggerModel(
            entries=tracker.entries, trigger_depth=tracker.trigger_depth, max_beats=table.max_beats,
            queue_depth=table.queue_depth, read_latency=engine.read_latency,
            addr_width=engine.addr_width, memory=self.memory)
        self.traffic: LegalTraffic | None = None
        self.hold = False   # arms and updates wait (while the table is reprogrammed)
        self.update_plan: deque[dict] = deque()
        self.armed_tiles: set[int] = set()   # arms accepted, last update not yet accepted
        self.arm_src = StreamSource(dut, "arm", tracker.arm_layout, self.rng, source_p, next_item=self._next_arm)
        self.update_src = StreamSource(dut, "update", tracker.update_layout, self.rng, source_p,
                                       next_item=self._next_update)
        self.program_src = StreamSource(dut, "program", table.program_layout, self.rng)
        self.egress_sink = StreamSink(dut, "egress", engine.packet_layout, self.rng, egress_p)
        self.responder = ReadPortResponder(dut, "mem_read", self.memory, self.rng, latency=engine.read_latency)
        self.tile_cmd: dict[int, int] = {}
        self.updates_accepted = 0
        self.update_cycles: list[int] = []
        self.last_update_cycle: list[int] = []  # per completed tile since the last reset, in completion order
        self.arm_stalled_cycles = 0
        self.init_dma_checks()

    # -- stimulus ---------------------------------------------------------------------------

    def _arm_accepting(self) -> int | None:
        """The tile of the arm offered now if it is taken now (the model's arm.ready, which
        the scoreboard compares with the DUT's in this very cycle)."""
        arm = self.arm_src.current
        if arm is None or not self.model.tracker.outputs().arm_ready:
            return None
        return arm["tile"]

    def _next_arm(self) -> dict | None:
        if self.hold or self.traffic is None:
            return None
        return self.traffic.next_arm()

    def _next_update(self) -> dict | None:
        if self.hold:
            return None
        if self.traffic is not None:
            return self.traffic.next_update()
        if self.update_plan:
            tile = self.update_plan[0]["tile"]
            if tile in self.armed_tiles or tile == self._arm_accepting():
                return self.update_plan.popleft()
        return None

    def program_all(self, *, min_beats: int = 1) -> None:
        t = self.top.dma.table
        for i in range(t.commands):
            desc = random_descriptor(self.rng, addr_width=t.addr_width, max_beats=t.max_beats,
                                     port_width=t.port_width)
            desc["beats"] = max(desc["beats"], min_beats)
            self.program_src.queue.append({"index": i, "desc": desc})

    def use_traffic(self, **kwargs) -> LegalTraffic:
        tracker = self.top.tracker
        self.traffic = LegalTraffic(self.rng, max_threshold=2**tracker.count_width - 1,
                                    dma_cmd_limit=self.top.dma.table.commands,
                                    arm_accepting=self._arm_accepting, **kwargs)
        return self.traffic

    # -- reset ------------------------------------------------------------------------------

    def _idle_edge(self) -> None:
        """Step the model over the idle edge between reset release and the first checked cycle."""
        self.model.step(arm=None, update=None, program=None, egress_ready=0)

    async def start(self, *, reset_cycles: int = 2) -> None:
        await super().start(reset_cycles=reset_cycles)
        self._idle_edge()

    def on_reset(self) -> None:
        self._check_epoch(cut=True)
        held_update = self.update_src.current
        for src in (self.arm_src, self.update_src, self.program_src):
            src.current = None
            src.queue.clear()
        self.update_plan.clear()
        self.armed_tiles.clear()
        if self.traffic is not None:
            self.traffic.on_reset(held_update)
        self.dma_checks_on_reset()
        self.last_update_cycle = []
        self.model.reset()
        self._idle_edge()

    async def reprogram_after_reset(self) -> None:
        """Program every descriptor anew while arms and updates wait."""
        self.hold = True
        self.program_all()
        await self.run(until=self.program_src.idle)
        self.hold = False

    # -- cycle loop -------------------------------------------------------------------------

    def reset_inputs(self) -> None:
        for name in ("arm__valid", "update__valid", "program__valid", "egress__ready"):
            getattr(self.dut, name).value = 0

    def drive(self) -> None:
        self.program_src.drive()
        self.arm_src.drive()
        self.update_src.drive()
        self.egress_sink.drive()
        self.responder.drive()

    def check(self) -> None:
        dut, sb, cycle = self.dut, self.scoreboard, self.cycle
        tracker_out, table_out, engine_out = self.model.outputs()
        arm_ready = int(dut.arm__ready.value)
        sb.check(cycle, "arm.ready", arm_ready, tracker_out.arm_ready)
        sb.check(cycle, "update.ready", int(dut.update__ready.value), tracker_out.update_ready)
        sb.check(cycle, "program.ready", int(dut.program__ready.value), table_out.program_ready)
        self.check_dma_outputs(table_out, engine_out)
        layout = self.top.status_layout
        expected = {"tracker": tracker_out.status, "table": table_out.status, "engine": engine_out.status}
        sb.check(cycle, "status", int(dut.status.value), pack(layout, expected),
                 explain=lambda g, e: field_diff(layout, g, e))
        self.arm_stalled_cycles += self.arm_src.current is not None and not arm_ready

        arm, arm_taken = self.arm_src.handshake()
        update, update_taken = self.update_src.handshake()
        program, program_taken = self.program_src.handshake()
        _, done = self.model.step(
            arm=arm and (arm["tile"], arm["threshold"], arm["dma_cmd"]),
            update=update and (update["tile"], update["source"]),
            program=program, egress_ready=self.egress_sink.current_ready)
        self.check_done(done)
        if program_taken:
            self.on_program_accepted(program_taken)
        if arm_taken:
            self.tile_cmd[arm_taken["tile"]] = arm_taken["dma_cmd"]
            self.armed_tiles.add(arm_taken["tile"])
            if self.traffic is not None:
                self.traffic.on_arm_accepted(arm_taken)
        if update_taken:
            self.updates_accepted += 1
            self.update_cycles.append(cycle)
            if self.traffic is not None:
                self.traffic.on_update_accepted(update_taken)
            if update_taken.get("_last"):
                # The tile is complete: its command must come out, in completion order.
                self.armed_tiles.discard(update_taken["tile"])
                self.on_trigger_accepted(self.tile_cmd[update_taken["tile"]])
                self.last_update_cycle.append(cycle)

    def quiescent(self) -> bool:
        return (self.arm_src.idle() and self.update_src.idle() and self.program_src.idle()
                and not self.update_plan and (self.traffic is None or self.traffic.done()) and self.model.idle()
                and not self.model.tracker.sweep_left)

    @property
    def settle_cycles(self) -> int:
        return self.top.update_to_egress_latency + 2

    def _check_epoch(self, *, cut: bool) -> None:
        """Each command's first beat left after its tile's last update, no earlier than the
        documented latency (up to a reset, the commands that started)."""
        starts = [c for c, beat in zip(self.egress_cycles, [None, *self.egress_beats], strict=False)
                  if beat is None or beat["last"]]
        if not cut:
            assert len(starts) == len(self.last_update_cycle), "commands started != tiles completed"
        for n, (last_update, first_beat) in enumerate(zip(self.last_update_cycle, starts, strict=False)):
            assert first_beat - last_update >= self.top.update_to_egress_latency, (
                f"tile {n}: first beat {first_beat - last_update} cycles after its last update")

    def final_check(self) -> None:
        status = unpack(self.top.status_layout, int(self.dut.status.value))
        for block, flags in (("tracker", ("err_unarmed_update", "err_rearm", "err_zero_threshold")),
                             ("table", ("err_unprogrammed", "err_bad_descriptor")),
                             ("engine", ("err_overflow",))):
            for flag in flags:
                assert status[block][flag] == 0, f"{block}.{flag} set"
        assert status["tracker"]["armed_entries"] == 0, "entries left armed"
        assert status["tracker"]["clearing"] == 0, "the tracker's reset sweep never ended"
        self.final_dma_check()
        self._check_epoch(cut=False)
        self.write_stats(updates=self.updates_accepted,
                         commands=self.dma_totals["commands"] + len(self.done_seen),
                         beats=self.dma_totals["beats"] + len(self.egress_beats),
                         arm_stalled_cycles=self.arm_stalled_cycles, resets=self.resets)
        self.scoreboard.assert_clean()


async def random_test(dut, source, sink):
    tb = TB(dut, source_p=SOURCE_PATTERNS[source], egress_p=SINK_PATTERNS[sink])
    tb.program_all()
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    # The volume (a million cycles) is the trace run's (tb/track_trigger/trace.py).
    arms = {"always": 75, "random": 45, "heavy": 8}[sink]
    if source == "idle":
        arms = arms * 2 // 3   # one update in ten cycles: these are still the longest tests
    tb.use_traffic(tiles=range(tb.top.tracker.entries), arms=arms,
                   max_in_flight=tb.rng.choice([2, tb.top.tracker.entries]))
    await tb.drain()
    tb.final_check()


register_tests(globals(), RANDOM_TESTS, random_test)


async def reset_test(dut, source, sink):
    """Random tiles with ``rst`` asserted for 1..4 cycles at random points while tiles are
    armed, triggers queued or commands on the wire; the model is reset at the same edge,
    the driver reprograms the table, and the run goes on, checked every cycle, to the final
    checks (no error, nothing armed, every tile since the last reset sent exactly once)."""
    tb = TB(dut, source_p=SOURCE_PATTERNS[source], egress_p=SINK_PATTERNS[sink])
    tb.program_all()
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    entries = tb.top.tracker.entries
    tb.use_traffic(tiles=range(entries), arms={"always": 100, "random": 60, "heavy": 20}[sink],
                   max_in_flight=tb.rng.choice([2, entries]))
    busy_resets = 0
    for _ in range(RESETS_PER_TEST):
        await tb.run(cycles=tb.top.tracker.reset_cycles + tb.rng.randint(10, 300))
        await tb.run(until=lambda: not tb.model.idle() or tb.traffic.done(), timeout=10_000)
        busy_resets += not tb.model.idle()
        await tb.reset_dut(cycles=tb.rng.randint(1, 4))
        await tb.reprogram_after_reset()
    assert busy_resets > 0, "no reset hit work in flight"
    await tb.drain()
    tb.log.info("%d resets (%d with work in flight), %d arms lost, %d commands cut", tb.resets, busy_resets,
                tb.traffic.arms_lost, tb.dma_totals["cut_commands"])
    tb.final_check()


register_tests(globals(), RESET_TESTS, reset_test)


@cocotb.test()
async def update_to_egress_latency(dut):
    """An isolated tile's first beat leaves exactly update_to_egress_latency after its last update."""
    tb = TB(dut)
    tb.program_all()
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    for n in range(12):
        threshold = tb.rng.randint(1, 20)
        tb.arm_src.queue.append({"tile": n, "threshold": threshold, "dma_cmd": n})
        tb.update_plan.extend({"tile": n, "source": LOCAL, "_last": i == threshold - 1}
                              for i in range(threshold))
        before = len(tb.egress_cycles)
        await tb.drain()
        latency = tb.egress_cycles[before] - tb.last_update_cycle[-1]
        assert latency == tb.top.update_to_egress_latency, (
            f"tile {n}: {latency} cycles, documented {tb.top.update_to_egress_latency}")
    tb.final_check()


@cocotb.test()
async def tracker_and_dma_at_full_rate_together(dut):
    """Updates enter at one per cycle while the completed tiles leave at one beat per cycle."""
    tb = TB(dut)
    beats = max(8, tb.top.dma.min_beats_for_full_rate)
    t = tb.top.dma.table
    for i in range(t.commands):
        desc = random_descriptor(tb.rng, addr_width=t.addr_width, max_beats=t.max_beats, port_width=t.port_width)
        tb.program_src.queue.append({"index": i, "desc": {**desc, "beats": beats}})
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    tiles = 40
    # Two tiles in flight, interleaved, each needing `beats` writes and sending `beats` beats.
    for n in range(tiles):
        tb.arm_src.queue.append({"tile": n % tb.top.tracker.entries, "threshold": beats, "dma_cmd": n % t.commands})
    for pair in range(0, tiles, 2):
        for i in range(beats):
            for n in (pair, pair + 1):
                tb.update_plan.append({"tile": n, "source": LOCAL, "_last": i == beats - 1})
    await tb.drain()
    updates = tiles * beats
    update_span = tb.update_cycles[-1] - tb.update_cycles[0] + 1
    egress_span = tb.egress_cycles[-1] - tb.egress_cycles[0] + 1
    overlap = min(tb.update_cycles[-1], tb.egress_cycles[-1]) - max(tb.update_cycles[0], tb.egress_cycles[0])
    tb.log.info("updates %d in %d cycles, beats %d in %d cycles, overlapping %d cycles",
                updates, update_span, len(tb.egress_beats), egress_span, overlap)
    assert update_span == updates, f"{updates} updates took {update_span} cycles"
    assert egress_span == len(tb.egress_beats) == updates, f"{updates} beats took {egress_span} cycles"
    assert overlap > updates // 2, "tracker and DMA did not run at the same time"
    tb.final_check()


assert set(RANDOM_TESTS + RESET_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
