"""pytest runner of the memory arbiter's cocotb bench."""

from __future__ import annotations

import pytest

from tb.arbiter.scenarios import CASES, PARAM_SETS
from tb.common.runner import CocotbBench

BENCHES = {name: CocotbBench(block="memory_arbiter", test_module="tb.arbiter.tb_arbiter", param_set=name,
                             params=params) for name, params in PARAM_SETS.items()}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_memory_arbiter(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)


def test_trace_arbiter() -> None:
    """A million cycles or more, every output compared with the golden model on every cycle
    (Verilog harness, no Python in the simulation loop; the module trace.py beside this one)."""
    from tb.arbiter.trace import ArbiterTrace
    from tb.trace.bench import check_block

    check_block(ArbiterTrace())
