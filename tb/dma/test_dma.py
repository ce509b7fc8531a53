"""pytest runner of the DMA path's cocotb bench: one item per (parameter set, cocotb test)."""

from __future__ import annotations

import pytest

from tb.common.runner import CocotbBench
from tb.dma.scenarios import CASES, PARAM_SETS

BENCHES = {
    name: CocotbBench(block="dma_path", test_module="tb.dma.tb_dma", param_set=name, params=params)
    for name, params in PARAM_SETS.items()
}


@pytest.mark.parametrize(("param_set", "testcase"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_dma_path(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)


def test_trace_dma_path() -> None:
    """A million cycles or more, every output compared with the golden model on every cycle
    (Verilog harness, no Python in the simulation loop; the module trace.py beside this one)."""
    from tb.dma.trace import DmaPathTrace
    from tb.trace.bench import check_block

    check_block(DmaPathTrace())
