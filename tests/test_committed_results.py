"""Every committed result table is what its make target writes now (issue #26).

Each target's command is re-run into a temporary folder, its figures drawn under the figure
check, and every table it writes that is committed in ``sim_results/`` must be byte for byte
the same. The files carry no commit
stamp or wall time, so a re-run that changes nothing changes no byte. When this fails, run
the target named in the message and commit what it wrote.

The RTL's measurements (``rtl_timing.json``, ``crosscheck.json``, ``synth.json``,
``formal.json``, ``mutation.json``, ``bench.json``, ``asic.json``) are records of a measurement
at a commit, checked by their own tests; ``crosscheck.md``, ``peers_validation.md`` and
``asic.md`` are re-derived by ``test_crosscheck.py``, ``test_validation.py`` and ``test_asic.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from system_model.cli import main

COMMITTED = Path(__file__).resolve().parents[1] / "sim_results"

#: make target -> the command it runs (as in the Makefile, without plots) and the tables.
TARGETS = {
    "report": (["report", "--preset", "t3-paper"],
               ["report_t3-paper.csv", "report_t3-paper.json", "report_t3-paper.md"]),
    "sensitivity": (["sensitivity", "--preset", "t3-paper", "--jobs", "1"],
                    ["sensitivity_t3-paper.csv", "sensitivity_t3-paper.json", "sensitivity_t3-paper.md"]),
    "sweep": (["sweep", "--preset", "t3-paper", "--workers", "1"],
              ["sweep_t3-paper.csv", "sweep_t3-paper.axes.json"]),
    "peers": (["peers", "--sensitivity"], ["peers.csv", "peers.json", "peers.md", "peers_sensitivity.md",
                                          "peers_serving.md", "peers_serving.json"]),
}


def test_the_makefile_runs_these_commands():
    """The commands above are the Makefile's (so that the test checks what the target writes)."""
    makefile = (COMMITTED.parent / "Makefile").read_text()
    for target, (argv, _) in TARGETS.items():
        line = next(x for x in makefile.splitlines() if x.startswith(f"{target}:"))
        recipe = makefile.splitlines()[makefile.splitlines().index(line) + 1]
        for word in argv:
            if word not in ("--jobs", "1", "2", "--workers"):
                assert word in recipe.split(), f"make {target} no longer runs {word!r}: {recipe.strip()}"


@pytest.mark.parametrize("target", list(TARGETS))
def test_committed_tables_are_current(target, tmp_path, capsys, monkeypatch):
    """Each target's command, with its figures drawn under the figure check
    (``T3_CHECK_FIGURES=1``: nothing off the canvas, no bar off its axis; tests/test_figures.py
    covers the small cases), and its tables against the committed ones."""
    monkeypatch.setenv("T3_CHECK_FIGURES", "1")
    argv, tables = TARGETS[target]
    assert main([*argv, "--out", str(tmp_path)]) == 0, capsys.readouterr().err
    assert list(tmp_path.glob("*.png")), f"`make {target}` drew no figure"
    capsys.readouterr()
    for name in tables:
        fresh, committed = tmp_path / name, COMMITTED / name
        assert fresh.is_file(), f"`make {target}` no longer writes {name}"
        assert committed.is_file(), f"sim_results/{name} is not committed: run `make {target}`"
        assert fresh.read_bytes() == committed.read_bytes(), (
            f"sim_results/{name} is stale: run `make {target}` and commit what it writes")


def test_the_packaged_block_timing_is_the_measured_one():
    """The figures a model-only install reads (system_model/describe/rtl_timing.json) are the
    ones ``make characterize`` last measured into sim_results/rtl_timing.json."""
    import json

    from system_model.describe.block_timing import MODEL_FIGURES, RTL_TIMING_JSON
    from tb.characterize import packaged_figures

    record = json.loads((COMMITTED / "rtl_timing.json").read_text())
    assert json.loads(RTL_TIMING_JSON.read_text()) == packaged_figures(record, MODEL_FIGURES), (
        "system_model/describe/rtl_timing.json is stale: run `make characterize`")
