"""pytest runner of the T3 slice bench: one item per (parameter set, cocotb test)."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.slice.scenarios import CASES, PARAM_SETS

BENCHES = {
    name: CocotbBench(block="t3_slice", test_module="tb.slice.tb_slice", param_set=name, params=params)
    for name, params in PARAM_SETS.items()
}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_t3_slice(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)


def test_trace_slice() -> None:
    """The whole slice under a GEMM-like stream of many tiles, every output compared with the
    golden model on every cycle (Verilog harness; see the module trace.py beside this one)."""
    from tb.slice.trace import SliceTrace
    from tb.trace.bench import check_block

    check_block(SliceTrace())
