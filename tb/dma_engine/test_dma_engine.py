"""pytest runner of the arbitrated-read DMA engine's cocotb bench."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.dma_engine.scenarios import CASES, PARAM_SETS

BENCHES = {
    name: CocotbBench(block="dma_engine", test_module="tb.dma_engine.tb_dma_engine", param_set=name,
                      params=params)
    for name, params in PARAM_SETS.items()
}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_dma_engine_arbitrated(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)
