"""The tracker's golden model on hand-worked cases, so that the bench's reference is trusted."""

from __future__ import annotations

from tb.tracker.model import LOCAL, REMOTE, SPEC_TRIGGER_LATENCY, TrackerTableModel


def idle(model, cycles, trigger_ready=1):
    out = []
    for _ in range(cycles):
        out.append(model.step(arm=None, update=None, trigger_ready=trigger_ready))
    return out


def swept(model: TrackerTableModel) -> TrackerTableModel:
    """The model after its reset sweep (``reset_cycles`` idle cycles)."""
    idle(model, model.reset_cycles)
    return model


def test_reset_sweep_holds_ports_for_entries_cycles():
    m = TrackerTableModel(entries=8, trigger_depth=4)
    assert m.reset_cycles == 8
    for _ in range(8):
        out = m.outputs()
        assert (out.arm_ready, out.update_ready, out.status["clearing"]) == (0, 0, 1)
        # Offered items are not taken: no arm, no update counted, no error.
        m.step(arm=(1, 1, 0), update=(1, LOCAL), trigger_ready=1)
    out = m.outputs()
    assert (out.arm_ready, out.update_ready, out.status["clearing"]) == (1, 1, 0)
    assert m.status["local_updates"] == 0 and m.status["err_unarmed_update"] == 0 and not m.armed


def test_trigger_depth_defaults_to_entries():
    assert TrackerTableModel(entries=16).trigger_depth == 16


def test_trigger_after_threshold_with_spec_latency():
    m = swept(TrackerTableModel(entries=8, trigger_depth=4))
    m.step(arm=(3, 2, 7), update=(3, LOCAL), trigger_ready=1)   # cycle 0: arm + first update
    m.step(arm=None, update=(3, REMOTE), trigger_ready=1)       # cycle 1: last update
    assert m.completed == (3, 7) and 3 not in m.armed           # freed at once
    assert SPEC_TRIGGER_LATENCY == 3
    for _ in range(SPEC_TRIGGER_LATENCY - 1):                   # cycles 2, 3: in flight
        out = m.outputs()
        assert not out.trigger_valid and out.update_ready == 1
        assert out.status["armed_entries"] == 1                  # the completion still counts
        m.step(arm=None, update=None, trigger_ready=0)
    out = m.outputs()                                            # cycle 4 = 1 + latency
    assert out.status["armed_entries"] == 0 and len(m.queue) == 1
    assert out.trigger_valid and out.trigger == (3, 7)
    assert m.step(arm=None, update=None, trigger_ready=1) == (3, 7)
    assert m.status["triggers"] == 1 and m.status["local_updates"] == 1 and m.status["remote_updates"] == 1
    assert m.status["armed_entries"] == 0


def test_arm_reserves_a_queue_slot():
    """depth 2: two armed tiles hold both slots (queue empty); completing them with the sink
    stalled moves the reservations into the queue; update.ready never falls."""
    m = swept(TrackerTableModel(entries=8, trigger_depth=2))
    m.step(arm=(0, 1, 0), update=None, trigger_ready=0)
    assert m.outputs().arm_ready == 1
    m.step(arm=(1, 1, 0), update=None, trigger_ready=0)
    assert m.outputs().arm_ready == 0 and not m.queue
    m.step(arm=(2, 1, 0), update=(0, LOCAL), trigger_ready=0)   # arm refused, update taken
    assert 2 not in m.armed and m.status["armed_entries"] == 2   # completion still counts
    m.step(arm=(2, 1, 0), update=(1, LOCAL), trigger_ready=0)
    for _ in range(3):
        out = m.outputs()
        assert (out.arm_ready, out.update_ready) == (0, 1)
        m.step(arm=(2, 1, 0), update=None, trigger_ready=0)
    assert len(m.queue) == 2 and m.status["armed_entries"] == 0 and 2 not in m.armed
    # One trigger leaves: the slot frees in the next cycle, and the held arm goes in.
    assert m.step(arm=(2, 1, 0), update=None, trigger_ready=1) == (0, 0)
    assert m.outputs().arm_ready == 1
    m.step(arm=(2, 1, 0), update=None, trigger_ready=0)
    assert 2 in m.armed and m.outputs().arm_ready == 0


def test_entry_frees_at_last_update_and_rearms_next_cycle():
    m = swept(TrackerTableModel(entries=8, trigger_depth=4))
    m.step(arm=(5, 1, 1), update=(5, LOCAL), trigger_ready=1)
    m.step(arm=(5, 1, 2), update=(5, LOCAL), trigger_ready=1)
    assert m.status["err_rearm"] == 0
    idle(m, 4)
    assert m.status["triggers"] == 2


def test_arm_of_same_cycle_completion_is_a_rearm():
    """The arm is ordered before the update of its cycle, so the entry is still armed."""
    m = swept(TrackerTableModel(entries=8, trigger_depth=4))
    m.step(arm=(5, 1, 1), update=None, trigger_ready=1)
    m.step(arm=(5, 1, 2), update=(5, LOCAL), trigger_ready=1)
    assert m.status["err_rearm"] == 1 and m.status["err_rearm_tile"] == 5


def test_errors_are_sticky_with_first_tile():
    m = swept(TrackerTableModel(entries=8, trigger_depth=4))
    m.step(arm=(1, 0, 0), update=(2, LOCAL), trigger_ready=1)
    m.step(arm=(4, 0, 0), update=(6, LOCAL), trigger_ready=1)
    s = m.status
    assert (s["err_zero_threshold"], s["err_zero_threshold_tile"]) == (1, 1)
    assert (s["err_unarmed_update"], s["err_unarmed_update_tile"]) == (1, 2)
    assert s["armed_entries"] == 0


def test_reset_forgets_counts_arms_and_queue():
    """Issue 11: arm tile 1 (threshold 3), one update, reset, re-arm (threshold 3): exactly 3 updates."""
    m = swept(TrackerTableModel(entries=8, trigger_depth=4))
    m.step(arm=(2, 1, 5), update=(2, LOCAL), trigger_ready=0)   # a trigger on its way to the queue
    m.step(arm=(1, 3, 1), update=None, trigger_ready=0)
    m.step(arm=None, update=(1, LOCAL), trigger_ready=0)
    m.reset()
    assert m.idle() and m.status["local_updates"] == 0 and m.outputs().status["clearing"] == 1
    swept(m)
    m.step(arm=(1, 3, 2), update=None, trigger_ready=1)
    for n in range(3):
        m.step(arm=None, update=(1, REMOTE), trigger_ready=1)
        fired = [t for t in idle(m, SPEC_TRIGGER_LATENCY + 1) if t is not None]
        assert fired == ([(1, 2)] if n == 2 else []), f"after {n + 1} updates: {fired}"
