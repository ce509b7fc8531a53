"""The mutants of ``make mutate`` (tb/mutate.py) cannot rot silently: each still applies exactly once
to the current RTL, still parses, and names a pytest selection that collects tests. No simulation."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from tb.formal.variants import Patch
from tb.mutate import MUTANTS, REPO_ROOT, apply_patch, check_mutant, scratch_copy, source_files

IDS = [m.id for m in MUTANTS]


@pytest.mark.parametrize("mutant", MUTANTS, ids=IDS)
def test_mutant_applies_exactly_once_and_parses(mutant):
    mutated = check_mutant(mutant)        # raises unless the text occurs exactly once
    ast.parse(mutated, filename=mutant.file)


def test_mutant_list_is_well_formed():
    assert len(MUTANTS) >= 12
    assert len(set(IDS)) == len(IDS), "duplicate mutant ids"
    for m in MUTANTS:
        assert m.bug and "\n" not in m.bug and m.block and m.selection, m.id
        assert (REPO_ROOT / m.file).is_file(), m.id
    patches = [(m.file, m.patch.old, m.patch.new) for m in MUTANTS]
    assert len(set(patches)) == len(patches), "two mutants are the same patch"
    # The bug classes issue 13 asks for.
    for block in ("tracker", "dma_engine", "dma_table", "nmc", "arbiter", "fp_add", "stream_mux", "link", "t3_slice"):
        assert any(m.block == block for m in MUTANTS), f"no mutant of {block}"


def test_every_selection_collects_tests():
    """One subprocess collects every distinct selection (``pytest --collect-only``, about 2 s)."""
    env = dict(os.environ, AMARANTH_USE_YOSYS="builtin")
    run = subprocess.run([sys.executable, "-m", "tb.mutate", "--collect"], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    counts = json.loads(run.stdout.strip().splitlines()[-1])
    selections = {m.selection_text for m in MUTANTS}
    assert set(counts) == selections
    empty = {s: n for s, n in counts.items() if n < 1}
    assert not empty, f"selections that collect no test (or fail to collect): {empty}"


def test_apply_patch_refuses_a_patch_that_does_not_apply():
    text = "a = b\nc = b\n"
    with pytest.raises(ValueError, match="matched 0 times"):
        apply_patch(text, Patch("x.py", "d = e", "d = f"))
    with pytest.raises(ValueError, match="matched 2 times"):
        apply_patch(text, Patch("x.py", "= b", "= x"))
    with pytest.raises(ValueError, match="changes nothing"):
        apply_patch(text, Patch("x.py", "a = b", "a = b"))
    assert apply_patch(text, Patch("x.py", "a = b", "a = x")) == "a = x\nc = b\n"


def test_scratch_copy_holds_the_sources_only(tmp_path):
    files = source_files()
    assert "rtl/tracker.py" in files and "tb/mutate.py" in files
    assert not any(f.split("/", 1)[0] in {".venv", "sim_build", "build", ".git"} for f in files)
    dest = scratch_copy(tmp_path / "copy")
    assert (dest / "rtl" / "tracker.py").read_text() == (REPO_ROOT / "rtl" / "tracker.py").read_text()
    assert not (dest / ".venv").exists() and not (dest / "sim_build").exists()
