"""``python -m system_model sensitivity``: a row per calibrated configuration field, moves of
±step (integers rounded, at least 1), rejected moves skipped with their reason, files, and
the model's behaviour under a calibrated value (through the public API)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from system_model.cli import main
from system_model.describe.calibration import CALIBRATION, Calibrated, value_of, with_value
from system_model.describe.presets import DESCRIPTIONS
from system_model.studies.sensitivity import (
    FIGURES,
    format_sensitivity,
    headline_points,
    moved_value,
    run_sensitivity,
    sensitivity_markdown,
)
from system_model.studies.study import HEADLINE_SETS, run_study

# Every variant re-runs the headline study on the timeline engine, so a full run (24 points x
# ~25 variants) takes a while; the tests run a few points of each headline set (the CLI test
# patches the points in; the subprocess tests fail on their options before any study runs).


def build_config():
    """The t3-paper preset's study configuration."""
    return DESCRIPTIONS["t3-paper"].study_config()


def few_points():
    """The FC-2 and OP training sublayers of the first model and TP of each headline set."""
    chosen = []
    for _, select in HEADLINE_SETS.values():
        first = next(p for p in headline_points() if select(p))
        chosen += [p for p in headline_points()
                   if select(p) and (p.model, p.tp) == (first.model, first.tp) and p.sublayer in ("FC-2", "OP")]
    return chosen


def _is_field(cfg, path: str) -> bool:
    try:
        value_of(cfg, path)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def cfg():
    return build_config()


@pytest.fixture(scope="module")
def sensitivity(cfg):
    return run_sensitivity(cfg, points=few_points())


def test_a_row_per_calibrated_config_field(cfg, sensitivity):
    fields = [c.path for c in CALIBRATION if _is_field(cfg, c.path)]
    assert fields, "no calibrated path is a configuration field"
    assert [r.path for r in sensitivity.rows] == fields
    assert [p for p, _ in sensitivity.not_fields] == [c.path for c in CALIBRATION if not _is_field(cfg, c.path)]
    assert all("not yet a config field" in why for _, why in sensitivity.not_fields)
    table, md = format_sensitivity(sensitivity), sensitivity_markdown(sensitivity)
    for row in sensitivity.rows:
        assert [m.step for m in row.moves] == [-0.25, 0.25]
        assert row.base_value == value_of(cfg, row.path)
        # one line per move in each set's table
        assert table.count(f"\n{row.path} ") == 2 * len(sensitivity.sets)
        assert f"`{row.path}`" in md
    for path, _ in sensitivity.not_fields:
        assert path in table and path in md


def test_headline_sets_and_deltas(sensitivity):
    assert set(sensitivity.sets) == set(HEADLINE_SETS)
    assert sensitivity.points == len(few_points()) == sum(p for _, p in sensitivity.sets.values())
    assert len(headline_points()) == 24  # the paper's sets: 16 + 8 training sublayers
    evaluated = [m for r in sensitivity.rows for m in r.moves if m.figures is not None]
    assert evaluated
    for move in evaluated:
        for name in HEADLINE_SETS:
            for figure in FIGURES:
                assert sensitivity.delta(move, name, figure) == pytest.approx(
                    move.figures[name][figure] - sensitivity.base[name][figure])


@pytest.mark.parametrize(("base", "step", "integer", "moved"), [
    (64, -0.25, True, 48), (64, 0.25, True, 80),
    (2, -0.25, True, 1), (2, 0.25, True, 3),   # ties round away from the base
    (1, -0.25, True, 1), (3, -0.5, True, 1),   # at least 1
    (0.8, 0.25, False, 1.0), (0.85, -0.25, False, 0.6375),
])
def test_moved_value(base, step, integer, moved):
    assert moved_value(base, step, integer=integer) == moved
    assert type(moved_value(base, step, integer=integer)) is type(moved)


def test_rejected_and_unmovable_moves_are_skipped_with_the_reason(cfg):
    cfg = with_value(with_value(cfg, "system.gpu.hbm_efficiency", 0.9), "cu_sharing_cus", 1)
    table = (Calibrated("system.gpu.hbm_efficiency", "", "test"),
             Calibrated("cu_sharing_cus", "CUs", "test", integer=True),
             Calibrated("kernel.no_such_field", "", "test"))
    result = run_sensitivity(cfg, calibration=table, points=few_points())
    hbm, cus = result.rows
    assert hbm.moves[0].figures is not None and hbm.moves[0].value == pytest.approx(0.675)
    assert hbm.moves[1].figures is None and "hbm_efficiency must be between" in hbm.moves[1].skipped
    # 1 - 25% is kept at 1 and 1 + 25% rounds to 1: neither moves
    assert [m.value for m in cus.moves] == [1, 1]
    assert all(m.figures is None and "rounds to the base value 1" in m.skipped for m in cus.moves)
    assert [p for p, _ in result.not_fields] == ["kernel.no_such_field"]
    assert "skipped: hbm_efficiency must be between" in format_sensitivity(result)


@pytest.mark.parametrize("step", [0, 1, 1.5, -0.25])
def test_bad_step(cfg, step):
    with pytest.raises(ValueError, match=r"^step must be between 0 and 1 \(exclusive\), not "):
        run_sensitivity(cfg, step=step)


def test_bad_jobs(cfg):
    with pytest.raises(ValueError, match=r"^jobs must be a positive integer, not 0$"):
        run_sensitivity(cfg, jobs=0)


def test_worker_processes_give_the_same_figures(cfg, sensitivity):
    table = tuple(c for c in CALIBRATION if c.path in ("kernels.compute_efficiency", "system.gpu.hbm_efficiency"))
    assert len(table) == 2
    parallel = run_sensitivity(cfg, calibration=table, points=few_points(), jobs=2)
    serial = {r.path: r for r in sensitivity.rows}
    for row in parallel.rows:
        assert row.moves == serial[row.path].moves


def test_lower_compute_efficiency_never_makes_sequential_faster(cfg):
    points = headline_points()[::3]
    base = run_study(cfg, points, timeline=False)
    previous = [r.schemes["sequential"].time_s for r in base]
    for factor in (0.9, 0.75, 0.5, 0.25):
        # Every kernel of the library slower by the factor (the GEMM runs the fastest of them).
        slower = replace(cfg, kernels=tuple(replace(k, compute_efficiency=k.compute_efficiency * factor)
                                            for k in cfg.kernels))
        times = [r.schemes["sequential"].time_s for r in run_study(slower, points, timeline=False)]
        for p, before, after in zip(points, previous, times, strict=True):
            assert after >= before * (1 - 1e-12), (p, factor, before, after)
        previous = times


def test_cli_writes_files_and_prints_the_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("system_model.studies.sensitivity.headline_points", few_points)
    assert main(["sensitivity", "--step", "0.1", "--jobs", "1", "--out", str(tmp_path)]) == 0
    for ext in ("png", "svg"):      # the tornado chart
        assert (tmp_path / f"sensitivity_t3-paper_tornado.{ext}").stat().st_size > 5000
    table = (tmp_path / "sensitivity_t3-paper.csv").read_text().splitlines()
    assert table[0].startswith("path,base_value,step,value,skipped,headline_speedup_geomean")
    moves = json.loads((tmp_path / "sensitivity_t3-paper.json").read_text())["rows"]
    assert len(table) - 1 == sum(len(r["moves"]) for r in moves)
    out = capsys.readouterr().out
    assert "speedup geomean" in out and "set headline" in out and "-10%" in out and "+10%" in out
    md, js = tmp_path / "sensitivity_t3-paper.md", tmp_path / "sensitivity_t3-paper.json"
    assert md.stat().st_size > 0 and js.stat().st_size > 0
    data = json.loads(js.read_text())
    assert data["step"] == 0.1 and set(data["base"]) == set(HEADLINE_SETS)
    cfg = build_config()
    assert [r["path"] for r in data["rows"]] == [c.path for c in CALIBRATION if _is_field(cfg, c.path)]
    for row in data["rows"]:
        for move in row["moves"]:
            assert (move["figures"] is None) == (move["skipped"] is not None)


@pytest.mark.parametrize("step", ["0", "1.5"])
def test_cli_bad_step_is_one_line_and_exit_2(step, tmp_path):
    result = subprocess.run([sys.executable, "-m", "system_model", "sensitivity", "--step", step,
                             "--out", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ") and "--step" in result.stderr
    assert not list(tmp_path.iterdir())


def test_a_kernels_path_reads_the_first_kernel_and_moves_every_kernel():
    cfg = DESCRIPTIONS["h100-sxm"].study_config()
    assert len(cfg.kernels) > 1          # the library's kernels, large tile first
    assert value_of(cfg, "kernels.k_tile") == cfg.kernels[0].k_tile == cfg.kernel.k_tile
    moved = with_value(cfg, "kernels.k_tile", 16)
    assert [k.k_tile for k in moved.kernels] == [16] * len(cfg.kernels)
    assert [k.tile_n for k in moved.kernels] == [k.tile_n for k in cfg.kernels]
