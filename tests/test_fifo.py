# amaranth: UnusedElaboratable=no
"""``rtl.fifo.TailRegisterFIFO`` against amaranth's own ``SyncFIFO``: every port, every cycle.

The reference is the library's queue, which the design replaces cycle for cycle (its
docstring's promise), so it is independent of the code under test.
"""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from rtl.fifo import TailRegisterFIFO
from tb.common.seeds import derive_seed

WIDTH = 8


def _run(dut: TailRegisterFIFO, ref_depth: int, seed: int, cycles: int, finish=None) -> dict[str, int]:
    """Drive both queues with the same random enables and data; return coverage counts."""
    m = Module()
    m.submodules.dut = dut
    m.submodules.ref = ref = SyncFIFO(width=WIDTH, depth=ref_depth)
    w_en, r_en = Signal(), Signal()
    raw = Signal(len(dut.w_data))
    m.d.comb += [dut.w_en.eq(w_en), ref.w_en.eq(w_en), dut.r_en.eq(r_en), ref.r_en.eq(r_en), dut.w_data.eq(raw),
                 ref.w_data.eq(raw if finish is None else finish(raw))]
    rng = random.Random(seed)
    seen = {"full": 0, "empty": 0, "read while full": 0, "read from the tail": 0}
    mismatches: list[str] = []

    async def bench(ctx):
        # Phases of write and read probabilities, so that the queue fills, drains and runs level.
        for cycle in range(cycles):
            if cycle % 64 == 0:
                p_w, p_r = rng.choice([(0.9, 0.2), (0.2, 0.9), (0.6, 0.6), (1.0, 1.0), (0.5, 0.0), (0.0, 0.5)])
            ctx.set(w_en, rng.random() < p_w)
            ctx.set(r_en, rng.random() < p_r)
            ctx.set(raw, rng.getrandbits(len(raw)))
            for name in ("w_rdy", "r_rdy", "level"):
                got, want = ctx.get(getattr(dut, name)), ctx.get(getattr(ref, name))
                if got != want:
                    mismatches.append(f"cycle {cycle}: {name} {got} != {want} (SEED={seed})")
            if ctx.get(ref.r_rdy) and ctx.get(Cat(dut.r_data)) != ctx.get(ref.r_data):
                mismatches.append(f"cycle {cycle}: r_data {ctx.get(Cat(dut.r_data)):#x} != "
                                  f"{ctx.get(ref.r_data):#x} (SEED={seed})")
            level = ctx.get(ref.level)
            seen["full"] += level == ref_depth
            seen["empty"] += level == 0
            seen["read while full"] += level == ref_depth and ctx.get(r_en)
            seen["read from the tail"] += level == 1 and ctx.get(r_en)
            if mismatches:
                return
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, mismatches[0]
    return seen


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 8])
def test_same_as_syncfifo_every_cycle(depth):
    seed = derive_seed("tail_register_fifo", depth)
    print(f"SEED-derived seed {seed}")
    seen = _run(TailRegisterFIFO(shape=WIDTH, depth=depth), depth, seed, 3000)
    assert all(seen.values()), seen


@pytest.mark.parametrize("depth", [1, 3, 4])
def test_finish_chooses_after_the_register(depth):
    """Stored raw as {a, b, pick}: the entry is b when pick, else a (as the DMA table uses it)."""
    seed = derive_seed("tail_register_fifo_finish", depth)
    print(f"SEED-derived seed {seed}")

    def _pick(value):
        return Mux(value[2 * WIDTH], value[WIDTH:2 * WIDTH], value[:WIDTH])

    fifo = TailRegisterFIFO(shape=WIDTH, depth=depth, tail_shape=2 * WIDTH + 1, finish=_pick)
    seen = _run(fifo, depth, seed, 2000, finish=_pick)
    assert all(seen.values()), seen


def test_tail_shape_and_finish_together():
    with pytest.raises(ValueError, match=r"^tail_shape and finish must be given together$"):
        TailRegisterFIFO(shape=WIDTH, depth=2, tail_shape=9)
    with pytest.raises(ValueError, match=r"^depth must be"):
        TailRegisterFIFO(shape=WIDTH, depth=0)
