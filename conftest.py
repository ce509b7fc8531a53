"""Repository-wide pytest configuration: print the base seed of the randomised tests."""

from tb.common.seeds import base_seed


def pytest_report_header(config):
    return f"randomised tests: SEED={base_seed()} (set SEED=<n> to replay)"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tb.common.runner import SESSION_STATS

    if not SESSION_STATS:
        return
    terminalreporter.section("cocotb benches (lock-step against the golden models)")
    for block, totals in sorted(SESSION_STATS.items()):
        figures = ", ".join(f"{k}={v:,}" for k, v in totals.items())
        terminalreporter.write_line(f"{block}: {figures}")
