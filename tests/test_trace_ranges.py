# amaranth: UnusedElaboratable=no
"""Every block's documented field ranges are stated and proven reached (issue: the hardware at
production scale, "every documented range exercised").

Each trace bench of a block with setup, configuration or port fields states their ranges
(:class:`tb.trace.ranges.FieldRange`, from the block's parameters); its run must hit both
end bins of every range, like any other bin. The GEMM source states its own (its buffer's
lower end is the wave's size): ``tb/gemm_source/test_gemm_source.py``.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tb.trace.ranges import FieldRange, cover_ranges, draw, range_bins


def _benches():
    from tb.arbiter.trace import ArbiterTrace
    from tb.dma.trace import DmaPathTrace
    from tb.nmc.trace import ReducerTrace
    from tb.slice.trace import SliceTrace
    from tb.tracker.trace import TrackerTrace
    return {"arbiter": ArbiterTrace, "tracker": TrackerTrace, "dma_path": DmaPathTrace, "reducer": ReducerTrace,
            "slice": SliceTrace}


@pytest.mark.parametrize("name", ["arbiter", "tracker", "dma_path", "reducer", "slice"])
def test_bench_states_its_ranges_and_bins(name):
    bench = _benches()[name]()
    assert bench.ranges, f"{name}: no ranges stated"
    for r in bench.ranges:
        assert r.lo <= r.hi
        assert set(r.bins) <= set(bench.bins), f"{name}: {r.name} has no end bins"
    assert len({r.name for r in bench.ranges}) == len(bench.ranges)


def test_ranges_follow_the_parameters():
    """A wider configuration port widens the stated range (the ranges are computed, not copied)."""
    from tb.arbiter.trace import ArbiterTrace

    narrow = {r.name: r for r in ArbiterTrace().ranges}
    wide = {r.name: r for r in ArbiterTrace({"payload_shape": 16, "level_width": 6, "wait_width": 9}).ranges}
    assert (narrow["threshold"].hi, wide["threshold"].hi) == (15, 63)
    assert (narrow["starvation_limit"].hi, wide["starvation_limit"].hi) == (63, 511)


def test_draw_reaches_both_ends_and_stays_inside():
    rng = random.Random(7)
    values = [draw(rng, 3, 900, typical_hi=20) for _ in range(400)]
    assert min(values) == 3 and max(values) == 900
    assert all(3 <= v <= 900 for v in values)
    assert sum(3 < v < 900 for v in values) > 100


def test_cover_ranges_counts_only_the_ends():
    r = FieldRange("x", 1, 4)
    cover = Counter()
    for v in (1, 2, 3, 4, 4):
        cover_ranges(cover, (r,), {"x": v})
    assert cover == Counter({"x at its minimum (1)": 1, "x at its maximum (4)": 2})
    assert range_bins((r,)) == r.bins
    with pytest.raises(ValueError, match="lo must be at most hi"):
        FieldRange("y", 5, 4)


@pytest.mark.parametrize("name", ["tracker", "ring"])
def test_short_segments_leave_every_matrix_cell_a_long_one(name):
    """Segments cut short by a reset take a matrix cell in turn, never always the same one
    (a short-segment period sharing a factor with the nine cells once left a cell without
    traffic, and no bin noticed)."""
    from tb.ring.trace import RingTrace
    from tb.trace.stimulus import matrix_cells
    from tb.tracker.trace import TrackerTrace

    bench = {"tracker": TrackerTrace, "ring": RingTrace}[name]()
    bench.stimulus(random.Random(1), bench.cycles)
    segments = bench.segments if name == "tracker" else [seg for seg, _ in bench.rounds]
    long = {(s.source_mode, s.sink_mode) for s in segments if s.length >= 1000}
    assert long == set(matrix_cells()), f"cells without a long segment: {set(matrix_cells()) - long}"
