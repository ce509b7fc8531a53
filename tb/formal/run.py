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
``--only REGEX`` selects proofs by name; ``--bmc-depth N`` and ``--induction-depth K`` override
every BMC and induction depth. Where the step fails, the report names the assertion it broke
and states what closing it needs (:attr:`Proof.gap`).
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
from dataclasses import dataclass, field, replace
from pathlib import Path

from .engine import prove, write_smt2

__all__ = ["Proof", "PROOFS", "main", "step_failure"]


@dataclass(frozen=True)
class Proof:
    name: str
    harness: Callable[..., object]    # harness(rtl=None) -> Elaboratable with .ports()
    induction_depth: int
    bmc_depth: int
    broken: dict = field(default_factory=dict)   # name -> patches
    why: str = ""
    #: Where induction does not close: what it would need (the invariants on internal state
    #: that the step's counter-example lacks), stated with the proof.
    gap: str = ""


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
        Proof("tracker", _tracker, 8, 18, _test_module("test_tracker_formal").BROKEN,
              why="one trigger per arm after exactly threshold updates; sticky unarmed error",
              gap="the harness's record of the watched tile (armed, its threshold, the updates counted) comes "
                  "from the ports, so a state in which the tracker holds a trigger of the tile, or an entry "
                  "armed with another count, while the record says otherwise meets every assertion until the "
                  "trigger leaves, and the trigger queue's back-pressure (free) can hold it for any k. Closing it "
                  "needs invariants over the entry memory, the pipeline's stages and the trigger queue: the "
                  "tile's entry armed exactly while the record is pending and no trigger of it is on its way, "
                  "its count the record's less the tile's updates still in the pipeline, a trigger of it only "
                  "once the record's count has reached its threshold"),
        Proof("dma-path", _dma, 8, 14, _test_module("test_dma_formal").BROKEN,
              why="beats consecutive, exactly `beats` of them, one done, under any back-pressure",
              gap="`owed` and the watched command are recorded from the ports, so a state in which the beat "
                  "buffer's head, the engine's `dst`, `src` and `left` or the command queue disagree with the "
                  "watched command's next beat meets every assertion while egress refuses, and egress's "
                  "back-pressure (free) can hold it for any k. Closing it needs `owed` = the lookup stage's "
                  "command + the queued commands + the engine's `left` + the reads in flight + the buffered "
                  "beats, and the watched command's next beat placed among them, its successors consecutive"),
        Proof("reducer", _nmc, 8, 80, _test_module("test_nmc_formal").BROKEN,
              why="every word equals its requests applied in order, any hazard pattern",
              gap="the harness's expected word of the watched address is kept from the ports, and nothing ties "
                  "it to the bank's word of that address or to the updates of it still in the adder pipeline "
                  "and the forwarding registers, so a state where they disagree reaches a read after k cycles. "
                  "Closing it needs, per pipeline stage, the expected word = the bank's word with the address's "
                  "updates in flight applied in order"),
        Proof("slice-liveness", _slice, 8, 40, {"first_slice": FIRST_SLICE},
              why="no watched request waits 2 * (starvation_limit + 1 + hazard_window) + 1 cycles",
              gap="the harness counts the watched request's wait from the ports; a state in which it has "
                  "waited close to the bound while the arbiter's wait counter, the requests queued ahead of it "
                  "and the reducer's hazard window allow more meets every assertion until the bound breaks. "
                  "Closing it needs the wait tied to the arbiter's `comm_wait`, the request's place in the "
                  "compute FIFO or the communication heads, and the hazard window"),
    ]


PROOFS = _proofs


def step_failure(log: str) -> str:
    """The assertion a failed induction step broke, as the harness words it ("'message'
    (file:line)"; empty when the log names none): the place the missing invariant must
    reach."""
    found = re.findall(r"Assert failed in top: (\S+):(\d+)", log)
    if not found:
        return ""
    path, line = found[-1]
    try:
        text = Path(path).read_text().splitlines()[int(line) - 1]
    except (OSError, IndexError):
        return f"{Path(path).name}:{line}"
    # The message: the string literal that closes the call (either quote; the other may be
    # inside it). One written on a line of its own is not found: the place alone is given.
    message = re.search(r"""f?(["'])((?:(?!\1).)+)\1\s*\)""", text)
    where = f"{Path(path).name}:{line}"
    return f"'{message.group(2)}' ({where})" if message else where


def run_proof(proof: Proof, workdir: Path, *, bmc_depth: int | None, timeout: int, log=print,
              induction_depth: int | None = None) -> dict:
    if induction_depth is not None:
        proof = replace(proof, induction_depth=induction_depth)
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
        failing = step_failure(tried.log)
        entry.update(method="bmc", depth=depth, proven=bmc.proven, seconds=round(tried.seconds + bmc.seconds, 1),
                     note=f"induction step fails at k={proof.induction_depth}"
                          + (f" on {failing}" if failing else "") + "; bounded from power-up")
        if proof.gap:
            entry["induction_gap"] = proof.gap
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
    parser.add_argument("--induction-depth", type=int, default=None,
                        help="override every induction depth (k), to see whether a deeper step closes")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per solver run")
    parser.add_argument("--out", default="sim_results", help="folder for formal.json")
    args = parser.parse_args(argv)
    for name, value in (("--bmc-depth", args.bmc_depth), ("--induction-depth", args.induction_depth)):
        if value is not None and not 1 <= value <= 200:
            parser.error(f"{name} must be between 1 and 200, not {value}")
    entries = []
    start = time.monotonic()
    print("formal proofs (yosys-smtbmc + yices):")
    for proof in PROOFS():
        if args.only and not re.search(args.only, proof.name):
            continue
        with tempfile.TemporaryDirectory(prefix=f"formal-{proof.name}-") as tmp:
            entries.append(run_proof(proof, Path(tmp), bmc_depth=args.bmc_depth, timeout=args.timeout,
                                     induction_depth=args.induction_depth))
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
