# amaranth: UnusedElaboratable=no
"""``make formal``: every formal proof, by induction where it closes and deep BMC otherwise.

For each proof the runner first tries a full k-induction proof (base case and step, see
:mod:`tb.formal.engine`) at :attr:`Proof.induction_depth`. If the step fails, the property
is true of every reachable state but not inductive at that depth (the harness's shadows
are related to the design's internal state only through the ports, so an unreachable
state that agrees with the shadows for ``k`` cycles breaks the step), and the runner falls
back to bounded model checking at :attr:`Proof.bmc_depth`, deeper than ``make test``'s.
Then each deliberately broken design kept as a patch must be refuted at the same depth.

It prints one line per proof (method, depth, seconds) and writes
``sim_results/formal.json``; it exits 1 if a proof fails or a broken design survives.
``--only REGEX`` selects proofs by name; ``--bmc-depth N`` overrides every BMC depth.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .engine import prove, write_smt2

__all__ = ["Proof", "PROOFS", "main"]


@dataclass(frozen=True)
class Proof:
    name: str
    harness: Callable[..., object]    # harness(rtl=None) -> Elaboratable with .ports()
    induction_depth: int
    bmc_depth: int
    broken: dict = field(default_factory=dict)   # name -> patches
    why: str = ""


def _test_module(name: str):
    return importlib.import_module(f"tests.{name}")


def _variant(patches):
    from .variants import load_variant
    return load_variant(patches)


def _arbiter(bank_always_ready: bool):
    def make(rtl=None):
        return _test_module("test_arbiter_formal").Harness(bank_always_ready=bank_always_ready, rtl=rtl)
    return make


def _arbiter_broken(bank_always_ready: bool) -> dict:
    broken = _test_module("test_arbiter_formal").BROKEN
    return {name: patches for name, (patches, ready) in broken.items() if ready == bank_always_ready}


def _tracker(rtl=None):
    return _test_module("test_tracker_formal").Harness(rtl=rtl)


def _dma(rtl=None):
    return _test_module("test_dma_formal").Harness(rtl=rtl)


def _nmc(rtl=None):
    return _test_module("test_nmc_formal").Harness(rtl=rtl)


def _slice(rtl=None):
    from .slice_liveness import SliceLivenessHarness
    t3_slice = importlib.import_module(f"{rtl.__name__}.t3_slice" if rtl else "rtl.t3_slice")
    return SliceLivenessHarness(t3_slice.T3Slice)


def _proofs() -> list[Proof]:
    from .variants import FIRST_SLICE
    return [
        Proof("arbiter", _arbiter(False), 20, 20, _arbiter_broken(False),
              why="status.comm_wait counts the specified wait"),
        Proof("arbiter-starvation", _arbiter(True), 20, 20, _arbiter_broken(True),
              why="wait <= starvation_limit with the bank ready"),
        Proof("tracker", _tracker, 8, 16, _test_module("test_tracker_formal").BROKEN,
              why="one trigger per arm after exactly threshold updates; sticky unarmed error"),
        Proof("dma-path", _dma, 8, 14, _test_module("test_dma_formal").BROKEN,
              why="beats consecutive, exactly `beats` of them, one done, under any back-pressure"),
        Proof("reducer", _nmc, 8, 80, _test_module("test_nmc_formal").BROKEN,
              why="every word equals its requests applied in order, any hazard pattern"),
        Proof("slice-liveness", _slice, 8, 40, {"first_slice": FIRST_SLICE},
              why="no watched request waits 2 * (starvation_limit + 1 + hazard_window) + 1 cycles"),
    ]


PROOFS = _proofs


def run_proof(proof: Proof, workdir: Path, *, bmc_depth: int | None, timeout: int, log=print) -> dict:
    harness = proof.harness()
    write_smt2(harness, harness.ports(), workdir)
    tried = prove(harness, harness.ports(), workdir, mode="induction", depth=proof.induction_depth,
                  timeout=timeout, lowered=True)
    entry = {"name": proof.name, "property": proof.why, "induction_depth": proof.induction_depth}
    if tried.proven:
        entry.update(method="induction", depth=proof.induction_depth, proven=True, seconds=round(tried.seconds, 1))
        depth = proof.induction_depth
    elif tried.refuted:
        entry.update(method="induction", depth=proof.induction_depth, proven=False, seconds=round(tried.seconds, 1),
                     note="base case fails: a real counter-example (trace.vcd)")
        depth = proof.induction_depth
    else:
        depth = bmc_depth or proof.bmc_depth
        bmc = prove(harness, harness.ports(), workdir, mode="bmc", depth=depth, timeout=timeout, lowered=True)
        entry.update(method="bmc", depth=depth, proven=bmc.proven, seconds=round(tried.seconds + bmc.seconds, 1),
                     note=f"induction step fails at k={proof.induction_depth}; bounded from power-up")
        if not bmc.proven:
            entry["log"] = bmc.log[-2000:]
    log(f"  {proof.name:20s} {'PROVEN' if entry['proven'] else 'FAILED':6s} by {entry['method']:9s} "
        f"depth {entry['depth']:3d}  {entry['seconds']:6.1f} s")
    entry["broken"] = {}
    for name, patches in proof.broken.items():
        harness = proof.harness(rtl=_variant(patches))
        result = prove(harness, harness.ports(), workdir / name, mode="bmc", depth=depth, timeout=timeout)
        entry["broken"][name] = {"refuted": result.refuted, "seconds": round(result.seconds, 1)}
        log(f"    broken {name:28s} {'refuted' if result.refuted else 'NOT REFUTED'} in {result.seconds:.1f} s")
    return entry


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.formal.run", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="regex over proof names")
    parser.add_argument("--bmc-depth", type=int, default=None, help="override every BMC depth")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per solver run")
    parser.add_argument("--out", default="sim_results", help="folder for formal.json")
    args = parser.parse_args(argv)
    if args.bmc_depth is not None and not 1 <= args.bmc_depth <= 200:
        parser.error(f"--bmc-depth must be between 1 and 200, not {args.bmc_depth}")
    entries = []
    start = time.monotonic()
    print("formal proofs (yosys-smtbmc + yices):")
    for proof in PROOFS():
        if args.only and not re.search(args.only, proof.name):
            continue
        with tempfile.TemporaryDirectory(prefix=f"formal-{proof.name}-") as tmp:
            entries.append(run_proof(proof, Path(tmp), bmc_depth=args.bmc_depth, timeout=args.timeout))
    ok = all(e["proven"] and all(b["refuted"] for b in e["broken"].values()) for e in entries)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "formal.json").write_text(json.dumps({"engine": "yosys-smtbmc + yices-smt2", "ok": ok,
                                                 "seconds": round(time.monotonic() - start, 1),
                                                 "proofs": entries}, indent=2) + "\n")
    print(f"{'all proven, every broken design refuted' if ok else 'FAILED'} "
          f"({time.monotonic() - start:.0f} s); {out / 'formal.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
