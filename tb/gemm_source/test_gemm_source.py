# amaranth: UnusedElaboratable=no
"""GEMM traffic source: lock-step trace against its golden model, and its parameter errors."""

from __future__ import annotations

import pytest


def test_trace_gemm_source() -> None:
    """3 x 10^5 cycles checked every cycle against the model: random GEMMs (valid and invalid),
    the idle / back-pressure matrix on every stream, mid-run resets."""
    from tb.gemm_source.trace import GemmSourceTrace
    from tb.trace.bench import check_block

    check_block(GemmSourceTrace())


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"addr_width": 0}, "addr_width must be between 1 and 32, not 0"),
    ({"tile_beats_log2": 13}, "tile_beats_log2 must be between 0 and 12, not 13"),
    ({"tiles_width": 17}, "tiles_width must be between 1 and 16, not 17"),
])
def test_bad_parameters(kwargs, message) -> None:
    from amaranth.lib import data

    from rtl.gemm_source import GemmTrafficSource
    layout = data.StructLayout({"tracked": 1, "data": 8})
    params = {"gemm_layout": layout, "packet_layout": layout, "addr_width": 8, "data_width": 8, **kwargs}
    with pytest.raises(ValueError, match=message):
        GemmTrafficSource(**params)


def test_stimulus_spans_every_setup_field() -> None:
    """The trace's stated ranges are the setup fields' whole widths (a widened or narrowed field
    changes what the stimulus must reach), and every field has its two end bins."""
    from tb.gemm_source.trace import GemmSourceTrace, field_ranges

    bench = GemmSourceTrace()
    layout = bench.source.setup_layout
    ranges = field_ranges(layout["tiles"].shape.width)
    assert set(ranges) == {name for name, _ in layout}
    for name, member in layout:
        lo, hi = ranges[name]
        assert hi == (1 << member.shape.width) - 1, name
        assert lo == (0 if name == "remote_tiles" else 1), name
        assert f"{name} at its minimum" in bench.bins and f"{name} at its maximum" in bench.bins
