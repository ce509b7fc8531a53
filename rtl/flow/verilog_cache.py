"""Where conversions are kept: names only, without Amaranth, so that ``conftest.py`` (which
cocotb's assertion rewriting also loads inside every simulator process) can set the test
suite's cache without importing every block and the converter (a third of a second per
cocotb test). :func:`rtl.flow.generate.to_verilog` reads and writes the cache."""

from __future__ import annotations

from pathlib import Path

__all__ = ["VERILOG_CACHE_ENV", "TEST_VERILOG_CACHE"]

#: A folder where :func:`~rtl.flow.generate.to_verilog` keeps each conversion, named by a
#: hash of the block, its parameters, the RTL sources the process imported and the Amaranth
#: and Yosys in use, so that an identical conversion is read back instead of redone
#: (Amaranth's conversion of an 8-GPU ring takes seconds). Unset or empty: nothing is kept.
#: The test suite sets it to :data:`TEST_VERILOG_CACHE` (``conftest.py``).
VERILOG_CACHE_ENV = "T3_VERILOG_CACHE"
#: Where the test suite (``conftest.py``) and ``make mutate``'s copies keep conversions.
TEST_VERILOG_CACHE = Path(__file__).resolve().parents[2] / "sim_build" / "verilog"
