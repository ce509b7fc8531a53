"""Trace-driven lock-step run of the T3-MCA memory arbiter.

Stimulus: segments between mid-run resets, one cell of the idle / back-pressure matrix each
(both requesters share the source mode, ``grant.ready`` takes the sink mode). Each segment
also fixes the configuration: mode (MCA or round robin, alternating), occupancy threshold
(either end of its range a quarter of the time each) and starvation limit (0, 1, small,
larger, or the largest). The DRAM queue's
occupancy ``queue_level`` is a random walk across the whole range, so the MCA decision
sees every band: empty, below the threshold, at it and above, full.

Replay: :class:`~tb.arbiter.model.MemoryArbiterModel` decides every cycle from the recorded
inputs; ``grant.valid``, both ``ready`` outputs, the grant (class and request) when valid
and ``status`` are compared in every cycle out of reset.
"""

from __future__ import annotations

import random

import numpy as np

from tb.arbiter.model import COMM, COMPUTE, MCA, ROUND_ROBIN, MemoryArbiterModel
from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.ranges import FieldRange, cover_ranges, draw, range_bins
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments, sink_ready

__all__ = ["ArbiterTrace"]

BANDS = ("empty", "below threshold", "at or above threshold", "full")


class ArbiterTrace(TraceBench):
    label = "arbiter"
    block = "memory_arbiter"
    bins = (
        *(f"{mode} grant, queue {band}" for mode in ("MCA", "round robin") for band in BANDS),
        "MCA: comm granted below the threshold", "MCA: comm held at the threshold",
        "MCA: starvation limit reached", "MCA: starvation limit reached at its maximum",
        "round robin: alternation under contention",
        "grant back-pressured", "both requesters valid", "comm wait saturates", "reset with comm waiting",
    )

    @property
    def ranges(self) -> tuple[FieldRange, ...]:
        """The configuration and queue level, over their ports' whole widths (the threshold and
        the limit counted at T3-MCA's accepted grants, the level at every accepted grant)."""
        level_max, wait_max = (1 << self.params["level_width"]) - 1, (1 << self.params["wait_width"]) - 1
        return (FieldRange("threshold", 0, level_max), FieldRange("starvation_limit", 0, wait_max),
                FieldRange("queue_level", 0, level_max))

    relaxed_streams = {"grant": "the arbiter re-decides its offer every cycle (rtl/arbiter.py policy)"}

    def __init__(self, params: dict | None = None):
        super().__init__(params or {"payload_shape": 16, "level_width": 4, "wait_width": 6})
        self.bins = self.bins + range_bins(self.ranges)

    def stimulus(self, rng: random.Random, cycles: int):
        stim = Stimulus(cycles, ["compute", "comm"])
        segments = plan_segments(stim, rng, mean_cycles=10_000, first_cycles=2_000)
        sink_ready(stim, "grant", segments, rng)
        gen = np.random.default_rng(rng.getrandbits(63))
        level_max = (1 << self.params["level_width"]) - 1
        wait_max = (1 << self.params["wait_width"]) - 1
        mode, threshold, limit = stim.control("mode"), stim.control("threshold"), stim.control("starvation_limit")
        level = stim.control("queue_level")
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            n = seg.length
            mode[seg.start:seg.end] = MCA if seg.index % 2 == 0 else ROUND_ROBIN
            threshold[seg.start:seg.end] = draw(rng, 0, level_max)
            limit[seg.start:seg.end] = rng.choice((0, 1, rng.randint(2, 12), rng.randint(13, wait_max), wait_max))
            steps = gen.choice(np.array([-1, 0, 1]), size=n)
            walk = np.clip(np.cumsum(steps) + rng.randint(0, level_max), 0, level_max)
            # Reflect instead of sticking at the ends for long.
            level[seg.start:seg.end] = np.abs(((walk + n) % (2 * level_max)) - level_max) if n > 4 * level_max else walk
            for name in ("compute", "comm"):
                src = stim.sources[name]
                spent = 0
                while spent < n:
                    gap = gap_draw(rng, seg.source_mode if name == "compute" or rng.random() < 0.7 else "gaps")
                    src.add(rng.getrandbits(16), gap=gap)
                    spent += gap + 1
        return stim, []

    def replay(self, trace: Trace) -> dict:
        spec = self.component
        status = FastPacker(spec.status_layout)
        col = trace.col
        rst = col("rst")
        cv, cp, cr = col("compute__valid"), col("compute__payload"), col("compute__ready")
        mv, mp, mr = col("comm__valid"), col("comm__payload"), col("comm__ready")
        gv, gp, gr = col("grant__valid"), col("grant__payload"), col("grant__ready")
        mode, thr, lim, lvl = col("mode"), col("threshold"), col("starvation_limit"), col("queue_level")
        st = col("status")
        cover = trace.coverage.counts
        level_max = (1 << self.params["level_width"]) - 1
        wait_width = self.params["wait_width"]
        ranges = self.ranges
        model = None
        names = ("grant.valid", "compute.ready", "comm.ready")
        checked = 0
        last_winner = None
        for c in range(trace.cycles):
            if rst[c]:
                if model is not None and model.wait:
                    cover["reset with comm waiting"] += 1
                model = None
                continue
            if model is None:
                model = MemoryArbiterModel(wait_width=wait_width)
                last_winner = None
            m, level, threshold, limit = mode[c], lvl[c], thr[c], lim[c]
            winner = model.decide(compute_valid=cv[c], comm_valid=mv[c], queue_level=level, threshold=threshold,
                                  starvation_limit=limit, mode=m)
            ready = gr[c]
            trace.compare(c, names, (gv[c], cr[c], mr[c]),
                          (int(winner is not None), int(winner == COMPUTE and ready), int(winner == COMM and ready)))
            if winner is not None:
                request = cp[c] if winner == COMPUTE else mp[c]
                trace.check(c, "grant.payload", gp[c], winner | request << 1)
                band = "empty" if level == 0 else "full" if level == level_max else \
                    "below threshold" if level < threshold else "at or above threshold"
                cover[f"{'MCA' if m == MCA else 'round robin'} grant, queue {band}"] += 1
                if not ready:
                    cover["grant back-pressured"] += 1
                if ready:
                    # The threshold and the limit matter only to T3-MCA.
                    cover_ranges(cover, ranges, {"queue_level": level, **({"threshold": threshold,
                                                 "starvation_limit": limit} if m == MCA else {})})
                if m == MCA and winner == COMM:
                    if model.wait >= limit:
                        cover["MCA: starvation limit reached"] += cv[c]
                        cover["MCA: starvation limit reached at its maximum"] += cv[c] and limit == model.wait_max
                    else:
                        cover["MCA: comm granted below the threshold"] += 1
                if m == ROUND_ROBIN and cv[c] and mv[c] and ready and last_winner is not None and winner != last_winner:
                    cover["round robin: alternation under contention"] += 1
                if ready:
                    last_winner = winner
            elif m == MCA and mv[c] and not cv[c]:
                cover["MCA: comm held at the threshold"] += 1
            cover["both requesters valid"] += cv[c] & mv[c]
            expected = status.pack(model.status)
            if st[c] != expected:
                trace.fail(c, "status", expected, st[c], status.diff(st[c], expected))
            checked += 1
            model.step(winner=winner, comm_valid=mv[c], grant_ready=ready)
            cover["comm wait saturates"] += model.wait == model.wait_max
        trace.checked_cycles = checked
        trace.stream_fields(names + ("status",))
        return {}
