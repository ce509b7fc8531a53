"""The row-aware channel as the timeline's DRAM (``dram_model = "rows"``): can the banks
serve the mix of streams that the fluid rule gave an interval, and if not, who loses?

The fluid rule (:mod:`.sharing`) shares the DRAM's achievable bandwidth as if every byte
cost the same bank time whatever it is mixed with. For a GEMM alone that is right (its
streams fill rows in order and the banks keep up), and the achievable bandwidth
(``hbm_efficiency``) is the GPU's measured streaming fraction. Mixed with T3's traffic it is
not: an update is a read and a write to one row (two turnarounds of the data bus), a
tile's chunk is four requests in a row the GEMM's stream must then reopen.

So in every interval where the GEMM and communication both use the DRAM, the interval's
rates per stream (GEMM reads, GEMM near-memory stores, DMA reads, incoming updates) are
offered, per pseudo-channel, to :func:`.dram_banks.run_channel` under the interval's
arbiter mode. Where the channel serves everything, the fluid rates stand. Where it cannot,
it says how much of each class it served: round robin gives the classes grants in turn,
so the GEMM loses too; T3-MCA serves the GEMM first, so communication loses. The flows are
capped at those fractions of their rates and the interval is shared again.

Offered rates are fractions of the peak bandwidth, divided by what refresh leaves
(``1 - tRFC / tREFI``: the fluid rule's achievable bandwidth already excludes it, and the
channel runs without refresh here; its cost is validated on its own,
``make dram-validation``). They are rounded to :data:`RATE_STEP` of the peak, so that
intervals alike share one simulation (in-process memo and the user's cache folder).
"""

from __future__ import annotations

import atexit
import math
from collections.abc import Callable
from pathlib import Path

from ..describe.dram_timing import DramTiming
from .dram_banks import Stream, run_channel
from .sim_store import SimStore

__all__ = ["RowDram", "CLASSES", "RATE_STEP", "SIM_CYCLES", "WARMUP_CYCLES", "SATURATED_CYCLES"]

#: The interval's streams: (class, kind, pattern) per key.
CLASSES = {
    "gemm_read": ("compute", "read", "sequential"),
    "gemm_nmc": ("compute", "rmw", "tile"),
    "comm_read": ("comm", "read", "tile"),
    "comm_update": ("comm", "rmw", "tile"),
}
#: Offered rates are rounded to this fraction of the peak bandwidth.
RATE_STEP = 1 / 16
#: Cycles simulated per interval mix (after :data:`WARMUP_CYCLES`) ...
SIM_CYCLES = 1500
WARMUP_CYCLES = 300
#: ... and per mix the channel cannot keep up with, simulated again for this long. A
#: saturated mix's split between the classes settles slowly (the write buffer fills, the
#: sources back up): over 1,500 cycles the served fractions of random saturated mixes were
#: 4.7% off (mean; 21% at most) the same mixes over 24,000 cycles, over 6,000 cycles 1.3%
#: (3.2% at most). A mix the channel keeps up with is decided by the short run.
SATURATED_CYCLES = 6000
#: A GEMM keeps this many panels streaming per pseudo-channel at once.
GEMM_LANES = 4
#: Served fractions above this count as "all of it".
SERVED_ALL = 0.99
#: A class short of its offer by no more than this many requests over the measured span is
#: served in full: two tile runs, what can be in flight as the window closes. It sets the
#: channel's resolution: about 2% of a pseudo-channel's peak over the 1,500 cycles.
EDGE_REQUESTS = 8

#: Simulated mixes by key, in memory and on disk (:mod:`.sim_store`): loaded when first
#: asked for, saved at exit when new ones were simulated.
_STORE = SimStore("dram_rows.pkl", (*(Path(__file__).with_name(n) for n in ("dram_rows.py", "dram_banks.py",
                                                                           "arbiter_policy.py")),
                                     Path(__file__).parents[1] / "describe" / "dram_timing.py"))
_MEMO: dict = _STORE.data
_STATE = {"loaded": False, "new": 0}
#: When a set, every mix :meth:`RowDram.served` is asked for is added to it (the validation's
#: account of a run).
asked_keys: set | None = None


def _save_at_exit() -> None:
    if _STATE["new"]:
        _STORE.save()


class RowDram:
    """One GPU's DRAM for the timeline: ``timing`` per pseudo-channel, ``hbm_GBps`` in all."""

    def __init__(self, *, timing: DramTiming, hbm_GBps: float, page_policy: str, queue_entries: int,
                 starvation_limit: int, threshold: int | None):
        self.timing, self.page_policy = timing, page_policy
        self.peak_Bps = hbm_GBps * 1e9
        self.queue_entries, self.starvation_limit, self.threshold = queue_entries, starvation_limit, threshold
        self.refresh_left = 1.0 - timing.tRFC / timing.tREFI
        #: The statistics of the mix :meth:`served` last simulated (None: nothing to simulate).
        self.last = None

    def key(self, rates_Bps: dict[str, float], policy: str) -> tuple:
        steps = tuple(int(round(rates_Bps.get(c, 0.0) / self.peak_Bps / self.refresh_left / RATE_STEP))
                      for c in CLASSES)
        threshold = self.threshold
        if policy == "mca" and threshold is None:
            # T3-MCA's dynamic threshold from the GEMM's own use of the channel.
            use = min(1.0, (steps[0] + 2 * steps[1]) * RATE_STEP)
            threshold = max(1, math.floor(self.queue_entries * (1.0 - use)))
        return (self.timing, self.page_policy, self.queue_entries, policy,
                self.starvation_limit if policy == "mca" else 0, threshold if policy == "mca" else 0, steps)

    def served(self, rates_Bps: dict[str, float], policy: str,
               latency_matters: Callable[[float], bool] = lambda latency_s: True) -> tuple[float, float, float]:
        """(compute's, communication's) served fraction of the rates offered, under
        ``policy`` (``rr`` or ``mca``; 1 where the channel keeps up, :data:`SERVED_ALL`), and
        the seconds the mix adds to the GEMM's mean read latency against its streams alone at
        the same rates (queueing behind communication, rows it closed, turnarounds). The GEMM
        alone is simulated only where
        ``latency_matters(the GEMM's latency in the mix)``: a GEMM whose waves hide even all of
        it loses nothing to the part the mix adds."""
        key = self.key(rates_Bps, policy)
        if asked_keys is not None:
            asked_keys.add(key)
        stats = self._get(key)
        self.last = stats[2]
        mine = self._gemm_latency_s(stats)
        if mine <= 0 or not latency_matters(mine):
            return stats[0], stats[1], 0.0
        alone = self._gemm_latency_s(self._get(key[:-1] + ((key[-1][0], key[-1][1], 0, 0),)))
        return stats[0], stats[1], max(0.0, mine - alone)

    def _gemm_latency_s(self, stats: tuple) -> float:
        """The GEMM's mean read latency in a simulated mix (the slower of its two streams)."""
        if stats[2] is None:
            return 0.0
        lat = [stats[2].mean_read_latency_cycles[n] for n in ("gemm_read", "gemm_nmc")
               if stats[2].served_per_cycle.get(n, 0) > 0]
        return max(lat, default=0.0) * self.timing.tCK_ns * 1e-9

    def _get(self, key: tuple) -> tuple:
        if not _STATE["loaded"]:
            _STATE["loaded"] = True
            _STORE.load()
            atexit.register(_save_at_exit)
        stats = _MEMO.get(key)
        if stats is None:
            stats = _MEMO[key] = self._simulate(key)
            _STATE["new"] += 1
        return stats

    def _simulate(self, key: tuple) -> tuple:
        timing, page, queue, policy, starvation, threshold, steps = key
        per_request = timing.peak_bytes_per_cycle / (2 * timing.burst_bytes)   # requests per cycle at peak
        streams, offered = [], {}
        for (name, (klass, kind, pattern)), n in zip(CLASSES.items(), steps, strict=True):
            if n <= 0:
                continue
            # Rates are payload bytes: an update's request moves 64 bytes and takes two accesses.
            rate = n * RATE_STEP * per_request
            streams.append(Stream(name, klass, kind, pattern, rate=rate,
                                  lanes=GEMM_LANES if pattern == "sequential" else 1))
            offered[name] = (klass, rate)
        if not streams:
            return (1.0, 1.0, None)
        for cycles in (SIM_CYCLES, SATURATED_CYCLES):
            stats = run_channel(timing, streams, cycles=cycles, warmup_cycles=WARMUP_CYCLES,
                                policy="mca" if policy == "mca" else "round_robin", queue_entries=queue,
                                threshold=max(1, threshold), starvation_limit=max(1, starvation),
                                page_policy=page, refresh=False)
            frac = self._fractions(stats, offered)
            if min(frac.values()) >= 1.0:
                break
        return (frac["compute"], frac["comm"], stats)

    @staticmethod
    def _fractions(stats, offered: dict) -> dict[str, float]:
        """Per class: the fraction of what arrived that the channel served (1: all of it)."""
        frac = {}
        for klass in ("compute", "comm"):
            # Against what arrived (whole requests), not the nominal rate: a window holds a
            # whole number of them.
            names = [n for n, (k, _) in offered.items() if k == klass]
            want = sum(stats.offered_per_cycle[n] for n in names)
            got = sum(stats.sustained_per_cycle[n] for n in names)
            # A shortfall of a few requests is the window's edge (a tile's run in flight as
            # it closes), not a channel that cannot keep up.
            short = (want - got) * stats.span_cycles
            served = got / want if want > 0 and short > EDGE_REQUESTS else 1.0
            frac[klass] = 1.0 if served >= SERVED_ALL else served
        return frac
