"""Repository-wide pytest configuration.

* Prints the base seed of every randomised test (cocotb benches and hypothesis) in the
  header; ``SEED=<n>`` replays a whole run.
* Lists the waveform of every cocotb test when ``WAVES=1``.
* Keeps Amaranth's conversions in ``sim_build/verilog`` (``T3_VERILOG_CACHE``; empty turns it off).
* Runs the longest test files first (:data:`LONGEST_FIRST`), so that the workers of
  ``make test`` finish together.
* Prints the cycle counts of the cocotb benches and the trace runs, and the trace runs'
  functional coverage, at the end (under pytest-xdist, as ``make test`` runs, each worker
  hands its figures to the controller).
"""

import os

import pytest

from rtl.flow.verilog_cache import TEST_VERILOG_CACHE, VERILOG_CACHE_ENV
from tb.common.seeds import base_seed

# The workers of pytest-xdist (make test) inherit the base seed the header prints: each would
# otherwise draw its own, and the printed SEED would not replay what they ran.
if not os.environ.get("SEED"):
    os.environ["SEED"] = str(base_seed())

# Identical conversions (a ring's parameter set in two test files, a block in every run) are
# read back from sim_build/verilog (rtl/flow/generate.py says what the key covers).
os.environ.setdefault(VERILOG_CACHE_ENV, str(TEST_VERILOG_CACHE))


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # Hypothesis draws from the same base seed unless --hypothesis-seed was given.
    if config.getoption("hypothesis_seed", None) is None:
        from hypothesis import core

        core.global_force_seed = base_seed()


#: The test files that take longest in ``make test``, longest first (each over 10 s of one
#: worker's time in a clean clone with an empty model cache, both workers busy; measured on
#: 2026-12-07 by timing every test of ``make test``). ``--dist loadfile`` hands the files out
#: in collection order (``make test`` passes ``--no-loadscope-reorder``: by default
#: pytest-xdist reorders them by their number of tests, which gave the 130 s invariant
#: suite, one test, out last while the other worker idled for 100 s), so a long file given
#: out last keeps one core busy while the other idles: longest first is the classic remedy
#: (LPT scheduling). Only the order changes, never what runs; a file not listed keeps its
#: collected place after these, and a stale list costs only balance.
LONGEST_FIRST = (
    "tb/ring/test_ring.py", "tests/test_invariants.py", "tests/test_committed_results.py",
    "tests/test_fast_replay.py", "tb/nmc/test_nmc.py", "tests/test_fp_add.py", "tb/gemm_ring/test_gemm_ring.py",
    "tests/test_crosscheck.py", "tb/slice/test_slice.py", "tb/tracker/test_tracker.py", "tb/dma/test_dma.py",
    "tb/track_trigger/test_track_trigger.py", "tests/test_characterize.py", "tests/test_generate.py",
    "tb/arbiter/test_arbiter.py", "tests/test_synth.py", "tests/test_asic.py", "tests/test_split_k.py",
    "tests/test_liveness.py", "tests/test_sweep.py", "tests/test_dram_banks.py", "tests/test_sim_checks.py",
    "tests/test_nmc.py", "tests/test_system_model_cli.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))     # stable: in-file order kept


def pytest_report_header(config):
    return f"randomised tests: SEED={base_seed()} (set SEED=<n> to replay, cocotb and hypothesis alike)"


def pytest_sessionfinish(session, exitstatus):
    """On a pytest-xdist worker: hand this worker's figures and coverage to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is None:
        return
    from tb.common.stats import SESSION_STATS
    from tb.common.waves import SESSION_WAVES
    from tb.trace.coverage_summary import SESSION_COVERAGE

    workeroutput["t3_stats"] = SESSION_STATS
    workeroutput["t3_waves"] = SESSION_WAVES
    workeroutput["t3_coverage"] = {label: dict(cov.counts) for label, cov in SESSION_COVERAGE.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """On the xdist controller: add up what each worker ran (make test runs one per core)."""
    from tb.common.stats import add_stats
    from tb.common.waves import SESSION_WAVES
    from tb.trace.check import Coverage
    from tb.trace.coverage_summary import add_coverage

    output = getattr(node, "workeroutput", {})
    SESSION_WAVES.extend(output.get("t3_waves", []))
    for block, totals in output.get("t3_stats", {}).items():
        add_stats(block, **totals)
    for label, counts in output.get("t3_coverage", {}).items():
        coverage = Coverage(label, counts)
        coverage.counts.update(counts)
        add_coverage(coverage)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tb.common.stats import SESSION_STATS
    from tb.common.waves import SESSION_WAVES
    from tb.trace.coverage_summary import coverage_lines

    if SESSION_WAVES:
        terminalreporter.section("waveforms (WAVES=1): one per test")
        for path in sorted(SESSION_WAVES):
            terminalreporter.write_line(path)
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
