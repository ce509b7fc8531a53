"""The performance model's layout: grouped by concern, data flowing top to bottom.

``describe`` (what the hardware and the workloads are) -> ``engine`` (the timeline, the
DRAM, the links) -> ``kernels`` (GEMMs and the libraries' collectives) -> ``schemes`` (every
overlap scheme on the timeline) -> ``studies`` (report, peers, crosscheck, sweep) -> the CLI.
No module imports from a later layer, lazily or not, and no two modules import each other,
however indirectly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "system_model"
#: Each layer may import from itself and the layers before it.
LAYERS = ("describe", "engine", "kernels", "schemes", "studies", "cli")
#: Files per folder (issue #25: not thirty in one).
MAX_FILES = 16
#: Lines per file (DEVELOPERS.md: no 1,000-line files).
MAX_LINES = 1000


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every ``system_model`` module ``path`` imports, at the top or inside a function."""
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "system_model"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "system_model":
                continue
            out.add(name)
            # ``from .pkg import module`` imports a module, not just a name.
            for alias in node.names:
                candidate = PACKAGE.parent / Path(*f"{name}.{alias.name}".split("."))
                if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
                    out.add(f"{name}.{alias.name}")
    return out


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None                   # the package itself (its __init__)
    top = parts[1]
    if top in LAYERS:
        return LAYERS.index(top)
    if top == "__main__":
        return len(LAYERS)
    return None


FILES = sorted(PACKAGE.rglob("*.py"))
GRAPH = {_module(p): _imports(p) for p in FILES}


def test_layout_test_sees_the_package():
    assert len(FILES) >= 30
    assert {_module(p).split(".")[1] for p in FILES if "." in _module(p)} >= set(LAYERS[:-1])


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_imports_upward(path):
    me = _layer(_module(path))
    if me is None:
        return
    upward = sorted(m for m in GRAPH[_module(path)] if (_layer(m) or 0) > me)
    assert not upward, f"{_module(path)} (layer {LAYERS[me] if me < len(LAYERS) else 'main'}) imports {upward}"


def test_no_import_cycles():
    known = set(GRAPH)

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges = {m: {r for n in deps if (r := resolve(n)) and r != m} for m, deps in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)


def test_folders_and_files_stay_small():
    folders = {p.parent for p in FILES}
    for folder in folders:
        count = len(list(folder.glob("*.py")))
        assert count <= MAX_FILES, f"{folder.relative_to(PACKAGE.parent)} has {count} files"
    for p in FILES:
        lines = len(p.read_text().splitlines())
        assert lines < MAX_LINES, f"{p.relative_to(PACKAGE.parent)}: {lines} lines"
