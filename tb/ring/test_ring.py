"""pytest runner of the end-to-end ring bench (N = 2, 4 and 8)."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.ring.scenarios import CASES, PARAM_SETS

BENCHES = {name: CocotbBench(block="t3_ring", test_module="tb.ring.tb_ring", param_set=name, params=params)
           for name, params in PARAM_SETS.items()}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_ring(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)
