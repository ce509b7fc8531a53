# amaranth: UnusedElaboratable=no
"""cocotb bench of the DMA path (command table -> engine), lock-step with the golden model.

Besides the per-cycle comparison, the bench checks the data path on its own: it groups the
egress beats into commands by ``last`` and checks every beat against the bench memory at
the descriptor's address, and every trigger against exactly one ``done``.
"""

from __future__ import annotations

import cocotb

from rtl.dma_path import DmaPath
from tb.common.lockstep import LockstepTB, bench_params, register_tests
from tb.common.memory import BenchMemory, ReadPortResponder
from tb.common.packing import field_diff, pack, unpack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.streams import StreamSink, StreamSource
from tb.dma.model import STORE, UPDATE, DmaPathModel
from tb.dma.scenarios import DIRECTED_TESTS, RANDOM_TESTS, RESET_TESTS, RESETS_PER_TEST


def random_descriptor(rng, *, addr_width: int, max_beats: int, port_width: int) -> dict:
    r = rng.random()
    beats = 1 if r < 0.15 else max_beats if r < 0.3 else rng.randint(1, max_beats)
    return {"src_addr": rng.getrandbits(addr_width), "dst_addr": rng.getrandbits(addr_width),
            "beats": beats, "dst_port": rng.getrandbits(port_width), "op": rng.choice((STORE, UPDATE))}


class DmaChecks:
    """Per-cycle and end-of-test checks of the DMA-path ports; shared with the join bench.

    Expects ``self.spec`` (a :class:`~rtl.dma_path.DmaPath`), ``self.memory``,
    ``self.egress_sink``, ``self.responder`` and ``self.scoreboard``.
    """

    def init_dma_checks(self) -> None:
        self.descriptors: dict[int, dict] = {}     # as programmed, from accepted programs
        self.expected_commands: list[tuple[int, dict]] = []  # (dma_cmd, desc) per accepted trigger
        self.done_seen: list[int] = []
        self.egress_beats: list[dict] = []
        self.egress_cycles: list[int] = []
        self.first_egress_cycle: int | None = None
        # Figures of the epochs that a reset ended.
        self.dma_totals = {"commands": 0, "beats": 0, "cut_commands": 0}

    def check_dma_outputs(self, table_out, engine_out) -> None:
        dut, sb, cycle = self.dut, self.scoreboard, self.cycle
        en, addr = self.responder.sample()
        sb.check(cycle, "mem_read.en", en, engine_out.mem_en)
        if en and engine_out.mem_en:
            sb.check(cycle, "mem_read.addr", addr, engine_out.mem_addr)
        valid, raw = self.egress_sink.sample()
        sb.check(cycle, "egress.valid", valid, engine_out.egress_valid)
        if valid and engine_out.egress_valid:
            sb.check(cycle, "egress.payload", raw, pack(self.spec.engine.packet_layout, engine_out.egress),
                     explain=lambda g, e: field_diff(self.spec.engine.packet_layout, g, e))
        if valid and self.egress_sink.current_ready:
            self.egress_beats.append(self.egress_sink.record(raw))
            self.egress_cycles.append(cycle)
            if self.first_egress_cycle is None:
                self.first_egress_cycle = cycle
        self._done_raw = (int(dut.done__valid.value), int(dut.done__payload.value))

    def check_done(self, done) -> None:
        valid, raw = self._done_raw
        self.scoreboard.check(self.cycle, "done.valid", valid, int(done is not None))
        if valid:
            index = unpack(self.spec.engine.done_layout, raw)["dma_cmd"]
            if done is not None:
                self.scoreboard.check(self.cycle, "done.payload", index, done)
            self.done_seen.append(index)

    def on_program_accepted(self, item: dict) -> None:
        desc = item["desc"]
        if 1 <= desc["beats"] <= self.spec.table.max_beats:
            self.descriptors[item["index"]] = dict(desc)

    def on_trigger_accepted(self, dma_cmd: int) -> None:
        if dma_cmd in self.descriptors:
            self.expected_commands.append((dma_cmd, dict(self.descriptors[dma_cmd])))

    def _check_commands(self, *, cut: bool) -> int:
        """Every beat so far belongs, in order and with the memory's data, to the commands
        triggered so far, each of exactly ``beats`` beats, and ``done`` named each complete
        command once, in order. With ``cut`` (a reset ended the epoch) the last commands may
        be incomplete or not started. Returns the number of complete commands."""
        mask = (1 << self.spec.engine.addr_width) - 1
        beats = iter(self.egress_beats)
        complete = 0
        for n, (dma_cmd, desc) in enumerate(self.expected_commands):
            for i in range(desc["beats"]):
                beat = next(beats, None)
                if beat is None:
                    assert cut, f"command {n} (dma_cmd {dma_cmd}) lost beats from beat {i}"
                    break
                want = {"dst_port": desc["dst_port"], "dst_addr": (desc["dst_addr"] + i) & mask,
                        "op": desc["op"], "last": int(i == desc["beats"] - 1),
                        "data": self.memory(desc["src_addr"] + i)}
                assert beat == want, f"command {n} beat {i}: {beat} != {want}"
            else:
                complete += 1
                continue
            break
        assert next(beats, None) is None, "egress sent beats no command asked for"
        assert self.done_seen == [c for c, _ in self.expected_commands[:complete]], "done != completed commands"
        return complete

    def final_dma_check(self) -> None:
        """Every trigger since the last reset gave one command of exactly ``beats`` beats
        with the memory's data, and one ``done``."""
        self._check_commands(cut=False)

    def dma_checks_on_reset(self) -> None:
        """A DUT reset ends the epoch: check it as far as it went (the commands in flight are
        lost), then start afresh (the table forgot its descriptors: the driver reprograms)."""
        complete = self._check_commands(cut=True)
        self.dma_totals["commands"] += complete
        self.dma_totals["beats"] += len(self.egress_beats)
        self.dma_totals["cut_commands"] += len(self.expected_commands) - complete
        self.descriptors = {}
        self.expected_commands = []
        self.done_seen = []
        self.egress_beats = []
        self.egress_cycles = []


class TB(LockstepTB, DmaChecks):
    """DMA path bench: program and trigger sources, egress sink, memory, model.

    After a mid-run reset the sources *drop* the item they were offering (a trigger comes
    from a tracker, which was reset too; a program is redone in full), the table has
    forgotten every descriptor, so the driver reprograms all of them while the triggers
    still queued wait (:meth:`reprogram_after_reset`).
    """

    def __init__(self, dut, *, trigger_p=1.0, egress_p=1.0):
        super().__init__(dut)
        self.params = bench_params()
        self.spec = DmaPath(**self.params)
        table, engine = self.spec.table, self.spec.engine
        self.memory = BenchMemory(self.rng, addr_width=engine.addr_width, data_width=engine.data_width)
        self.model = self._new_model()
        self.program_src = StreamSource(dut, "program", table.program_layout, self.rng)
        self.trigger_src = StreamSource(dut, "trigger", table.trigger_layout, self.rng, trigger_p)
        self.egress_sink = StreamSink(dut, "egress", engine.packet_layout, self.rng, egress_p)
        self.responder = ReadPortResponder(dut, "mem_read", self.memory, self.rng, latency=engine.read_latency)
        self.force_egress_ready: int | None = None
        self.trigger_ready_low = 0
        self.init_dma_checks()

    def descriptor(self) -> dict:
        t = self.spec.table
        return random_descriptor(self.rng, addr_width=t.addr_width, max_beats=t.max_beats,
                                 port_width=t.port_width)

    def program_all(self) -> None:
        self.program_src.queue.extend({"index": i, "desc": self.descriptor()}
                                      for i in range(self.spec.table.commands))

    def reset_inputs(self) -> None:
        for name in ("program__valid", "trigger__valid", "egress__ready"):
            getattr(self.dut, name).value = 0

    def _new_model(self) -> DmaPathModel:
        table, engine = self.spec.table, self.spec.engine
        return DmaPathModel(max_beats=table.max_beats, queue_depth=table.queue_depth,
                            read_latency=engine.read_latency, addr_width=engine.addr_width, memory=self.memory)

    def on_reset(self) -> None:
        self.dma_checks_on_reset()
        for src in (self.program_src, self.trigger_src):
            src.current = None
        self.program_src.queue.clear()
        self.model = self._new_model()
        # The idle edge between reset release and the first checked cycle.
        self.model.step(program=None, trigger=None, egress_ready=0)

    async def reprogram_after_reset(self) -> None:
        """Program every descriptor anew, triggers held back until the table has them all."""
        p_valid, self.trigger_src.p_valid = self.trigger_src.p_valid, 0.0
        self.program_all()
        await self.run(until=self.program_src.idle)
        self.trigger_src.p_valid = p_valid

    def drive(self) -> None:
        self.program_src.drive()
        self.trigger_src.drive()
        self.egress_sink.drive(self.force_egress_ready)
        self.responder.drive()

    def check(self) -> None:
        dut, sb, cycle = self.dut, self.scoreboard, self.cycle
        table_out, engine_out = self.model.outputs()
        sb.check(cycle, "program.ready", int(dut.program__ready.value), table_out.program_ready)
        trigger_ready = int(dut.trigger__ready.value)
        sb.check(cycle, "trigger.ready", trigger_ready, table_out.trigger_ready)
        self.trigger_ready_low += not trigger_ready
        self.check_dma_outputs(table_out, engine_out)
        layout = self.spec.status_layout
        sb.check(cycle, "status", int(dut.status.value),
                 pack(layout, {"table": table_out.status, "engine": engine_out.status}),
                 explain=lambda g, e: field_diff(layout, g, e))

        program, program_taken = self.program_src.handshake()
        trigger, trigger_taken = self.trigger_src.handshake()
        _, done = self.model.step(program=program, trigger=trigger,
                                  egress_ready=self.egress_sink.current_ready)
        self.check_done(done)
        if program_taken:
            self.on_program_accepted(program_taken)
        if trigger_taken:
            self.on_trigger_accepted(trigger_taken["dma_cmd"])

    def quiescent(self) -> bool:
        return self.program_src.idle() and self.trigger_src.idle() and self.model.idle()

    @property
    def settle_cycles(self) -> int:
        return self.spec.issue_latency + 2

    def final_check(self, *, errors_expected: bool = False) -> None:
        status = unpack(self.spec.status_layout, int(self.dut.status.value))
        assert status["engine"]["err_overflow"] == 0, "engine beat buffer overflowed"
        if not errors_expected:
            assert status["table"]["err_unprogrammed"] == 0 and status["table"]["err_bad_descriptor"] == 0
        assert status["engine"]["busy"] == 0
        self.final_dma_check()
        self.write_stats(triggers=self.trigger_src.sent, beats=self.dma_totals["beats"] + len(self.egress_beats),
                         commands=self.dma_totals["commands"] + len(self.done_seen),
                         cut_commands=self.dma_totals["cut_commands"], resets=self.resets)
        self.scoreboard.assert_clean()



# -- random triggers crossed with the idle/back-pressure matrix -------------------------------

async def random_test(dut, source, sink):
    tb = TB(dut, trigger_p=SOURCE_PATTERNS[source], egress_p=SINK_PATTERNS[sink])
    commands = tb.spec.table.commands
    tb.program_all()
    # Enough triggers for several thousand cycles whatever the pattern; occasionally the
    # driver reprograms a descriptor while triggers flow.
    triggers = {"always": 145, "random": 80, "heavy": 14}[sink]
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    for _ in range(triggers):
        tb.trigger_src.queue.append({"tile": tb.rng.getrandbits(tb.spec.table.tile_width),
                                     "dma_cmd": tb.rng.randrange(commands)})
    while not tb.trigger_src.idle():
        await tb.run(cycles=50)
        if tb.rng.random() < 0.3:
            tb.program_src.queue.append({"index": tb.rng.randrange(commands), "desc": tb.descriptor()})
    await tb.drain()
    tb.final_check()


register_tests(globals(), RANDOM_TESTS, random_test)


async def reset_test(dut, source, sink):
    """Random triggers with ``rst`` asserted for 1..4 cycles at random points while commands
    are queued or on the wire; the model is reset at the same edge, the driver reprograms
    the table, and the run goes on, checked every cycle, to the final beat-by-beat check."""
    tb = TB(dut, trigger_p=SOURCE_PATTERNS[source], egress_p=SINK_PATTERNS[sink])
    commands = tb.spec.table.commands
    tb.program_all()
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    tb.trigger_src.queue.extend({"tile": tb.rng.getrandbits(tb.spec.table.tile_width),
                                 "dma_cmd": tb.rng.randrange(commands)}
                                for _ in range({"always": 80, "random": 50, "heavy": 10}[sink]))
    busy_resets = 0
    for _ in range(RESETS_PER_TEST):
        await tb.run(cycles=tb.rng.randint(10, 300))
        await tb.run(until=lambda: not tb.model.idle() or tb.trigger_src.idle(), timeout=10_000)
        busy_resets += not tb.model.idle()
        await tb.reset_dut(cycles=tb.rng.randint(1, 4))
        await tb.reprogram_after_reset()
    assert busy_resets > 0, "no reset hit a command in flight"
    await tb.drain()
    tb.log.info("%d resets (%d with commands in flight), %d commands cut", tb.resets, busy_resets,
                tb.dma_totals["cut_commands"])
    tb.final_check()


register_tests(globals(), RESET_TESTS, reset_test)


# -- directed tests -------------------------------------------------------------------------

@cocotb.test()
async def full_rate_back_to_back(dut):
    """Queued commands stream out at one beat per cycle, with no bubble between commands.

    Then single-beat commands measure the table's documented trigger rate.
    """
    tb = TB(dut)
    spec = tb.spec
    commands = spec.table.commands
    for i in range(commands):
        desc = tb.descriptor()
        desc["beats"] = max(desc["beats"], spec.min_beats_for_full_rate)
        tb.program_src.queue.append({"index": i, "desc": desc})
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    tb.trigger_src.queue.extend({"tile": 0, "dma_cmd": i % commands} for i in range(24))
    start = tb.cycle
    await tb.drain()
    beats = sum(tb.descriptors[i % commands]["beats"] for i in range(24))
    assert tb.first_egress_cycle == start + spec.issue_latency, (
        f"first beat at cycle {tb.first_egress_cycle}, trigger at {start}, issue_latency {spec.issue_latency}")
    span = tb.egress_cycles[-1] - tb.egress_cycles[0] + 1
    assert len(tb.egress_beats) == beats and span == beats * spec.beats_per_cycle, (
        f"{beats} beats took {span} cycles")

    # Single-beat commands: the egress rate is the table's trigger rate.
    tb.program_src.queue.extend({"index": i, "desc": {**tb.descriptor(), "beats": 1}} for i in range(commands))
    await tb.run(until=tb.program_src.idle)
    n = 60
    tb.trigger_src.queue.extend({"tile": 0, "dma_cmd": i % commands} for i in range(n))
    before = len(tb.egress_cycles)
    await tb.drain()
    cycles = tb.egress_cycles[-1] - tb.egress_cycles[before] + 1
    expected = (n - 1) / spec.table.triggers_per_cycle + 1
    assert abs(cycles - expected) <= 1, (
        f"{n} single-beat commands took {cycles} cycles, triggers_per_cycle "
        f"{spec.table.triggers_per_cycle} predicts {float(expected):.1f}")
    tb.final_check()


@cocotb.test()
async def trigger_burst_while_egress_stalled(dut):
    """A burst of triggers while egress is stalled: trigger.ready falls, nothing is lost."""
    tb = TB(dut)
    tb.program_all()
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    tb.force_egress_ready = 0
    tb.trigger_src.queue.extend({"tile": 1, "dma_cmd": tb.rng.randrange(tb.spec.table.commands)}
                                for _ in range(3 * tb.spec.table.queue_depth + 4))
    await tb.run(cycles=200)
    assert tb.trigger_ready_low > 0, "trigger.ready never fell while egress was stalled"
    assert not tb.trigger_src.idle()
    tb.force_egress_ready = None
    await tb.drain()
    tb.final_check()


@cocotb.test()
async def program_in_trigger_cycle(dut):
    """A program takes effect before a trigger of the same index in the same cycle."""
    tb = TB(dut)
    await tb.start()
    for index in range(min(8, tb.spec.table.commands)):
        tb.program_src.queue.append({"index": index, "desc": tb.descriptor()})
        tb.trigger_src.queue.append({"tile": 2, "dma_cmd": index})
        await tb.run(cycles=1)
        await tb.run(until=tb.model.idle)
    # Reprogram index 0 in the cycle of its second trigger: the new descriptor is used.
    tb.program_src.queue.append({"index": 0, "desc": tb.descriptor()})
    tb.trigger_src.queue.append({"tile": 3, "dma_cmd": 0})
    await tb.drain()
    tb.final_check()


@cocotb.test()
async def error_unprogrammed_trigger(dut):
    """A trigger of a never-programmed descriptor is flagged with its index and sends nothing."""
    tb = TB(dut)
    tb.program_src.queue.append({"index": 1, "desc": tb.descriptor()})
    tb.trigger_src.queue.extend([{"tile": 0, "dma_cmd": 3}, {"tile": 0, "dma_cmd": 1},
                                 {"tile": 0, "dma_cmd": 5}])
    await tb.start()
    await tb.drain()
    status = unpack(tb.spec.status_layout, int(dut.status.value))["table"]
    assert status["err_unprogrammed"] == 1 and status["err_unprogrammed_index"] == 3
    assert status["triggers"] == 3 and status["issued"] == 1
    assert tb.done_seen == [1]
    tb.final_check(errors_expected=True)


@cocotb.test()
async def error_bad_descriptor(dut):
    """Descriptors of 0 beats or more than max_beats are refused with a sticky error."""
    tb = TB(dut)
    t = tb.spec.table
    good = tb.descriptor()
    too_long = t.max_beats + 1 if t.max_beats + 1 < 2 ** t.max_beats.bit_length() else 0
    tb.program_src.queue.extend([{"index": 2, "desc": {**good, "beats": 0}},
                                 {"index": 4, "desc": {**good, "beats": too_long}},
                                 {"index": 6, "desc": good}])
    await tb.start()
    await tb.run(until=tb.program_src.idle)
    tb.trigger_src.queue.extend([{"tile": 0, "dma_cmd": 2}, {"tile": 0, "dma_cmd": 6}])
    await tb.drain()
    status = unpack(tb.spec.status_layout, int(dut.status.value))["table"]
    assert status["err_bad_descriptor"] == 1 and status["err_bad_descriptor_index"] == 2
    assert status["err_unprogrammed"] == 1 and status["err_unprogrammed_index"] == 2
    assert tb.done_seen == [6]
    tb.final_check(errors_expected=True)


assert set(RANDOM_TESTS + RESET_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
