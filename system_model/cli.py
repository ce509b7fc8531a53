"""Command line: ``python -m system_model [report|sweep|sensitivity|crosscheck|peers] ...``.

Errors in options or configuration print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from .describe.models import MODELS, PHASES
from .describe.presets import PRESETS
from .schemes import cache as result_cache
from .studies.report import cu_sharing_study, format_cu_sharing, format_table, write_outputs
from .studies.study import HEADLINE_SETS, PAPER_TP, run_study, study_points, summarise

__all__ = ["main"]

#: The preset a command runs without --preset or --hardware-file.
DEFAULT_PRESET = "t3-paper"
#: Where a command writes without --out: a folder named after the tool in the current one
#: (the repository's committed sim_results/ is written only by its make targets, which say so).
DEFAULT_OUT = "t3-model-results"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        # No abbreviated options: an old flag (--link-bw-GBps) must not pass as a prefix of
        # its renamed one (--link-bw-GBps-per-link).
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):  # one line, exit 2, no usage dump
        raise SystemExit(_fail(f"{self.prog}: {message}"))


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _csv_list(kind):
    def parse(text: str):
        try:
            values = [kind(x) for x in text.split(",") if x]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {kind.__name__}, not {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"expected at least one {kind.__name__}, not {text!r}")
        return values
    return parse


def _step(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"step must be between 0 and 1 (exclusive), not {text}")
    return value


def _folder(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, not an empty string")
    return Path(text)


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"jobs must be at least 1, not {value}")
    return value


def _add_config(p: argparse.ArgumentParser, *, out: bool = True) -> None:
    p.add_argument("--preset", default=None, choices=list(PRESETS),
                   help=f"hardware preset (default: {DEFAULT_PRESET}; `show-preset NAME` prints one as TOML)")
    p.add_argument("--hardware-file", type=Path, default=None,
                   help="a hardware description (TOML, as `show-preset` prints) instead of --preset")
    if out:
        p.add_argument("--out", type=_folder, default=Path(DEFAULT_OUT),
                       help="output folder (default: ./%(default)s; the make targets write the repository's "
                            "sim_results/)")
    p.add_argument("--dram-model", choices=("fluid", "rows"), default="fluid",
                   help="fluid: the DRAM's bank time shared by the arbiter, every byte alike (the study's); rows: "
                        "also checked against a channel with banks, rows, FR-FCFS, turnarounds and refresh wherever "
                        "the GEMM and communication mix (slower; see the docs for its resolution) (default: "
                        "%(default)s)")
    p.add_argument("--rtl-timing", type=Path, default=None,
                   help="rtl_timing.json to take the block timing from (default: the figures `make characterize` "
                        "last measured, kept beside the model as system_model/describe/rtl_timing.json)")


def _add_common(p: argparse.ArgumentParser, *, tp_default: str | None = None) -> None:
    _add_config(p)
    p.add_argument("--models", type=_csv_list(str), default=None,
                   help=f"comma-separated models (default: all of {', '.join(MODELS)})")
    tp_default = tp_default or ("the paper's per model: "
                                + ", ".join(f"{m} {'/'.join(map(str, t))}" for m, t in PAPER_TP.items()))
    p.add_argument("--tp", type=_csv_list(int), default=None,
                   help=f"comma-separated tensor-parallel degrees (default: {tp_default})")
    p.add_argument("--phase", choices=[*PHASES, "all"], default="all",
                   help="training (OP, FC-2, FC-1, IP), prefill (OP, FC-2) or all (default: %(default)s)")
    p.add_argument("--model-file", type=Path, default=None,
                   help="a model description (TOML: name, hidden, ffn, activation, heads, kv_heads, layers, "
                        "[workload] seq_len and micro_batch); runs it alone unless --models names others too")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=Path(sys.argv[0]).name if Path(sys.argv[0]).name == "t3-model" else "python -m system_model",
                     description="T3 sublayer study: speedup and DRAM traffic of sequential, the two ideals, "
                                 "ideal RS+NMC, T3, T3-MCA and CU-sharing for Transformer sublayers.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    report = sub.add_parser(
        "report", help="run the study and write tables and plots (the default command)",
        description="Examples: 't3-model report' (the paper's study on t3-paper); 't3-model report --preset "
                    "h100-sxm --models llama-3-70b --tp 8'; 't3-model report --hardware-file my_gpu.toml "
                    "--model-file my_model.toml --format parquet'.")
    _add_common(report)
    report.add_argument("--no-plots", action="store_true", help="skip the plots")
    report.add_argument("--format", choices=("csv", "json", "parquet"), default="csv",
                        help="also write the per-point table as JSON rows or Parquet (default: csv only)")
    sweep = sub.add_parser(
        "sweep", help="vary any hardware field, TP and model over a grid, on one process or on Dask; write a CSV",
        description="Examples: 't3-model sweep --axis link_bw_GBps_per_link=100:900:100 --axis hbm_GBps=1000,2000,4000 "
                    "--axis tp=4,8,16 --models gpt-3' (a LocalCluster, one worker per core); '--workers 1' (this "
                    "process); '--scheduler tcp://host:8786' (an existing Dask cluster); '--resume' (skip the "
                    "tasks an interrupted run finished); '--format parquet'. Without --axis: link x HBM bandwidth.")
    _add_common(sweep, tp_default="4,8,16,32 for every model")
    sweep.add_argument("--axis", action="append", default=[], metavar="NAME=VALUES",
                       help="a field and its values, a list (a,b,c) or an inclusive range (start:stop:step); "
                            "repeatable: GPU, fabric, transport or kernel fields (link_bw_GBps_per_link is one link's, "
                            "as in a hardware file), model fields (hidden, ffn, heads, kv_heads, layers), tp, model")
    sweep.add_argument("--link-bw-GBps-per-link", type=_csv_list(float), default=None,
                       help="one link's bandwidth (both directions, GB/s, as in a hardware file), the same as "
                            "--axis link_bw_GBps_per_link=... (default without --axis: 75,150,300,600)")
    sweep.add_argument("--hbm-GBps", type=_csv_list(float), default=None,
                       help="HBM bandwidths (GB/s), as --axis hbm_GBps=... "
                            "(default without --axis: 500,1000,2000,4000)")
    sweep.add_argument("--workers", type=_jobs, default=None,
                       help="worker processes of a local Dask cluster; 1 runs in this process (default: one per "
                            "core with the [sweep] extra (Dask), else 1)")
    sweep.add_argument("--scheduler", default=None, help="address of an existing Dask scheduler (tcp://host:8786)")
    sweep.add_argument("--resume", action="store_true", help="keep the finished tasks of an interrupted sweep")
    sweep.add_argument("--format", choices=("csv", "json", "parquet"), default="csv",
                       help="also write the results as JSON or Parquet (the CSV is always written; default: csv)")
    sweep.add_argument("--no-plots", action="store_true",
                       help="skip the heat map (speedup over the first two axes, a panel per scheme)")
    sweep.set_defaults(tp=None)
    sensitivity = sub.add_parser(
        "sensitivity", help="move every calibrated value down and up by a step, re-run the headline points and "
                            "report how the T3-MCA headline figures move; write sensitivity_<preset>.md/.json",
        description="Examples: 't3-model sensitivity --jobs 2' (±25%, a tornado chart); 't3-model sensitivity "
                    "--step 0.1 --hardware-file my_gpu.toml'.")
    _add_config(sensitivity)
    sensitivity.add_argument("--step", type=_step, default=0.25,
                             help="fraction each calibrated value is moved down and up by, between 0 and 1 "
                                  "(default: %(default)s)")
    sensitivity.add_argument("--no-plots", action="store_true", help="skip the tornado chart")
    sensitivity.add_argument("--format", choices=("csv", "json", "parquet"), default="csv",
                             help="also write the moves' table (sensitivity_<preset>.csv) as JSON rows or Parquet")
    sensitivity.add_argument("--jobs", type=_jobs, default=1,
                             help="worker processes that run the variants (default: %(default)s)")
    crosscheck = sub.add_parser(
        "crosscheck", help="the model against the RTL ring running a staged GEMM and its reduce-scatter: read the "
                           "recorded RTL results (or run them with --rtl) and write crosscheck.md/.json",
        description="Configure the model to the RTL ring's micro-system and compare cycles. Examples: "
                    "'python -m system_model crosscheck' (recorded RTL results, sim_results/crosscheck.json); "
                    "'python -m system_model crosscheck --rtl' (run every RTL scenario first: Verilator, minutes); "
                    "'python -m system_model crosscheck --rtl --size quick --only memory_heavy'; "
                    "'python -m system_model crosscheck --rows' (the DRAM-like memory behind every slice, "
                    "sim_results/crosscheck_rows.json); 'python -m system_model crosscheck --rtl --rows --only "
                    "latency_bound --gpus 8 --schedule t3 --door-census 0:3' (who opens rows at GPU 0's door in "
                    "stage 3).")
    crosscheck.add_argument("--rows", action="store_true",
                            help="the scenarios behind the harness's DRAM-like memory (banks and rows) instead of "
                                 "the block RAM: crosscheck_rows.md/.json")
    crosscheck.add_argument("--out", type=_folder, default=Path("sim_results"),
                            help="output folder (default: %(default)s)")
    crosscheck.add_argument("--rtl", action="store_true", help="run the RTL scenarios (else read the recorded ones)")
    crosscheck.add_argument("--size", choices=("full", "quick"), default=None,
                            help="with --rtl: scenario sizes (default: full; without --rtl the record's)")
    crosscheck.add_argument("--only", default=None,
                            help="one scenario (compute_bound, memory_heavy, link_bound, latency_bound)")
    crosscheck.add_argument("--gpus", type=int, default=None, help="only the scenarios with this many GPUs")
    crosscheck.add_argument("--schedule", choices=("t3", "t3_mca", "sequential"), default=None,
                            help="with --rtl: one schedule only (a replay; nothing is written)")
    crosscheck.add_argument("--seed", type=int, default=None, help="with --rtl: data seed of the RTL runs (default: 1)")
    crosscheck.add_argument("--door-census", type=_door_census, default=None, metavar="GPU:STAGE",
                            help="with --rtl --rows --only --gpus and --schedule t3 or t3_mca: run that one RTL "
                                 "scenario and print, for GPU's stage STAGE, who opens rows at its door and whose "
                                 "rows they close, in the RTL and in the model (nothing is written)")
    crosscheck.add_argument("--recorded", type=Path, default=None,
                            help="recorded RTL results to read (default: sim_results/crosscheck.json, "
                                 "with --rows crosscheck_rows.json)")
    peers = sub.add_parser(
        "peers", help="T3 against Flux, async-TP, FlashOverlap, DMA collectives and NVLS on today's GPUs: who "
                      "wins where (peers.md/.csv/.json, peers_heatmap.png/.svg, peers_validation.md), and in serving "
                      "(peers_serving.md/.json)",
        description="Examples: 'python -m system_model peers' (every platform, Llama 3 70B and 405B, TP 4-32); "
                    "'python -m system_model peers --platforms h100-sxm,mi300x --tp 8'.")
    peers.add_argument("--platforms", type=_csv_list(str), default=None,
                       help="comma-separated platforms (default: all of " + ", ".join(_peer_platforms()) + ")")
    peers.add_argument("--models", type=_csv_list(str), default=None,
                       help="comma-separated models (default: llama-3-70b,llama-3-405b)")
    peers.add_argument("--tp", type=_csv_list(int), default=None, help="TP degrees (default: 4,8,16,32)")
    peers.add_argument("--dram-model", choices=("fluid", "rows"), default="fluid",
                       help="how the DRAM is shared (as for report; default: %(default)s)")
    peers.add_argument("--phase", choices=("training", "prefill", "all"), default="all",
                       help="which phase (default: %(default)s)")
    peers.add_argument("--out", type=_folder, default=Path(DEFAULT_OUT),
                       help="output folder (default: ./%(default)s; `make peers` writes the repository's sim_results/)")
    peers.add_argument("--hardware-file", type=Path, default=None,
                       help="a hardware description (TOML) to run, alone unless --platforms names others too")
    peers.add_argument("--model-file", type=Path, default=None,
                       help="a model description (TOML), alone unless --models names others too")
    peers.add_argument("--no-plots", action="store_true", help="skip the heat map")
    peers.add_argument("--format", choices=("csv", "json", "parquet"), default="csv",
                       help="also write the per-point table as JSON rows or Parquet (default: csv only)")
    peers.add_argument("--no-validation", action="store_true", help="skip the published-figure validation")
    peers.add_argument("--no-serving", action="store_true",
                       help="skip the serving regime (decode and chunked prefill, peers_serving.md/.json)")
    peers.add_argument("--sensitivity", action="store_true",
                       help="also move each assumed value by -/+25%% on a sample and write peers_sensitivity.md "
                            "(about a minute more)")
    point = sub.add_parser(
        "point", help="one GEMM (per GPU) and its collective under every scheme: times, speedups, bounds",
        description="Examples: 't3-model point --preset h100-sxm --gemm 2048,16384,2048 --tp 8 --collective "
                    "reduce_scatter'; 't3-model point --hardware-file my_gpu.toml --gemm 8192,8192,4096 --tp 16'. "
                    "The invariant tests print such a command for any configuration they find wanting.")
    _add_config(point, out=False)                # point prints; it writes no file
    point.add_argument("--gemm", type=_csv_list(int), required=True, metavar="M,N,K",
                       help="the GEMM each GPU runs, M,N,K (C is M x N, the all-reduced tensor)")
    point.add_argument("--tp", type=int, required=True, help="the tensor-parallel degree (GPUs in the group)")
    point.add_argument("--collective", choices=("all_reduce", "reduce_scatter"), default="all_reduce",
                       help="what follows the GEMM (default: %(default)s)")
    point.add_argument("--schemes", type=_csv_list(str), default=None, help="comma-separated schemes (default: all)")
    show = sub.add_parser("show-preset", help="print a preset as a hardware description (TOML) to start from",
                          description="Example: 'python -m system_model show-preset h100-sxm > my_gpu.toml', "
                                      "edit it, then 'python -m system_model report --hardware-file my_gpu.toml'.")
    show.add_argument("name", help="one of " + ", ".join(PRESETS))
    return parser


def _show_preset(args) -> int:
    from .describe.files import dump_hardware
    from .describe.presets import DESCRIPTIONS

    if args.name not in DESCRIPTIONS:
        raise ValueError(f"preset must be one of {', '.join(DESCRIPTIONS)}, not {args.name!r}")
    print(dump_hardware(DESCRIPTIONS[args.name]), end="")
    return 0


def _hardware(args):
    """The hardware description the command runs: --hardware-file's, else --preset's."""
    from .describe.files import read_hardware
    from .describe.presets import DESCRIPTIONS

    if getattr(args, "hardware_file", None) is not None:
        return read_hardware(args.hardware_file, presets=DESCRIPTIONS)
    return DESCRIPTIONS[args.preset or DEFAULT_PRESET]


def _model_file(args):
    """Read --model-file, add its model to the zoo and to --models; return its workload (or None)."""
    from .describe.files import read_model
    from .describe.models import MODELS as zoo

    if getattr(args, "model_file", None) is None:
        return None
    described = read_model(args.model_file)
    m = described.model
    if m.name in zoo and zoo[m.name] != m:
        raise ValueError(f"{args.model_file.name}: name {m.name!r} is a built-in model's; choose another")
    for tp in getattr(args, "tp", None) or ():
        if m.heads % tp:
            raise ValueError(f"{args.model_file.name}: heads {m.heads} must be divisible by tp {tp} "
                             f"(tensor parallelism splits the heads across the GPUs)")
    zoo[m.name] = m
    args.models = [*(args.models or []), m.name] if m.name not in (args.models or []) else args.models
    return described.workload


def _study_config(args, **changes):
    cfg = _hardware(args).study_config(getattr(args, "workload", None), rtl_timing=_rtl_timing(args.rtl_timing),
                                       dram_model=args.dram_model)
    if changes:
        from dataclasses import replace
        cfg = replace(cfg, system=cfg.system.with_changes(**changes))
    return cfg


def _peer_platforms() -> list[str]:
    from .describe.presets import DEFAULT_PLATFORMS
    return list(DEFAULT_PLATFORMS)


def _peers(args) -> int:
    from .describe.presets import platform
    from .studies.peers import DEFAULT_MODELS, DEFAULT_TPS, run_peers, winners, write_peers
    from .studies.validation import transport_error, validate, validation_markdown

    workload = args.workload
    named = args.platforms or ([] if args.hardware_file is not None else _peer_platforms())
    platforms = [platform(name) for name in named]
    if args.hardware_file is not None:
        from .describe.files import read_hardware
        from .describe.presets import DESCRIPTIONS
        described = read_hardware(args.hardware_file, presets=DESCRIPTIONS)
        if described.name in [p.name for p in platforms]:
            raise ValueError(f"{args.hardware_file.name}: name {described.name!r} is also in --platforms")
        platforms.append(described)
    for tp in args.tp or ():
        if not 2 <= tp <= 1024:
            raise ValueError(f"tp must be between 2 and 1024, not {tp}")
    phases = list(PHASES) if args.phase == "all" else [args.phase]
    started = time.perf_counter()
    points, layers = run_peers(platforms, args.models or DEFAULT_MODELS, args.tp or DEFAULT_TPS, phases,
                               workload=workload, dram_model=args.dram_model)
    if not layers:
        raise ValueError("no chosen TP degree divides the chosen models' dimensions")
    rows = None if args.no_validation else validate()
    validation = None if rows is None else validation_markdown(rows)
    errors = None if rows is None else transport_error(rows)
    for row in winners(layers, errors):
        sw = row["software"] or "none"
        t3 = "n/a" if row["t3_speedup"] is None else f"{row['t3_speedup']:.2f}x"
        soft = "n/a" if row["software_speedup"] is None else f"{row['software_speedup']:.2f}x"
        verdict = "" if row["decided"] is None else ("" if row["decided"] else "  (within model error)")
        print(f"{row['platform']:>9} TP {row['tp']:>2}: best software {sw:<15} {soft:>6}   best T3 {t3:>6}{verdict}")
    # Named after what the run chose (platforms, models, TPs), so that runs do not overwrite each other.
    chosen = [p.name for p in platforms] if (args.platforms or args.hardware_file is not None) else []
    name = _output_name("peers" + (f"_{'-'.join(chosen)}" if chosen else ""), args)
    for path in write_peers(points, layers, args.out, plots=not args.no_plots, validation=validation,
                            fmt=args.format, errors=errors, name=name):
        print(f"wrote {path}")
    if not args.no_serving:
        from .studies.serving import SERVING_TPS, run_serving, write_serving
        serving = run_serving(platforms, args.models or DEFAULT_MODELS, args.tp or SERVING_TPS,
                              dram_model=args.dram_model)
        for path in write_serving(serving, args.out, errors, name=name.replace("peers", "peers_serving", 1),
                                  plots=not args.no_plots):
            print(f"wrote {path}")
    if args.sensitivity:
        from .studies.peers_sensitivity import run_peer_sensitivity, sensitivity_markdown
        path = args.out / "peers_sensitivity.md"
        path.write_text(sensitivity_markdown(run_peer_sensitivity()))
        print(f"wrote {path}")
    print(f"{len(points)} sublayer points in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


def _crosscheck(args) -> int:
    import json
    from dataclasses import asdict

    _repository_on_path()
    try:
        from .studies import crosscheck as xc
    except ModuleNotFoundError:
        raise _needs_the_repository("crosscheck") from None
    from .studies.report import _git_commit

    started = time.perf_counter()
    rows = xc.ROWS if args.rows else None
    name = "crosscheck_rows" if args.rows else "crosscheck"
    if args.door_census is not None:
        from .studies.crosscheck.door_census import door_census
        gpu, stage = args.door_census
        print(door_census(args.only, args.gpus, args.schedule, gpu, stage, size=args.size or "full",
                          seed=1 if args.seed is None else args.seed))
        return 0
    if args.rtl:
        def show(run):
            print(f"RTL {run['scenario']}, N={run['gpus']}, {run['schedule']}: {run['total_cycles']:,} cycles "
                  f"({run['wall_s']:.1f} s)", file=sys.stderr, flush=True)
        size, seed = args.size or "full", 1 if args.seed is None else args.seed
        runs = xc.run_rtl(size, seed=seed, only=args.only, gpus=args.gpus, progress=show,
                          schedules=(args.schedule,) if args.schedule else xc.SCHEDULES, rows=rows)
        recorded = {"size": size, "seed": seed, "runs": runs}
        if args.schedule:
            return 0       # a replay of one run: its checks passed (run_scenario raises otherwise)
    else:
        path = args.recorded or (xc.CROSSCHECK_ROWS_JSON if args.rows else xc.CROSSCHECK_JSON)
        if args.recorded is not None and not path.is_file():
            raise FileNotFoundError(f"--recorded: no such file: {path}")
        recorded = xc.load_recorded(path)
        for key in ("size", "runs"):
            if key not in recorded:
                raise ValueError(f"{path}: not a crosscheck record (no {key!r})")
        if recorded.get("rows") != (None if rows is None else asdict(rows)):
            raise ValueError(f"{path}: recorded behind {recorded.get('rows') or 'the block RAM'}, not "
                             f"{asdict(rows) if rows else 'the block RAM'} (--rows)")
    entries = [e for e in xc.entries(recorded["runs"], recorded["size"], rows=rows)
               if (args.only is None or e["scenario"] == args.only) and (args.gpus is None or e["gpus"] == args.gpus)]
    if not entries:
        raise ValueError("no scenario has all of its RTL runs (t3, t3_mca, sequential)")
    text = xc.crosscheck_markdown(entries, rows)
    print(text)
    bad = xc.violations(entries)
    print("within tolerance on every scenario" if not bad else "outside tolerance:\n  " + "\n  ".join(bad))
    status = 1 if bad else 0       # the record and the table are still written: they are what was measured
    if args.only is None and args.gpus is None and (args.rtl or args.recorded is None):
        args.out.mkdir(parents=True, exist_ok=True)
        # Without --rtl: the recorded runs kept as they are, the model's side re-derived.
        record = {"size": recorded["size"], "seed": recorded.get("seed", 1),
                  "seconds": round(time.perf_counter() - started, 1) if args.rtl else recorded.get("seconds"),
                  "commit": _git_commit() if args.rtl else recorded.get("commit"),
                  "tolerances": {"total": xc.TOLERANCE_TOTAL, "mca_points": xc.TOLERANCE_MCA_POINTS},
                  **({"rows": asdict(rows)} if rows else {}),
                  "runs": recorded["runs"], "entries": [{k: v for k, v in e.items() if k != "rtl"} for e in entries]}
        (args.out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
        (args.out / f"{name}.md").write_text(text)
        print(f"wrote {args.out / (name + '.json')} and {args.out / (name + '.md')}")
    return status


def _rtl_timing(path: Path | None) -> Path | None:
    """An ``--rtl-timing`` given explicitly must exist (only the default falls back to the
    components' properties)."""
    if path is not None and not path.is_file():
        what = "no such file" if not path.exists() else "not a regular file"
        raise FileNotFoundError(f"--rtl-timing: {what}: {path}")
    return path


def _points(args):
    phases = list(PHASES) if args.phase == "all" else [args.phase]
    return study_points(args.models, args.tp, phases)


def _report(args) -> int:
    from .studies.layer import layer_study, layer_table

    cfg = _study_config(args)
    results = run_study(cfg, _points(args), timeline=False)
    summaries = {n: s for n in [*HEADLINE_SETS, "all"] if (s := summarise(results, n))}
    phases = list(PHASES) if args.phase == "all" else [args.phase]
    layers = layer_study(cfg, args.models, args.tp, phases)
    cu_sharing = cu_sharing_study(cfg, results)
    print(f"preset {cfg.system.name}: {cfg.system.source}")
    print(f"block timing: {cfg.block.source}, in memory-controller cycles at {cfg.system.gpu.mc_clock_GHz:g} GHz")
    print(format_table(results, summaries))
    print()
    print(format_cu_sharing(cu_sharing))
    if layers:
        print()
        print("End to end, one Transformer layer:")
        print(layer_table(layers))
    for path in write_outputs(results, cfg, args.out, plots=not args.no_plots, layers=layers,
                              cu_sharing=cu_sharing, fmt=args.format, name=_output_name(cfg.system.name, args)):
        print(f"wrote {path}")
    return 0


def _output_name(hardware: str, args) -> str:
    """The name outputs carry: the hardware's, then the models and TP degrees where the run
    chose them (so that a run on another model or TP does not overwrite this one's files)."""
    name = hardware
    if args.models:
        name += "_" + "-".join(args.models)
    if getattr(args, "tp", None):
        name += "_tp" + "-".join(map(str, args.tp))
    return name


def _sensitivity(args) -> int:
    from .studies.sensitivity import format_sensitivity, run_sensitivity, write_sensitivity

    cfg = _study_config(args)
    result = run_sensitivity(cfg, step=args.step, jobs=args.jobs)
    print(f"preset {cfg.system.name}: {cfg.system.source}")
    print(f"block timing: {cfg.block.source}, in memory-controller cycles at {cfg.system.gpu.mc_clock_GHz:g} GHz")
    print(format_sensitivity(result))
    print(f"{result.variants} variants in {result.elapsed_s:.2f} s", file=sys.stderr)
    for path in write_sensitivity(result, args.out):
        print(f"wrote {path}")
    for path in _sensitivity_table(result, args.out, args.format):
        print(f"wrote {path}")
    if not args.no_plots:
        from .studies.figures import plot_tornado
        for path in plot_tornado(result, args.out / f"sensitivity_{result.preset}_tornado"):
            print(f"wrote {path}")
    return 0


def _sensitivity_table(result, out: Path, fmt: str) -> list[Path]:
    """One row per calibrated value and move: its value and every headline figure with it."""
    import csv

    from .studies.sweep import write_table

    records = []
    for row in result.rows:
        for move in row.moves:
            record = {"path": row.path, "base_value": row.base_value, "step": move.step, "value": move.value,
                      "skipped": move.skipped or ""}
            for set_name, figures in result.base.items():
                for figure in figures:
                    got = None if move.figures is None else move.figures[set_name][figure]
                    record[f"{set_name}_{figure}"] = "" if got is None else got
            records.append(record)
    path = out / f"sensitivity_{result.preset}.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    paths = [path]
    typed = [{k: (None if v == "" else float(v) if k not in ("path", "skipped") else v) for k, v in r.items()}
             for r in records]
    if (table := write_table(typed, out / f"sensitivity_{result.preset}", fmt)) is not None:
        paths.append(table)
    return paths


def _sweep(args) -> int:
    from .studies.sweep import SweepSpec, parse_axis, run_sweep, stderr_progress

    axes = [parse_axis(text) for text in args.axis]
    if args.link_bw_GBps_per_link is not None:
        axes.insert(0, parse_axis("link_bw_GBps_per_link=" + ",".join(map(str, args.link_bw_GBps_per_link))))
    if args.hbm_GBps is not None:
        hbm = parse_axis("hbm_GBps=" + ",".join(map(str, args.hbm_GBps)))
        axes.insert(1 if args.link_bw_GBps_per_link is not None else 0, hbm)
    if not args.axis and args.link_bw_GBps_per_link is None and args.hbm_GBps is None:
        axes = [parse_axis("link_bw_GBps_per_link=75,150,300,600"), parse_axis("hbm_GBps=500,1000,2000,4000")]
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise ValueError(f"--axis: {next(n for n in names if names.count(n) > 1)} is given twice")
    tps = next((a.values for a in axes if a.name == "tp"), None) or (tuple(args.tp) if args.tp else (4, 8, 16, 32))
    models = next((a.values for a in axes if a.name == "model"), None) or tuple(args.models or MODELS)
    for name in models:
        if name not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, not {name!r}")
    phases = tuple(PHASES) if args.phase == "all" else (args.phase,)
    spec = SweepSpec(_hardware(args), tuple(a for a in axes if a.name not in ("tp", "model")),
                     tuple(MODELS[m] for m in models), tuple(tps), phases, args.workload,
                     str(_rtl_timing(args.rtl_timing)) if args.rtl_timing else None, args.dram_model)
    name = _output_name(spec.hardware.name, args)
    path, ran, seconds = run_sweep(spec, args.out, workers=args.workers or 1, scheduler=args.scheduler,
                                   resume=args.resume, fmt=args.format, progress=stderr_progress, name=name)
    print(file=sys.stderr)
    rate = ran / seconds if seconds > 0 else float("inf")
    print(f"{ran} configurations in {seconds:.2f} s ({rate:,.0f}/s); wrote {path}")
    if not args.no_plots and len(spec.axes) >= 2:
        from .studies.figures import plot_sweep_heatmap
        for written in plot_sweep_heatmap(args.out / f"sweep_{name}.csv", args.out / f"sweep_{name}_heatmap"):
            print(f"wrote {written}")
    return 0


def _point(args) -> int:
    from .describe.models import GemmShape
    from .schemes import SCHEME_LABELS, SCHEMES, evaluate

    if len(args.gemm) != 3:
        raise ValueError(f"--gemm must be M,N,K (three integers), not {','.join(map(str, args.gemm))}")
    schemes = tuple(args.schemes) if args.schemes else SCHEMES
    cfg = _study_config(args)
    shape = GemmShape(*args.gemm)
    results = evaluate(cfg, shape, args.tp, schemes=schemes, collective=args.collective)
    seq = results.get("sequential")
    print(f"{cfg.system.name}: GEMM {shape.m} x {shape.n} x {shape.k} per GPU, {args.collective} over {args.tp} GPUs")
    for name, r in results.items():
        if r.time_s is None:
            print(f"  {SCHEME_LABELS.get(name, name):<20} n/a: {r.reason}")
            continue
        speedup = f"{seq.time_s / r.time_s:6.3f}x" if seq is not None and seq.time_s else ""
        print(f"  {SCHEME_LABELS.get(name, name):<20} {r.time_s * 1e6:12.3f} us  (GEMM ends {r.gemm_s * 1e6:10.3f} us)"
              f"  {speedup}")
    return 0


def _check_args(args) -> None:
    """Refuse, before any work, an option that conflicts with another or would be ignored, and
    outputs that could not be written (issue #26: a conflict is an error, never resolved)."""
    import functools

    command = args.command
    hardware = functools.cache(lambda: _hardware(args))     # a hardware file is read once
    if getattr(args, "preset", None) is not None and getattr(args, "hardware_file", None) is not None:
        raise ValueError("--preset and --hardware-file name two hardware descriptions: give one")
    for option in ("models", "tp", "platforms"):
        values = getattr(args, option, None)
        if not isinstance(values, list):
            continue                                  # `point --tp` is one degree
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"--{option}: {repeated[0]} is given twice")
    if command == "sweep":
        named = {text.split("=", 1)[0].strip() for text in args.axis}
        if args.tp is not None and "tp" in named:
            raise ValueError("--tp and --axis tp both choose the TP degrees: give one")
        if args.models is not None and "model" in named:
            raise ValueError("--models and --axis model both choose the models: give one")
        if args.model_file is not None and "model" in named:
            raise ValueError("--model-file and --axis model both choose the models: add the file's model to the "
                             "axis by its name, or leave the axis out")
        if args.scheduler is not None and args.workers is not None:
            raise ValueError("--scheduler and --workers: an existing cluster has its own workers; give one")
        if args.scheduler is not None and not re.fullmatch(r"(tcp|tls|inproc|ucx)://[^\s:/]+(:\d+)?", args.scheduler):
            raise ValueError(f"--scheduler must be a Dask address such as tcp://host:8786, not {args.scheduler!r}")
        dask = _has("dask.distributed")
        if (args.scheduler is not None or (args.workers or 1) > 1) and not dask:
            raise ValueError("a sweep on Dask (--workers > 1 or --scheduler) needs the [sweep] extra: "
                             "pip install 't3-hw[sweep]'")
        if args.workers is None and args.scheduler is None:
            args.workers = (os.cpu_count() or 1) if dask else 1
    if getattr(args, "format", None) == "parquet" and not _has("pyarrow"):
        raise ValueError("--format parquet needs the [parquet] extra: pip install 't3-hw[parquet]'")
    if command == "crosscheck":
        _check_crosscheck(args)
    out = getattr(args, "out", None)
    if out is not None:
        if out.is_symlink() and not out.exists():
            raise ValueError(f"--out {out}: a link to nothing")
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {out}: a file is there, not a folder")
        existing = next(p for p in (out, *out.absolute().parents) if p.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK):
            raise ValueError(f"--out {out}: {existing} is not a folder this user can write in")
        _probe_folder(out)
        if command == "sweep" and args.resume:
            name = _output_name(hardware().name, args)
            if not (out / f"sweep_{name}.csv").is_file():
                raise ValueError(f"--resume: nothing to resume (no {out / f'sweep_{name}.csv'})")
    if command in ("report", "sweep", "sensitivity") and not hardware().t3_blocks:
        raise ValueError(f"{hardware().name}: t3_blocks = false, so the T3 schemes cannot run, and "
                         f"`{command}` measures them (`point` and `peers` show the other schemes)")


def _needs_the_repository(what: str):
    """The RTL side (``rtl/``, ``tb/`` and the [rtl] extra) is in a clone, not in a model-only
    install: say so in one line rather than fail on an import."""
    return ValueError(f"{what} needs the repository's rtl/ and tb/ with the hardware tools: run it in a clone "
                      f"after `pip install -e '.[rtl]'` (or `make venv`)")


def _has(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _probe_folder(out: Path) -> None:
    """Create ``out`` and what is missing above it, then remove what was created: a folder that
    cannot be made (under /proc, on a read-only mount) is refused before the study runs, and a
    refused command leaves nothing behind."""
    missing = [p for p in (out.absolute(), *out.absolute().parents) if not p.exists()]
    try:
        for folder in reversed(missing):
            folder.mkdir()
    except OSError as error:
        raise ValueError(f"--out {out}: cannot be created ({error.strerror})") from None
    finally:
        for folder in missing:
            if folder.is_dir():
                folder.rmdir()


def _repeated_option(argv: list[str]) -> str | None:
    """An option given twice where one value is kept (argparse would keep the last silently)."""
    seen = set()
    for word in argv:
        if word == "--":
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            if name in seen and name != "--axis":
                return name
            seen.add(name)
    return None


def _repository_on_path() -> None:
    """The RTL side (rtl/, tb/) is imported from a clone: its root is the folder holding this
    package (an editable install) or the current one; the console script has neither on
    sys.path of its own."""
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        if (root / "tb" / "__init__.py").is_file() and (root / "rtl" / "__init__.py").is_file():
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
            return


def _door_census(text: str) -> tuple[int, int]:
    gpu, _, stage = text.partition(":")
    if not (gpu.isdigit() and stage.isdigit()):
        raise argparse.ArgumentTypeError(f"expected GPU:STAGE, two whole numbers, not {text!r}")
    return int(gpu), int(stage)


def _check_door_census(args) -> None:
    """``crosscheck --door-census``: one RTL run behind rows, of a T3 schedule, its GPU and
    stage within the scenario's."""
    missing = [option for option, given in (("--rtl", args.rtl), ("--rows", args.rows), ("--only", args.only),
                                            ("--gpus", args.gpus), ("--schedule", args.schedule)) if not given]
    if missing:
        raise ValueError(f"crosscheck --door-census needs {', '.join(missing)} (it counts one RTL run behind rows)")
    if args.schedule not in ("t3", "t3_mca"):
        raise ValueError(f"crosscheck --door-census needs --schedule t3 or t3_mca, not {args.schedule!r}")
    gpu, stage = args.door_census
    if gpu >= args.gpus:
        raise ValueError(f"crosscheck --door-census: GPU must be from 0 to {args.gpus - 1}, not {gpu}")
    if stage >= args.gpus:
        raise ValueError(f"crosscheck --door-census: STAGE must be from 0 to {args.gpus - 1}, not {stage}")


def _check_crosscheck(args) -> None:
    _repository_on_path()
    try:
        from tb.gemm_ring.scenarios import scenarios
    except ModuleNotFoundError:
        raise _needs_the_repository("crosscheck") from None

    if not args.rtl:
        for option in ("schedule", "size", "seed"):
            if getattr(args, option) is not None:
                raise ValueError(f"crosscheck --{option} needs --rtl (it chooses the RTL runs; the recorded "
                                 f"ones are what they are)")
    elif args.recorded is not None:
        raise ValueError("crosscheck --recorded and --rtl: read a record or run the RTL, not both")
    every = scenarios(args.size or "full")
    names = sorted({sc.name for sc in every})
    if args.only is not None and args.only not in names:
        raise ValueError(f"crosscheck --only must be one of {', '.join(names)}, not {args.only!r}")
    counts = sorted({sc.system.gpus for sc in every if args.only is None or sc.name == args.only})
    if args.gpus is not None and args.gpus not in counts:
        raise ValueError(f"crosscheck --gpus must be one of {', '.join(map(str, counts))}"
                         f"{' for ' + args.only if args.only else ''}, not {args.gpus}")
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"crosscheck --seed must be 0 or more, not {args.seed}")
    if args.door_census is not None:
        _check_door_census(args)


def _unknown_command(word: str) -> str | None:
    """A first word that is neither a command nor an option: the nearest command, if any."""
    import difflib

    if word.startswith("-") or word in _COMMANDS:
        return None
    near = difflib.get_close_matches(word, list(_COMMANDS), n=1)
    return f"unknown command {word!r}" + (f" (did you mean {near[0]!r}?)" if near else
                                           f" (one of {', '.join(_COMMANDS)})")


_COMMANDS = {"report": _report, "sweep": _sweep, "sensitivity": _sensitivity, "crosscheck": _crosscheck,
             "peers": _peers, "point": _point, "show-preset": _show_preset}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and (unknown := _unknown_command(argv[0])):
        return _fail(unknown)
    if repeated := _repeated_option(argv):
        return _fail(f"{repeated} is given twice: give it once")
    if not argv or argv[0] not in (*_COMMANDS, "-h", "--help"):
        argv = ["report", *argv]
    zoo = dict(MODELS)          # a --model-file's model joins the zoo for this command only
    try:
        args = _parser().parse_args(argv)
        if args.command == "show-preset":
            return _show_preset(args)
        _check_args(args)
        args.workload = _model_file(args)        # a --model-file's model joins the zoo before anything runs
        status = _COMMANDS[args.command](args)          # the result cache is read when first needed
        loaded, stored = result_cache.loaded(), result_cache.save()
        print(f"evaluated sublayers: {loaded} loaded from and {stored} stored in {result_cache.CACHE_FILE}"
              if stored else "evaluated sublayers: no cache file (T3_MODEL_CACHE empty, or not writable)",
              file=sys.stderr)
        return status
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    except KeyboardInterrupt:
        print("\ninterrupted: a sweep keeps its finished tasks; rerun it with --resume", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError, KeyError) as error:
        return _fail(str(error))
    finally:
        MODELS.clear()
        MODELS.update(zoo)


def main_entry() -> None:
    """The ``t3-model`` console script."""
    raise SystemExit(main())
