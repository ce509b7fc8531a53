# amaranth: UnusedElaboratable=no
"""One trace-driven lock-step run of a block: stimulus, Verilog harness, replay, protocol, coverage.

A block's trace bench (``tb/<block>/trace.py``) subclasses :class:`TraceBench`: it writes the
stimulus up front (:meth:`TraceBench.stimulus`) and replays the recorded trace against its
golden model (:meth:`TraceBench.replay`). :func:`run_trace` does the rest and returns a
:class:`TraceResult`; the pytest items call :func:`check_block`, which also adds the figures
to the session summary that ``make test`` prints.

Environment: ``SEED`` (base seed, as everywhere), ``TRACE_SEED`` (the seed of the run
itself, as the replay line prints it; overrides the one derived from ``SEED``),
``TRACE_SIM`` (``verilator`` or ``icarus``), ``TRACE_CYCLES`` (overrides every block's
cycle count, e.g. for a quick run).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from rtl.flow.generate import BLOCKS, to_verilog
from tb.common.runner import REPO_ROOT
from tb.common.seeds import base_seed, derive_seed
from tb.common.stats import add_stats

from .audit import check_junk, check_plan, check_quiet_reset
from .check import Coverage, Trace, check_stream_protocol
from .coverage_summary import add_coverage
from .harness import Ports, Responder, run_harness, trace_simulator
from .stimulus import Stimulus

__all__ = ["TraceBench", "TraceResult", "run_trace", "check_block", "FastPacker", "trace_cycles",
           "TRACE_CYCLES_ENV"]

TRACE_CYCLES_ENV = "TRACE_CYCLES"
TRACE_SEED_ENV = "TRACE_SEED"


def trace_cycles(default: int) -> int:
    text = os.environ.get(TRACE_CYCLES_ENV)
    if not text:
        return default
    value = int(text, 0)
    if value < 1000:
        raise ValueError(f"{TRACE_CYCLES_ENV} must be at least 1000, not {value}")
    return value


class FastPacker:
    """Packs a flat dict of a struct layout's fields into the port's integer, caching the last.

    Status ports change rarely, so the cache turns most packs into one dict comparison.
    """

    def __init__(self, layout):
        self.fields = []
        self._flatten(layout, 0, "")
        self._last_key = None
        self._last_value = 0
        self._groups: list | None = None

    def _flatten(self, layout, base: int, prefix: str) -> None:
        from amaranth.lib import data
        for name, fld in layout:
            if isinstance(fld.shape, data.StructLayout):
                self._flatten(fld.shape, base + fld.offset, f"{prefix}{name}.")
            else:
                self.fields.append((prefix + name, base + fld.offset, (1 << fld.width) - 1))

    def pack(self, values: dict) -> int:
        if values == self._last_key:
            return self._last_value
        word = 0
        for name, offset, mask in self.fields:
            value = values.get(name, 0)
            if value & ~mask:
                raise ValueError(f"{name} = {value} does not fit its field")
            word |= value << offset
        self._last_key = dict(values)
        self._last_value = word
        return word

    def pack_nested(self, values: dict) -> int:
        """Pack a dict nested like the layout (``{"tracker": {...}, "beats": 3}``)."""
        if self._groups is None:
            groups: dict = {}
            for name, offset, _ in self.fields:
                head, _, rest = name.partition(".")
                groups.setdefault(head if rest else "", []).append((rest or head, offset))
            if any("." in n for fields in groups.values() for n, _ in fields):
                raise ValueError("pack_nested handles one level of nesting")
            self._groups = list(groups.items())
        word = 0
        for head, fields in self._groups:
            node = values[head] if head else values
            for name, offset in fields:
                word |= node[name] << offset
        return word

    def unpack(self, word: int) -> dict:
        return {name: (word >> offset) & mask for name, offset, mask in self.fields}

    def diff(self, got: int, expected: int) -> str:
        g, e = self.unpack(got), self.unpack(expected)
        return ", ".join(f"{k}: {g[k]} != {e[k]}" for k in g if g[k] != e[k])


class TraceBench:
    """What one block's trace run needs: its stimulus, its replay against the model, its bins."""

    #: Label in folders, seeds and the summary (e.g. ``"tracker"``).
    label: str = ""
    #: Block name in :data:`rtl.flow.generate.BLOCKS`.
    block: str = ""
    #: Cycles of one ``make test`` run.
    cycles: int = 1_000_000
    #: Runs of :attr:`cycles` each in ``make test``, each with its own seed: a long total
    #: without a longer record in memory (the ring's record is 450 bytes a cycle).
    runs: int = 1
    #: Longest run ``make soak`` makes (the record of a run is held in memory).
    soak_run_cycles: int = 1_000_000
    #: Coverage bins: each must be hit at least once.
    bins: tuple[str, ...] = ()
    #: Streams whose hold rule is not checked, each with the reason the RTL documents.
    relaxed_streams: dict[str, str] = {}

    def __init__(self, params: dict | None = None):
        self.params = dict(params or {})
        # The block's public layouts and properties; built here (not by rtl.flow.generate) so that
        # this file's marker silences Amaranth's unused-elaboratable warning.
        spec = BLOCKS[self.block]
        self.component = spec.factory(**{**spec.defaults, **self.params})

    def stimulus(self, rng: random.Random, cycles: int) -> tuple[Stimulus, list[Responder]]:
        raise NotImplementedError

    def replay(self, trace: Trace) -> dict:
        """Step the model through ``trace``, comparing every output; return figures for the summary."""
        raise NotImplementedError


@dataclass
class TraceResult:
    label: str
    cycles: int
    checked_cycles: int
    checks: int
    seed: int
    simulator: str
    build_s: float
    sim_s: float
    replay_s: float
    coverage: Coverage
    figures: dict = field(default_factory=dict)

    @property
    def checked_cycles_per_s(self) -> float:
        return self.checked_cycles / max(1e-9, self.sim_s + self.replay_s)


def replay_line(label: str, seed: int, cycles: int, run: int | None = None) -> str:
    """The command that repeats this very run (the stimulus depends on the seed and the length;
    ``run``: which of the bench's ``make test`` runs, where it has several)."""
    select = f"trace_{label}" if run is None else f"'trace_{label} and run{run}'"
    return f"replay: TRACE_SEED={seed} TRACE_CYCLES={cycles} pytest tb -k {select}  (session SEED={base_seed()})"


def trace_seed(label: str, cycles: int, run: int = 0) -> int:
    text = os.environ.get(TRACE_SEED_ENV)
    if text:
        try:
            return int(text, 0)
        except ValueError:
            raise ValueError(f"{TRACE_SEED_ENV} must be an integer, not {text!r}") from None
    return derive_seed("trace", label, cycles) if run == 0 else derive_seed("trace", label, cycles, run)


def run_trace(bench: TraceBench, *, cycles: int | None = None, seed: int | None = None,
              simulator: str | None = None, run_name: str = "run", folder: Path | None = None,
              require_coverage: bool = True, run: int | None = None) -> TraceResult:
    """Generate, simulate and replay one trace of ``bench``; raise ``AssertionError`` on any failure.

    ``require_coverage=False``: a run that measures something (``make characterize``), not a
    verification run, does not fail on a bin its length did not reach; every check still
    applies. ``run``: which of the bench's ``make test`` runs this is (its seed and replay line)."""
    cycles = trace_cycles(bench.cycles) if cycles is None else cycles
    seed = trace_seed(bench.label, cycles, run or 0) if seed is None else seed
    simulator = simulator or trace_simulator()
    replay = replay_line(bench.label, seed, cycles, run)
    print(f"trace {bench.label}: {cycles} cycles on {simulator}  {replay}")
    started = time.perf_counter()
    verilog = to_verilog(bench.block, simulation=True, **bench.params)
    ports = Ports(verilog, bench.block)
    stimulus, responders = bench.stimulus(random.Random(seed), cycles)
    folder = folder or REPO_ROOT / "sim_build" / "trace" / bench.label
    timing: dict = {}
    record, layout = run_harness(folder, verilog, ports, stimulus, responders, simulator=simulator,
                                 run_name=run_name, timing=timing)
    coverage = Coverage(bench.label, bench.bins)
    trace = Trace(bench.label, record, layout, replay=replay, coverage=coverage)
    replay_started = time.perf_counter()
    check_stream_protocol(trace, ports, relaxed=bench.relaxed_streams)
    check_plan(trace, ports, stimulus)
    check_junk(trace, ports)
    check_quiet_reset(trace, ports, [n for n, p in ports.ports.items()
                                     if n.endswith("__valid") and p.direction == "output"])
    figures = bench.replay(trace) or {}
    replay_s = time.perf_counter() - replay_started
    missing = coverage.missing()
    if missing and require_coverage:
        raise AssertionError(f"{bench.label}: coverage bins never hit: {', '.join(missing)}\n  {replay}")
    result = TraceResult(bench.label, cycles, trace.checked_cycles, trace.checks, seed, simulator,
                         build_s=timing.get("build_s", 0.0), sim_s=timing.get("sim_s", 0.0), replay_s=replay_s,
                         coverage=coverage, figures=figures)
    print(f"trace {bench.label}: {trace.checked_cycles} checked cycles, {trace.checks} checks, "
          f"build {result.build_s:.1f} s, sim {result.sim_s:.1f} s, replay {replay_s:.1f} s, "
          f"total {time.perf_counter() - started:.1f} s; {coverage.summary()}")
    return result


def check_block(bench: TraceBench, run: int | None = None) -> TraceResult:
    """The pytest item's body: one run (``run``: which of the bench's :attr:`~TraceBench.runs`),
    its figures and coverage added to the session summary."""
    result = run_trace(bench, run=run, run_name="run" if not run else f"run{run}")
    add_stats(f"{bench.label} (trace)", cycles=result.checked_cycles, checks=result.checks,
              **{k: v for k, v in result.figures.items() if isinstance(v, int)})
    add_coverage(result.coverage)
    return result
