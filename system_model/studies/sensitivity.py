"""Sensitivity of the headline figures to the calibrated values (``python -m system_model sensitivity``).

Every value of :data:`~system_model.calibration.CALIBRATION` that names a field of the
configuration is moved down and up by a step (±25% by default; an integer is rounded to the
nearest integer, ties away from the base value, and kept at least 1), the headline study (the
points of :data:`~system_model.study.HEADLINE_SETS`) is re-run, and the T3-MCA figures of
each set (speedup geomean and max, DRAM cut geomean and max) are reported as values and as
deltas from the base. A move the configuration rejects (``ValueError``) is skipped with its
reason; a calibrated path that is not (yet) a configuration field is listed as such.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from ..describe.calibration import CALIBRATION, Calibrated, value_of, with_value
from ..describe.config import StudyConfig
from .study import HEADLINE_SETS, Point, PointResult, run_study, study_points, summarise

__all__ = ["FIGURES", "SCHEME", "Move", "Row", "Sensitivity", "headline_points", "headline_figures",
           "moved_value", "run_sensitivity", "format_sensitivity", "sensitivity_markdown", "sensitivity_json",
           "write_sensitivity"]

#: The scheme whose figures are reported (against sequential), and the figures of each set.
SCHEME = "t3_mca"
FIGURES = ("speedup_geomean", "speedup_max", "dram_cut_geomean", "dram_cut_max")
_FIGURE_LABELS = {"speedup_geomean": "speedup geomean", "speedup_max": "speedup max",
                  "dram_cut_geomean": "DRAM cut geomean", "dram_cut_max": "DRAM cut max"}

Figures = dict[str, dict[str, float]]  # set name -> figure -> value


@dataclass(frozen=True)
class Move:
    """One move of a calibrated value: ``step`` (-0.25, +0.25), the moved ``value``, and the
    headline figures with it, or ``skipped`` (why) when the move could not be evaluated."""

    step: float
    value: object
    figures: Figures | None = None
    skipped: str | None = None


@dataclass(frozen=True)
class Row:
    """A calibrated value that is a configuration field, its base value and its moves."""

    calibrated: Calibrated
    base_value: object
    moves: tuple[Move, ...]

    @property
    def path(self) -> str:
        return self.calibrated.path


@dataclass(frozen=True)
class Sensitivity:
    """The result of :func:`run_sensitivity`."""

    preset: str
    step: float
    points: int
    sets: dict[str, tuple[str, int]]  # set name -> (description, points)
    base: Figures
    rows: tuple[Row, ...]
    not_fields: tuple[tuple[str, str], ...]  # (path, why) of the calibrated paths that are not fields
    elapsed_s: float = 0.0
    variants: int = 0  # study runs: the base and every move evaluated

    def delta(self, move: Move, set_name: str, figure: str) -> float | None:
        if move.figures is None:
            return None
        return move.figures[set_name][figure] - self.base[set_name][figure]


def headline_points() -> list[Point]:
    """The points of every set of :data:`~system_model.study.HEADLINE_SETS` (24 with the paper's sets)."""
    selects = [select for _, select in HEADLINE_SETS.values()]
    return [p for p in study_points() if any(select(p) for select in selects)]


def headline_figures(results: list[PointResult]) -> Figures:
    """The T3-MCA figures of each headline set present in ``results``."""
    figures = {}
    for name in HEADLINE_SETS:
        summary = summarise(results, name)
        if summary is not None:
            figures[name] = {f: getattr(summary, f)[SCHEME] for f in FIGURES}
    return figures


def _check_step(step) -> float:
    if isinstance(step, bool) or not isinstance(step, int | float):
        raise TypeError(f"step must be a number, not {step!r}")
    if not 0 < step < 1:
        raise ValueError(f"step must be between 0 and 1 (exclusive), not {step}")
    return float(step)


def moved_value(base, step: float, *, integer: bool):
    """``base`` moved by the fraction ``step``: an integer is rounded to the nearest integer
    (ties away from ``base``) and kept at least 1; a float is kept to 12 significant digits
    (so that 0.8 x 1.25 is 1.0, not 1.0000000000000002)."""
    if isinstance(base, bool) or not isinstance(base, int | float):
        raise TypeError(f"a calibrated value must be a number, not {base!r}")
    target = base * (1 + step)
    if integer or isinstance(base, int):
        below, above = math.floor(target), math.ceil(target)
        if target - below != above - target:
            value = below if target - below < above - target else above
        else:
            value = below if step < 0 else above
        return max(1, int(value))
    return float(f"{target:.12g}")


def _evaluate(cfg: StudyConfig, points: list[Point]) -> Figures:
    return headline_figures(run_study(cfg, points, timeline=False))


def _evaluate_move(job: tuple[StudyConfig, list[Point]]) -> tuple[Figures | None, str | None]:
    """(figures, None), or (None, why) when the model rejects the configuration."""
    try:
        return _evaluate(*job), None
    except (ValueError, TypeError) as error:
        return None, str(error)


def run_sensitivity(cfg: StudyConfig, *, step: float = 0.25, calibration: tuple[Calibrated, ...] = CALIBRATION,
                    points: list[Point] | None = None, jobs: int = 1) -> Sensitivity:
    """Move every calibrated value of ``cfg`` by ``-step`` and ``+step`` and re-run the
    headline study (``points``, default :func:`headline_points`) for each move, in ``jobs``
    worker processes (1: in this one)."""
    step = _check_step(step)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, not {jobs!r}")
    started = time.perf_counter()
    points = headline_points() if points is None else list(points)
    base_results = run_study(cfg, points, timeline=False)
    base = headline_figures(base_results)
    if not base:
        raise ValueError("the points must include some of a headline set's: "
                         + ", ".join(f"{n} ({d})" for n, (d, _) in HEADLINE_SETS.items()))
    sets = {n: (s.description, s.points) for n in base if (s := summarise(base_results, n))}

    # First every move's value and configuration (cheap, here), then the studies.
    planned: list[tuple[Calibrated, object, list[Move | int]]] = []
    jobs_list: list[tuple[StudyConfig, list[Point]]] = []
    not_fields = []
    for entry in calibration:
        try:
            base_value = value_of(cfg, entry.path)
        except ValueError as error:
            not_fields.append((entry.path, f"not yet a config field ({error})"))
            continue
        moves: list[Move | int] = []  # a Move, or the index of its job
        for direction in (-step, step):
            try:
                value = moved_value(base_value, direction, integer=entry.integer)
            except TypeError as error:
                moves.append(Move(direction, None, skipped=str(error)))
                continue
            if value == base_value:
                moves.append(Move(direction, value, skipped=f"rounds to the base value {base_value}"))
                continue
            try:
                variant = with_value(cfg, entry.path, value)
            except (ValueError, TypeError) as error:
                moves.append(Move(direction, value, skipped=str(error)))
                continue
            moves.append(len(jobs_list))
            jobs_list.append((variant, points))
        planned.append((entry, base_value, moves))

    if jobs > 1 and len(jobs_list) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, len(jobs_list))) as pool:
            outcomes = list(pool.map(_evaluate_move, jobs_list))
    else:
        outcomes = [_evaluate_move(job) for job in jobs_list]

    rows = []
    for entry, base_value, moves in planned:
        done = []
        for direction, move in zip((-step, step), moves, strict=True):
            if isinstance(move, Move):
                done.append(move)
            else:
                figures, why = outcomes[move]
                done.append(Move(direction, value_of(jobs_list[move][0], entry.path), figures=figures, skipped=why))
        rows.append(Row(entry, base_value, tuple(done)))
    variants = 1 + sum(1 for figures, _ in outcomes if figures is not None)
    return Sensitivity(preset=cfg.system.name, step=step, points=len(points), sets=sets, base=base, rows=tuple(rows),
                       not_fields=tuple(not_fields), elapsed_s=time.perf_counter() - started, variants=variants)


# -- output -----------------------------------------------------------------------------------


def _fmt_value(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _fmt_figure(figure: str, value: float, delta: float | None = None) -> str:
    if figure.startswith("speedup"):
        text = f"{value:.3f}x"
        return text if delta is None else f"{text} ({delta:+.3f})"
    text = f"{value * 100:.1f}%"
    return text if delta is None else f"{text} ({delta * 100:+.1f})"


def _move_label(step: float) -> str:
    return f"{step * 100:+.0f}%"


def format_sensitivity(s: Sensitivity) -> str:
    """The text table: per headline set, a line per calibrated path and move with each figure's
    value and its delta from the base (speedup in x, DRAM cut in percentage points)."""
    path_w = max([len("calibrated value"), *(len(r.path) for r in s.rows)])
    cell = 17
    lines = [f"Sensitivity of the headline figures (T3-MCA against sequential) to the calibrated values, "
             f"preset {s.preset}, moves of -{s.step:.0%} and +{s.step:.0%}",
             f"{s.points} points a variant, {s.variants} variants; "
             "cells: value (delta from base; DRAM cut in points)"]
    for name, (description, points) in s.sets.items():
        head = f"{'calibrated value':<{path_w}} {'move':>5} {'value':>10} |" + "".join(
            f" {_FIGURE_LABELS[f]:<{cell}}" for f in FIGURES)
        lines += ["", f"set {name}: {description} ({points} points)", head, "-" * len(head),
                  f"{'base':<{path_w}} {'':>5} {'':>10} |" + "".join(
                      f" {_fmt_figure(f, s.base[name][f]):<{cell}}" for f in FIGURES)]
        for row in s.rows:
            for move in row.moves:
                left = f"{row.path:<{path_w}} {_move_label(move.step):>5} {_fmt_value(move.value):>10} |"
                if move.figures is None:
                    lines.append(f"{left} skipped: {move.skipped}")
                else:
                    lines.append(left + "".join(
                        f" {_fmt_figure(f, move.figures[name][f], s.delta(move, name, f)):<{cell}}"
                        for f in FIGURES))
    if s.not_fields:
        lines += ["", "not yet a config field (skipped): " + ", ".join(p for p, _ in s.not_fields)]
    return "\n".join(lines)


def sensitivity_markdown(s: Sensitivity) -> str:
    lines = [f"# Sensitivity of the headline figures, preset `{s.preset}`", "",
             f"Each calibrated value moved by -{s.step:.0%} and +{s.step:.0%} (integers rounded, at least 1); the "
             f"headline study ({s.points} points) re-run per move; T3-MCA against sequential. Cells: value (delta "
             "from the base; speedup in x, DRAM cut in percentage points).", "",
             "| calibrated value | unit | base | moves | source |", "|---|---|---|---|---|"]
    for row in s.rows:
        lines.append(f"| `{row.path}` | {row.calibrated.unit} | {_fmt_value(row.base_value)} | "
                     + ", ".join(_fmt_value(m.value) for m in row.moves) + f" | {row.calibrated.source} |")
    for name, (description, points) in s.sets.items():
        lines += ["", f"## Set `{name}`: {description} ({points} points)", "",
                  "| calibrated value | move | value | " + " | ".join(_FIGURE_LABELS[f] for f in FIGURES) + " |",
                  "|" + "---|" * (3 + len(FIGURES)),
                  "| **base** | | | " + " | ".join(_fmt_figure(f, s.base[name][f]) for f in FIGURES) + " |"]
        for row in s.rows:
            for move in row.moves:
                left = f"| `{row.path}` | {_move_label(move.step)} | {_fmt_value(move.value)} | "
                if move.figures is None:
                    lines.append(left + f"skipped: {move.skipped} |" + " |" * (len(FIGURES) - 1))
                else:
                    lines.append(left + " | ".join(
                        _fmt_figure(f, move.figures[name][f], s.delta(move, name, f)) for f in FIGURES) + " |")
    if s.not_fields:
        lines += ["", "## Not yet configuration fields (skipped)", ""]
        lines += [f"* `{path}`: {why}" for path, why in s.not_fields]
    return "\n".join(lines) + "\n"


def sensitivity_json(s: Sensitivity) -> dict:
    # No commit stamp and no wall time: the file is a pure function of the inputs, so `make
    # sensitivity` rewrites it byte for byte and `git status` shows a change only when a result
    # changed (issue #26).
    return {
        "preset": s.preset, "scheme": SCHEME, "step": s.step, "points": s.points, "variants": s.variants,
        "sets": {n: {"description": d, "points": p} for n, (d, p) in s.sets.items()},
        "base": s.base,
        "rows": [{"path": r.path, "unit": r.calibrated.unit, "source": r.calibrated.source,
                  "integer": r.calibrated.integer, "base_value": r.base_value,
                  "moves": [{"step": m.step, "value": m.value, "skipped": m.skipped, "figures": m.figures,
                             "deltas": None if m.figures is None else {
                                 n: {f: s.delta(m, n, f) for f in FIGURES} for n in m.figures}}
                            for m in r.moves]}
                 for r in s.rows],
        "not_config_fields": [{"path": p, "why": w} for p, w in s.not_fields],
    }


def write_sensitivity(s: Sensitivity, out: Path) -> list[Path]:
    """Write ``sensitivity_<preset>.md`` and ``.json`` to ``out``; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    md = out / f"sensitivity_{s.preset}.md"
    md.write_text(sensitivity_markdown(s))
    js = out / f"sensitivity_{s.preset}.json"
    js.write_text(json.dumps(sensitivity_json(s), indent=1))
    return [md, js]
