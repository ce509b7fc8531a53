"""Where ``WAVES=1`` put each test's waveform, for the run's summary.

Each cocotb test writes its own file, ``sim_build/<block>/<param-set>/waves/<testcase>.fst``
(Icarus through its ``+dumpfile_path`` plusarg; Verilator's file is moved there after the
run), so no test or parameter set overwrites another's. ``make test WAVES=1`` lists them at
the end (``conftest.py``).
"""

from __future__ import annotations

__all__ = ["SESSION_WAVES", "record"]

#: Waveform paths written in this session (a pytest-xdist worker hands its own to the controller).
SESSION_WAVES: list[str] = []


def record(path) -> None:
    SESSION_WAVES.append(str(path))
