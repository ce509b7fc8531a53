"""Independent checks of the fluid timeline (system_model.engine.timeline and .sharing).

Every expected number is derived by hand in the test (the arithmetic is written out), never
copied from the engine's output.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system_model.engine import timeline
from system_model.engine.sharing import DRAM, GRANTS, Policy
from system_model.engine.timeline import Engine, EngineError, Flow

REL = 1e-9


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def rates_at(engine: Engine, t: float) -> dict[str, float]:
    """The rates of the recorded interval that contains ``t``."""
    for start, end, rates, *_ in engine.intervals:
        if start <= t < end:
            return rates
    raise AssertionError(f"no interval holds t={t}: {[(a, b) for a, b, *_ in engine.intervals]}")


# -- one flow alone ------------------------------------------------------------------------

@pytest.mark.parametrize("demand, cap, rate", [
    # link 100/2 = 50, dram 200/1 = 200, cap 40: the cap binds
    ({"link": 2.0, DRAM: 1.0}, 40.0, min(40.0, 100.0 / 2.0, 200.0 / 1.0)),
    # no cap: the link binds at 50
    ({"link": 2.0, DRAM: 1.0}, math.inf, min(100.0 / 2.0, 200.0 / 1.0)),
    # the DRAM binds: 200 / 8 = 25 < link 100 / 0.5 = 200
    ({"link": 0.5, DRAM: 8.0, GRANTS: 8.0}, math.inf, min(100.0 / 0.5, 200.0 / 8.0)),
    # a resource it does not use does not bound it
    ({DRAM: 4.0}, 30.0, min(30.0, 200.0 / 4.0)),
])
@pytest.mark.parametrize("policy", [Policy("rr"), Policy("mca", 5.0)])
def test_one_flow_alone(demand, cap, rate, policy):
    work = 1000.0
    e = Engine({"link": 100.0, DRAM: 200.0}, policy, record=True)
    ended = []
    f = e.start(Flow("f", work, demand, cap=cap), lambda eng, fl: ended.append(eng.now))
    end = e.run()
    assert f.end_s == approx(work / rate) and end == approx(work / rate) and ended == [f.end_s]
    assert rates_at(e, 0.0)["f"] == approx(rate)
    assert f.done == work


def test_zero_work_flow_ends_at_start():
    e = Engine({"link": 1.0}, Policy("rr"))
    ended = []
    e.at(2.0, lambda eng: eng.start(Flow("z", 0.0, {"link": 1.0}), lambda e2, fl: ended.append(e2.now)))
    assert e.run() == approx(2.0)
    assert ended == [approx(2.0)]


# -- round robin -------------------------------------------------------------------------------

def test_rr_equal_grant_rates_then_work_conserving():
    # A reads (one grant, one unit of bank time per byte), B is a near-memory update (one
    # grant, two units). Weights 1/grants are equal, so the rates rise together: x + 2x = 100
    # -> x = 100/3 each. B's 100 bytes end at 100 / (100/3) = 3 s; A has done 100 of 300 by
    # then and runs alone at 100/1 = 100 for the last 200: ends at 3 + 2 = 5 s.
    e = Engine({DRAM: 100.0}, Policy("rr"), record=True)
    a = e.start(Flow("A", 300.0, {DRAM: 1.0, GRANTS: 1.0}))
    b = e.start(Flow("B", 100.0, {DRAM: 2.0, GRANTS: 1.0}))
    e.run()
    x = 100.0 / 3.0
    both = rates_at(e, 1.0)
    assert both["A"] == approx(x) and both["B"] == approx(x)
    assert both["A"] * 1.0 == approx(both["B"] * 1.0)            # equal grant rates
    assert b.end_s == approx(100.0 / x) == approx(3.0)
    assert rates_at(e, 4.0) == {"A": approx(100.0)}
    assert a.end_s == approx(3.0 + (300.0 - 3.0 * x) / 100.0) == approx(5.0)
    assert e.used[DRAM] == approx(300.0 * 1.0 + 100.0 * 2.0)


def test_rr_weights_are_inverse_grants():
    # A: 1 grant byte per unit, B: 2. Equal grant rates -> xA * 1 = xB * 2; both hold the
    # bank one unit per unit of work: xA + xB = 90 -> xB = 30, xA = 60.
    # B (60 units) ends at 2 s; A has done 120 of 300 and runs alone at 90: 180/90 = 2 s more.
    e = Engine({DRAM: 90.0}, Policy("rr"), record=True)
    a = e.start(Flow("A", 300.0, {DRAM: 1.0, GRANTS: 1.0}))
    b = e.start(Flow("B", 60.0, {DRAM: 1.0, GRANTS: 2.0}, klass="compute"))
    e.run()
    r = rates_at(e, 0.5)
    assert r["A"] == approx(60.0) and r["B"] == approx(30.0)
    assert r["A"] * 1.0 == approx(r["B"] * 2.0)
    assert b.end_s == approx(60.0 / 30.0) and a.end_s == approx(2.0 + (300.0 - 2.0 * 60.0) / 90.0)


def test_rr_cap_leaves_the_rest_to_the_other():
    # A capped at 20 of a 100 resource: B (uncapped) gets the other 80 (max-min fairness).
    e = Engine({"link": 100.0}, Policy("rr"), record=True)
    e.start(Flow("A", 100.0, {"link": 1.0}, cap=20.0))
    e.start(Flow("B", 400.0, {"link": 1.0}))
    e.run()
    r = rates_at(e, 0.1)
    assert r["A"] == approx(20.0) and r["B"] == approx(80.0)
    # B: 400 at 80 -> 5 s, A: 100 at 20 -> 5 s
    assert e.now == approx(5.0)


# -- compute first (T3-MCA) -----------------------------------------------------------------

def test_mca_compute_first_comm_leftover():
    # Compute capped at 70 of 100: it gets its 70 first; comm gets the floor (10), then the
    # leftover: 100 - 70 = 30.
    e = Engine({DRAM: 100.0}, Policy("mca", comm_floor_grants_Bps=10.0), record=True)
    e.start(Flow("C", 700.0, {DRAM: 1.0, GRANTS: 1.0}, cap=70.0, klass="compute"))
    e.start(Flow("M", 600.0, {DRAM: 1.0, GRANTS: 1.0}))
    e.run()
    r = rates_at(e, 1.0)
    assert r["C"] == approx(70.0) and r["M"] == approx(100.0 - 70.0)


def test_mca_floor_while_compute_saturates_then_everything():
    # Compute uncapped saturates the DRAM: comm (a near-memory update: 1 grant, 2 units)
    # keeps its starvation floor of 10 grant bytes/s -> 10 units/s, 20 units of DRAM; compute
    # gets 100 - 20 = 80. C (800) ends at 10 s; M has done 100 of 200 and then gets all of
    # the DRAM: 100 / 2 = 50/s -> 2 s more: ends at 12 s.
    e = Engine({DRAM: 100.0}, Policy("mca", comm_floor_grants_Bps=10.0), record=True)
    c = e.start(Flow("C", 800.0, {DRAM: 1.0, GRANTS: 1.0}, klass="compute"))
    m = e.start(Flow("M", 200.0, {DRAM: 2.0, GRANTS: 1.0}))
    e.run()
    r = rates_at(e, 1.0)
    assert r["M"] * 1.0 == approx(10.0)           # grant rate = the floor
    assert r["C"] == approx(100.0 - 10.0 * 2.0)
    assert c.end_s == approx(800.0 / 80.0)
    assert rates_at(e, 11.0) == {"M": approx(100.0 / 2.0)}
    assert m.end_s == approx(10.0 + (200.0 - 10.0 * 10.0) / 50.0)
    assert e.used[DRAM] == approx(800.0 * 1.0 + 200.0 * 2.0)


def test_mca_against_rr_same_flows():
    # The same two flows under round robin share 50/50; compute first gives compute 90.
    def go(policy):
        e = Engine({DRAM: 100.0}, policy, record=True)
        e.start(Flow("C", 900.0, {DRAM: 1.0, GRANTS: 1.0}, klass="compute"))
        e.start(Flow("M", 900.0, {DRAM: 1.0, GRANTS: 1.0}))
        e.run()
        return rates_at(e, 0.5)
    assert go(Policy("rr")) == {"C": approx(50.0), "M": approx(50.0)}
    assert go(Policy("mca", 10.0)) == {"C": approx(90.0), "M": approx(10.0)}
    # without a floor comm starves while compute saturates, and is served after
    assert go(Policy("mca", 0.0)) == {"C": approx(100.0)}


def test_mca_comm_alone_gets_everything():
    e = Engine({DRAM: 100.0, "link": 1000.0}, Policy("mca", comm_floor_grants_Bps=1.0), record=True)
    m = e.start(Flow("M", 500.0, {DRAM: 1.0, GRANTS: 1.0, "link": 1.0}))
    e.run()
    assert rates_at(e, 0.0) == {"M": approx(100.0)}
    assert m.end_s == approx(5.0)


def test_mca_comm_off_dram_not_held_by_compute():
    # A comm flow on the link only is not behind compute: it gets its link in full.
    e = Engine({DRAM: 100.0, "link": 40.0}, Policy("mca", 10.0), record=True)
    e.start(Flow("C", 1000.0, {DRAM: 1.0, GRANTS: 1.0}, klass="compute"))
    e.start(Flow("L", 400.0, {"link": 1.0}))
    e.run()
    assert rates_at(e, 1.0) == {"C": approx(100.0), "L": approx(40.0)}


# -- the invariants fire --------------------------------------------------------------------

def test_unknown_resource():
    e = Engine({"link": 1.0, DRAM: 1.0}, Policy("rr"))
    with pytest.raises(EngineError, match=r"flow 'f' uses 'nvlink', which is not a resource here \(link, dram\)"):
        e.start(Flow("f", 1.0, {"nvlink": 1.0}))


@pytest.mark.parametrize("demand", [{}, {"link": 0.0}, {GRANTS: 1.0}])
def test_bounded_by_nothing(demand):
    e = Engine({"link": 1.0}, Policy("rr"))
    with pytest.raises(EngineError, match="flow 'f' is bounded by nothing"):
        e.start(Flow("f", 1.0, demand))


@pytest.mark.parametrize("kwargs, match", [
    ({"work": -1.0}, "work must be finite"),
    ({"work": math.inf}, "work must be finite"),
    ({"cap": 0.0}, "cap must be > 0"),
    ({"demand": {"link": -1.0}}, "demand on link must be finite"),
    ({"demand": {"link": math.nan}}, "demand on link must be finite"),
])
def test_bad_flow(kwargs, match):
    args = {"name": "f", "work": 1.0, "demand": {"link": 1.0}} | kwargs
    with pytest.raises(EngineError, match=match):
        Flow(**args)


@pytest.mark.parametrize("capacity", [0.0, -1.0, math.inf, math.nan])
def test_bad_capacity(capacity):
    with pytest.raises(EngineError, match="resource 'link': capacity must be finite and > 0"):
        Engine({"link": capacity}, Policy("rr"))


def test_deadlock_nothing_released():
    e = Engine({"link": 10.0}, Policy("rr"))
    e.start(Flow("held", 10.0, {"link": 1.0}, released=0.0))
    with pytest.raises(EngineError, match=r"deadlock at 0 s: held wait for work nobody releases"):
        e.run()


def test_deadlock_release_short_of_work():
    # 4 of 10 released: done at 0.4 s, then nothing more comes
    e = Engine({"link": 10.0}, Policy("rr"))
    e.start(Flow("part", 10.0, {"link": 1.0}, released=4.0))
    with pytest.raises(EngineError, match=r"deadlock at 0.4 s: part wait"):
        e.run()


def test_deadlock_follower_of_a_stuck_leader():
    e = Engine({"link": 10.0, "gemm": 1.0}, Policy("rr"))
    lead = e.start(Flow("lead", 10.0, {"gemm": 1.0}, released=0.0))
    f = e.start(Flow("follower", 5.0, {"link": 1.0}, produced=0.0))
    e.follow(f, lead, 0.5)
    with pytest.raises(EngineError, match="deadlock at 0 s: lead, follower wait"):
        e.run()


def test_work_conservation_check(monkeypatch):
    # A flow capped at 10 on a 100 link given 5: below its cap, the link 5% used.
    monkeypatch.setattr(timeline, "allocate", lambda flows, caps, policy, dram: [0.5 * f.cap for f in flows])
    e = Engine({"link": 100.0}, Policy("rr"))
    e.start(Flow("slow", 10.0, {"link": 1.0}, cap=10.0))
    with pytest.raises(EngineError, match=r"work conservation broken at 0 s: flow 'slow' runs at 5/s, below its "
                                          r"cap 10, and none of its resources is saturated \(link 0.050\)"):
        e.run()


def test_over_commit_and_cap_checks(monkeypatch):
    monkeypatch.setattr(timeline, "allocate", lambda flows, caps, policy, dram: [60.0 for _ in flows])
    e = Engine({"link": 100.0}, Policy("rr"))
    e.start(Flow("a", 10.0, {"link": 1.0}))
    e.start(Flow("b", 10.0, {"link": 1.0}))
    with pytest.raises(EngineError, match=r"resource 'link' over-committed at 0 s: 120 of 100"):
        e.run()
    e = Engine({"link": 100.0}, Policy("rr"))
    e.start(Flow("a", 10.0, {"link": 1.0}, cap=50.0))
    with pytest.raises(EngineError, match=r"flow 'a' given 60/s outside \[0, cap 50\]"):
        e.run()


def test_coupled_follower_outrunning_is_caught(monkeypatch):
    # The follower, caught up (nothing produced), may not run faster than ratio x leader.
    monkeypatch.setattr(timeline, "allocate", lambda flows, caps, policy, dram: [1.0, 5.0])
    e = Engine({"gemm": 1.0, "link": 100.0}, Policy("rr"))
    lead = e.start(Flow("lead", 10.0, {"gemm": 1.0}))
    f = e.start(Flow("f", 50.0, {"link": 1.0}, produced=0.0))
    e.follow(f, lead, 2.0)
    with pytest.raises(EngineError, match="flow 'f' outruns the work its leader makes"):
        e.run()


# -- conservation ------------------------------------------------------------------------------

def test_used_is_work_times_demand():
    e = Engine({"link": 50.0, DRAM: 80.0, "nic": 7.0}, Policy("rr"))
    flows = [Flow("a", 100.0, {"link": 1.25, DRAM: 2.0, GRANTS: 1.0}),
             Flow("b", 40.0, {DRAM: 3.0, GRANTS: 3.0, "nic": 0.5}, klass="compute"),
             Flow("c", 60.0, {"link": 1.0, "nic": 0.1}, cap=4.0)]
    e.start(flows[0])
    e.after(1.5, lambda eng: eng.start(flows[1]))
    e.after(0.7, lambda eng: eng.start(flows[2]))
    e.run()
    assert e.used == {"link": approx(100 * 1.25 + 60 * 1.0), DRAM: approx(100 * 2.0 + 40 * 3.0),
                      "nic": approx(40 * 0.5 + 60 * 0.1)}
    assert all(f.done == f.work for f in flows)


# -- followers ---------------------------------------------------------------------------------

def _leader_and_follower(work_f: float, produced: float, ratio: float = 0.5):
    """Leader: 100 units on a 10/s resource (10 s). Follower: on a 100/s link."""
    e = Engine({"gemm": 10.0, "link": 100.0}, Policy("rr"), record=True)
    lead = e.start(Flow("L", 100.0, {"gemm": 1.0}))
    f = e.start(Flow("F", work_f, {"link": 1.0}, produced=produced))
    e.follow(f, lead, ratio)
    return e, lead, f


def _watch(e: Engine, lead: Flow, f: Flow, base: float, ratio: float, until: float, samples: list):
    """Every 0.05 s: the follower has never done more than what exists."""
    def check(eng):
        made = base + ratio * lead.done
        samples.append((eng.now, f.done, made))
        assert f.done <= made + 1e-9 * max(1.0, f.work), (eng.now, f.done, made)
    for i in range(1, int(until / 0.05)):
        e.at(i * 0.05, check)


def test_follower_catches_up_then_runs_coupled():
    # 20 units exist; the follower runs free at the link's 100 while the leader makes 0.5 x 10
    # = 5/s: it catches up when 100 t = 20 + 5 t -> t0 = 20/95, then runs at 5/s, coupled.
    # Its 60 units all exist when 20 + 5 t = 60 -> t = 8 s; the leader ends at 10 s.
    e, lead, f = _leader_and_follower(60.0, 20.0)
    samples: list = []
    _watch(e, lead, f, 20.0, 0.5, 10.0, samples)
    e.run()
    t0 = 20.0 / 95.0
    assert rates_at(e, t0 / 2) == {"L": approx(10.0), "F": approx(100.0)}
    assert rates_at(e, (t0 + 8.0) / 2) == {"L": approx(10.0), "F": approx(0.5 * 10.0)}
    assert f.end_s == approx((60.0 - 20.0) / (0.5 * 10.0))
    assert lead.end_s == approx(100.0 / 10.0)
    # once caught up it is exactly at what exists
    for t, done, made in samples:
        if t0 + 1e-6 < t < 8.0:
            assert done == pytest.approx(made, rel=1e-9)


def test_follower_tracks_a_slowed_leader():
    # The leader shares its resource with another flow for the first 4 s (5/s instead of 10):
    # the coupled follower (ratio 2) runs at 10/s, then 20/s.
    e = Engine({"gemm": 10.0, "link": 100.0}, Policy("rr"), record=True)
    lead = e.start(Flow("L", 60.0, {"gemm": 1.0}))
    e.start(Flow("other", 20.0, {"gemm": 1.0}))
    f = e.start(Flow("F", 120.0, {"link": 1.0}, produced=0.0))
    e.follow(f, lead, 2.0)
    samples: list = []
    _watch(e, lead, f, 0.0, 2.0, 8.0, samples)
    e.run()
    assert rates_at(e, 1.0) == {"L": approx(5.0), "other": approx(5.0), "F": approx(10.0)}
    # other ends at 4 s (20 at 5/s); the leader has 40 left at 10/s: ends at 8 s, as does F
    assert rates_at(e, 5.0) == {"L": approx(10.0), "F": approx(20.0)}
    assert lead.end_s == approx(4.0 + 40.0 / 10.0) and f.end_s == approx(8.0)


def test_produce_raises_availability():
    # Nothing exists; coupled at 5/s. At t = 2 (10 done), 30 units appear at once: the
    # follower runs free at 100 until 10 + 100 (t - 2) = 30 + 5 t -> t = 220/95, then coupled
    # again; its 60 all exist when 30 + 5 t = 60 -> t = 6 s.
    e, lead, f = _leader_and_follower(60.0, 0.0)
    e.at(2.0, lambda eng: eng.produce(f, 30.0))
    samples: list = []
    e.at(2.0, lambda eng: samples.append(("at 2", f.done)))
    e.run()
    assert samples == [("at 2", approx(10.0))]
    assert rates_at(e, 2.1)["F"] == approx(100.0)
    assert rates_at(e, 3.0)["F"] == approx(5.0)
    assert f.end_s == approx(6.0)


def test_follower_ahead_of_a_short_leader_ends_with_the_leader():
    # Exactly what exists at the leader's end: 20 + 0.5 x 100 = 70 = the follower's work.
    e, lead, f = _leader_and_follower(70.0, 20.0)
    e.run()
    assert f.end_s == approx(10.0) and lead.end_s == approx(10.0)


def test_follower_after_leader_ends_only_with_what_exists():
    # 20 + 0.5 x 100 = 70 of 80 exist when the leader ends at 10 s: the follower must stop
    # at 70 and go on only when the rest is produced (t = 12): 10 more at 100/s -> 12.1 s.
    e, lead, f = _leader_and_follower(80.0, 20.0)
    seen = []
    e.at(11.0, lambda eng: seen.append(f.done))
    e.at(12.0, lambda eng: eng.produce(f, 10.0))
    e.run()
    assert seen == [approx(70.0)]
    assert f.end_s == approx(12.0 + 10.0 / 100.0)


def test_follower_left_short_is_a_deadlock():
    e, lead, f = _leader_and_follower(80.0, 20.0)
    with pytest.raises(EngineError, match="deadlock at 10 s: F wait"):
        e.run()


def test_unlinked_flow_waits_for_production():
    # follow(f, None): "none are being made"; produced = 0: nothing may be sent until produce().
    e = Engine({"link": 100.0}, Policy("rr"))
    f = e.start(Flow("F", 50.0, {"link": 1.0}, produced=0.0))
    e.follow(f, None)
    e.at(3.0, lambda eng: eng.produce(f, 50.0))
    e.run()
    assert f.end_s == approx(3.0 + 50.0 / 100.0)


# -- marks, timers, release --------------------------------------------------------------------

def test_marks_and_timers():
    e = Engine({"link": 10.0}, Policy("rr"))
    log = []
    f = e.start(Flow("f", 100.0, {"link": 1.0}))
    e.mark(f, 70.0, lambda eng, fl: log.append(("mark 70", eng.now, fl.done)))
    e.mark(f, 30.0, lambda eng, fl: log.append(("mark 30", eng.now, fl.done)))

    def at5(eng):
        log.append(("at 5", eng.now, f.done))
        eng.after(2.5, lambda e2: log.append(("after 2.5", e2.now, f.done)))
        eng.at(1.0, lambda e2: log.append(("past", e2.now, f.done)))      # in the past: now
    e.at(5.0, at5)
    e.at(-3.0, lambda eng: log.append(("before", eng.now, f.done)))
    end = e.run()
    assert end == approx(10.0)
    assert log == [("before", 0.0, 0.0),
                   ("mark 30", approx(3.0), approx(30.0)),
                   ("at 5", approx(5.0), approx(50.0)),
                   ("past", approx(5.0), approx(50.0)),
                   ("mark 70", approx(7.0), approx(70.0)),
                   ("after 2.5", approx(7.5), approx(75.0))]


def test_timer_after_the_flows_runs_and_ends_the_run():
    e = Engine({"link": 10.0}, Policy("rr"))
    e.start(Flow("f", 10.0, {"link": 1.0}))
    fired = []
    e.at(4.0, lambda eng: fired.append(eng.now))
    assert e.run() == approx(4.0) and fired == [approx(4.0)]


def test_on_end_starts_the_next_flow():
    e = Engine({"link": 10.0}, Policy("rr"))
    second = Flow("b", 30.0, {"link": 1.0})
    e.start(Flow("a", 20.0, {"link": 1.0}), lambda eng, fl: eng.start(second))
    e.run()
    assert second.start_s == approx(2.0) and second.end_s == approx(2.0 + 3.0)


def test_release_caps_work():
    # 40 of 100 released: at 10/s it stops at 4 s; at 10 s the rest is released (the release
    # is capped at the work), 60 more at 10/s: ends at 16 s.
    e = Engine({"link": 10.0}, Policy("rr"), record=True)
    f = e.start(Flow("f", 100.0, {"link": 1.0}, released=40.0))
    seen = []
    e.mark(f, 40.0, lambda eng, fl: seen.append(("mark", eng.now)))
    e.at(7.0, lambda eng: seen.append(("idle", f.done, f.rate)))
    e.at(10.0, lambda eng: eng.release(f, 1000.0))
    e.run()
    assert f.released == 100.0
    assert seen == [("mark", approx(4.0)), ("idle", approx(40.0), 0.0)]
    assert f.end_s == approx(10.0 + 60.0 / 10.0)


def test_release_leaves_the_resource_to_others():
    # a is held at 20 of 60: while held, b gets the whole link.
    e = Engine({"link": 10.0}, Policy("rr"), record=True)
    a = e.start(Flow("a", 60.0, {"link": 1.0}, released=20.0))
    b = e.start(Flow("b", 60.0, {"link": 1.0}))
    e.at(6.0, lambda eng: eng.release(a, 40.0))
    e.run()
    # 0..4 s: 5 each (a reaches 20); 4..6 s: b alone at 10 (20 + 20 = 40); 6 s on: 5 each:
    # b's last 20 take 4 s (10 s); a then has 40 of 60 and runs alone: 2 s -> 12 s.
    assert rates_at(e, 1.0) == {"a": approx(5.0), "b": approx(5.0)}
    assert rates_at(e, 5.0) == {"b": approx(10.0)}
    assert b.end_s == approx(10.0) and a.end_s == approx(12.0)


# -- random flows --------------------------------------------------------------------------------

RESOURCES = ("link", DRAM, "nic")


@st.composite
def scenarios(draw):
    names = draw(st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=3, unique=True))
    caps = {r: draw(st.floats(1.0, 1000.0)) for r in names}
    flows = []
    for i in range(draw(st.integers(1, 5))):
        demand = {}
        for r in names:
            if draw(st.booleans()):
                demand[r] = draw(st.floats(0.01, 10.0))
        if DRAM in demand and draw(st.booleans()):
            demand[GRANTS] = demand[DRAM] * draw(st.sampled_from([0.5, 1.0]))
        bounded = any(v > 0 for r, v in demand.items() if r in caps)
        cap = draw(st.floats(0.1, 500.0)) if not bounded or draw(st.booleans()) else math.inf
        work = draw(st.one_of(st.just(0.0), st.floats(0.01, 1000.0)))
        delay = draw(st.one_of(st.just(0.0), st.floats(0.0, 5.0)))
        klass = draw(st.sampled_from(["compute", "comm"]))
        flows.append((Flow(f"f{i}", work, demand, cap=cap, klass=klass), delay))
    policy = draw(st.one_of(st.just(Policy("rr")),
                            st.builds(Policy, st.just("mca"), st.one_of(st.just(0.0), st.floats(0.1, 100.0)))))
    return caps, flows, policy


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_random_flows(scenario):
    caps, flows, policy = scenario
    e = Engine(caps, policy)
    for f, delay in flows:
        e.at(delay, lambda eng, f=f: eng.start(f))
    end = e.run()
    for f, delay in flows:
        assert f.finished and f.done == f.work
        assert f.start_s == pytest.approx(delay, abs=1e-12)
        # no faster than its cap, nor than any resource alone
        lower = f.start_s + f.work / f.cap
        for r, a in f.demand.items():
            if r in caps and a > 0:
                lower = max(lower, f.start_s + f.work * a / caps[r])
        assert f.end_s >= lower * (1 - 1e-9) - 1e-12, (f, lower)
    assert end == pytest.approx(max(max(f.end_s for f, _ in flows), max(d for _, d in flows)), rel=1e-12)
    for r in caps:
        want = sum(f.work * f.demand.get(r, 0.0) for f, _ in flows)
        assert e.used[r] == pytest.approx(want, rel=1e-6, abs=1e-9)
