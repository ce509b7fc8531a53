"""cocotb bench of the memory arbiter, lock-step with the golden model.

A DRAM command-queue model behind the grant port serves one entry per cycle with a given
probability; its occupancy drives ``queue_level`` and, when full, back-pressures ``grant``.
Besides the per-cycle comparison the bench checks conservation (every request of each class
granted exactly once, in order) and, in MCA mode, the starvation bound per request.

The ``grant`` port is checked for X/Z but not for the stream hold rule: the arbiter decides
afresh in every cycle which class it offers (``rtl/arbiter.py``: "in each cycle the
arbiter offers one class's request"), so its offer may change while ``grant.ready`` is low,
e.g. to a communication request that has just become starving. The requesters' streams
(``compute``, ``comm``) are checked in full.

After a mid-run reset the requesters *resend* the request they were offering: they sit
outside the arbiter, and a request not granted before the reset is still owed. So
conservation holds exactly across resets.
"""

from __future__ import annotations

import cocotb
from amaranth.lib import data

from tb.arbiter.model import COMM, COMPUTE, MCA, ROUND_ROBIN, MemoryArbiterModel
from tb.arbiter.scenarios import DIRECTED_TESTS, MIXES, RANDOM_TESTS, RESET_TESTS, RESETS_PER_TEST, SERVICE
from tb.common.lockstep import LockstepTB, bench_params, register_tests
from tb.common.packing import pack, unpack
from tb.common.streams import StreamSource

TAG = data.StructLayout({"tag": 16})
QUEUE_DEPTH = 16
STATUS = ("compute_grants", "comm_grants", "comm_wait", "max_comm_wait")


class TB(LockstepTB):
    relaxed_streams = {"grant": "the arbiter re-decides its offer every cycle (rtl/arbiter.py policy)"}

    def __init__(self, dut, *, compute_p, comm_p, service_p, mode, threshold=8, starvation_limit=12):
        super().__init__(dut)
        self.params = bench_params()
        self.wait_width = self.params["wait_width"]
        self.model = MemoryArbiterModel(wait_width=self.wait_width)
        self.compute_src = StreamSource(dut, "compute", TAG, self.rng, compute_p, next_item=self._next("compute"))
        self.comm_src = StreamSource(dut, "comm", TAG, self.rng, comm_p, next_item=self._next("comm"))
        self.service_p = service_p
        self.mode, self.threshold, self.starvation_limit = mode, threshold, starvation_limit
        self.level = 0
        self.issued = {"compute": 0, "comm": 0}
        self.budget = 0
        self.granted = {COMPUTE: [], COMM: []}
        self.head_wait = 0       # our own count, independent of the model
        self.worst_wait = 0
        self.grant_ready_cycles = 0
        self.compute_grant_cycles = 0
        self.force_grant_ready: int | None = None
        self.trace: list[tuple[int, int | None, int]] | None = None  # (grant.valid, cls, comm_wait) per cycle

    def _next(self, cls):
        def make():
            if self.issued[cls] >= self.budget:
                return None
            self.issued[cls] += 1
            return {"tag": (self.issued[cls] - 1) & 0xFFFF}
        return make

    def reset_inputs(self):
        d = self.dut
        for name in ("compute__valid", "comm__valid", "grant__ready", "queue_level"):
            getattr(d, name).value = 0
        self.drive_config()

    def drive_config(self):
        d = self.dut
        d.threshold.value = self.threshold
        d.starvation_limit.value = self.starvation_limit
        d.mode.value = self.mode

    def drive(self):
        self.compute_src.drive()
        self.comm_src.drive()
        self.grant_ready = int(self.level < QUEUE_DEPTH) if self.force_grant_ready is None else self.force_grant_ready
        self.dut.grant__ready.value = self.grant_ready
        self.dut.queue_level.value = self.level
        self.drive_config()

    def check(self):
        d, sb, cycle, m = self.dut, self.scoreboard, self.cycle, self.model
        compute_valid = int(self.compute_src.current is not None)
        comm_valid = int(self.comm_src.current is not None)
        winner = m.decide(compute_valid=compute_valid, comm_valid=comm_valid, queue_level=self.level,
                          threshold=self.threshold, starvation_limit=self.starvation_limit, mode=self.mode)
        sb.check(cycle, "grant.valid", int(d.grant__valid.value), int(winner is not None))
        sb.check(cycle, "compute.ready", int(d.compute__ready.value), int(winner == COMPUTE and self.grant_ready))
        sb.check(cycle, "comm.ready", int(d.comm__ready.value), int(winner == COMM and self.grant_ready))
        if winner is not None and int(d.grant__valid.value):
            item = (self.compute_src if winner == COMPUTE else self.comm_src).current
            expected = winner | (item["tag"] << 1)  # {cls, request}
            sb.check(cycle, "grant.payload", int(d.grant__payload.value), expected)
        status = {k: self.model.status[k] for k in STATUS}
        raw_status = int(d.status.value)
        sb.check(cycle, "status", raw_status, _pack_status(status, self.wait_width))
        if self.trace is not None:
            grant_valid = int(d.grant__valid.value)
            cls = int(d.grant__payload.value) & 1 if grant_valid else None
            self.trace.append((grant_valid, cls, unpack(_status_layout(self.wait_width), raw_status)["comm_wait"]))

        _, compute_taken = self.compute_src.handshake()
        _, comm_taken = self.comm_src.handshake()
        m.step(winner=winner, comm_valid=comm_valid, grant_ready=self.grant_ready)
        # Independent observations.
        self.grant_ready_cycles += self.grant_ready
        if compute_taken:
            self.granted[COMPUTE].append(compute_taken["tag"])
            self.compute_grant_cycles += 1
        if comm_taken:
            self.granted[COMM].append(comm_taken["tag"])
            self.worst_wait = max(self.worst_wait, self.head_wait)
            self.head_wait = 0
        elif comm_valid and self.grant_ready:
            self.head_wait += 1
        fired = bool(compute_taken or comm_taken)
        served = self.level > 0 and self.rng.random() < self.service_p
        self.level += int(fired) - int(served)

    def on_reset(self):
        """The arbiter is back at power-up; the requesters keep (and resend) what they offered."""
        self.model = MemoryArbiterModel(wait_width=self.wait_width)
        self.head_wait = 0

    def done(self):
        return (self.issued["compute"] >= self.budget and self.issued["comm"] >= self.budget
                and self.compute_src.idle() and self.comm_src.idle())

    def final_check(self):
        for cls, name in ((COMPUTE, "compute"), (COMM, "comm")):
            expected = [i & 0xFFFF for i in range(self.issued[name])]
            assert self.granted[cls] == expected, f"{name} requests lost, duplicated or reordered"
        if self.mode == MCA:
            assert self.worst_wait <= self.starvation_limit, f"comm waited {self.worst_wait} > limit"
        share = self.compute_grant_cycles / max(1, self.grant_ready_cycles)
        self.log.info("mode %s: compute share of grantable cycles %.3f, worst comm wait %d",
                      "mca" if self.mode == MCA else "rr", share, self.worst_wait)
        self.write_stats(grants=len(self.granted[COMPUTE]) + len(self.granted[COMM]))
        self.scoreboard.assert_clean()


def _status_layout(wait_width: int) -> data.StructLayout:
    return data.StructLayout({"compute_grants": 32, "comm_grants": 32, "comm_wait": wait_width,
                              "max_comm_wait": wait_width})


def _pack_status(status: dict, wait_width: int) -> int:
    return pack(_status_layout(wait_width), status)


async def random_test(dut, mode, mix, service):
    compute_p, comm_p = MIXES[mix]
    tb = TB(dut, compute_p=compute_p, comm_p=comm_p, service_p=SERVICE[service],
            mode=MCA if mode == "mca" else ROUND_ROBIN)
    tb.threshold = tb.rng.choice((2, 8, 16))
    tb.starvation_limit = tb.rng.choice((1, 6, 40))
    tb.budget = 1000
    await tb.start()
    await tb.run(until=tb.done, timeout=200_000)
    await tb.run(cycles=3)
    tb.final_check()


register_tests(globals(), RANDOM_TESTS, random_test)


async def reset_test(dut, mode, mix, service):
    """Random requests with ``rst`` asserted for 1..4 cycles at random points while both
    classes request; the model is reset at the same edge (wait 0, counters 0, round robin
    from compute's turn), the requesters resend, and conservation holds to the end."""
    compute_p, comm_p = MIXES[mix]
    tb = TB(dut, compute_p=compute_p, comm_p=comm_p, service_p=SERVICE[service],
            mode=MCA if mode == "mca" else ROUND_ROBIN)
    tb.threshold = tb.rng.choice((2, 8, 16))
    tb.starvation_limit = tb.rng.choice((1, 6, 40))
    tb.budget = 600
    await tb.start()
    busy_resets = 0
    for _ in range(RESETS_PER_TEST):
        await tb.run(cycles=tb.rng.randint(20, 400))
        await tb.run(until=lambda: tb.model.wait > 0 or tb.done(), timeout=10_000)
        busy_resets += tb.model.wait > 0
        await tb.reset_dut(cycles=tb.rng.randint(1, 4))
    assert busy_resets > 0, "no reset hit a waiting communication request"
    await tb.run(until=tb.done, timeout=200_000)
    await tb.run(cycles=3)
    tb.final_check()


register_tests(globals(), RESET_TESTS, reset_test)


@cocotb.test()
async def reprogram_at_runtime(dut):
    """Mode, threshold and starvation limit change while requests flow."""
    tb = TB(dut, compute_p=0.9, comm_p=0.7, service_p=0.6, mode=MCA)
    tb.budget = 2000
    await tb.start()
    for mode, threshold, limit in [(MCA, 4, 20), (ROUND_ROBIN, 4, 20), (MCA, 31, 3), (MCA, 0, 50)]:
        tb.mode, tb.threshold, tb.starvation_limit = mode, threshold, limit
        await tb.run(cycles=400)
    # Drain with a short limit: under (MCA, 0, 50) communication gets one grant in 51
    # cycles, and the rest of the budget would take ~90k cycles.
    tb.mode, tb.threshold, tb.starvation_limit = MCA, 8, 3
    await tb.run(until=tb.done, timeout=200_000)
    tb.mode = ROUND_ROBIN  # the per-request bound only holds for a fixed limit
    tb.final_check()


@cocotb.test()
async def starvation_limit_one(dut):
    """With limit 1 and compute always requesting, communication gets every other grant."""
    tb = TB(dut, compute_p=1.0, comm_p=1.0, service_p=1.0, mode=MCA, threshold=0, starvation_limit=1)
    tb.budget = 1000
    await tb.start()
    await tb.run(until=tb.done, timeout=100_000)
    assert tb.worst_wait == 1
    tb.final_check()


@cocotb.test()
async def comm_waits_while_grant_stalled(dut):
    """grant.ready low for a long time while communication waits: its wait counts every
    cycle (no freeze), once it reaches the starvation limit MCA offers communication instead
    of compute, and communication is the first grant when the queue accepts again."""
    limit, stall = 10, 150
    tb = TB(dut, compute_p=1.0, comm_p=1.0, service_p=1.0, mode=MCA, threshold=0, starvation_limit=limit)
    tb.budget = 400
    await tb.start()
    await tb.run(until=lambda: tb.granted[COMM], timeout=1000)   # comm just granted: its wait restarts
    tb.force_grant_ready = 0
    tb.trace = []
    await tb.run(cycles=stall)
    waits = [w for _, _, w in tb.trace]
    assert waits == list(range(waits[0], waits[0] + stall)), f"comm_wait froze while grant.ready was low: {waits}"
    offered = [(w, cls) for valid, cls, w in tb.trace if valid]
    assert len(offered) == stall, "grant.valid fell while both classes requested"
    assert all(cls == (COMM if w >= limit else COMPUTE) for w, cls in offered), (
        f"MCA offered {[cls for _, cls in offered]} for waits {[w for w, _ in offered]}")
    assert waits[-1] >= limit
    comm_before, compute_before = len(tb.granted[COMM]), len(tb.granted[COMPUTE])
    tb.force_grant_ready = None
    await tb.run(cycles=1)
    assert (len(tb.granted[COMM]), len(tb.granted[COMPUTE])) == (comm_before + 1, compute_before), (
        "the first grant after the stall was not the starving communication request")
    tb.trace = None
    await tb.run(until=tb.done, timeout=100_000)
    await tb.run(cycles=3)
    tb.final_check()


assert set(RANDOM_TESTS + RESET_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
