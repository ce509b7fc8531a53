# amaranth: UnusedElaboratable=no
"""cocotb bench of the near-memory reducer, lock-step with the golden model.

Every cycle: ``request.ready``, the read port's data (after every read of a word whose
contents are known) and the status counters are compared with the model. At the end the
whole bank is read out through the read port and every known word is compared with the
model's bank bit for bit (any NaN matches any NaN).

The bank makes no promise at power-up (the bench builds it with ``power_up_seed``, so its
words are pseudo-random), so the driver follows the protocol: its first request to a word
is a ``STORE``, and only then does it ``UPDATE`` it. After a mid-run reset the driver
drops the request it was offering (an update held by a hazard) and
re-initialises, with a ``STORE``, the words of the requests it made in the last
``write_latency`` cycles before the reset, whose write-back the reset may have cut off;
every other word keeps its value and goes on accumulating.
"""

from __future__ import annotations

import cocotb
import numpy as np

from rtl.nmc import NearMemoryReducer
from tb.common.lockstep import LockstepTB, bench_params, register_tests
from tb.common.packing import pack, unpack
from tb.common.patterns import SOURCE_PATTERNS
from tb.common.streams import StreamSource
from tb.fp_add.golden import NUMPY_TYPES, mismatches
from tb.nmc.model import SPEC_READ_LATENCY, STORE, UPDATE, NearMemoryReducerModel, beat_to_lanes, lanes_to_beat
from tb.nmc.scenarios import DIRECTED_TESTS, RANDOM_TESTS, REQUESTS, RESET_TESTS, RESETS_PER_TEST


class TB(LockstepTB):
    def __init__(self, dut, *, request_p: float = 1.0, read_p: float = 0.2):
        super().__init__(dut)
        self.spec = NearMemoryReducer(**bench_params())
        self.fmt = self.spec.format.name
        self.ftype, self.utype = NUMPY_TYPES[self.fmt]
        self.np_rng = np.random.default_rng(self.seed)
        self.model = NearMemoryReducerModel(format=self.fmt, lanes=self.spec.lanes, depth=self.spec.depth,
                                            adder_latency=self.spec.adder_latency)
        self.request_src = StreamSource(dut, "request", self.spec.request_layout, self.rng, request_p,
                                        next_item=self._next_request)
        # Reactive stimulus (random tests): requests left, the address pool, the words the
        # driver has initialised since power-up or reset, its latest accepted requests.
        self.budget = 0
        self.pool: list[int] = []
        self.initialised: set[int] = set()
        self.recent: list[tuple[int, int]] = []   # (cycle, addr), the last write_latency cycles
        self.read_p = read_p
        self.read_queue: list[int] = []   # addresses to read in order (the final dump)
        self.read_now: int | None = None
        self.reads_checked = 0
        self.requests = 0
        self.refused = 0   # cycles an offered update waited for a sum still in the adder
        self.request_cycles: list[int] = []
        self.read_log: list[tuple[int, int, int]] = []  # (cycle, addr, data) for directed checks
        self.reads_unknown = 0
        self.reset_cycle = 0   # first cycle after the latest reset
        self._reads_in_flight: list[int | None] = [None] * SPEC_READ_LATENCY   # newest first

    # -- stimulus ---------------------------------------------------------------------------

    def beat(self) -> int:
        """Lanes of mostly moderate finite values (so sums stay interesting), some huge ones
        (overflow), some random bit patterns (subnormals, infinities, NaNs)."""
        lanes = self.spec.lanes
        values = (self.np_rng.standard_normal(lanes) * 10.0 ** self.np_rng.integers(-6, 4)).astype(np.float32)
        bits = values.astype(self.ftype).view(self.utype)
        special = self.np_rng.random(lanes) < 0.03
        width = self.spec.format.width
        bits[special] = self.np_rng.integers(0, 1 << width, size=int(special.sum()), dtype=np.uint64)
        return lanes_to_beat(bits.astype(self.utype))

    def request(self, addr: int, op: int | None = None) -> dict:
        """A request to ``addr``: a STORE if the driver has not initialised the word yet."""
        if op is None:
            op = STORE if addr not in self.initialised or self.rng.random() < 0.15 else UPDATE
        if op == STORE:
            self.initialised.add(addr)
        else:
            assert addr in self.initialised, f"bench: UPDATE of word {addr} before any STORE"
        return {"addr": addr, "op": op, "data": self.beat()}

    def _next_request(self) -> dict | None:
        if self.budget == 0:
            return None
        self.budget -= 1
        return self.request(self.rng.choice(self.pool))

    # -- reset ------------------------------------------------------------------------------

    def _idle_edge(self) -> None:
        """Step the model over the idle edge between reset release and the first checked cycle."""
        self.model.step(request=None, read_addr=None)

    async def start(self, *, reset_cycles: int = 2) -> None:
        await super().start(reset_cycles=reset_cycles)
        self._idle_edge()

    def on_reset(self) -> None:
        last = self.cycle - 1   # the last checked cycle; its edge passed before rst rose
        lost = {addr for cycle, addr in self.recent if cycle > last - self.spec.write_latency}
        dropped = self.request_src.current
        if dropped is not None:
            self.request_src.current = None
            if dropped["op"] == STORE:
                lost.add(dropped["addr"])
        self.initialised -= lost
        self.recent = []
        self.read_now = None
        self._reads_in_flight = [None] * SPEC_READ_LATENCY
        self.model.reset()
        self._idle_edge()

    # -- cycle loop -------------------------------------------------------------------------

    def reset_inputs(self) -> None:
        self.dut.request__valid.value = 0
        self.dut.read__en.value = 0
        self.dut.read__addr.value = 0

    def drive(self) -> None:
        self.request_src.drive()
        if self.read_queue:
            self.read_now = self.read_queue.pop(0)
        elif self.rng.random() < self.read_p:
            # Mostly the driver's own words (known contents, compared); sometimes any word.
            if self.pool and self.rng.random() < 0.8:
                self.read_now = self.rng.choice(self.pool)
            else:
                self.read_now = self.rng.randrange(self.spec.depth)
        else:
            self.read_now = None
        self.dut.read__en.value = int(self.read_now is not None)
        if self.read_now is not None:
            self.dut.read__addr.value = self.read_now

    def check(self) -> None:
        dut, sb, cycle = self.dut, self.scoreboard, self.cycle
        expected = self.model.outputs()
        offered = self.request_src.current
        ready = expected.request_ready if offered is None else int(self.model.ready_for(offered["addr"], offered["op"]))
        self.refused += offered is not None and not ready
        sb.check(cycle, "request.ready", int(dut.request__ready.value), ready)
        if expected.read_issued:
            returning = self._reads_in_flight[-1]
            raw = dut.read__data.value
            sb.check(cycle, f"read.data[{returning}] has no X/Z", raw.is_resolvable, True)
            got = int(raw)
            self.read_log.append((cycle, returning, got))
            if expected.read_data is None:   # a word the bank makes no promise about
                self.reads_unknown += 1
            else:
                self.reads_checked += 1
                sb.check(cycle, f"read.data[{returning}]", self._lanes_equal(got, expected.read_data), True,
                         explain=lambda g, e: f"lanes {self._lane_diff(got, expected.read_data)}")
        sb.check(cycle, "status", int(dut.status.value), pack(self.spec.status_layout, expected.status))
        request, taken = self.request_src.handshake()
        if taken:
            self.requests += 1
            self.request_cycles.append(cycle)
            self.recent = [(c, a) for c, a in self.recent if c > cycle - self.spec.write_latency]
            self.recent.append((cycle, taken["addr"]))
        self.model.step(request=request and (request["addr"], request["op"], request["data"]),
                        read_addr=self.read_now)
        self._reads_in_flight = [self.read_now, *self._reads_in_flight[:-1]]

    def _lanes_equal(self, got: int, expected: int) -> bool:
        return got == expected or len(self._lane_diff(got, expected)) == 0

    def _lane_diff(self, got: int, expected: int) -> list[int]:
        lanes = self.spec.lanes
        g = beat_to_lanes(got, self.utype, lanes)
        e = beat_to_lanes(expected, self.utype, lanes)
        return [int(i) for i in mismatches(self.fmt, g, e)]

    async def drain_and_dump(self) -> None:
        """Finish the requests, then read the whole bank and compare it with the model's."""
        await self.run(until=lambda: self.request_src.idle() and self.budget == 0, timeout=2_000_000)
        await self.run(cycles=self.spec.write_latency)
        self.read_p = 0.0
        first = len(self.read_log)
        self.read_queue = list(range(self.spec.depth))
        await self.run(cycles=self.spec.depth + self.spec.read_latency)
        dumped = {addr: data for _, addr, data in self.read_log[first:]}
        assert sorted(dumped) == list(range(self.spec.depth)), "the dump missed addresses"
        known = [a for a in range(self.spec.depth) if self.model.known[a]]
        assert known, "no word of the bank was initialised"
        bank = np.stack([beat_to_lanes(dumped[a], self.utype, self.spec.lanes) for a in known])
        bad = mismatches(self.fmt, bank.ravel(), self.model.logical[known].ravel())
        assert len(bad) == 0, (f"{len(bad)} lanes of the bank differ from the model, first in word "
                               f"{known[bad[0] // self.spec.lanes]}")
        self.words_dumped = len(known)

    def final_check(self) -> None:
        status = unpack(self.spec.status_layout, int(self.dut.status.value))
        since_reset = sum(1 for c in self.request_cycles if c >= self.reset_cycle)
        assert status["stores"] + status["updates"] == since_reset
        span = self.request_cycles[-1] - self.request_cycles[0] + 1 if self.request_cycles else 0
        self.write_stats(requests=self.requests, reads_checked=self.reads_checked, reads_unknown=self.reads_unknown,
                         words_dumped=getattr(self, "words_dumped", 0), request_span_cycles=span, resets=self.resets)
        self.scoreboard.assert_clean()


def _random_traffic(tb: TB, addresses: str, source: str, scale: float = 1.0) -> int:
    depth = tb.spec.depth
    tb.pool = tb.rng.sample(range(depth), 4) if addresses == "hot" else list(range(depth))
    # Wide beats simulate ~4x slower on Icarus (more lane adders): a quarter of the requests.
    count = REQUESTS[source] if tb.spec.lanes <= 4 else REQUESTS[source] // 4
    tb.budget = int(count * scale)
    return tb.budget


async def random_test(dut, addresses, source):
    tb = TB(dut, request_p=SOURCE_PATTERNS[source])
    count = _random_traffic(tb, addresses, source)
    await tb.start()
    await tb.drain_and_dump()
    if source == "full":
        # One request per cycle except the cycles a hazard refused an update: no other stall.
        span = tb.request_cycles[-1] - tb.request_cycles[0] + 1
        assert span == count + tb.refused, f"{count} requests took {span} cycles, {tb.refused} refused"
        tb.log.info("%s addresses: %d requests in %d cycles = %.3f per cycle (%d hazard waits)",
                    addresses, count, span, count / span, tb.refused)
    tb.final_check()


register_tests(globals(), RANDOM_TESTS, random_test)


async def reset_test(dut, addresses, source):
    """Random requests and reads with ``rst`` asserted for 1..4 cycles at random points while
    requests are in the pipeline; the model drops those requests (their words become
    unknown, and the driver stores them afresh), keeps the rest of the bank, and the run
    goes on, checked every cycle, to the full dump."""
    tb = TB(dut, request_p=SOURCE_PATTERNS[source])
    count = _random_traffic(tb, addresses, source, scale=0.25)
    await tb.start()
    busy_resets = 0
    for _ in range(RESETS_PER_TEST):
        await tb.run(cycles=tb.rng.randint(50, max(60, count // (RESETS_PER_TEST + 1))))
        await tb.run(until=lambda: any(slot is not None for slot in tb.model.pipeline) or tb.budget == 0,
                     timeout=10_000)
        busy_resets += any(slot is not None for slot in tb.model.pipeline)
        await tb.reset_dut(cycles=tb.rng.randint(1, 4))
        tb.reset_cycle = tb.cycle
    assert busy_resets > 0, "no reset hit requests in flight"
    await tb.drain_and_dump()
    tb.log.info("%d resets (%d with requests in flight); %d reads of unknown words", tb.resets, busy_resets,
                tb.reads_unknown)
    tb.final_check()


register_tests(globals(), RESET_TESTS, reset_test)


@cocotb.test()
async def back_to_back_updates_one_address(dut):
    """A store then a long run of updates to one address, offered back to back: each
    depends on the previous sum, so they are accepted one per ``same_address_interval``."""
    tb = TB(dut, read_p=0.5)
    tb.request_src.queue.append(tb.request(5, STORE))
    tb.request_src.queue.extend(tb.request(5, UPDATE) for _ in range(500))
    await tb.start()
    await tb.drain_and_dump()
    gaps = set(np.diff(tb.request_cycles))
    assert gaps == {tb.spec.same_address_interval}, f"gaps between dependent updates: {sorted(gaps)}"
    tb.final_check()


@cocotb.test()
async def same_address_runs_of_every_length(dut):
    """Runs of N updates to one word, N = 1 .. pipeline depth + 2, then a run to another
    word, back to back: every hazard distance, each answered by a wait of exactly what the
    dependency needs (the model's ready), the sums bit-exact at the dump."""
    tb = TB(dut, read_p=0.3)
    depth = tb.spec.write_latency + 2
    words = tb.rng.sample(range(tb.spec.depth), 6)
    for addr in words:
        tb.request_src.queue.append(tb.request(addr, STORE))
    for n in range(1, depth + 1):
        for k, addr in enumerate(tb.rng.sample(words, 2)):
            tb.request_src.queue.extend(tb.request(addr, UPDATE) for _ in range(n + k))
    await tb.start()
    await tb.drain_and_dump()
    tb.final_check()


@cocotb.test()
async def alternating_addresses(dut):
    """Updates alternating over 2, 3, ... adder_latency + 1 words: the shortest cycles of
    dependencies, each waiting only as long as its own word's previous sum needs."""
    tb = TB(dut, read_p=0.3)
    words = tb.rng.sample(range(tb.spec.depth), tb.spec.adder_latency + 1)
    for addr in words:
        tb.request_src.queue.append(tb.request(addr, STORE))
    for ring in range(2, len(words) + 1):
        for k in range(40):
            tb.request_src.queue.append(tb.request(words[k % ring], UPDATE))
    await tb.start()
    await tb.drain_and_dump()
    tb.final_check()


@cocotb.test()
async def update_and_read_of_one_word_in_one_cycle(dut):
    """A read of the word an update is accepted for in the same cycle, and in each of the
    write_latency cycles after: before the write-back the read shows the old word, from
    it the new one (the model decides which, cycle by cycle)."""
    tb = TB(dut, read_p=0.0)
    await tb.start()
    for addr in tb.rng.sample(range(tb.spec.depth), 6):
        tb.request_src.queue.append(tb.request(addr, STORE))
        await tb.run(cycles=tb.spec.write_latency + 1)
        tb.request_src.queue.append(tb.request(addr, UPDATE))
        tb.read_queue = [addr] * (tb.spec.write_latency + 2)
        await tb.run(cycles=tb.spec.write_latency + 2 + SPEC_READ_LATENCY)
    assert tb.reads_checked >= 6 * (tb.spec.write_latency + 2), "reads of the updated word were not compared"
    await tb.drain_and_dump()
    tb.final_check()


@cocotb.test()
async def write_visible_after_write_latency(dut):
    """A request accepted in cycle c is written back in cycle c + write_latency; a read issued
    in cycle c + write_latency - read_latency + 1 sees it, one issued a cycle earlier does
    not (the documented timing, taken from the docstring, not from the model)."""
    tb = TB(dut, read_p=0.0)
    await tb.start()
    write_latency, read_latency = tb.spec.write_latency, SPEC_READ_LATENCY
    first_seeing = write_latency - read_latency + 1
    for addr in range(8):
        stored = tb.request(addr, STORE)
        tb.request_src.queue.append(stored)
        await tb.run(cycles=1)            # the request is accepted in this cycle
        accept = tb.request_cycles[-1]
        tb.read_queue = [addr] * (write_latency + 1)
        await tb.run(cycles=write_latency + read_latency + 1)
        seen = {c: d for c, a, d in tb.read_log if a == addr}
        # A read issued in cycle r shows its data in cycle r + read_latency.
        assert seen[accept + first_seeing + read_latency] == stored["data"], "the first read that must see it missed it"
        assert seen[accept + first_seeing - 1 + read_latency] != stored["data"] or stored["data"] == 0, \
            "a read issued a cycle too early already saw the write"
    await tb.drain_and_dump()
    tb.final_check()


assert set(RANDOM_TESTS + RESET_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
