"""Repository-wide pytest configuration.

* Prints the base seed of every randomised test (cocotb benches and hypothesis) in the
  header; ``SEED=<n>`` replays a whole run.
* Prints the cycle counts of the cocotb benches and the trace runs, and the trace runs'
  functional coverage, at the end.
"""

import pytest

from tb.common.seeds import base_seed


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # Hypothesis draws from the same base seed unless --hypothesis-seed was given.
    if config.getoption("hypothesis_seed", None) is None:
        from hypothesis import core

        core.global_force_seed = base_seed()


def pytest_report_header(config):
    return f"randomised tests: SEED={base_seed()} (set SEED=<n> to replay, cocotb and hypothesis alike)"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tb.common.stats import SESSION_STATS
    from tb.trace.coverage_summary import coverage_lines

    lines = coverage_lines()
    if lines:
        terminalreporter.section("functional coverage of the trace runs (every bin must be hit)")
        for line in lines:
            terminalreporter.write_line(line)
    if not SESSION_STATS:
        return
    terminalreporter.section("simulated figures (cocotb benches lock-step against golden models; fp vectors)")
    for block, totals in sorted(SESSION_STATS.items()):
        figures = ", ".join(f"{k}={v:,}" for k, v in totals.items())
        terminalreporter.write_line(f"{block}: {figures}")
