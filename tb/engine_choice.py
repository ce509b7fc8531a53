"""Own fluid engine or SimPy as the event loop? ``python -m tb.engine_choice`` times both on the same work.

So that the README can say, with numbers, why the model runs on its own heap-based timeline
(:class:`system_model.engine.timeline.Engine`). Work: T3 (``evaluate(..., schemes=("t3",))``, i.e.
``t3_ring(sub, policy="rr")``) on the t3-paper preset's 16 headline sublayers, the result cache cleared
before every evaluation (``T3_MODEL_CACHE`` empty: no file). Every engine a scheme builds is counted
(its events, i.e. intervals, and the seconds in its ``run``). Rows:

* own engine: ``Engine`` as it is; own loop alone: as many events as bare chained ``Engine.after`` timers.
* SimPy, full loop (the whole problem on SimPy, measured, not estimated): ``Engine.run``'s loop as one
  SimPy process per engine, the most favourable way we know: per interval it takes the rates from the
  project's ``sharing.allocate`` (via the engine's ``_allocate`` and memo), waits ``env.timeout(dt)`` to
  the next rate change (a flow done, a mark, a catch-up, a timer), fires the callbacks. Its results
  (sublayer times, event counts) must equal the own engine's.
* SimPy loop alone: a bare process doing as many ``yield env.timeout(dt)``: SimPy's own cost per event,
  a lower bound on what a SimPy-based engine adds.

Full engines run interleaved, best of ``REPS`` passes after a warm-up; run it on one core
(``taskset -c 0``). Without SimPy it says so and measures only the own engine.
"""

from __future__ import annotations

import gc
import os
import time
from unittest import mock

os.environ["T3_MODEL_CACHE"] = ""    # before the model is imported: no cache file

from system_model.describe.models import MODELS, sublayer_gemm  # noqa: E402
from system_model.describe.presets import PLATFORMS  # noqa: E402
from system_model.engine.sharing import Policy  # noqa: E402
from system_model.engine.timeline import Engine  # noqa: E402
from system_model.schemes import cache, context, evaluate  # noqa: E402
from system_model.studies.study import HEADLINE_SETS, study_points  # noqa: E402

try:
    import simpy
except ImportError:
    simpy = None

REPS = 30
STATS = {"events": 0, "run_s": 0.0}


class CountedEngine(Engine):
    """The project's engine, its events and ``run`` time added to :data:`STATS`."""

    def run(self) -> float:
        t = time.perf_counter()
        end = self._loop()
        STATS["run_s"] += time.perf_counter() - t
        STATS["events"] += self.events
        return end

    _loop = Engine.run


class SimPyEngine(CountedEngine):
    """:meth:`Engine.run`'s loop as a SimPy process: SimPy's clock and queue step the intervals."""

    def _loop(self) -> float:
        env = simpy.Environment()
        env.run(env.process(self._process(env)))
        self._check_conservation()
        return self.now

    def _process(self, env):
        while self.active or self._timers:
            dt, runnable = self.next_interval()
            yield env.timeout(dt)
            self.finish_interval(dt, runnable)          # the flows' progress; self.now follows env.now


def one_pass(cls, points) -> tuple[float, float, int, list]:
    """Every point with ``cls`` as every scheme's engine: evaluate and run seconds, events, results."""
    STATS.update(events=0, run_s=0.0)
    out, wall = [], 0.0
    with mock.patch.object(context, "Engine", cls):
        for cfg, shape, tp in points:
            cache.clear()                        # two headline points share a shape: evaluate both
            t = time.perf_counter()
            out.append(evaluate(cfg, shape, tp, schemes=("t3",))["t3"])
            wall += time.perf_counter() - t
    return wall, STATS["run_s"], STATS["events"], [(r.time_s, r.events) for r in out]


def measure(classes, points) -> list[list]:
    """Per class, the best evaluate and run seconds, events and results; passes interleaved, after a warm-up."""
    best = [list(one_pass(cls, points)) for cls in classes]         # warm-up: the GEMM timings' caches
    for _ in range(REPS):
        for b, cls in zip(best, classes, strict=True):
            gc.collect()
            wall, run_s, events, res = one_pass(cls, points)
            if (events, res) != (b[2], b[3]):
                raise SystemExit(f"{cls.__name__}: a pass differs from the previous ones")
            b[0], b[1] = min(b[0], wall), min(b[1], run_s)
    return best


def best_of(make) -> float:
    """Best seconds of ``REPS`` runs of the callable ``make()`` returns (its set-up not timed)."""
    times = []
    for go in (make() for _ in range(REPS)):
        t = time.perf_counter()
        go()
        times.append(time.perf_counter() - t)
    return min(times)


def own_loop(n: int):
    engine, left = Engine({"link": 1.0}, Policy("rr")), [n]

    def tick(e: Engine) -> None:
        left[0] -= 1
        if left[0] > 0:
            e.after(1e-9, tick)
    engine.after(1e-9, tick)
    return engine.run


def simpy_loop(n: int):
    env = simpy.Environment()
    env.process(env.timeout(1e-9) for _ in range(n))      # a process is a generator of events
    return env.run


def main() -> int:
    cfg = PLATFORMS["t3-paper"].study_config()
    _, select = HEADLINE_SETS["headline"]
    points = [(cfg, sublayer_gemm(MODELS[p.model], p.sublayer, cfg.workload.tokens(p.phase), p.tp), p.tp)
              for p in study_points() if select(p)]
    n = len(points)
    full = measure([CountedEngine] if simpy is None else [CountedEngine, SimPyEngine], points)
    ev, own_run = full[0][2], full[0][1]
    rows = [("own engine", own_run, full[0][0]), ("own loop alone (timers only)", best_of(lambda: own_loop(ev)), None)]
    if simpy is None:
        print("SimPy is not installed: only the own engine is measured.\n")
    else:
        if full[1][2:] != full[0][2:]:
            raise SystemExit("the SimPy loop's results differ from the own engine's")
        rows += [(f"SimPy {simpy.__version__}, full loop", full[1][1], full[1][0]),
                 ("SimPy loop alone (lower bound on its overhead)", best_of(lambda: simpy_loop(ev)), None)]
    print(f"T3 (rr), {n} headline sublayers of t3-paper, {ev} engine events in all; best of {REPS} passes.\n")
    print("| engine | events / evaluation | µs / event | ms / evaluation (engine) | ms / evaluation (whole) "
          "| engine time / own engine's |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, run_s, wall in rows:
        whole = "—" if wall is None else f"{wall / n * 1e3:.2f}"
        print(f"| {name} | {ev / n:.1f} | {run_s / ev * 1e6:.2f} | {run_s / n * 1e3:.3f} | {whole} "
              f"| {run_s / own_run:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
