"""Repository-wide pytest configuration: print the base seed of the randomised tests."""

from tb.common.seeds import base_seed


def pytest_report_header(config):
    return f"randomised tests: SEED={base_seed()} (set SEED=<n> to replay)"
