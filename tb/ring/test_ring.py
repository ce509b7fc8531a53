"""pytest runner of the end-to-end ring bench (N = 2, 3, 4, 5, 6, 8 and 16).

Each parameter set's ring is built with a ``power_up_seed`` derived from the session's
``SEED`` (printed and replayable), so the banks start with different garbage every run.
The soak cases (256 tiles per chunk, the larger N = 8 runs) run only with ``T3_SOAK=1``
(``make soak``); ``make test`` lists them as skipped.
"""

from __future__ import annotations

import os

import pytest

from tb.common.runner import CocotbBench
from tb.common.seeds import derive_seed
from tb.ring.scenarios import CASES, PARAM_SETS, SOAK_CASES

SOAK = os.environ.get("T3_SOAK", "0") not in ("", "0")

BENCHES = {name: CocotbBench(block="t3_ring", test_module="tb.ring.tb_ring", param_set=name,
                             params={**params, "power_up_seed": derive_seed("t3_ring", name, "power_up")})
           for name, params in PARAM_SETS.items()}

_SKIP_SOAK = pytest.mark.skipif(not SOAK, reason="soak case: run with `make soak` (T3_SOAK=1)")
_ALL = [pytest.param(p, t, id=f"{p}-{t}") for p, t in CASES]
_ALL += [pytest.param(p, t, id=f"{p}-{t}-soak", marks=_SKIP_SOAK) for p, t in SOAK_CASES]


@pytest.mark.parametrize(("param_set", "testcase"), _ALL)
def test_ring(param_set: str, testcase: str) -> None:
    BENCHES[param_set].run(testcase)


@pytest.mark.parametrize("run", range(4), ids=[f"run{k}" for k in range(4)])
def test_trace_ring(run: int) -> None:
    """Reduce-scatter after reduce-scatter on 4, 4, 3 and 6 GPUs (``RingTrace.RUN_GPUS``), 16
    tiles per chunk, every top-level output compared with the composed model every cycle,
    every finished round's result with numpy (Verilog harness; see the module trace.py beside
    this one). Four runs of ``RingTrace.cycles`` each (``RingTrace.runs``), each with its own
    seed."""
    from tb.ring.trace import RingTrace
    from tb.trace.bench import check_block

    assert RingTrace.runs == len(RingTrace.RUN_GPUS) == 4, "the parametrisation follows RingTrace.runs"
    check_block(RingTrace.for_run(run), run)
