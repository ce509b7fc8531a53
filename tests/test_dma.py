# amaranth: UnusedElaboratable=no
"""DMA command table, DMA engine and their joins: constructor checks, then Amaranth-simulator
runs against the golden models."""

from __future__ import annotations

import random
from collections import deque
from fractions import Fraction

import pytest
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtl.dma_engine import DmaEngine
from rtl.dma_path import DmaPath
from rtl.dma_table import DmaCommandTable
from rtl.track_trigger import TrackAndTrigger
from tb.common.packing import pack, unpack
from tb.dma.model import SPEC_LOOKUP_LATENCY, DmaCommandTableModel, DmaEngineModel, spec_start_latency


def test_init_table():
    t = DmaCommandTable()
    assert (t.commands, t.dma_cmd_width, t.tile_width, t.addr_width) == (256, 8, 8, 32)
    assert (t.max_beats, t.port_width, t.queue_depth) == (256, 3, 4)
    assert t.lookup_latency == SPEC_LOOKUP_LATENCY == 2
    assert t.triggers_per_cycle == 1
    assert DmaCommandTable(queue_depth=2).triggers_per_cycle == Fraction(2, 3)
    assert [n for n, _ in t.descriptor_layout] == ["src_addr", "dst_addr", "beats", "dst_port", "op"]
    assert set(t.signature.members) == {"program", "trigger", "issue", "status"}


@pytest.mark.parametrize("commands", [1, 3, 2048, 100])
def test_init_wrong_commands(commands):
    with pytest.raises(ValueError, match=rf"^commands must be a power of two between 2 and 1024, not {commands}$"):
        DmaCommandTable(commands=commands)


@pytest.mark.parametrize(("name", "value", "lo", "hi"), [
    ("tile_width", 0, 1, 12), ("addr_width", 3, 4, 48), ("addr_width", 49, 4, 48),
    ("max_beats", 0, 1, 65535), ("port_width", 9, 1, 8), ("queue_depth", 0, 1, 64),
])
def test_init_wrong_table_params(name, value, lo, hi):
    with pytest.raises(ValueError, match=rf"^{name} must be between {lo} and {hi}, not {value}$"):
        DmaCommandTable(**{name: value})


def test_init_engine():
    e = DmaEngine(read_latency=3)
    assert (e.addr_width, e.data_width, e.max_beats, e.read_latency) == (32, 256, 256, 3)
    assert e.buffer_depth == 5
    assert e.start_latency == spec_start_latency(3) == 5
    assert e.beats_per_cycle == 1
    assert set(e.signature.members) == {"cmd", "mem_read", "egress", "done", "status"}


@pytest.mark.parametrize(("name", "value", "lo", "hi"), [
    ("data_width", 4, 8, 1024), ("data_width", 2048, 8, 1024), ("read_latency", 0, 1, 8),
    ("read_latency", 9, 1, 8), ("dma_cmd_width", 17, 1, 16),
])
def test_init_wrong_engine_params(name, value, lo, hi):
    with pytest.raises(ValueError, match=rf"^{name} must be between {lo} and {hi}, not {value}$"):
        DmaEngine(**{name: value})


def test_init_engine_wrong_type():
    with pytest.raises(TypeError, match=r"^read_latency must be an integer, not '1'$"):
        DmaEngine(read_latency="1")


def test_joined_timing_properties():
    path = DmaPath(read_latency=2)
    assert path.issue_latency == path.table.lookup_latency + path.engine.start_latency == 6
    assert path.beats_per_cycle == 1 and path.min_beats_for_full_rate == 1
    assert DmaPath(queue_depth=2).min_beats_for_full_rate == 2
    top = TrackAndTrigger(entries=64, commands=32)
    assert top.tracker.dma_cmd_width == top.dma.table.dma_cmd_width == 5
    assert top.update_to_egress_latency == top.trigger_latency + top.issue_latency == 3 + 5


# -- Amaranth simulation ----------------------------------------------------------------------

def run_table(params: dict, stimulus: list[tuple]) -> DmaCommandTableModel:
    """stimulus: (program or None, trigger index or None, issue_ready) per cycle."""
    dut = DmaCommandTable(**params)
    model = DmaCommandTableModel(max_beats=dut.max_beats, queue_depth=dut.queue_depth)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    mismatches = []

    async def bench(ctx):
        programs = deque(s[0] for s in stimulus if s[0] is not None)
        triggers = deque(s[1] for s in stimulus if s[1] is not None)
        for cycle, (want_program, want_trigger, issue_ready) in enumerate(stimulus + [(None, None, 1)] * 8):
            program = programs[0] if programs and want_program is not None else None
            trigger = {"tile": 0, "dma_cmd": triggers[0]} if triggers and want_trigger is not None else None
            ctx.set(dut.program.valid, program is not None)
            if program is not None:
                ctx.set(dut.program.payload.as_value(), pack(dut.program_layout, program))
            ctx.set(dut.trigger.valid, trigger is not None)
            if trigger is not None:
                ctx.set(dut.trigger.payload.as_value(), pack(dut.trigger_layout, trigger))
            ctx.set(dut.issue.ready, issue_ready)
            exp = model.outputs()
            got = (ctx.get(dut.program.ready), ctx.get(dut.trigger.ready), ctx.get(dut.issue.valid),
                   unpack(dut.status_layout, ctx.get(dut.status.as_value())))
            want = (exp.program_ready, exp.trigger_ready, exp.issue_valid, exp.status)
            if got != want:
                mismatches.append((cycle, got, want))
            if exp.issue_valid and got[2]:
                issued = unpack(dut.command_layout, ctx.get(dut.issue.payload.as_value()))
                if issued != exp.issue:
                    mismatches.append((cycle, issued, exp.issue))
            if program is not None:
                programs.popleft()
            if trigger is not None and got[1]:
                triggers.popleft()
            model.step(program=program, trigger=trigger, issue_ready=issue_ready)
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, f"first mismatch (cycle, dut, model): {mismatches[0]}"
    return model


SMALL_TABLE = {"commands": 4, "tile_width": 2, "addr_width": 4, "max_beats": 5, "port_width": 1,
               "queue_depth": 2}


def desc(beats, src=1, dst=2, port=1, op=1):
    return {"src_addr": src, "dst_addr": dst, "beats": beats, "dst_port": port, "op": op}


def test_sim_table_lookup_latency_and_errors():
    stimulus = [({"index": 1, "desc": desc(3)}, 1, 1),   # program and trigger in one cycle
                ({"index": 2, "desc": desc(0)}, 2, 1),   # bad descriptor, then its trigger
                (None, 3, 1), (None, None, 1)]
    model = run_table(SMALL_TABLE, stimulus)
    assert model.status["issued"] == 1 and model.status["triggers"] == 3
    assert model.status["err_bad_descriptor_index"] == 2 and model.status["err_unprogrammed_index"] == 2


program_st = st.none() | st.fixed_dictionaries({
    "index": st.integers(0, 3),
    "desc": st.fixed_dictionaries({"src_addr": st.integers(0, 15), "dst_addr": st.integers(0, 15),
                                   "beats": st.integers(0, 7), "dst_port": st.integers(0, 1),
                                   "op": st.integers(0, 1)}),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(program_st, st.none() | st.integers(0, 3), st.integers(0, 1)), min_size=1, max_size=50))
def test_sim_table_random_against_model(stimulus):
    run_table(SMALL_TABLE, stimulus)


def run_engine(params: dict, commands: list[dict], ready_pattern: list[int], seed: int = 0):
    dut = DmaEngine(**params)
    rng = random.Random(seed)
    words = [rng.getrandbits(dut.data_width) for _ in range(1 << dut.addr_width)]
    model = DmaEngineModel(read_latency=dut.read_latency, addr_width=dut.addr_width,
                           memory=lambda a: words[a])
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    mismatches, sent = [], []

    async def bench(ctx):
        queue = deque(commands)
        reads = deque([None] * dut.read_latency, maxlen=dut.read_latency)
        cycles = len(ready_pattern) + 40 * len(commands) + 20
        for cycle in range(cycles):
            ready = ready_pattern[cycle] if cycle < len(ready_pattern) else 1
            cmd = queue[0] if queue else None
            ctx.set(dut.cmd.valid, cmd is not None)
            if cmd is not None:
                ctx.set(dut.cmd.payload.as_value(), pack(dut.command_layout, cmd))
            addr = reads[0]
            ctx.set(dut.mem_read.data, words[addr] if addr is not None else rng.getrandbits(dut.data_width))
            ctx.set(dut.egress.ready, ready)
            exp = model.outputs()
            en = ctx.get(dut.mem_read.en)
            got = (ctx.get(dut.cmd.ready), en, ctx.get(dut.egress.valid),
                   unpack(dut.status_layout, ctx.get(dut.status.as_value())))
            want = (exp.cmd_ready, exp.mem_en, exp.egress_valid, exp.status)
            if got != want:
                mismatches.append((cycle, got, want))
            if en and exp.mem_en and ctx.get(dut.mem_read.addr) != exp.mem_addr:
                mismatches.append((cycle, "addr", ctx.get(dut.mem_read.addr), exp.mem_addr))
            if got[2] and exp.egress_valid:
                packet = unpack(dut.packet_layout, ctx.get(dut.egress.payload.as_value()))
                if packet != exp.egress:
                    mismatches.append((cycle, packet, exp.egress))
            done_valid = ctx.get(dut.done.valid)
            reads.append(ctx.get(dut.mem_read.addr) if en else None)
            if cmd is not None and got[0]:
                queue.popleft()
            packet_out, done = model.step(cmd=cmd, egress_ready=ready)
            if done_valid != (done is not None):
                mismatches.append((cycle, "done", done_valid, done))
            if packet_out is not None:
                sent.append(packet_out)
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, f"first mismatch: {mismatches[0]}"
    return model, sent, words


SMALL_ENGINE = {"addr_width": 5, "data_width": 16, "max_beats": 6, "port_width": 2, "dma_cmd_width": 2}


@pytest.mark.parametrize("read_latency", [1, 2, 4])
def test_sim_engine_full_rate_and_data(read_latency):
    cmds = [{"dma_cmd": i % 4, "desc": desc(b, src=30, dst=7 * i, port=i % 4, op=i % 2)}
            for i, b in enumerate([1, 6, 3, 2])]
    model, sent, words = run_engine({**SMALL_ENGINE, "read_latency": read_latency}, cmds, [])
    assert [p["data"] for p in sent[:7]] == [words[30]] + [words[(30 + i) % 32] for i in range(6)]
    assert model.status["beats"] == 12 and model.status["commands"] == 4


command_st = st.fixed_dictionaries({
    "dma_cmd": st.integers(0, 3),
    "desc": st.fixed_dictionaries({"src_addr": st.integers(0, 31), "dst_addr": st.integers(0, 31),
                                   "beats": st.integers(1, 6), "dst_port": st.integers(0, 3),
                                   "op": st.integers(0, 1)}),
})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(command_st, min_size=1, max_size=6), st.lists(st.integers(0, 1), max_size=60),
       st.integers(1, 3))
def test_sim_engine_random_against_model(commands, ready_pattern, read_latency):
    run_engine({**SMALL_ENGINE, "read_latency": read_latency}, commands, ready_pattern)
