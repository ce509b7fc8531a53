"""The bench helpers: struct packing, seeds, scoreboard."""

from __future__ import annotations

import logging

import pytest
from amaranth.lib import data

from tb.common.packing import pack, unpack
from tb.common.scoreboard import Scoreboard
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
    sb = Scoreboard(logging.getLogger("test"))
    with pytest.raises(AssertionError, match="no comparisons"):
        sb.assert_clean()
    assert sb.check(0, "v", 1, 1)
    sb.assert_clean()
    assert not sb.check(1, "v", 0, 1)
    with pytest.raises(AssertionError, match=r"^1 mismatches in 2 checks$"):
        sb.assert_clean()
