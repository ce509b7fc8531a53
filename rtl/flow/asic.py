"""What T3 costs in silicon: ``python -m rtl.flow.asic`` (``make asic``).

Every block at the paper's configuration (``rtl/flow/paper.toml``) mapped to the SKY130
high-density standard cells (typical corner) by :mod:`rtl.flow.asic_map`, priced two ways:

* **tables as flip-flops**: every memory mapped to cells by the flow;
* **tables as SRAM**: every memory with a registered read port as published OpenRAM SKY130
  macros (the smallest set that holds it), and at the densest macro's area per bit;

then the clock (pre-layout static timing), and the overhead per GPU: one slice per memory
channel, scaled to the preset's node by :mod:`rtl.flow.asic_cost` with its range. The
near-memory reducer's ``bank`` stands for the DRAM it updates and is never counted.

Writes ``sim_results/asic.json`` and ``sim_results/asic.md``. ``--only`` replaces the rows it
names and keeps the others.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .asic_cost import (
    CELL_PAIRS,
    FLIP_FLOP_7NM_PER_SKY130,
    GPU_SITES,
    HBM_PIM,
    LOGIC_7NM_PER_SKY130,
    N5_PER_N7_LOGIC,
    N5_SRAM_BITCELL_UM2,
    N7_SRAM_BITCELL_UM2,
    NODES,
    PAPER_TRACKER_BITS,
    SKY130_SRAM_MACROS,
    SRAM_ARRAY_EFFICIENCY,
    TWO_PORT_CELL_FACTOR,
    dense_sram_um2,
    node_area_um2,
    sram_macros_for,
)
from .asic_map import (
    ABC_DELAY_PS,
    cell_table,
    library_header,
    map_area,
    memories,
    min_period,
    prepare_library,
    timing_tools_missing,
)
from .asic_report import markdown
from .generate import BLOCKS, PAPER_CONFIG, read_config, write_verilog
from .synth import choose_sets, verilog_sha1

__all__ = ["AsicSet", "ASIC_SETS", "NOT_SILICON", "DEFAULT_LIBRARY", "price_block", "per_gpu", "main"]

REPO = Path(__file__).resolve().parents[2]
#: Where the library is looked for unless ``--lib`` (``SKY130_LIB=`` for make) says otherwise.
DEFAULT_LIBRARY = REPO.parent / "shared" / "pdk" / "sky130hd_tt.lib.gz"
#: The library family the flow's cell names (tie cell, input driver) come from.
HD_LIBRARY_PREFIX = "sky130_fd_sc_hd__"


@dataclass(frozen=True)
class AsicSet:
    """One row: a block at the paper's configuration (``params`` override it). The timing
    flow builds the block with ``timing_params`` on top: the reducer's DRAM stand-in shrunk
    to 16 words, since it is not silicon T3 adds and 1,024 flip-flop words would only
    lengthen its read multiplexer."""

    label: str
    block: str
    params: dict = field(default_factory=dict)
    timing_params: dict = field(default_factory=dict)
    #: The same block's row of ``make synth`` (ECP5), to compare the clocks.
    ecp5_label: str | None = None


_PAPER = read_config(PAPER_CONFIG)
_SMALL_BANK = {"depth": 16}

ASIC_SETS = [
    AsicSet("tracker, 256 entries", "tracker_table", _PAPER["tracker_table"], ecp5_label="tracker 256"),
    AsicSet("DMA command table", "dma_command_table", _PAPER.get("dma_command_table", {})),
    AsicSet("DMA engine", "dma_engine", _PAPER.get("dma_engine", {})),
    AsicSet("DMA path (table + engine)", "dma_path", _PAPER.get("dma_path", {}),
            ecp5_label="DMA command table + engine"),
    AsicSet("track and trigger (tracker + DMA path)", "track_and_trigger", _PAPER.get("track_and_trigger", {})),
    AsicSet("fp adder binary16", "fp_adder", _PAPER["fp_adder"], ecp5_label="fp adder binary16, latency 5"),
    AsicSet("fp adder bfloat16", "fp_adder_bf16", _PAPER["fp_adder_bf16"],
            ecp5_label="fp adder bfloat16, latency 5"),
    AsicSet("fp adder binary32", "fp_adder_fp32", _PAPER["fp_adder_fp32"],
            ecp5_label="fp adder binary32, latency 5"),
    AsicSet("reducer binary16 x16 (256-bit)", "near_memory_reducer", _PAPER["near_memory_reducer"], _SMALL_BANK,
            "reducer binary16 x16 (256-bit)"),
    AsicSet("reducer bfloat16 x16 (256-bit)", "near_memory_reducer",
            _PAPER["near_memory_reducer"] | {"format": "bfloat16"}, _SMALL_BANK, "reducer bfloat16 x16 (256-bit)"),
    AsicSet("reducer binary32 x8 (256-bit)", "near_memory_reducer",
            _PAPER["near_memory_reducer"] | {"format": "binary32"}, _SMALL_BANK, "reducer binary32 x8 (256-bit)"),
    AsicSet("memory arbiter (T3-MCA)", "memory_arbiter", _PAPER["memory_arbiter"],
            ecp5_label="memory arbiter (64-bit requests)"),
    AsicSet("stream mux (256-bit)", "stream_mux", _PAPER["stream_mux"]),
    AsicSet("T3 slice", "t3_slice", _PAPER["t3_slice"], _SMALL_BANK, "T3 slice"),
]

#: Blocks of ``rtl/`` that are not silicon T3 adds, and why (``make asic`` lists them too, so
#: that every block is accounted for).
NOT_SILICON = {
    "t3_ring": "several T3 slices and link models: its cost is the slices'",
    "gemm_ring": "T3 slices behind GEMM traffic sources, a test system: its cost is the slices'",
    "gemm_source": "stands for the GPU's GEMM (a traffic generator for the benches)",
    "link_model": "stands for the GPU-to-GPU link (wires and a latency)",
}

#: What each memory holds, and so which memory it needs (by the memory's own name).
MEMORY_PURPOSE = {
    "count_mem": "each tile's update count: read and written back per update, one read and one write port, "
                 "the read registered (an SRAM, with a bypass for the write one update ahead)",
    "config_mem": "each tile's threshold (minus one) and DMA command, written when armed and read with its count",
    "trigger_queue": "tiles that reached their threshold, waiting for the DMA: read at its head in the same cycle "
                     "(first-word fall-through); priced as flip-flops, an upper bound (an SRAM with a one-word "
                     "prefetch register would do)",
    "desc_mem": "the pre-programmed DMA descriptors (address, beats, destination), read per trigger",
    "storage": "a FIFO's storage (command queue, DMA beat buffer, compute-request queue), read at its head",
    "bank": "the DRAM bank that T3 updates: a stand-in, not counted",
}

#: The slice that the per-GPU overhead counts, once per memory channel.
SLICE_LABEL = "T3 slice"
#: The arbiter's mapped netlist, committed beside ``asic.json``.
ARBITER_NETLIST = "asic_arbiter_netlist.v"
#: The library's area and kind of each cell in that netlist (so that its sums are checked
#: where the library is not installed).
ARBITER_CELLS = "asic_arbiter_cells.json"


def block_folder(work: Path, label: str) -> Path:
    """The folder under ``work`` where a row's block is mapped."""
    return work / re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def price_block(spec: AsicSet, work: Path, *, timing: bool) -> dict:
    """Map one block both ways (and time it) in ``work``; its row of ``asic.json``."""
    folder = block_folder(work, spec.label)
    folder.mkdir(parents=True, exist_ok=True)
    # The tools read the library and memory files from their working folder: link them in.
    for f in work.iterdir():
        if f.is_file():
            (folder / f.name).unlink(missing_ok=True)
            try:
                (folder / f.name).hardlink_to(f)
            except OSError:
                shutil.copyfile(f, folder / f.name)
    started = time.perf_counter()
    verilog = write_verilog(spec.block, folder / f"{spec.block}.v", **spec.params)
    mems = memories(verilog.name, spec.block, folder)
    as_ff = map_area(verilog.name, spec.block, folder, sram=False)
    as_sram = map_area(verilog.name, spec.block, folder, sram=True)
    tables = [m for m in mems if not m["dram_stand_in"]]
    for m in mems:
        m["purpose"] = MEMORY_PURPOSE[m["memory"].split(".")[-1]]
    for m in tables:
        m["bits"] = m["depth"] * m["width"]
        if m["registered_read"]:
            macro, count = sram_macros_for(m["depth"], m["width"])
            m["sram_macro"], m["sram_macro_count"] = macro.name, count
            m["sram_macro_um2"] = round(macro.area_um2 * count, 1)
            m["sram_dense_um2"] = round(dense_sram_um2(m["bits"]), 1)
    sram_tables = [m for m in tables if m["registered_read"]]
    row = {
        "label": spec.label, "block": spec.block, "params": spec.params,
        "verilog_sha1": verilog_sha1(verilog.read_text()),
        "memories": mems,
        "tables_as_flip_flops": as_ff,
        "tables_as_sram": as_sram,
        # What taking the registered tables out as macros saves in cells: their flip-flops and
        # read multiplexers, less the bypass logic an SRAM needs where the RTL reads a word in
        # the cycle it is written (memory_libmap builds it).
        "cells_saved_by_sram_um2": round(as_ff["area_um2"] - as_sram["area_um2"], 1),
        "sram_table_bits": sum(m["bits"] for m in sram_tables),
        "flip_flop_table_bits": sum(m["bits"] for m in tables if not m["registered_read"]),
        "sram_macros_um2": round(sum(m["sram_macro_um2"] for m in sram_tables), 1),
        "sram_dense_um2": round(sum(m["sram_dense_um2"] for m in sram_tables), 1),
        "map_s": round(time.perf_counter() - started, 1),
    }
    row["logic_um2"] = round(as_sram["area_um2"] - as_sram["sequential_area_um2"], 1)
    row["flip_flop_um2"] = as_sram["sequential_area_um2"]
    if timing:
        started = time.perf_counter()
        timed = write_verilog(spec.block, folder / f"{spec.block}_timed_src.v", **(spec.params | spec.timing_params))
        row["clock"] = min_period(timed.name, spec.block, folder) | {"timing_params": spec.timing_params}
        row["timing_s"] = round(time.perf_counter() - started, 1)
    return row


def _on_gpu_mm2(per_slice_um2: tuple[float, float, float], channels: int) -> list[float]:
    """(low, central, high) mm^2 on a GPU: one slice per channel, two at the high end
    (pseudo-channels run as channels)."""
    return [round(per_slice_um2[0] * channels / 1e6, 4), round(per_slice_um2[1] * channels / 1e6, 4),
            round(per_slice_um2[2] * 2 * channels / 1e6, 4)]


def per_gpu(slice_row: dict) -> list[dict]:
    """The added area per preset GPU (mm^2, low/central/high), tables as SRAM and as flip-flops."""
    as_ff = slice_row["tables_as_flip_flops"]
    rows = []
    for site in GPU_SITES:
        node = NODES[site.node]
        per_slice_sram = node_area_um2(slice_row["logic_um2"], slice_row["flip_flop_um2"], slice_row["sram_table_bits"],
                                       node)
        per_slice_ff = node_area_um2(as_ff["area_um2"] - as_ff["sequential_area_um2"], as_ff["sequential_area_um2"], 0,
                                     node)
        row = {"preset": site.preset, "slices": site.channels, "slices_with_pseudo_channels": 2 * site.channels,
               "node": site.node, "die": site.die, "die_mm2": site.die_mm2, "source": site.source,
               "slice_um2_sram": [round(a, 1) for a in per_slice_sram],
               "slice_um2_flip_flops": [round(a, 1) for a in per_slice_ff],
               "added_mm2_sram": _on_gpu_mm2(per_slice_sram, site.channels),
               "added_mm2_flip_flops": _on_gpu_mm2(per_slice_ff, site.channels),
               # The paper's ~19 KB per controller as SRAM at the same node, for comparison.
               "paper_tracker_storage_mm2": _on_gpu_mm2(node_area_um2(0.0, 0.0, PAPER_TRACKER_BITS, node),
                                                        site.channels)}
        if site.die_mm2:
            row["added_percent_sram"] = [round(100 * a / site.die_mm2, 3) for a in row["added_mm2_sram"]]
            row["added_percent_flip_flops"] = [round(100 * a / site.die_mm2, 3) for a in row["added_mm2_flip_flops"]]
        rows.append(row)
    return rows


def _method() -> dict:
    return {
        "logic_7nm_per_sky130": [round(x, 1) for x in LOGIC_7NM_PER_SKY130],
        "flip_flop_7nm_per_sky130": round(FLIP_FLOP_7NM_PER_SKY130, 1),
        "cell_pairs": [{"function": p.function, "sky130": p.sky130_cell, "sky130_um2": p.sky130_um2,
                        "asap7": p.asap7_cell, "asap7_um2": round(p.asap7_um2, 4), "ratio": round(p.ratio, 1)}
                       for p in CELL_PAIRS],
        "paper_tracker_bits": PAPER_TRACKER_BITS, "hbm_pim": HBM_PIM,
        "n5_per_n7_logic": N5_PER_N7_LOGIC, "n7_sram_bitcell_um2": N7_SRAM_BITCELL_UM2,
        "n5_sram_bitcell_um2": N5_SRAM_BITCELL_UM2, "sram_array_efficiency": list(SRAM_ARRAY_EFFICIENCY),
        "two_port_cell_factor": list(TWO_PORT_CELL_FACTOR),
        "sram_macros": [{"name": m.name, "words": m.words, "width_bits": m.width_bits, "area_um2": round(m.area_um2, 1),
                         "um2_per_bit": round(m.um2_per_bit, 2), "source": m.source} for m in SKY130_SRAM_MACROS],
    }


def check_coverage(rows: list[dict]) -> list[str]:
    """Blocks of ``rtl/`` that neither have a row nor a reason in :data:`NOT_SILICON`."""
    have = {r["block"] for r in rows}
    return sorted(b for b in BLOCKS if b not in have and b not in NOT_SILICON)


def ecp5_comparison(spec: AsicSet, row: dict, ecp5_row: dict | None) -> str:
    """Whether ``make synth``'s row of the block is of the same design, said in words."""
    if ecp5_row is None:
        return "make synth has no row of this block"
    if ecp5_row["verilog_sha1"] != row["verilog_sha1"]:
        params = ", ".join(f"{k}={v}" for k, v in ecp5_row["params"].items()) or "its defaults"
        return f"make synth's row is of other Verilog (`{ecp5_row['block']}`, {params})"
    if spec.timing_params:
        return "the same Verilog in area; the clock here is of the bank at 16 words (ECP5: the full bank in block RAM)"
    return "the same Verilog"


#: How far a figure of an unchanged design may move between runs (the issue's 1%).
REPRODUCE_WITHIN = 0.01


def reproduction_drift(old: list[dict], new: list[dict]) -> list[tuple[str, str, float]]:
    """``(label, figure, relative change)`` of every area and clock figure of a row whose
    design (Verilog) is the same as the committed row's: a rerun must reproduce it."""
    before = {r["label"]: r for r in old}
    out = []
    for r in new:
        o = before.get(r["label"])
        if o is None or o.get("verilog_sha1") != r["verilog_sha1"]:
            continue
        pairs = [(f"{way}.{k}", o[way][k], r[way][k]) for way in ("tables_as_flip_flops", "tables_as_sram")
                 for k in ("area_um2", "sequential_area_um2", "cells", "flip_flops")]
        if "clock" in o and "clock" in r:
            pairs.append(("clock.min_period_ns", o["clock"]["min_period_ns"], r["clock"]["min_period_ns"]))
        out += [(r["label"], name, abs(b - a) / abs(a) if a else float(b != a)) for name, a, b in pairs]
    return out


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """Rows of both, the new replacing old ones of the same label, in :data:`ASIC_SETS` order."""
    by_label = {r["label"]: r for r in old} | {r["label"]: r for r in new}
    order = {s.label: i for i, s in enumerate(ASIC_SETS)}
    return sorted((r for r in by_label.values() if r["label"] in order), key=lambda r: order[r["label"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtl.flow.asic", description=__doc__.splitlines()[0])
    parser.add_argument("--lib", type=Path, default=Path(os.environ.get("SKY130_LIB") or DEFAULT_LIBRARY),
                        help="the SKY130 HD typical-corner Liberty file, .lib or .lib.gz (default: %(default)s)")
    parser.add_argument("--only", default=None, help="regular expression on the row labels to map")
    parser.add_argument("--no-timing", action="store_true", help="skip the clock estimate (Debian yosys + opensta)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="blocks mapped at once")
    parser.add_argument("--out", type=Path, default=REPO / "sim_results")
    parser.add_argument("--validate-only", action="store_true",
                        help="check the arguments and the library, then stop (make asic runs it first)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    chosen = choose_sets(parser, args.only, ASIC_SETS)
    if not args.lib.exists():
        parser.error(f"--lib {args.lib} does not exist: get sky130_fd_sc_hd__tt_025C_1v80.lib from the SkyWater PDK "
                     "(libs.ref/sky130_fd_sc_hd/lib/, via volare or ciel)")
    try:
        header = library_header(args.lib)
    except ValueError as exc:
        parser.error(f"--lib: {exc}")
    if not header["library"].startswith(HD_LIBRARY_PREFIX):
        parser.error(f"--lib {args.lib} is library {header['library']}, not SKY130 HD ({HD_LIBRARY_PREFIX}*): the flow "
                     "names its cells (tie, driver)")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--out {args.out} cannot be made: {exc.strerror}")
    if not os.access(args.out, os.W_OK):
        parser.error(f"--out {args.out} is not writable")
    if args.validate_only:
        return 0
    if not args.no_timing and timing_tools_missing():
        parser.error(f"the clock estimate needs {', '.join(timing_tools_missing())} (Debian: apt-get install yosys "
                     "berkeley-abc opensta; make asic installs them) or --no-timing")
    work = REPO / "build" / "asic"
    library = prepare_library(args.lib, work)

    def run(spec: AsicSet) -> dict:
        row = price_block(spec, work, timing=not args.no_timing)
        clock = row.get("clock", {}).get("fmax_MHz")
        print(f"{spec.label:42s} {row['tables_as_sram']['area_um2']:>11,.0f} um2 "
              f"(+SRAM {row['sram_macros_um2']:>9,.0f})  as FFs {row['tables_as_flip_flops']['area_um2']:>11,.0f} um2"
              f"  {clock or '-'} MHz  ({row['map_s']} s)",
              flush=True)
        return row

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, chosen))
    json_path = args.out / "asic.json"
    previous = json.loads(json_path.read_text()) if json_path.exists() else {}
    drift = reproduction_drift(previous.get("rows", []), rows)
    rows = merge_rows(previous.get("rows", []), rows)
    if drift:
        worst = max(drift, key=lambda d: d[2])
        print(f"reproduced {len(drift)} figures of unchanged designs: largest change {100 * worst[2]:.3f}% "
              f"({worst[0]}, {worst[1]})")
        if worst[2] > REPRODUCE_WITHIN:
            print(f"error: {worst[0]}: {worst[1]} moved {100 * worst[2]:.2f}% (more than {100 * REPRODUCE_WITHIN:g}%) "
                  "with the same Verilog: the tools are not reproducing it", file=sys.stderr)
            return 1
    missing = check_coverage(rows)
    if missing and args.only is None:
        print(f"error: blocks of rtl/ with no row and no reason: {', '.join(missing)}", file=sys.stderr)
        return 1
    synth_json = REPO / "sim_results" / "synth.json"
    ecp5 = {r["label"]: r for r in json.loads(synth_json.read_text())["rows"]} if synth_json.exists() else {}
    for spec in ASIC_SETS:
        row = next((r for r in rows if r["label"] == spec.label), None)
        if row is not None:
            row.pop("ecp5_fmax_MHz", None)
            row["ecp5_comparison"] = ecp5_comparison(spec, row, ecp5.get(spec.ecp5_label))
            if row["ecp5_comparison"].startswith("the same"):
                row["ecp5_fmax_MHz"] = ecp5[spec.ecp5_label]["fmax_MHz"]
    slice_row = next((r for r in rows if r["label"] == SLICE_LABEL), None)
    result = {
        "library": {"file": args.lib.name, **header, "excluded_cells": library["excluded_cells"]},
        "abc_delay_ps": ABC_DELAY_PS,
        "rows": rows,
        "not_silicon": NOT_SILICON,
        "method": _method(),
        "per_gpu": per_gpu(slice_row) if slice_row else [],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    arbiter = next((s for s in chosen if s.block == "memory_arbiter"), None)
    if arbiter is not None:
        # The small netlist tests/test_asic.py maps again and counts against the library.
        netlist = (block_folder(work, arbiter.label) / "memory_arbiter_ff.v").read_text()
        (args.out / ARBITER_NETLIST).write_text(netlist)
        used = set(re.findall(r"^\s*(sky130_fd_sc_hd__\w+)\s", netlist, re.MULTILINE))
        (args.out / ARBITER_CELLS).write_text(json.dumps(
            {"library": header["library"], "cells": cell_table(work, used)}, indent=1) + "\n")
    json_path.write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "asic.md").write_text(markdown(result))
    print(f"wrote {json_path} and asic.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
