"""pytest runner of the track & trigger join bench: one item per cocotb test."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.track_trigger.scenarios import CASES, PARAM_SETS

BENCHES = {
    name: CocotbBench(block="track_and_trigger", test_module="tb.track_trigger.tb_track_trigger",
                      param_set=name, params=params)
    for name, params in PARAM_SETS.items()
}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_track_and_trigger(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)


def test_trace_track_trigger() -> None:
    """A million cycles or more, every output compared with the golden model on every cycle
    (Verilog harness, no Python in the simulation loop; the module trace.py beside this one)."""
    from tb.trace.bench import check_block
    from tb.track_trigger.trace import TrackTriggerTrace

    check_block(TrackTriggerTrace())
