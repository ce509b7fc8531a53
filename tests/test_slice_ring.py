# amaranth: UnusedElaboratable=no
"""Arbiter, link, mux, slice and ring: constructor checks, then runs on Amaranth's simulator.

The stream-protocol regressions of issue 11 (point 3) run against the fixed blocks and, to
show that they can fail, against test-local copies of the blocks as they were before the fix
(``_OldStreamMux``, ``_OldLinkModel``; the old code is kept only here, not in ``rtl/``).
"""

from __future__ import annotations

import pytest
from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from rtl.arbiter import MemoryArbiter
from rtl.dma_engine import DmaEngine
from rtl.link import LinkModel
from rtl.ring import T3Ring
from rtl.stream_mux import StreamMux
from rtl.t3_slice import T3Slice


def test_init_arbiter():
    arb = MemoryArbiter(payload_shape=8)
    assert (arb.level_width, arb.wait_width, arb.grants_per_cycle, arb.grant_latency) == (5, 16, 1, 0)


@pytest.mark.parametrize(("name", "value", "lo", "hi"), [("level_width", 0, 1, 16), ("wait_width", 1, 2, 32)])
def test_init_arbiter_wrong(name, value, lo, hi):
    with pytest.raises(ValueError, match=rf"^{name} must be between {lo} and {hi}, not {value}$"):
        MemoryArbiter(payload_shape=8, **{name: value})


def test_init_link():
    link = LinkModel(payload_shape=8, latency=10, cycles_per_beat=2)
    assert (link.latency, link.cycles_per_beat, link.depth) == (10, 2, 7)


@pytest.mark.parametrize(("name", "value", "lo", "hi"), [("latency", 0, 1, 1024), ("cycles_per_beat", 65, 1, 64)])
def test_init_link_wrong(name, value, lo, hi):
    with pytest.raises(ValueError, match=rf"^{name} must be between {lo} and {hi}, not {value}$"):
        LinkModel(payload_shape=8, **{name: value})


def test_init_slice():
    s = T3Slice()
    assert s.notify_cmd == 63 and s.tile_beats_log2 == 2
    # The issue register, then the bank read once the writes ahead have landed (binary16:
    # adder latency 5, write latency 7), then the bank's read.
    assert s.nmc.adder_latency == 5 and s.nmc.write_latency == 7
    assert s.read_latency == 1 + (7 - 1) + 1
    # The issue register, the tracker, the command lookup, the engine's start (its read
    # latency is the slice's).
    assert s.update_to_egress_latency == 1 + s.tracker.trigger_latency + s.table.lookup_latency + s.engine.start_latency
    assert s.update_to_egress_latency == 1 + 3 + 2 + (8 + 2)
    assert set(s.signature.members) >= {"gemm", "gemm_read", "gemm_read_data", "gemm_remote", "ingress", "egress",
                                         "arm", "program", "threshold", "starvation_limit", "mode", "notify", "status"}
    # Every sub-block's error flags are visible at the slice.
    layout = dict(s.status_layout)
    for block, flag in (("tracker", "err_rearm"), ("table", "err_unprogrammed"), ("engine", "err_overflow")):
        assert flag in dict(layout[block].shape)


def test_init_slice_wrong():
    with pytest.raises(ValueError, match=r"^tile_beats_log2 must be between 0 and 12, not 13$"):
        T3Slice(tile_beats_log2=13)
    with pytest.raises(ValueError, match=r"^compute_queue_depth must be between 2 and 31, not 40$"):
        T3Slice(compute_queue_depth=40)


def test_init_ring():
    ring = T3Ring(gpus=3)
    assert ring.gpus == 3 and len(ring.slices) == len(ring.links) == 3
    assert len(ring.gemm) == 3
    with pytest.raises(ValueError, match=r"^gpus must be between 2 and 16, not 1$"):
        T3Ring(gpus=1)


def test_sim_link_latency_and_bandwidth():
    link = LinkModel(payload_shape=8, latency=5, cycles_per_beat=3)
    sent, received = [], []

    async def bench(ctx):
        ctx.set(link.output.ready, 1)
        for cycle in range(60):
            value = len(sent)
            ctx.set(link.input.valid, value < 10)
            ctx.set(link.input.payload, value)
            if value < 10 and ctx.get(link.input.ready):
                sent.append((cycle, value))
            if ctx.get(link.output.valid):
                received.append((cycle, ctx.get(link.output.payload)))
            await ctx.tick()

    sim = Simulator(link)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert [v for _, v in received] == list(range(10))
    assert [c for c, _ in sent] == [3 * i for i in range(10)]          # one beat every 3 cycles
    assert [c for c, _ in received] == [3 * i + 5 for i in range(10)]  # each 5 cycles later


# -- issue 11, point 3: stream-protocol regressions --------------------------------------------

class _OldStreamMux(StreamMux):
    """The mux before the fix: it chose afresh in every cycle, also while ``out`` waited for ready."""

    def elaborate(self, platform):
        m = Module()
        last_a = Signal()
        pick_b = self.b.valid & (~self.a.valid | last_a)
        m.d.comb += [
            self.out.valid.eq(self.a.valid | self.b.valid),
            self.out.payload.eq(Mux(pick_b, self.b.payload, self.a.payload)),
            self.a.ready.eq(self.out.ready & ~pick_b),
            self.b.ready.eq(self.out.ready & pick_b),
        ]
        with m.If(self.a.valid & self.a.ready):
            m.d.sync += last_a.eq(1)
        with m.Elif(self.b.valid & self.b.ready):
            m.d.sync += last_a.eq(0)
        return m


def run_mux_hold(mux_cls, first: str) -> list[int]:
    """``first`` transfers one item (so the other input is favoured next), then offers 0xAA with
    ``out.ready`` low; two cycles later the other input offers 0xBB; after 6 stalled cycles
    ``out.ready`` rises. Fails if ``out`` drops or changes the waiting item; returns the payloads
    transferred on ``out``."""
    mux = mux_cls(8)
    ins = {"a": mux.a, "b": mux.b}
    mine, other = ins[first], ins["b" if first == "a" else "a"]
    transferred = []

    async def bench(ctx):
        ctx.set(mine.valid, 1)
        ctx.set(mine.payload, 0x11)
        ctx.set(mux.out.ready, 1)
        assert ctx.get(mux.out.payload) == 0x11
        await ctx.tick()
        transferred.append(0x11)
        ctx.set(mine.payload, 0xAA)
        ctx.set(mux.out.ready, 0)
        for cycle in range(8):
            if cycle == 2:
                ctx.set(other.valid, 1)
                ctx.set(other.payload, 0xBB)
            valid, payload = ctx.get(mux.out.valid), ctx.get(mux.out.payload)
            assert valid == 1, f"out.valid fell in stalled cycle {cycle}"
            assert payload == 0xAA, (f"out.payload changed from 0xaa to {payload:#x} in stalled cycle {cycle} "
                                     "with no transfer")
            await ctx.tick()
        ctx.set(mux.out.ready, 1)
        for _ in range(4):
            if ctx.get(mux.out.valid):
                transferred.append(ctx.get(mux.out.payload))
                for src in (mine, other):
                    if ctx.get(src.valid) and ctx.get(src.ready):
                        ctx.set(src.valid, 0)
            await ctx.tick()

    sim = Simulator(mux)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return transferred


@pytest.mark.parametrize("first", ["a", "b"])
def test_sim_mux_holds_offer_until_transfer(first):
    """Issue 11: a offers 0xAA, out.ready low, then b becomes valid with 0xBB: out.payload stays
    0xAA until the transfer (and b follows). Also with the roles of a and b swapped."""
    assert run_mux_hold(StreamMux, first) == [0x11, 0xAA, 0xBB]


@pytest.mark.parametrize("first", ["a", "b"])
def test_sim_old_mux_fails_the_hold_check(first):
    """The check above fails on the mux before the fix: it switched to 0xBB under a waiting valid."""
    with pytest.raises(AssertionError, match=r"out.payload changed from 0xaa to 0xbb in stalled cycle 2"):
        run_mux_hold(_OldStreamMux, first)


class _OldLinkModel(LinkModel):
    """The link before the fix: each beat carried a timestamp compared with a free-running
    counter, whose difference wrapped after ``2**stamp_width`` cycles of back-pressure."""

    def elaborate(self, platform):
        m = Module()
        stamp_width = (self._latency + self._depth + 1).bit_length() + 1
        entry = data.StructLayout({"stamp": unsigned(stamp_width), "payload": self.payload_shape})
        m.submodules.fifo = fifo = SyncFIFO(width=entry.size, depth=self._depth)
        now = Signal(stamp_width)
        m.d.sync += now.eq(now + 1)
        cooldown = Signal(range(self._cycles_per_beat))
        accept = self.input.valid & self.input.ready
        incoming = Signal(entry)
        m.d.comb += [
            self.input.ready.eq(fifo.w_rdy & (cooldown == 0)),
            incoming.stamp.eq(now),
            incoming.payload.eq(self.input.payload),
            fifo.w_data.eq(incoming),
            fifo.w_en.eq(accept),
        ]
        if self._cycles_per_beat > 1:
            with m.If(accept):
                m.d.sync += cooldown.eq(self._cycles_per_beat - 1)
            with m.Elif(cooldown != 0):
                m.d.sync += cooldown.eq(cooldown - 1)
        head = data.View(entry, fifo.r_data)
        age = Signal(stamp_width)
        m.d.comb += [
            age.eq(now - head.stamp),
            self.output.valid.eq(fifo.r_rdy & (age >= self._latency)),
            self.output.payload.eq(head.payload),
            fifo.r_en.eq(self.output.valid & self.output.ready),
        ]
        return m


def run_link_stall(link_cls, stall: int = 5000) -> list[int]:
    """The ring's link (latency 8, 1 beat / 2 cycles) takes 3 beats, then ``output.ready`` stays low
    for ``stall`` cycles: once valid, ``output`` must stay valid with the same beat in every one
    of them. Returns the beats delivered after the stall."""
    link = link_cls(payload_shape=8, latency=8, cycles_per_beat=2)
    delivered = []

    async def bench(ctx):
        ctx.set(link.output.ready, 0)
        beats = [0x5A, 0x5B, 0x5C]
        ctx.set(link.input.valid, 1)
        ctx.set(link.input.payload, beats[0])
        first_valid = None
        for cycle in range(stall):
            accepted = bool(beats) and ctx.get(link.input.ready)
            valid = ctx.get(link.output.valid)
            if first_valid is None and valid:
                first_valid = cycle
                assert ctx.get(link.output.payload) == 0x5A
            elif first_valid is not None:
                assert valid, f"output.valid fell after {cycle - first_valid} cycles of back-pressure"
                assert ctx.get(link.output.payload) == 0x5A, "output.payload changed under back-pressure"
            await ctx.tick()
            if accepted:
                beats.pop(0)
                ctx.set(link.input.valid, bool(beats))
                ctx.set(link.input.payload, beats[0] if beats else 0)
        assert first_valid == 8, f"first beat valid in cycle {first_valid}, latency 8"
        ctx.set(link.output.ready, 1)
        for _ in range(8):
            if ctx.get(link.output.valid):
                delivered.append(ctx.get(link.output.payload))
            await ctx.tick()

    sim = Simulator(link)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return delivered


def test_sim_link_valid_holds_through_long_stall():
    """Issue 11: output.valid does not fall under 5000 cycles of back-pressure (it fell after about
    24 with the wrapping timestamp), and the three beats then leave in order at full rate."""
    assert run_link_stall(LinkModel) == [0x5A, 0x5B, 0x5C]


def test_sim_old_link_fails_the_stall_check():
    """The check above fails on the link before the fix."""
    with pytest.raises(AssertionError, match=r"output.valid fell after \d+ cycles of back-pressure"):
        run_link_stall(_OldLinkModel, stall=200)


def test_sim_engine_read_request_ignores_ready():
    """The slice's DMA mode (``arbitrated_reads``): ``mem_read.en`` and ``addr`` do not depend on
    ``mem_read.ready`` within a cycle, and a refused request stays up with the same address."""
    engine = DmaEngine(addr_width=6, data_width=8, max_beats=4, port_width=1, dma_cmd_width=2,
                       arbitrated_reads=True)

    async def bench(ctx):
        ctx.set(engine.egress.ready, 1)
        ctx.set(engine.cmd.valid, 1)
        ctx.set(engine.cmd.payload.as_value(), 0)
        ctx.set(engine.cmd.payload.desc.src_addr, 9)
        ctx.set(engine.cmd.payload.desc.beats, 3)
        await ctx.tick()
        ctx.set(engine.cmd.valid, 0)
        requests = []
        for cycle in range(40):
            seen = set()
            for ready in (0, 1, 0):
                ctx.set(engine.mem_read.ready, ready)
                seen.add((ctx.get(engine.mem_read.en), ctx.get(engine.mem_read.addr)))
            assert len(seen) == 1, f"cycle {cycle}: en/addr follow ready within the cycle: {seen}"
            (en, addr), = seen
            requests.append((en, addr))
            ctx.set(engine.mem_read.ready, cycle % 10 == 9)   # grant one request in ten cycles
            await ctx.tick()
        issued = [addr for cycle, (en, addr) in enumerate(requests) if en and cycle % 10 == 9]
        assert issued == [9, 10, 11]
        assert all(req == (1, 9 + cycle // 10) for cycle, req in enumerate(requests[:30])), requests[:30]

    sim = Simulator(engine)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
