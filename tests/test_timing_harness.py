# amaranth: UnusedElaboratable=no
"""InputRegisters (the synthesis timing harness): constructor checks, then simulation.

The harness must delay every input bit by exactly one cycle and pass every output through,
whatever the nesting of the wrapped block's signature (streams whose ``ready`` flows out).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.hdl import Value
from amaranth.sim import Simulator

from rtl.arbiter import MemoryArbiter
from rtl.flow.timing_harness import InputRegisters
from rtl.fp_add import FpAdder
from tb.common.seeds import derive_seed
from tb.fp_add.golden import golden_add, mismatches


def test_init():
    adder = FpAdder()
    harness = InputRegisters(block=adder)
    assert harness.block is adder
    assert harness.signature.members == adder.signature.members


def test_init_wrong_block():
    with pytest.raises(TypeError, match=r"^block must be an Amaranth wiring.Component, not 3$"):
        InputRegisters(block=3)


def _ports(component):
    return [(path, member.flow, Value.cast(value)) for path, member, value in component.signature.flatten(component)]


@pytest.mark.parametrize("make_block", [
    lambda: FpAdder(format="bfloat16"),
    lambda: MemoryArbiter(payload_shape=8, level_width=3, wait_width=5),
], ids=["fp_adder", "memory_arbiter"])
def test_inputs_one_cycle_late_outputs_through(make_block):
    block = make_block()
    harness = InputRegisters(block=block)
    outer, inner = _ports(harness), _ports(block)
    assert [(p, f) for p, f, _ in outer] == [(p, f) for p, f, _ in inner]
    rng = random.Random(derive_seed("timing_harness"))
    sim = Simulator(harness)
    sim.add_clock(1e-8)

    async def bench(ctx):
        previous = None
        for _ in range(200):
            driven = [rng.getrandbits(len(v)) if f.name == "In" else None for _, f, v in outer]
            for (_, _, port), value in zip(outer, driven, strict=True):
                if value is not None:
                    ctx.set(port, value)
            await ctx.delay(1e-9)
            for i, ((path, flow, port), (_, _, inside)) in enumerate(zip(outer, inner, strict=True)):
                if flow.name == "Out":
                    assert ctx.get(port) == ctx.get(inside), path
                elif previous is not None:
                    # Until the edge the block still sees the previous cycle's inputs.
                    assert ctx.get(inside) == previous[i], path
            await ctx.tick()
            # After the edge the block sees what the wrapper saw before it.
            for (path, _, _), (_, _, inside), value in zip(outer, inner, driven, strict=True):
                if value is not None:
                    assert ctx.get(inside) == value, path
            previous = driven

    sim.add_testbench(bench)
    sim.run()


def test_adder_result_two_cycles_after_operands():
    adder = FpAdder(format="binary16", latency=1)
    harness = InputRegisters(block=adder)
    rng = np.random.default_rng(derive_seed("timing_harness_adder"))
    a, b = (rng.integers(0, 1 << 16, 64, dtype=np.uint64) for _ in range(2))
    expected = golden_add("binary16", a, b)
    sim = Simulator(harness)
    sim.add_clock(1e-8)
    got = []

    async def bench(ctx):
        for i in range(len(a) + 2):
            if i < len(a):
                ctx.set(harness.operands.payload.a, int(a[i]))
                ctx.set(harness.operands.payload.b, int(b[i]))
            ctx.set(harness.operands.valid, i < len(a))
            await ctx.tick()
            # Latency 1 of the adder plus 1 of the harness: the sum of operands i-1 shows now.
            if ctx.get(harness.result.valid):
                got.append(ctx.get(harness.result.payload))
        assert ctx.get(harness.result.valid) == 0

    sim.add_testbench(bench)
    sim.run()
    assert len(got) == len(a)
    assert len(mismatches("binary16", np.array(got, dtype=np.uint64), expected)) == 0
