"""The layout's promise: ``rtl/`` is the hardware and imports neither the tool flows nor the
benches; the flows (``rtl/flow/``) never import the benches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RTL = Path(__file__).resolve().parents[1] / "rtl"


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names.add("." * node.level + module)
    return names


@pytest.mark.parametrize("path", sorted(RTL.glob("*.py")), ids=lambda p: p.name)
def test_hardware_imports_no_flow_and_no_bench(path):
    bad = {n for n in _imports(path) if n.split(".")[0] == "tb" or n.startswith((".flow", "rtl.flow"))}
    assert not bad, f"rtl/{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", sorted((RTL / "flow").glob("*.py")), ids=lambda p: p.name)
def test_flows_import_no_bench(path):
    bad = {n for n in _imports(path) if n.split(".")[0] == "tb"}
    assert not bad, f"rtl/flow/{path.name} imports {sorted(bad)}"


def test_layout_test_sees_the_files():
    assert len(list(RTL.glob("*.py"))) >= 10 and len(list((RTL / "flow").glob("*.py"))) >= 5
