"""pytest runner of the stream mux's cocotb bench: one item per (parameter set, cocotb test)."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.stream_mux.scenarios import CASES, PARAM_SETS

BENCHES = {
    name: CocotbBench(block="stream_mux", test_module="tb.stream_mux.tb_stream_mux", param_set=name,
                      params=params)
    for name, params in PARAM_SETS.items()
}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_stream_mux(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)
