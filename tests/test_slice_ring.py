# amaranth: UnusedElaboratable=no
"""Arbiter, link, slice and ring: constructor checks, then a link timing run on Amaranth's simulator."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from rtl.arbiter import MemoryArbiter
from rtl.link import LinkModel
from rtl.ring import T3Ring
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
    assert s.update_to_egress_latency == 2 + 2 + 3
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
