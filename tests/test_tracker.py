# amaranth: UnusedElaboratable=no
"""TrackerTable: constructor checks, then Amaranth-simulator runs against the golden model."""

from __future__ import annotations

import pytest
from amaranth.lib import data, wiring
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtl.tracker import TrackerTable, UpdateSource
from tb.common.packing import pack, unpack
from tb.tracker.model import SPEC_TRIGGER_LATENCY, TrackerTableModel


def test_init():
    dut = TrackerTable()
    assert (dut.entries, dut.count_width, dut.dma_cmd_width, dut.trigger_depth) == (256, 16, 8, 4)
    assert dut.tile_width == 8
    assert dut.trigger_latency == SPEC_TRIGGER_LATENCY == 2
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
    ("trigger_depth", 0, 1, 256), ("trigger_depth", 257, 1, 256),
])
def test_init_wrong_widths(name, value, lo, hi):
    with pytest.raises(ValueError, match=rf"^{name} must be between {lo} and {hi}, not {value}$"):
        TrackerTable(**{name: value})


@pytest.mark.parametrize("entries", [2, 4096])
def test_init_bounds_accepted(entries):
    assert TrackerTable(entries=entries).tile_width == (entries - 1).bit_length()


# -- simulation -------------------------------------------------------------------------------

def run_lockstep(params: dict, stimulus: list[tuple]) -> TrackerTableModel:
    """Drive ``stimulus`` cycle by cycle and compare every output with the model each cycle.

    Each stimulus element is ``(arm or None, update or None, trigger_ready)``. An offered
    item stays offered until accepted, as the stream rules require, so the remaining
    stimulus is consumed in order.
    """
    dut = TrackerTable(**params)
    model = TrackerTableModel(entries=dut.entries, trigger_depth=dut.trigger_depth)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    mismatches = []

    async def bench(ctx):
        arm_queue = [s[0] for s in stimulus if s[0] is not None]
        update_queue = [s[1] for s in stimulus if s[1] is not None]
        for cycle, (want_arm, want_update, trigger_ready) in enumerate(stimulus + [(None, None, 1)] * 12):
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
    """Arm, three updates (one in the arm's cycle), trigger two cycles after the last."""
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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(arm_st, update_st, st.integers(0, 1)), min_size=1, max_size=60))
def test_sim_random_against_model(stimulus):
    """Arbitrary traffic, legal or not, matches the golden model on every cycle."""
    run_lockstep(SMALL, stimulus)
