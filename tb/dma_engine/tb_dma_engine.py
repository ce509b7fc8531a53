# amaranth: UnusedElaboratable=no
"""cocotb bench of the DMA engine in its arbitrated-read mode (the mode T3Slice uses).

The bench plays the memory arbiter and the memory: it drives ``mem_read.ready`` (the grant)
randomly, and answers each read (``en`` and ``ready`` high) ``read_latency`` cycles later from
a bench memory, with random bits in every other cycle. Every cycle it compares
``cmd.ready``, ``mem_read.en``/``addr``, ``egress`` (valid, payload), ``done`` and ``status``
with :class:`~tb.dma_engine.model.ArbitratedEngineModel`. The read request is checked as a
stream (valid = ``en``, payload = ``addr``): ``en`` stays high with a stable ``addr`` until
``ready``; ``cmd`` and ``egress`` have the ``tb.common`` stream checkers.

Independently of the model, per cycle: every read's address is the next word of the accepted
commands, in order; every egress beat is the next expected packet (destination, op, ``last``
and the bench memory's word at the source address); ``done`` comes with, and only with, a
command's last beat. At the end: nothing owed, ``busy`` low, no overflow, and the status
counters equal the beats and commands seen since the last reset.
"""

from __future__ import annotations

from collections import deque

import cocotb

from rtl.dma_engine import DmaEngine
from rtl.ports import WriteOp
from tb.common.lockstep import LockstepTB, bench_params
from tb.common.memory import BenchMemory
from tb.common.packing import field_diff, pack, unpack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.protocol import StreamProtocolChecker
from tb.common.streams import StreamSink, StreamSource
from tb.dma_engine.model import ArbitratedEngineModel
from tb.dma_engine.scenarios import DIRECTED_TESTS, MATRIX, RANDOM_TESTS

PHASE_CYCLES = 120
LONG_STALL = 1500


class ArbitratedMemory:
    """The memory side of an arbitrated read port: grants with ``ready``, answers reads.

    Joins the bench's stream registry (reset with the DUT, checked every cycle) and checks the
    request with a :class:`~tb.common.protocol.StreamProtocolChecker` (``en`` as valid,
    ``addr`` as payload).
    """

    def __init__(self, dut, prefix: str, memory: BenchMemory, rng, *, latency: int, p_ready: float, registry):
        self.name = prefix
        self.en = getattr(dut, f"{prefix}__en")
        self.addr = getattr(dut, f"{prefix}__addr")
        self.ready = getattr(dut, f"{prefix}__ready")
        self.data = getattr(dut, f"{prefix}__data")
        self.memory, self.rng, self.latency, self.p_ready = memory, rng, latency, p_ready
        self.force: int | None = None       # drive this ready instead of a random one
        self.schedule = None                 # or a callable giving each cycle's ready
        self.current_ready = 0
        self.pipeline: deque[int | None] = deque([None] * latency, maxlen=latency)
        self.reads = 0
        self.checker = StreamProtocolChecker(f"{prefix} request (en/ready/addr)", check_payload_x=True,
                                             cycle=registry.cycle, context=registry.context)
        registry.add(self)

    def reset(self) -> None:
        self.checker.reset()
        self.pipeline.extend([None] * self.latency)   # reads in flight at a reset are dropped by the DUT

    def end_cycle(self, cycle: int) -> None:
        assert self.checker.last_cycle == cycle, "the bench did not sample mem_read in this cycle"

    def drive(self) -> None:
        if self.force is not None:
            self.current_ready = self.force
        elif self.schedule is not None:
            self.current_ready = int(self.schedule())
        else:
            self.current_ready = int(self.rng.random() < self.p_ready)
        self.ready.value = self.current_ready
        addr = self.pipeline[0]
        self.data.value = self.memory(addr) if addr is not None else self.rng.getrandbits(self.memory.data_width)

    def sample(self) -> tuple[int, int | None, bool]:
        """Read-only phase: check the request's protocol; return ``(en, addr, read happened)``."""
        en, addr = self.en.value, self.addr.value
        self.checker.sample(en, self.current_ready, addr if int(en) else None)
        en = int(en)
        read = bool(en and self.current_ready)
        self.pipeline.append(int(addr) if read else None)
        self.reads += read
        return en, int(addr) if en else None, read


class TB(LockstepTB):
    def __init__(self, dut, *, cmd_p: float = 1.0, mem_p: float = 1.0, egress_p: float = 1.0):
        super().__init__(dut)
        self.params = bench_params()
        self.spec = spec = DmaEngine(**self.params)
        assert spec.signature.members["mem_read"].signature.arbitrated
        self.addr_mask = (1 << spec.addr_width) - 1
        self.memory = BenchMemory(self.rng, addr_width=spec.addr_width, data_width=spec.data_width)
        self.model = ArbitratedEngineModel(read_latency=spec.read_latency, addr_width=spec.addr_width,
                                           memory=self.memory)
        self.cmd_src = StreamSource(dut, "cmd", spec.command_layout, self.rng, cmd_p, next_item=self._make)
        self.egress_sink = StreamSink(dut, "egress", spec.packet_layout, self.rng, egress_p)
        self.mem = ArbitratedMemory(dut, "mem_read", self.memory, self.rng, latency=spec.read_latency,
                                    p_ready=mem_p, registry=self.streams)
        self.force_egress: int | None = None
        self.supply: int | None = None      # commands the source may still create (None: unlimited)
        self.max_beats: int | None = None   # cap on generated command lengths
        self.made = 0
        # Spec-level expectations, built from accepted commands (cleared at a reset).
        self.expected_reads: deque[int] = deque()
        self.expected_beats: deque[tuple[dict, int]] = deque()   # (packet, dma_cmd)
        self.commands_accepted = 0
        self.beats_sent = self.commands_done = 0      # since the last reset
        self.total_beats = self.total_commands = 0
        self.lost_at_reset = 0
        self.accept_cycles: list[int] = []
        self.egress_valid_cycles: list[int] = []
        self.egress_fire_cycles: list[int] = []

    # -- stimulus ---------------------------------------------------------------------------
    def _make(self):
        if self.supply is not None:
            if self.supply <= 0:
                return None
            self.supply -= 1
        self.made += 1
        return self.command()

    def command(self, beats: int | None = None) -> dict:
        spec, rng = self.spec, self.rng
        top = self.max_beats or spec.max_beats
        if beats is None:
            r = rng.random()
            beats = 1 if r < 0.15 else top if r < 0.3 else rng.randint(1, top)
        return {"dma_cmd": rng.getrandbits(spec.dma_cmd_width),
                "desc": {"src_addr": rng.getrandbits(spec.addr_width), "dst_addr": rng.getrandbits(spec.addr_width),
                         "beats": beats, "dst_port": rng.getrandbits(spec.port_width),
                         "op": rng.choice((WriteOp.STORE.value, WriteOp.UPDATE.value))}}

    def reset_inputs(self) -> None:
        for name in ("cmd__valid", "egress__ready", "mem_read__ready"):
            getattr(self.dut, name).value = 0

    def on_reset(self) -> None:
        self.model.reset()
        self.model.step(cmd=None, mem_ready=0, egress_ready=0)    # the idle edge after reset
        self.lost_at_reset += len(self.expected_beats)
        self.expected_reads.clear()
        self.expected_beats.clear()
        self.beats_sent = self.commands_done = 0

    def drive(self) -> None:
        self.cmd_src.drive()
        self.egress_sink.drive(self.force_egress)
        self.mem.drive()

    # -- per-cycle checks -------------------------------------------------------------------
    def check(self) -> None:
        dut, sb, cycle, spec = self.dut, self.scoreboard, self.cycle, self.spec
        mem_ready, egress_ready = self.mem.current_ready, self.egress_sink.current_ready
        exp = self.model.outputs(mem_ready=mem_ready)
        sb.check(cycle, "cmd.ready", int(dut.cmd__ready.value), exp.cmd_ready)
        en, addr, read = self.mem.sample()
        sb.check(cycle, "mem_read.en", en, exp.mem_en)
        if en and exp.mem_en:
            sb.check(cycle, "mem_read.addr", addr, exp.mem_addr)
        valid, raw = self.egress_sink.sample()
        sb.check(cycle, "egress.valid", valid, exp.egress_valid)
        if valid and exp.egress_valid:
            sb.check(cycle, "egress.payload", raw, pack(spec.packet_layout, exp.egress),
                     explain=lambda g, e: field_diff(spec.packet_layout, g, e))
        sb.check(cycle, "status", int(dut.status.value), pack(spec.status_layout, exp.status),
                 explain=lambda g, e: field_diff(spec.status_layout, g, e))
        done_valid = int(dut.done__valid.value)
        done_cmd = unpack(spec.done_layout, int(dut.done__payload.value))["dma_cmd"] if done_valid else None

        offered, taken = self.cmd_src.handshake()
        _, done = self.model.step(cmd=offered, mem_ready=mem_ready, egress_ready=egress_ready)
        sb.check(cycle, "done.valid", done_valid, int(done is not None))
        if done_valid and done is not None:
            sb.check(cycle, "done.payload", done_cmd, done)

        # -- spec-level checks, independent of the model ------------------------------------
        if read:
            want = self.expected_reads.popleft() if self.expected_reads else "no read owed"
            sb.check(cycle, "read address (next word of the accepted commands)", addr, want)
        fired_last = None
        if valid:
            self.egress_valid_cycles.append(cycle)
        if valid and egress_ready:
            beat = self.egress_sink.record(raw)
            want, index = self.expected_beats.popleft() if self.expected_beats else ("no beat owed", None)
            sb.check(cycle, "egress beat (next packet of the accepted commands, memory data)", beat, want,
                     explain=lambda g, e: field_diff(spec.packet_layout, pack(spec.packet_layout, g),
                                                     pack(spec.packet_layout, e)))
            self.egress_fire_cycles.append(cycle)
            self.beats_sent += 1
            self.total_beats += 1
            if beat["last"]:
                fired_last = index
        sb.check(cycle, "done (exactly with a command's last beat, its index)", done_cmd, fired_last)
        if done_valid:
            self.commands_done += 1
            self.total_commands += 1
        if taken is not None:
            self.expect(taken)
            self.accept_cycles.append(cycle)

    def expect(self, cmd: dict) -> None:
        desc = cmd["desc"]
        self.commands_accepted += 1
        for i in range(desc["beats"]):
            src = (desc["src_addr"] + i) & self.addr_mask
            self.expected_reads.append(src)
            self.expected_beats.append(({"dst_port": desc["dst_port"], "op": desc["op"],
                                         "dst_addr": (desc["dst_addr"] + i) & self.addr_mask,
                                         "last": int(i == desc["beats"] - 1), "data": self.memory(src)},
                                        cmd["dma_cmd"]))

    def quiescent(self) -> bool:
        return self.supply == 0 and self.cmd_src.idle() and self.model.idle() and not self.expected_beats

    @property
    def settle_cycles(self) -> int:
        return self.spec.start_latency + 2

    def final_check(self) -> None:
        status = unpack(self.spec.status_layout, int(self.dut.status.value))
        assert not self.expected_reads and not self.expected_beats, "reads or beats still owed"
        assert status["err_overflow"] == 0 and status["busy"] == 0, status
        assert (status["beats"], status["commands"]) == (self.beats_sent, self.commands_done), (
            f"status counters {status['beats']}/{status['commands']}, seen {self.beats_sent}/{self.commands_done}")
        self.log.info("%d commands accepted, %d beats and %d commands sent, %d reads, %d beats lost at %d resets",
                      self.commands_accepted, self.total_beats, self.total_commands, self.mem.reads,
                      self.lost_at_reset, self.resets)
        self.write_stats(commands=self.total_commands, beats=self.total_beats, reads=self.mem.reads,
                         resets=self.resets)
        self.scoreboard.assert_clean()


def set_patterns(tb: TB, mem: str, egress: str, cmd: str) -> None:
    tb.mem.p_ready = SINK_PATTERNS[mem]
    tb.egress_sink.p_ready = SINK_PATTERNS[egress]
    tb.cmd_src.p_valid = SOURCE_PATTERNS[cmd]


@cocotb.test()
async def random_matrix(dut):
    """Random commands under every (mem_read.ready, egress.ready, cmd source) pattern, one phase each."""
    tb = TB(dut)
    await tb.start()
    for mem, egress, cmd in MATRIX:
        set_patterns(tb, mem, egress, cmd)
        await tb.run(cycles=PHASE_CYCLES)
    tb.supply = 0
    await tb.drain()
    assert tb.total_commands == tb.commands_accepted > 50
    tb.final_check()


@cocotb.test()
async def timing_and_long_stalls(dut):
    """With the grant and egress always ready: start latency exact, one beat per cycle, no bubble
    between commands. Then a grant withheld for LONG_STALL cycles (the request stays up with its
    address), an egress stall as long, and a grant every other cycle (one beat per 2 cycles)."""
    tb = TB(dut)
    spec = tb.spec
    tb.supply = 0
    await tb.start()
    tb.mem.force, tb.force_egress = 1, 1
    # One command from idle.
    tb.cmd_src.queue.append(tb.command(beats=5))
    await tb.drain()
    first = tb.accept_cycles[-1] + spec.start_latency
    assert tb.egress_valid_cycles[:1] == [first], (
        f"command accepted in cycle {tb.accept_cycles[-1]}, first egress.valid {tb.egress_valid_cycles[:1]}, "
        f"start_latency {spec.start_latency}")
    assert tb.egress_fire_cycles == list(range(first, first + 5))
    # Back to back: 12 commands, one beat per cycle from the first to the last.
    before = len(tb.egress_fire_cycles)
    tb.cmd_src.queue.extend(tb.command() for _ in range(12))
    await tb.drain()
    fires = tb.egress_fire_cycles[before:]
    assert fires == list(range(fires[0], fires[0] + len(fires))), "a bubble with the grant and egress always ready"
    assert fires[0] == tb.accept_cycles[-12] + spec.start_latency

    # Grant withheld: the request stays up (the protocol checker), nothing is read or sent.
    tb.cmd_src.queue.extend(tb.command(beats=spec.max_beats) for _ in range(2))
    await tb.run(cycles=3)
    tb.mem.force = 0
    reads = tb.mem.reads
    await tb.run(cycles=LONG_STALL)
    assert tb.mem.reads == reads and int(dut.mem_read__en.value) == 1 and int(dut.cmd__ready.value) == 0
    assert tb.mem.checker.stall_cycles >= LONG_STALL
    tb.mem.force = 1
    await tb.run(cycles=2)
    # Egress stalled: the buffer fills, the request drops (no room), egress holds its beat.
    tb.force_egress = 0
    await tb.run(cycles=LONG_STALL)
    assert int(dut.egress__valid.value) == 1 and int(dut.mem_read__en.value) == 0
    assert tb.egress_sink.checker.stall_cycles >= LONG_STALL - spec.start_latency
    tb.force_egress = 1
    await tb.drain()
    # A grant every other cycle: one beat per two cycles.
    tb.mem.force = None
    toggle = iter(range(1 << 30))
    tb.mem.schedule = lambda: next(toggle) % 2
    before = len(tb.egress_fire_cycles)
    tb.cmd_src.queue.extend(tb.command(beats=spec.max_beats) for _ in range(3))
    await tb.drain()
    tb.mem.schedule = None
    fires = tb.egress_fire_cycles[before:]
    assert [b - a for a, b in zip(fires, fires[1:], strict=False)] == [2] * (len(fires) - 1), fires
    tb.final_check()


#: How soon a command's first read request comes up with the egress ready: the reads and beats
#: of the command before it drain first (its reads' latency, then its buffered beats).
REQUEST_WITHIN_CYCLES = 64


@cocotb.test()
async def mid_run_reset(dut):
    """Resets mid-command: with reads in flight, with a refused request up, with egress stalled
    and with a command offered; then a random phase and a drain, fully checked."""
    tb = TB(dut, mem_p=SINK_PATTERNS["random"], egress_p=SINK_PATTERNS["random"])
    await tb.start()
    for i in range(6):
        await tb.run(cycles=tb.rng.randint(5, 80))
        if i == 1:
            # A refused request: the grant withheld, with a command to read for and the egress
            # ready (under the random egress a full buffer rightly drops the request: a seed
            # found it). The request comes up, then stays up while it is refused.
            tb.mem.force, tb.force_egress = 0, 1
            tb.cmd_src.queue.append(tb.command(beats=tb.spec.max_beats))
            for _ in range(REQUEST_WITHIN_CYCLES):
                if int(dut.mem_read__en.value):
                    break
                await tb.run(cycles=1)
            assert int(dut.mem_read__en.value) == 1, f"no read request {REQUEST_WITHIN_CYCLES} cycles into a command"
            await tb.run(cycles=5)
            assert int(dut.mem_read__en.value) == 1, "a refused request dropped"
            tb.mem.force, tb.force_egress = None, None
        if i == 3:
            tb.force_egress = 0
            await tb.run(cycles=20)
            assert int(dut.egress__valid.value) == 1
            tb.force_egress = None
        await tb.reset_dut(cycles=tb.rng.randint(1, 3))
    await tb.run(cycles=300)
    tb.supply = 0
    await tb.drain()
    assert tb.lost_at_reset > 0
    tb.final_check()


assert set(RANDOM_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
