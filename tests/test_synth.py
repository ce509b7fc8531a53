"""`make synth` essentials that CI can afford: the 256-entry tracker's counters map to block RAM."""

from __future__ import annotations

from rtl.synth import synthesize


def test_tracker_256_counters_are_block_ram(tmp_path):
    row = synthesize("tracker 256", "tracker_table", {"entries": 256}, tmp_path, pnr=False)
    # Counts (16 b), thresholds (16 b) and command indices (8 b) of 256 entries: 2 DP16KD.
    assert row["brams"] >= 2, row
    # The armed bits are flip-flops: one per entry, plus the pipeline and status registers.
    assert 256 <= row["ffs"] < 600, row
