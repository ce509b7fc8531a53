"""pytest runner of the link's cocotb bench: one item per (parameter set, cocotb test)."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.link.scenarios import CASES, PARAM_SETS

BENCHES = {
    name: CocotbBench(block="link_model", test_module="tb.link.tb_link", param_set=name, params=params)
    for name, params in PARAM_SETS.items()
}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_link_model(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)
