"""Verilog generation for every RTL block, shared by ``make verilog`` and the benches.

``python -m rtl.generate [--out DIR] [BLOCK ...]`` writes ``DIR/<block>.v`` for each
registered block with its default parameters. The benches call :func:`write_verilog`
with their own parameter sets, so the Verilog they simulate comes from the same code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import verilog
from amaranth.lib import wiring

from .arbiter import MemoryArbiter
from .dma_engine import DmaEngine
from .dma_path import DmaPath
from .dma_table import DmaCommandTable
from .fp_add import FpAdder
from .nmc import NearMemoryReducer
from .ring import T3Ring
from .t3_slice import T3Slice
from .track_trigger import TrackAndTrigger
from .tracker import TrackerTable

__all__ = ["Block", "BLOCKS", "build_component", "component_verilog", "to_verilog", "write_verilog", "main"]


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
        Block("memory_arbiter", MemoryArbiter, {"payload_shape": 16},
              "T3-MCA memory arbiter (16-bit payload for benches)"),
        Block("dma_command_table", DmaCommandTable, {}, "pre-programmed DMA descriptors + issue queue"),
        Block("dma_engine", DmaEngine, {}, "DMA engine, 256-bit beats, read latency 1"),
        Block("dma_path", DmaPath, {}, "command table -> DMA engine"),
        Block("track_and_trigger", TrackAndTrigger, {}, "tracker -> command table -> DMA engine"),
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


def to_verilog(block: str, **params) -> str:
    """Return the Verilog text of ``block`` as module ``block``."""
    return component_verilog(build_component(block, **params), block)


def write_verilog(block: str, path: os.PathLike | str, **params) -> Path:
    """Write ``block``'s Verilog to ``path``, touching the file only if its text changed.

    Icarus rebuilds on source mtime, so an unchanged file keeps its build cache valid.
    """
    path = Path(path)
    text = to_verilog(block, **params)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtl.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/verilog", help="output folder (default: %(default)s)")
    parser.add_argument("blocks", nargs="*", metavar="BLOCK",
                        help=f"blocks to write (default: all of {', '.join(BLOCKS)})")
    args = parser.parse_args(argv)
    for name in args.blocks or list(BLOCKS):
        if name not in BLOCKS:
            print(f"error: unknown block {name!r}; known: {', '.join(BLOCKS)}", file=sys.stderr)
            return 2
        path = write_verilog(name, Path(args.out) / f"{name}.v")
        print(f"wrote {path}  ({BLOCKS[name].doc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
