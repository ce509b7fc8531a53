"""The tracker's golden model on hand-worked cases, so that the bench's reference is trusted."""

from __future__ import annotations

from tb.tracker.model import LOCAL, REMOTE, SPEC_TRIGGER_LATENCY, TrackerTableModel


def idle(model, cycles, trigger_ready=1):
    out = []
    for _ in range(cycles):
        out.append(model.step(arm=None, update=None, trigger_ready=trigger_ready))
    return out


def test_trigger_after_threshold_with_spec_latency():
    m = TrackerTableModel(entries=8, trigger_depth=4)
    m.step(arm=(3, 2, 7), update=(3, LOCAL), trigger_ready=1)   # cycle 0: arm + first update
    m.step(arm=None, update=(3, REMOTE), trigger_ready=1)       # cycle 1: last update
    assert not m.outputs().trigger_valid                        # cycle 2: in flight
    assert m.outputs().update_ready == 1
    m.step(arm=None, update=None, trigger_ready=0)
    out = m.outputs()                                            # cycle 3 = 1 + latency
    assert SPEC_TRIGGER_LATENCY == 2
    assert out.trigger_valid and out.trigger == (3, 7)
    assert m.step(arm=None, update=None, trigger_ready=1) == (3, 7)
    assert m.status["triggers"] == 1 and m.status["local_updates"] == 1 and m.status["remote_updates"] == 1
    assert m.status["armed_entries"] == 0


def test_update_ready_counts_in_flight_completion():
    m = TrackerTableModel(entries=8, trigger_depth=2)
    for tile in range(3):
        m.step(arm=(tile, 1, 0), update=None, trigger_ready=0)
    m.step(arm=None, update=(0, LOCAL), trigger_ready=0)
    assert m.outputs().update_ready == 1      # 0 queued + 1 in flight < 2
    m.step(arm=None, update=(1, LOCAL), trigger_ready=0)
    assert m.outputs().update_ready == 0      # 1 queued + 1 in flight
    # An update offered while not ready is not taken.
    m.step(arm=None, update=(2, LOCAL), trigger_ready=0)
    assert m.status["local_updates"] == 2 and 2 in m.armed
    assert idle(m, 3) == [(0, 0), (1, 0), None]


def test_entry_frees_at_last_update_and_rearms_next_cycle():
    m = TrackerTableModel(entries=8, trigger_depth=4)
    m.step(arm=(5, 1, 1), update=(5, LOCAL), trigger_ready=1)
    m.step(arm=(5, 1, 2), update=(5, LOCAL), trigger_ready=1)
    assert m.status["err_rearm"] == 0
    idle(m, 4)
    assert m.status["triggers"] == 2


def test_arm_of_same_cycle_completion_is_a_rearm():
    """The arm is ordered before the update of its cycle, so the entry is still armed."""
    m = TrackerTableModel(entries=8, trigger_depth=4)
    m.step(arm=(5, 1, 1), update=None, trigger_ready=1)
    m.step(arm=(5, 1, 2), update=(5, LOCAL), trigger_ready=1)
    assert m.status["err_rearm"] == 1 and m.status["err_rearm_tile"] == 5


def test_errors_are_sticky_with_first_tile():
    m = TrackerTableModel(entries=8, trigger_depth=4)
    m.step(arm=(1, 0, 0), update=(2, LOCAL), trigger_ready=1)
    m.step(arm=(4, 0, 0), update=(6, LOCAL), trigger_ready=1)
    s = m.status
    assert (s["err_zero_threshold"], s["err_zero_threshold_tile"]) == (1, 1)
    assert (s["err_unarmed_update"], s["err_unarmed_update_tile"]) == (1, 2)
    assert s["armed_entries"] == 0
