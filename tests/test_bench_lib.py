"""The bench helpers: struct packing, seeds, scoreboard."""

from __future__ import annotations

import logging

import pytest
from amaranth.lib import data

from tb.common.packing import field_diff, pack, unpack
from tb.common.scoreboard import Mismatch, Scoreboard
from tb.common.seeds import derive_seed

LAYOUT = data.StructLayout({"a": 3, "b": 8, "c": 1})


def test_pack_matches_amaranth_const():
    fields = {"a": 5, "b": 0xA5, "c": 1}
    assert pack(LAYOUT, fields) == LAYOUT.const(fields).as_value().value
    assert unpack(LAYOUT, pack(LAYOUT, fields)) == fields


def test_pack_rejects_overflow():
    with pytest.raises(ValueError, match=r"^a must fit in 3 bits, not 8$"):
        pack(LAYOUT, {"a": 8})


def test_derive_seed_is_stable_and_distinct():
    assert derive_seed("x", "y", base=1) == derive_seed("x", "y", base=1)
    assert derive_seed("x", "y", base=1) != derive_seed("x", "z", base=1)
    assert derive_seed("x", "y", base=1) != derive_seed("x", "y", base=2)


def test_scoreboard_counts_and_fails():
    sb = Scoreboard(logging.getLogger("test"), fail_fast=False)
    with pytest.raises(AssertionError, match="no comparisons"):
        sb.assert_clean()
    assert sb.check(0, "v", 1, 1)
    sb.assert_clean()
    assert not sb.check(1, "v", 0, 1)
    with pytest.raises(AssertionError, match=r"^1 mismatches in 2 checks$"):
        sb.assert_clean()


REPLAY = "replay: SEED=123 pytest tb/tracker -k 'default-random__full__always' (cocotb seed 456)"


def test_scoreboard_raises_on_first_mismatch_with_replay_line():
    sb = Scoreboard(logging.getLogger("test"), context=f"sim time 1230 ns\n  {REPLAY}")
    assert sb.check(7, "status", 5, 5)
    layout = data.StructLayout({"a": 3, "b": 8})
    with pytest.raises(AssertionError) as info:
        sb.check(8, "status", pack(layout, {"a": 1, "b": 200}), pack(layout, {"a": 2, "b": 200}),
                 explain=lambda g, e: field_diff(layout, g, e))
    message = str(info.value)
    assert message.splitlines() == [
        "mismatch at cycle 8: status = 1601 (0x641), model expects 1602 (0x642)",
        "  differs in: a: 1 != 2",
        "  sim time 1230 ns",
        f"  {REPLAY}",
    ]
    assert isinstance(info.value, Mismatch)
    # The counters keep working for write_stats; the first mismatch is the last check made.
    assert (sb.checks, sb.mismatches) == (2, 1)


def test_scoreboard_mismatch_without_explain_or_context():
    sb = Scoreboard(logging.getLogger("test"), context=lambda: "")
    with pytest.raises(Mismatch, match=r"^mismatch at cycle 0: trigger.valid = 0, model expects 1$"):
        sb.check(0, "trigger.valid", 0, 1)


def test_scoreboard_survives_a_failing_explain():
    sb = Scoreboard(logging.getLogger("test"))
    with pytest.raises(Mismatch, match=r"explain failed: ZeroDivisionError"):
        sb.check(3, "x", 1, 2, explain=lambda g, e: 1 / 0)
