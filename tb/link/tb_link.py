# amaranth: UnusedElaboratable=no
"""cocotb bench of the GPU-to-GPU link model, lock-step with the golden model.

Every cycle it compares ``input.ready``, ``output.valid`` and ``output.payload`` with
:class:`~tb.link.model.LinkGoldenModel`; the ``tb.common`` stream checkers watch both
streams (on ``output``: valid held until ready, payload stable, however long the stall).
Independently of the model the bench checks, per cycle:

* order and no loss: a valid ``output`` shows the oldest accepted beat not yet delivered;
* exact latency: a beat accepted in cycle *c* is first valid in cycle
  ``max(c + latency, cycle the beat ahead left + 1)``;
* bandwidth: accepts are at least ``cycles_per_beat`` cycles apart (exactly, at full rate
  with the default depth), and the link never holds more than ``depth`` beats;

and at the end that every accepted beat was delivered exactly once (beats inside the link
at a mid-run reset are lost: what was delivered before it must be a prefix of what was
accepted). Beat ``n`` carries ``word(n)``, a bijection of ``n`` mod 2**16 that toggles every bit.
"""

from __future__ import annotations

import cocotb
from amaranth.lib import data

from tb.common.lockstep import LockstepTB, bench_params
from tb.common.packing import pack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.streams import StreamSink, StreamSource
from tb.link.model import LinkGoldenModel, default_depth
from tb.link.scenarios import DIRECTED_TESTS, MATRIX, RANDOM_TESTS

BEAT = data.StructLayout({"word": 16})
PHASE_CYCLES = 200
LONG_STALL = 2000   # cycles of back-pressure, far beyond any timestamp wrap of the old link


def word(n: int) -> int:
    return (n * 0x9E37 + 0x1234) & 0xFFFF


class TB(LockstepTB):
    def __init__(self, dut, *, src_p: float = 1.0, sink_p: float = 1.0):
        super().__init__(dut)
        self.params = bench_params()
        p = self.params
        assert p["payload_shape"] == BEAT.size
        self.latency, self.cpb = p["latency"], p["cycles_per_beat"]
        self.depth = p.get("depth") or default_depth(self.latency, self.cpb)
        self.model = LinkGoldenModel(latency=self.latency, cycles_per_beat=self.cpb, depth=p.get("depth"))
        self.supply: int | None = None     # beats the source may still create (None: unlimited)
        self.made = 0
        self.src = StreamSource(dut, "input", BEAT, self.rng, src_p, next_item=self._make)
        self.sink = StreamSink(dut, "output", BEAT, self.rng, sink_p)
        self.force_ready: int | None = None
        self.word_of = {}
        # Spec-level bookkeeping of the current epoch (since the last reset).
        self.accepted: list[tuple[int, int]] = []   # (beat number, accept cycle)
        self.delivered: list[int] = []
        self.first_valid: dict[int, int] = {}
        self.last_take: int | None = None
        self.last_accept: int | None = None
        self.full_rate_gaps: list[int] | None = None  # accept gaps, recorded while measuring
        self.total_delivered = 0
        self.lost_at_reset = 0
        self.longest_stall = 0
        self._stall = 0

    def _make(self):
        if self.supply is not None:
            if self.supply <= 0:
                return None
            self.supply -= 1
        n = self.made
        self.made += 1
        self.word_of[word(n)] = n
        return {"word": word(n)}

    def reset_inputs(self) -> None:
        self.dut.input__valid.value = 0
        self.dut.output__ready.value = 0

    def on_reset(self) -> None:
        delivered, accepted = self.delivered, [n for n, _ in self.accepted]
        assert accepted[:len(delivered)] == delivered, "before the reset, output was not a prefix of input"
        assert self.model.held() == [word(n) for n in accepted[len(delivered):]], "model and bench disagree"
        self.lost_at_reset += len(accepted) - len(delivered)
        self.model.reset()
        self.model.step(input_valid=0, payload=None, output_ready=0)   # the idle edge after reset
        self.accepted, self.delivered, self.first_valid = [], [], {}
        self.last_take = self.last_accept = None
        self._stall = 0

    def drive(self) -> None:
        self.src.drive()
        self.sink.drive(self.force_ready)

    def check(self) -> None:
        dut, sb, cycle = self.dut, self.scoreboard, self.cycle
        exp = self.model.outputs()
        sb.check(cycle, "input.ready", int(dut.input__ready.value), exp.input_ready)
        valid, raw = self.sink.sample()
        sb.check(cycle, "output.valid", valid, exp.output_valid)
        if valid and exp.output_valid:
            sb.check(cycle, "output.payload", raw, exp.output)
        offered, taken = self.src.handshake()
        ready = self.sink.current_ready
        self.model.step(input_valid=int(offered is not None), payload=pack(BEAT, offered) if offered else None,
                        output_ready=ready)

        # -- spec-level checks, independent of the model --------------------------------
        if taken is not None:
            n = self.word_of[taken["word"]]
            if self.last_accept is not None:
                gap = cycle - self.last_accept
                sb.check(cycle, f"input accepted {gap} cycles after the previous beat (>= cycles_per_beat)",
                         min(gap, self.cpb), self.cpb)
                if self.full_rate_gaps is not None:
                    self.full_rate_gaps.append(gap)
            self.accepted.append((n, cycle))
            self.last_accept = cycle
        if valid:
            head = len(self.delivered)
            sb.check(cycle, "output beat (oldest undelivered, in order)", self.word_of.get(raw, raw),
                     self.accepted[head][0] if head < len(self.accepted) else "nothing accepted")
            n, accepted_at = self.accepted[head]
            if n not in self.first_valid:
                self.first_valid[n] = cycle
                due = accepted_at + self.latency
                if self.last_take is not None:
                    due = max(due, self.last_take + 1)
                sb.check(cycle, f"first output.valid of beat {n} (accepted in cycle {accepted_at}, latency "
                         f"{self.latency})", cycle, due)
            if ready:
                self.delivered.append(n)
                self.total_delivered += 1
                self.last_take = cycle
            self._stall = self._stall + 1 if not ready else 0
            self.longest_stall = max(self.longest_stall, self._stall)
        held = len(self.accepted) - len(self.delivered)
        sb.check(cycle, f"beats in the link <= depth {self.depth}", held <= self.depth, True)

    def quiescent(self) -> bool:
        return self.supply == 0 and self.src.idle() and len(self.delivered) == len(self.accepted)

    @property
    def settle_cycles(self) -> int:
        return self.latency + 4

    def final_check(self) -> None:
        assert [n for n, _ in self.accepted] == self.delivered, "beats lost, duplicated or reordered"
        assert self.total_delivered + self.lost_at_reset == self.made, (
            f"{self.made} beats made, {self.total_delivered} delivered, {self.lost_at_reset} lost at resets")
        self.log.info("%d beats delivered, %d lost at %d resets, longest stall of a valid beat %d cycles",
                      self.total_delivered, self.lost_at_reset, self.resets, self.longest_stall)
        self.write_stats(beats=self.total_delivered, resets=self.resets)
        self.scoreboard.assert_clean()


async def measure_full_rate(tb: TB, cycles: int = 120) -> None:
    """Source at full rate, sink always ready: with the default depth the link accepts exactly
    one beat every ``cycles_per_beat`` cycles; each beat's latency is checked per cycle."""
    tb.src.p_valid, tb.sink.p_ready = 1.0, 1.0
    await tb.run(cycles=2 * tb.latency + 2 * tb.depth * tb.cpb)      # reach steady state
    tb.full_rate_gaps = []
    await tb.run(cycles=cycles)
    gaps, tb.full_rate_gaps = tb.full_rate_gaps, None
    assert gaps, "no beats accepted at full rate"
    if tb.depth >= default_depth(tb.latency, tb.cpb):
        assert set(gaps) == {tb.cpb}, f"at full rate the accept gaps were {sorted(set(gaps))}, not {tb.cpb}"


@cocotb.test()
async def random_matrix(dut):
    """Every (output sink, input source) pattern as a phase, then a stall of LONG_STALL cycles with
    the link full, then full rate (exact bandwidth)."""
    tb = TB(dut)
    await tb.start()
    await measure_full_rate(tb)
    for sink, src in MATRIX:
        tb.sink.p_ready, tb.src.p_valid = SINK_PATTERNS[sink], SOURCE_PATTERNS[src]
        await tb.run(cycles=PHASE_CYCLES)
    tb.src.p_valid = 1.0
    tb.force_ready = 0
    await tb.run(cycles=LONG_STALL)
    assert tb.longest_stall >= LONG_STALL - tb.latency - tb.depth * tb.cpb
    tb.force_ready = None
    await measure_full_rate(tb)
    tb.supply = 0
    await tb.drain()
    tb.final_check()


@cocotb.test()
async def mid_run_reset(dut):
    """Resets with beats in flight, with a beat held under back-pressure and while idle; after each
    reset the link is empty and its timing restarts."""
    tb = TB(dut, src_p=SOURCE_PATTERNS["gaps"], sink_p=SINK_PATTERNS["random"])
    await tb.start()
    for i in range(6):
        await tb.run(cycles=tb.rng.randint(10, 120))
        if i == 1:                        # a beat valid and stalled at the reset
            tb.force_ready = 0
            await tb.run(cycles=tb.latency + 3)
            assert int(dut.output__valid.value)
            tb.force_ready = None
        if i == 4:                        # an empty link at the reset
            tb.supply = 0
            await tb.drain()
            tb.supply = None
        await tb.reset_dut(cycles=tb.rng.randint(1, 3))
    await measure_full_rate(tb)
    tb.supply = 0
    await tb.drain()
    assert tb.lost_at_reset > 0
    tb.final_check()


assert set(RANDOM_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
