"""pytest runner of the near-memory reducer's cocotb bench."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.nmc.scenarios import CASES, PARAM_SETS

BENCHES = {
    name: CocotbBench(block="near_memory_reducer", test_module="tb.nmc.tb_nmc", param_set=name, params=params)
    for name, params in PARAM_SETS.items()
}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_near_memory_reducer(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)


def test_trace_reducer() -> None:
    """A million cycles or more, every output compared with the golden model on every cycle
    (Verilog harness, no Python in the simulation loop; the module trace.py beside this one)."""
    from tb.nmc.trace import ReducerTrace
    from tb.trace.bench import check_block

    check_block(ReducerTrace())
