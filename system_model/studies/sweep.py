"""Design-space sweeps: any hardware or kernel field as an axis, on one process or on Dask.

``t3-model sweep --axis link_bw_GBps_per_link=100:900:100 --axis hbm_GBps=1000,2000,4000 --axis
tp=4,8,16`` runs the sublayer study (every scheme, every chosen model, TP, phase and
sublayer) at every point of the product of the hardware axes. A **configuration** is one
hardware point with one sublayer point; a **task** is one hardware point with all its
sublayer points, and the unit that runs on a worker.

* An axis is ``NAME=a,b,c`` (a list) or ``NAME=start:stop:step`` (inclusive of ``stop``).
  ``NAME`` is a field of the GPU (:class:`~system_model.describe.hardware.GpuConfig`), of
  the fabric (:class:`~system_model.describe.fabric.FabricConfig`: ``link_bw_GBps_per_link`` is one
  link's figure, as in a hardware file), of the transports
  (:class:`~system_model.describe.transport.TransportConfig`) or of the GEMM kernels
  (:class:`~system_model.describe.kernels.GemmKernelConfig`: every kernel takes the value),
  a field of the model description (``hidden``, ``ffn``, ``heads``, ``kv_heads``,
  ``layers``: every model of the sweep takes the value), or ``tp`` / ``model`` (which
  choose the sublayer points).
* ``workers=1`` runs in this process; more run on a ``dask.distributed`` LocalCluster
  (one single-threaded worker process each), and ``scheduler="tcp://host:8786"`` runs on an
  existing cluster. The results are the same, bit for bit: each task is deterministic and
  the file is written in task order at the end.
* Results are appended to ``sweep_<name>.csv`` as each task finishes (with its task
  number), so an interrupted sweep resumes (``resume=True``) without redoing finished
  tasks; a sidecar ``sweep_<name>.axes.json`` records the axes, and a resume with other
  axes is refused. ``fmt`` ``json`` or ``parquet`` also writes ``sweep_<name>.rows.json``
  or ``.parquet`` (pyarrow) at the end, as ``report`` and ``peers`` do.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..describe.fabric import FabricConfig
from ..describe.files import RENAMED
from ..describe.hardware import GpuConfig
from ..describe.kernels import GemmKernelConfig
from ..describe.models import MODELS, PHASES, TransformerModel
from ..describe.transport import TransportConfig
from .study import OTHER_TP, PAPER_TP, SCHEMES, Point

__all__ = ["Axis", "parse_axis", "HARDWARE_AXES", "SweepSpec", "run_sweep", "FORMATS", "write_table"]

HARDWARE_AXES = {**{f: "gpu" for f in GpuConfig.__dataclass_fields__},
                 **{f: "fabric" for f in FabricConfig.__dataclass_fields__},
                 **{f: "transport" for f in TransportConfig.__dataclass_fields__},
                 **{f: "kernel" for f in GemmKernelConfig.__dataclass_fields__}}
_CLASSES = {"gpu": GpuConfig, "fabric": FabricConfig, "transport": TransportConfig, "kernel": GemmKernelConfig}
POINT_AXES = ("tp", "model")
#: Fields of the model description that can be swept (each model of the sweep takes the value).
MODEL_AXES = {"hidden": "hidden", "ffn": "ffn_dim", "heads": "heads", "kv_heads": "kv_heads", "layers": "layers"}
FORMATS = ("csv", "json", "parquet")
#: Values one axis may take (a range is built in memory).
MAX_AXIS_VALUES = 100_000


def _field_kind(name: str) -> str:
    return str(_CLASSES[HARDWARE_AXES[name]].__dataclass_fields__[name].type)


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple


def _number(text: str, kind: str, name: str):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--axis {name}: expected a number, not {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"--axis {name}: expected a finite number, not {text!r}")
    if kind == "int":
        if value != int(value):
            raise ValueError(f"--axis {name}: expected an integer, not {text!r}")
        return int(value)
    return value


def parse_axis(text: str) -> Axis:
    """``NAME=a,b,c`` or ``NAME=start:stop:step``; the name must be a known field."""
    if "=" not in text:
        raise ValueError(f"--axis must be NAME=VALUES, not {text!r}")
    name, spec = (part.strip() for part in text.split("=", 1))
    if name in RENAMED:
        raise ValueError(f"--axis {name}: now {RENAMED[name][0]} ({RENAMED[name][1]})")
    if name not in HARDWARE_AXES and name not in POINT_AXES and name not in MODEL_AXES:
        numeric = [f for f in HARDWARE_AXES if _field_kind(f) not in ("bool", "str")]
        raise ValueError(f"--axis {name}: not a sweepable field (one of tp, model, {', '.join(MODEL_AXES)}, "
                         f"{', '.join(numeric)})")
    if name == "model":
        values = tuple(v.strip() for v in spec.split(",") if v.strip())
        for v in values:
            if v not in MODELS:
                raise ValueError(f"--axis model: model must be one of {', '.join(MODELS)}, not {v!r}")
    else:
        kind = "int" if name == "tp" or name in MODEL_AXES else _field_kind(name)
        if kind == "bool":
            raise ValueError(f"--axis {name}: a true/false field is not swept")
        if kind == "str":
            raise ValueError(f"--axis {name}: a text field is not swept (use a hardware file per value)")
        if ":" in spec:
            parts = spec.split(":")
            if len(parts) != 3:
                raise ValueError(f"--axis {name}: a range is start:stop:step, not {spec!r}")
            start, stop, step = (_number(p, kind, name) for p in parts)
            if step <= 0 or stop < start:
                raise ValueError(f"--axis {name}: a range needs step > 0 and stop >= start, not {spec!r}")
            count = math.floor((stop - start) / step + 1e-9) + 1
            if count > MAX_AXIS_VALUES:
                raise ValueError(f"--axis {name}: {count} values; at most {MAX_AXIS_VALUES}")
            values = tuple(start + i * step if kind == "int" else round(start + i * step, 12) for i in range(count))
        else:
            values = tuple(_number(v, kind, name) for v in spec.split(",") if v.strip())
    if not values:
        raise ValueError(f"--axis {name}: no values in {spec!r}")
    if name == "tp":
        for v in values:
            if not 2 <= v <= 1024:
                raise ValueError(f"--axis tp: tp must be between 2 and 1024, not {v}")
    if len(set(values)) != len(values):
        raise ValueError(f"--axis {name}: repeated values in {spec!r}")
    return Axis(name, values)


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep: the hardware description, its axes, and the sublayer points."""

    hardware: object                    # descriptions.HardwareDescription
    axes: tuple[Axis, ...]              # hardware axes only, in the order given
    models: tuple[TransformerModel, ...]
    tps: tuple[int, ...] | None
    phases: tuple[str, ...]
    workload: object | None = None
    rtl_timing: str | None = None
    dram_model: str = "fluid"

    def points(self) -> list[Point]:
        points = []
        for m in self.models:
            for tp in (self.tps or PAPER_TP.get(m.name, OTHER_TP)):
                for phase in self.phases:
                    for sub in PHASES[phase]:
                        if _divides(m, sub, tp):
                            points.append(Point(m.name, tp, phase, sub))
        return points

    def tasks(self) -> list[dict]:
        names = [a.name for a in self.axes]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(a.values for a in self.axes))]

    def signature(self) -> dict:
        """Everything the results depend on: a resume must find the same (values, not names)."""
        h = self.hardware
        return {"hardware": {"name": h.name, "gpu": dataclasses.asdict(h.gpu), "fabric": dataclasses.asdict(h.fabric),
                             "transport": dataclasses.asdict(h.transport),
                             "kernels": [dataclasses.asdict(k) for k in h.kernels]},
                "axes": {a.name: list(a.values) for a in self.axes},
                "models": [dataclasses.asdict(m) for m in self.models], "tps": list(self.tps) if self.tps else None,
                "phases": list(self.phases),
                "workload": dataclasses.asdict(self.workload) if self.workload is not None else None,
                "rtl_timing": self.rtl_timing, "dram_model": self.dram_model}


def _divides(m: TransformerModel, sublayer: str, tp: int) -> bool:
    from ..describe.models import sublayer_gemm
    try:
        sublayer_gemm(m, sublayer, 1, tp)
    except ValueError:
        return False
    return True


def _columns(spec: SweepSpec) -> list[str]:
    return ["task", *(a.name for a in spec.axes), "model", "tp", "phase", "sublayer",
            *[f"speedup_{s}" for s in SCHEMES[1:]], "dram_cut_t3_mca"]


def _value(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)


_LOADED = False


def evaluate_task(spec: SweepSpec, index: int, changes: dict) -> tuple[int, list[list[str]]]:
    """One hardware point: every sublayer point under every scheme, as CSV rows."""
    global _LOADED
    from ..schemes import cache as result_cache
    from .study import run_study

    if not _LOADED:          # a worker process reads the stored results once
        result_cache.load()
        _LOADED = True
    for m in spec.models:    # models from files join a worker's zoo too
        MODELS.setdefault(m.name, m)
    cfg = task_config(spec, changes)
    variants = task_models(spec, changes)
    saved = {m.name: MODELS[m.name] for m in variants}
    MODELS.update({m.name: m for m in variants})          # the study reads the zoo by name
    try:
        results = run_study(cfg, spec.points(), timeline=False)
    finally:
        MODELS.update(saved)
    rows = []
    for r in results:
        p = r.point
        rows.append([str(index), *(_value(changes[a.name]) for a in spec.axes), p.model, str(p.tp), p.phase,
                     p.sublayer, *[f"{r.speedup(s):.4f}" for s in SCHEMES[1:]], f"{r.dram_cut('t3_mca'):.4f}"])
    return index, rows


def task_models(spec: SweepSpec, changes: dict) -> tuple[TransformerModel, ...]:
    """The sweep's models with this task's model-axis values (ValueError where one does not fit)."""
    fields = {MODEL_AXES[k]: v for k, v in changes.items() if k in MODEL_AXES}
    if not fields:
        return spec.models
    where = "--axis " + ", ".join(f"{k}={v}" for k, v in changes.items() if k in MODEL_AXES)
    variants = []
    for m in spec.models:
        try:
            variant = dataclasses.replace(m, **fields)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{where}: {m.name}: {error}") from None
        if variant.hidden % variant.heads:
            raise ValueError(f"{where}: {m.name}: heads {variant.heads} must divide hidden {variant.hidden}")
        variants.append(variant)
    return tuple(variants)


def task_config(spec: SweepSpec, changes: dict):
    """The study configuration of one hardware point (raises ValueError for a bad value)."""
    changes = {k: v for k, v in changes.items() if k in HARDWARE_AXES}
    cfg = spec.hardware.study_config(spec.workload, rtl_timing=spec.rtl_timing, dram_model=spec.dram_model)
    hw = {k: v for k, v in changes.items() if HARDWARE_AXES[k] in ("gpu", "fabric", "transport")}
    kernel = {k: v for k, v in changes.items() if HARDWARE_AXES[k] == "kernel"}
    kernels = tuple(dataclasses.replace(k, **kernel) for k in cfg.kernels) if kernel else cfg.kernels
    return dataclasses.replace(cfg, system=cfg.system.with_changes(**hw) if hw else cfg.system, kernels=kernels)


def _save_worker_cache() -> int:
    from ..schemes import cache as result_cache
    return result_cache.save()


def progress_line(done: int, total: int, started: float, width: int = 30) -> str:
    elapsed = max(time.perf_counter() - started, 1e-9)
    rate = done / elapsed
    eta = (total - done) / rate if rate > 0 else float("inf")
    filled = width * done // max(total, 1)
    eta_text = "--:--" if math.isinf(eta) else f"{int(eta // 60):d}:{int(eta % 60):02d}"
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} configurations, {rate:,.0f}/s, ETA {eta_text}"


def run_sweep(spec: SweepSpec, out: Path, *, workers: int = 1, scheduler: str | None = None,
              resume: bool = False, fmt: str = "csv", progress: Callable[[str], None] | None = None,
              name: str | None = None) -> tuple[Path, int, float]:
    """Run every task not already in the results; return (path, configurations run, seconds).
    The file is ``sweep_<name>.csv`` (default: the hardware's name)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    points = spec.points()
    if not points:
        raise ValueError("no sublayer of the chosen models divides evenly at the chosen TP degrees")
    for tp in spec.tps or ():
        if not any(p.tp == tp for p in points):
            raise ValueError(f"tp {tp} divides no sublayer of {', '.join(m.name for m in spec.models)}")
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"sweep_{name or spec.hardware.name}.csv"
    sidecar = path.with_suffix(".axes.json")
    columns = _columns(spec)
    tasks = spec.tasks()
    for t in tasks:              # every point's values checked here, before any worker runs
        try:
            task_config(spec, t)
        except ValueError as error:
            hw = ", ".join(f"{k}={v}" for k, v in t.items() if k in HARDWARE_AXES)
            raise ValueError(f"--axis {hw}: {error}") from None
        for variant in task_models(spec, t):
            for p in points:
                if p.model == variant.name and not _divides(variant, p.sublayer, p.tp):
                    raise ValueError(f"--axis {', '.join(f'{k}={v}' for k, v in t.items() if k in MODEL_AXES)}: "
                                     f"{p.sublayer} of {variant.name} does not divide by tp {p.tp}")
    done: dict[int, list[list[str]]] = {}
    if resume and path.exists():
        if not sidecar.exists():
            raise ValueError(f"{path}: its record of the sweep ({sidecar.name}) is missing; run without --resume")
        try:
            recorded = json.loads(sidecar.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ValueError(f"{sidecar}: not a sweep record; run without --resume") from None
        if recorded != json.loads(json.dumps(spec.signature())):
            raise ValueError(f"{path}: was written by another sweep (hardware, models, axes, TP, phases or timing "
                             "differ); run without --resume to start again")
        with path.open(newline="", errors="replace") as f:
            reader = csv.reader(line.replace("\0", "") for line in f)
            if next(reader, None) != columns:
                raise ValueError(f"{path}: its columns differ from this sweep's; run without --resume")
            for row in reader:
                # A crash may leave a blank line, or cut the last row short: such a row (and
                # its task) is not finished.
                if len(row) == len(columns) and row[0].isdigit() and int(row[0]) < len(tasks):
                    done.setdefault(int(row[0]), []).append(row)
        # A task is finished only with all its rows.
        done = {i: rows for i, rows in done.items() if len(rows) == len(points)}
    else:
        sidecar.write_text(json.dumps(spec.signature(), indent=1) + "\n")
    pending = [(i, t) for i, t in enumerate(tasks) if i not in done]
    total = len(tasks) * len(points)
    started = time.perf_counter()
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for i in sorted(done):
            writer.writerows(done[i])
        f.flush()
        finished = len(done) * len(points)

        def record(index, rows):
            nonlocal finished
            done[index] = rows
            writer.writerows(rows)
            f.flush()
            finished += len(rows)
            if progress:
                progress(progress_line(finished, total, started))
        if workers == 1 and scheduler is None:
            for i, t in pending:
                record(*evaluate_task(spec, i, t))
        else:
            _run_on_dask(spec, pending, workers, scheduler, record)
    # Written again in task order: the same bytes whatever finished first.
    rows = [row for i in sorted(done) for row in done[i]]
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(rows)
    if fmt != "csv":
        path = write_table(_records(columns, rows), path.with_suffix(""), fmt)
    return path, len(pending) * len(points), time.perf_counter() - started


def _run_on_dask(spec, pending, workers, scheduler, record) -> None:
    import logging

    from dask.distributed import Client, LocalCluster, as_completed

    logging.getLogger("distributed").setLevel(logging.ERROR)
    if scheduler is not None:
        client, cluster = Client(scheduler, timeout="20s"), None
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
    try:
        futures = [client.submit(evaluate_task, spec, i, t, pure=False) for i, t in pending]
        for future in as_completed(futures):
            record(*future.result())
        client.run(_save_worker_cache)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _records(columns: list[str], rows: list[list[str]]) -> list[dict]:
    """The CSV rows as typed records (numbers as numbers) for :func:`write_table`."""
    def typed(name, text):
        if name in ("model", "phase", "sublayer"):
            return text
        number = float(text)
        return int(number) if name in ("task", "tp") or (number.is_integer() and "." not in text) else number
    return [{c: typed(c, v) for c, v in zip(columns, row, strict=True)} for row in rows]


def write_table(records: list[dict], stem: Path, fmt: str) -> Path | None:
    """``records`` (one dict per row) as ``stem``.json or ``stem``.parquet for ``--format``;
    None for csv (the commands write their CSV themselves)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt == "csv":
        return None
    if fmt == "json":
        path = stem.with_name(f"{stem.name}.rows.json")       # appended: a name may hold dots
        path.write_text(json.dumps(records, indent=0) + "\n")
        return path
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = stem.with_name(f"{stem.name}.parquet")
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def stderr_progress(line: str) -> None:
    print("\r" + line, end="", file=sys.stderr, flush=True)
