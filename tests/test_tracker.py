# amaranth: UnusedElaboratable=no
"""TrackerTable: constructor checks, then Amaranth-simulator runs against the golden model."""

from __future__ import annotations

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.lib import data, wiring
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtl.tracker import TrackerTable, UpdateSource
from tb.common.packing import pack, unpack
from tb.tracker.model import SPEC_TRIGGER_LATENCY, TrackerTableModel


def test_init():
    dut = TrackerTable()
    assert (dut.entries, dut.count_width, dut.dma_cmd_width, dut.trigger_depth) == (256, 16, 8, 256)
    assert dut.tile_width == 8
    assert dut.reset_cycles == 256
    assert TrackerTable(entries=16, trigger_depth=3).trigger_depth == 3
    assert dut.trigger_latency == SPEC_TRIGGER_LATENCY == 3
    assert dut.updates_per_cycle == 1
    members = dut.signature.members
    assert set(members) == {"arm", "update", "trigger", "status"}
    assert members["arm"].flow == wiring.In and members["trigger"].flow == wiring.Out
    assert data.Layout.cast(dut.update_layout).size == 8 + 1
    assert [name for name, _ in dut.arm_layout] == ["tile", "threshold", "dma_cmd"]


def test_init_keyword_only():
    with pytest.raises(TypeError):
        TrackerTable(256)  # noqa


@pytest.mark.parametrize("entries", [0, 1, 3, 100, 8192])
def test_init_wrong_entries(entries):
    with pytest.raises(ValueError, match=rf"^entries must be a power of two between 2 and 4096, not {entries}$"):
        TrackerTable(entries=entries)


@pytest.mark.parametrize("entries", ["256", 256.0, True])
def test_init_wrong_entries_type(entries):
    with pytest.raises(TypeError, match=r"^entries must be an integer, not "):
        TrackerTable(entries=entries)


@pytest.mark.parametrize(("name", "value", "lo", "hi"), [
    ("count_width", 0, 1, 32), ("count_width", 33, 1, 32),
    ("dma_cmd_width", 0, 1, 16), ("dma_cmd_width", 17, 1, 16),
    ("trigger_depth", 0, 1, 4096), ("trigger_depth", 4097, 1, 4096),
])
def test_init_wrong_widths(name, value, lo, hi):
    with pytest.raises(ValueError, match=rf"^{name} must be between {lo} and {hi}, not {value}$"):
        TrackerTable(**{name: value})


@pytest.mark.parametrize("entries", [2, 4096])
def test_init_bounds_accepted(entries):
    assert TrackerTable(entries=entries).tile_width == (entries - 1).bit_length()


# -- simulation -------------------------------------------------------------------------------

#: A stimulus element that asserts ``rst`` for one cycle (no arm or update is offered in it).
RESET = "reset"
#: In place of an arm or update: keep offering the one at the head of its queue, adding none.
HOLD = "hold"


def run_lockstep(params: dict, stimulus: list, *, sweep: bool = True,
                 trace: list | None = None) -> TrackerTableModel:
    """Drive ``stimulus`` cycle by cycle and compare every output with the model each cycle.

    Each stimulus element is ``(arm or None, update or None, trigger_ready)``, or
    :data:`RESET`. An arm (update) element offers the head of the queue of all arms
    (updates) of the stimulus, so the remaining stimulus is consumed in order; :data:`HOLD`
    offers that head without adding to the queue (an item held until it is accepted). With ``sweep`` the stimulus
    starts after the power-up sweep (``reset_cycles`` idle cycles, checked too). ``trace``
    receives the DUT's outputs of every cycle.
    """
    dut = TrackerTable(**params)
    model = TrackerTableModel(entries=dut.entries, trigger_depth=dut.trigger_depth)
    top = Module()
    top.domains.sync = cd = ClockDomain("sync")
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-8)
    mismatches = []
    idle = [(None, None, 1)]
    stimulus = idle * (dut.reset_cycles if sweep else 0) + list(stimulus) + idle * 12

    async def bench(ctx):
        arm_queue = [s[0] for s in stimulus if s != RESET and s[0] not in (None, HOLD)]
        update_queue = [s[1] for s in stimulus if s != RESET and s[1] not in (None, HOLD)]
        for cycle, element in enumerate(stimulus):
            if element == RESET:
                ctx.set(cd.rst, 1)
                ctx.set(dut.arm.valid, 0)
                ctx.set(dut.update.valid, 0)
                await ctx.tick()
                ctx.set(cd.rst, 0)
                model.reset()   # the next cycle is the first after the edge that reset
                if trace is not None:
                    trace.append(RESET)
                continue
            want_arm, want_update, trigger_ready = element
            arm = arm_queue[0] if arm_queue and want_arm is not None else None
            update = update_queue[0] if update_queue and want_update is not None else None
            ctx.set(dut.arm.valid, arm is not None)
            if arm is not None:
                ctx.set(dut.arm.payload.as_value(),
                        pack(dut.arm_layout, dict(zip(("tile", "threshold", "dma_cmd"), arm, strict=True))))
            ctx.set(dut.update.valid, update is not None)
            if update is not None:
                ctx.set(dut.update.payload.as_value(),
                        pack(dut.update_layout, {"tile": update[0], "source": update[1]}))
            ctx.set(dut.trigger.ready, trigger_ready)

            expected = model.outputs()
            got = {
                "arm.ready": ctx.get(dut.arm.ready),
                "update.ready": ctx.get(dut.update.ready),
                "trigger.valid": ctx.get(dut.trigger.valid),
                "status": unpack(dut.status_layout, ctx.get(dut.status.as_value())),
            }
            want = {
                "arm.ready": expected.arm_ready,
                "update.ready": expected.update_ready,
                "trigger.valid": expected.trigger_valid,
                "status": expected.status,
            }
            if got["trigger.valid"]:
                t = unpack(dut.trigger_layout, ctx.get(dut.trigger.payload.as_value()))
                got["trigger"], want["trigger"] = (t["tile"], t["dma_cmd"]), expected.trigger
            if got != want:
                mismatches.append((cycle, got, want))
            if trace is not None:
                trace.append(dict(got, arm=arm if got["arm.ready"] else None,
                                  update=update if got["update.ready"] else None))
            if arm is not None and got["arm.ready"]:
                arm_queue.pop(0)
            if update is not None and got["update.ready"]:
                update_queue.pop(0)
            model.step(arm=arm, update=update, trigger_ready=trigger_ready)
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, f"first mismatch (cycle, dut, model): {mismatches[0]}"
    return model


SMALL = {"entries": 4, "count_width": 3, "dma_cmd_width": 2, "trigger_depth": 2}


def test_sim_single_tile_latency():
    """Arm, three updates (one in the arm's cycle), trigger ``trigger_latency`` cycles after the last."""
    stimulus = [((1, 3, 2), (1, 0), 1), (None, (1, 1), 1), (None, (1, 0), 1)] + [(None, None, 1)] * 4
    model = run_lockstep(SMALL, stimulus)
    assert model.status["triggers"] == 1 and model.status["armed_entries"] == 0


def test_sim_back_to_back_full_rate():
    stimulus = [((2, 7, 1), None, 1)] + [(None, (2, 0), 1)] * 7 + [((2, 7, 3), None, 1)] + [(None, (2, 1), 1)] * 7
    model = run_lockstep(SMALL, stimulus)
    assert model.status["triggers"] == 2 and model.status["local_updates"] == 7


def test_sim_errors():
    stimulus = [((0, 0, 1), (3, 0), 1), ((1, 2, 1), None, 1), ((1, 1, 0), (1, 1), 1), (None, (1, 0), 1)]
    model = run_lockstep(SMALL, stimulus)
    assert model.status["err_zero_threshold"] and model.status["err_zero_threshold_tile"] == 0
    assert model.status["err_unarmed_update"] and model.status["err_unarmed_update_tile"] == 3
    assert model.status["err_rearm"] and model.status["err_rearm_tile"] == 1


arm_st = st.none() | st.tuples(st.integers(0, 3), st.integers(0, 7), st.integers(0, 3))
update_st = st.none() | st.tuples(st.integers(0, 3), st.sampled_from([UpdateSource.LOCAL.value,
                                                                        UpdateSource.REMOTE.value]))


cycle_st = st.tuples(arm_st, update_st, st.integers(0, 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(cycle_st, min_size=1, max_size=60))
def test_sim_random_against_model(stimulus):
    """Arbitrary traffic, legal or not, from the first cycle after reset (offered during the
    sweep too), matches the golden model on every cycle."""
    run_lockstep(SMALL, stimulus, sweep=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(cycle_st, cycle_st, cycle_st, cycle_st, st.just(RESET)), min_size=1, max_size=60))
def test_sim_random_with_resets_against_model(stimulus):
    """The same with one-cycle resets at random points: every entry forgotten, sweep again."""
    run_lockstep(SMALL, stimulus, sweep=False)


def test_sim_arm_backpressure():
    """Two armed tiles fill a 2-deep queue's reservations: a third arm waits; a stalled sink
    keeps it waiting after they complete; update.ready never falls."""
    stimulus = ([((0, 1, 0), None, 0), ((1, 1, 1), None, 0), ((2, 1, 2), None, 0)]
                + [(HOLD, None, 0)] * 3 + [(HOLD, (0, 0), 0), (HOLD, (1, 1), 0)] + [(HOLD, None, 0)] * 4
                + [(HOLD, None, 1)] * 4 + [(None, (2, 0), 1)])
    trace: list = []
    model = run_lockstep(SMALL, stimulus, trace=trace)
    sweep = TrackerTable(**SMALL).reset_cycles
    after = trace[sweep:]
    arms = [n for n, t in enumerate(after) if t["arm"] is not None]
    assert arms[:2] == [0, 1] and arms[2] > 12, f"arms taken in cycles {arms}"
    assert all(t["update.ready"] for t in after)
    assert model.status["triggers"] == 3


def test_sim_reset_clears_counts():
    """Issue 11: arm tile 1 with threshold 3, one update, reset, re-arm with threshold 3: the
    trigger needs exactly 3 updates (the old table fired after 2). Checked on the ports
    alone (``trace``) and against the model."""
    for gap in (3, 0):
        stimulus = ([((1, 3, 1), (1, 0), 1)] + [(None, None, 1)] * gap + [RESET]
                    + [(None, None, 1)] * SMALL["entries"]
                    + [((1, 3, 2), None, 1)] + [(None, (1, 1), 1)] * 3)
        trace: list = []
        run_lockstep(SMALL, stimulus, trace=trace)
        after = trace[len(trace) - 1 - trace[::-1].index(RESET) + 1:]
        assert sum(1 for t in after if not t["arm.ready"]) == SMALL["entries"], "sweep length"
        updates = [n for n, t in enumerate(after) if t["update"] is not None]
        fired = [n for n, t in enumerate(after) if t["trigger.valid"]]
        assert len(updates) == 3 and fired, f"updates in cycles {updates}, trigger in {fired}"
        assert fired[0] == updates[2] + SPEC_TRIGGER_LATENCY, f"updates in cycles {updates}, trigger in {fired}"
