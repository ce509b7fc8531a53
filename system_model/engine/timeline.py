"""A fluid, event-driven timeline: flows of work served continuously by shared resources.

Why fluid and not cycle by cycle: a sublayer moves gigabytes through a GPU in milliseconds,
and a study runs thousands of them. What decides who waits is which resource each piece of
work needs and how the resource is shared, not the order of individual requests (the
cycle-level channel, :mod:`.dram_cycle`, is kept as the reference the fluid DRAM rule is
checked against). So every scheme is a set of **flows** on one timeline:

* a :class:`Flow` is an amount of work (bytes, or GEMM waves) with a demand per unit of
  work on each resource it uses (DRAM units and grants, link bytes, reducer bytes, ...), a
  cap on its own rate (a GEMM wave cannot outrun its matrix work, a transfer cannot outrun
  its engine), and a class for the DRAM arbiter ("compute" or "comm");
* between two events every rate is constant, set by the sharing rule
  (:func:`.sharing.allocate`: progressive filling, with the DRAM shared as the verified
  arbiter shares it: round robin or compute first);
* a transfer can only send what exists: a flow may **follow** a leader (the GEMM producing
  its tiles), ``ratio`` units of it per unit of the leader's work; caught up, it runs at
  ``ratio`` times the leader's rate, coupled to it in the sharing (:meth:`Engine.follow`);
  ``released`` caps it further (a tile that waits for another GPU's);
* events are a flow finishing, a flow reaching a mark, a follower catching up, and timers
  (a trigger's latency, a kernel's launch). A scheme reacts with callbacks that start flows,
  link followers, release work or set timers.

A transfer still running after the GEMM ends gets whatever the resources give once the
GEMM's flows are gone: the uncontended rate, by construction.

**Invariants checked on every run** (:class:`EngineError` if one fails):

* work conservation in every interval: each running flow is at its cap, is coupled to a
  leader it has caught up with, or uses a resource that is saturated (no resource idles
  while a flow that uses it could go faster); no resource is over-committed;
* conservation of work: every flow ends with exactly its work served, and each
  resource's integrated use equals the sum of its flows' work times their demands.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from .sharing import DRAM, GRANTS, Policy, allocate

__all__ = ["Flow", "Engine", "EngineError", "RESOLUTION"]

#: Relative resolution of the invariant checks and of "done" (floating-point slack).
RESOLUTION = 1e-9
#: A run that needs more events than this is a bug (a flow that can never finish).
MAX_EVENTS = 2_000_000


#: Rounds of the cycle-level channel's pacing fixed point behind rows (``_allocate_cycle``).
PACE_ROUNDS = 8


class EngineError(RuntimeError):
    """An invariant of the timeline failed: a bug in a scheme or in the engine, never an input error."""


@dataclass(eq=False)
class Flow:
    """Work served by resources over time.

    Attributes
    ----------
    name : str
        For timelines and error messages.
    work : float
        Units of work (bytes for a transfer, waves for a GEMM).
    demand : dict[str, float]
        Resource units per unit of work. DRAM takes two entries: ``"dram"``, its service
        in byte-equivalents of bank time (a near-memory update holds its bank for a read
        and a write), and ``"dram_grants"``, the bytes of requests it puts through the
        arbiter (what round robin shares equally).
    cap : float
        Units of work per second the flow can do with every resource to itself (``inf``:
        only resources bound it).
    klass : str
        The DRAM arbiter's class: ``"compute"`` (the GEMM's traffic) or ``"comm"``.
    released : float
        A cap on the work it may do so far; ``work`` by default (:meth:`Engine.release`).
    produced : float
        Work that exists so far (tiles produced), when the flow follows a leader; ``work``
        by default (:meth:`Engine.follow`).
    lane : str
        The timeline lane the flow is drawn in ("GEMM", "link", ...).
    cycle : dict or None
        What a cycle-level DRAM service needs to know of the flow
        (:class:`.dram_cycle.CycleDram`), when the engine has one.
    serial : tuple of (float, float) or None
        A closed loop whose DRAM bursts do not overlap its other work (a k-step's reads,
        then its latency and compute, then the next step's reads): ``(seconds, bytes)`` per
        unit of work: its own time, and the reads it bursts, at the rate the DRAM gives
        its bursts (all of it, compute first; what communication leaves, round robin).
    """

    name: str
    work: float
    demand: dict[str, float]
    cap: float = math.inf
    klass: str = "comm"
    released: float | None = None
    produced: float | None = None
    lane: str = ""
    serial: tuple[float, float] | None = None
    cycle: dict | None = field(default=None, repr=False)
    #: The flow's cap with its DRAM reads this many seconds slower (a GEMM wave's Little's
    #: law); the row-aware channel applies the queueing its mix adds. None: latency-blind.
    cap_at_latency: Callable[[float], float] | None = field(default=None, repr=False)
    # -- state, kept by the engine --
    done: float = 0.0
    rate: float = 0.0
    start_s: float | None = None
    end_s: float | None = None
    on_end: list[Callable] = field(default_factory=list, repr=False)
    marks: list[tuple[float, int, Callable]] = field(default_factory=list, repr=False)
    leader: Flow | None = field(default=None, repr=False)
    ratio: float = 0.0
    lead_mark: float = 0.0
    followers: list = field(default_factory=list, repr=False)
    # -- compiled by the engine at start: demands as (resource index, coefficient) --
    terms: list = field(default_factory=list, repr=False)
    floor_terms: list = field(default_factory=list, repr=False)
    weight: float = 1.0
    dram: float = 0.0
    coupled: int = -1          # index of the leader in the interval's allocation, when caught up
    static_cap: float = math.inf
    #: The slack of "done" in units of its work (``RESOLUTION`` of it, at least of one unit).
    tol: float = field(default=0.0, init=False, repr=False)
    #: ``terms`` and ``floor_terms`` as tuples, for the sharing rule's memo key.
    terms_key: tuple = field(default=(), init=False, repr=False)

    def __post_init__(self):
        if not (self.work >= 0 and math.isfinite(self.work)):
            raise EngineError(f"flow {self.name!r}: work must be finite and >= 0, not {self.work}")
        if not self.cap > 0:
            raise EngineError(f"flow {self.name!r}: cap must be > 0, not {self.cap}")
        if self.released is None:
            self.released = self.work
        if self.produced is None:
            self.produced = self.work
        self.static_cap = self.cap
        self.tol = RESOLUTION * max(1.0, self.work)
        for key, value in self.demand.items():
            if not (value >= 0 and math.isfinite(value)):
                raise EngineError(f"flow {self.name!r}: demand on {key} must be finite and >= 0, not {value}")

    @property
    def finished(self) -> bool:
        return self.end_s is not None

    @property
    def available(self) -> float:
        """Work it may have done by now: what is released and what exists."""
        made = self.produced
        leader = self.leader
        if leader is not None:
            made += self.ratio * (leader.done - self.lead_mark)
        # min(work, released, made), written out (the engine's innermost call).
        least = self.work
        if self.released < least:
            least = self.released
        return made if made < least else least


class Engine:
    """The timeline of one GPU (by symmetry, every GPU of the group runs the same one).

    ``capacities``: resource name -> units per second. ``policy``: how the DRAM arbiter
    shares the channel between the classes (:class:`.sharing.Policy`).
    """

    def __init__(self, capacities: dict[str, float], policy: Policy, *, record: bool = False, dram_model=None,
                 row_model=None):
        for name, c in capacities.items():
            if not (c > 0 and math.isfinite(c)):
                raise EngineError(f"resource {name!r}: capacity must be finite and > 0, not {c}")
        self.capacities = dict(capacities)
        self._names = list(capacities)
        self._index = {name: i for i, name in enumerate(self._names)}
        self._caps = [capacities[n] for n in self._names]
        self._dram = self._index.get(DRAM, -1)
        self.policy = policy
        #: A cycle-level DRAM service (:class:`.dram_cycle.CycleDram`); None: the fluid rule.
        self.dram_model = dram_model
        #: The row-aware channel (:class:`.dram_rows.RowDram`); None: every byte costs alike.
        self.row_model = row_model
        #: The row-aware channel's statistics of the current interval's mix (None: no mix).
        self._row_stats = None
        self.now = 0.0
        self.active: list[Flow] = []
        self.flows: list[Flow] = []
        self._timers: list[tuple[float, int, Callable]] = []
        self._seq = 0
        self._used = [0.0] * len(self._names)
        self.events = 0
        #: Where :meth:`run` stops with work left (a scheme that keeps the fastest of several
        #: runs moves it as it learns that this one can no longer win).
        self.stop_after_s = math.inf
        self._memo: tuple | None = None          # (runnable flows and couplings, their rates)
        self.record = record
        #: Per interval, when ``record``: (start, end, {flow name: rate}, {resource: use / capacity},
        #: {lane: DRAM use / capacity}, the row-aware channel's :class:`.dram_banks.ChannelStats`
        #: of the interval's mix or None).
        self.intervals: list[tuple[float, float, dict[str, float], dict[str, float]]] = []

    # -- what schemes call --------------------------------------------------------------
    def start(self, flow: Flow, on_end: Callable | None = None) -> Flow:
        """Start ``flow`` now; ``on_end(engine, flow)`` runs when it finishes."""
        for key in flow.demand:
            if key != GRANTS and key not in self._index:
                raise EngineError(f"flow {flow.name!r} uses {key!r}, which is not a resource here "
                                  f"({', '.join(self._names)})")
        if flow.cap == math.inf and not any(a > 0 for r, a in flow.demand.items() if r in self._index):
            raise EngineError(f"flow {flow.name!r} is bounded by nothing: give it a cap or a resource")
        if on_end is not None:
            flow.on_end.append(on_end)
        flow.terms = [(self._index[r], a) for r, a in flow.demand.items() if r in self._index and a > 0]
        flow.dram = flow.demand.get(DRAM, 0.0)
        grants = flow.demand.get(GRANTS, 0.0)
        flow.weight = 1.0 / grants if grants > 0 else 1.0 / max((a for _, a in flow.terms), default=1.0)
        flow.floor_terms = [(len(self._names), grants or flow.dram)] if flow.dram > 0 else []
        flow.terms_key = (tuple(flow.terms), tuple(flow.floor_terms))
        flow.start_s = self.now
        self.flows.append(flow)
        if flow.work <= 0:
            self._finish(flow)
        else:
            self.active.append(flow)
        return flow

    def at(self, time_s: float, callback: Callable) -> None:
        """Run ``callback(engine)`` at ``time_s`` (not before now)."""
        self._seq += 1
        heapq.heappush(self._timers, (max(time_s, self.now), self._seq, callback))

    def after(self, delay_s: float, callback: Callable) -> None:
        self.at(self.now + max(0.0, delay_s), callback)

    def mark(self, flow: Flow, progress: float, callback: Callable) -> None:
        """Run ``callback(engine, flow)`` when ``flow`` has done ``progress`` units of work."""
        self._seq += 1
        heapq.heappush(flow.marks, (progress, self._seq, callback))

    def release(self, flow: Flow, amount: float) -> None:
        """Release ``amount`` more units of ``flow``'s work (never beyond its work)."""
        flow.released = min(flow.work, flow.released + amount)

    def follow(self, flow: Flow, leader: Flow | None, ratio: float = 0.0) -> None:
        """From now on ``ratio`` units of ``flow``'s work exist per unit of ``leader``'s
        (``leader`` None: none are being made)."""
        self._fold(flow)
        if leader is not None and ratio > 0 and not leader.finished:
            flow.leader, flow.ratio, flow.lead_mark = leader, ratio, leader.done
            leader.followers.append(flow)

    def produce(self, flow: Flow, amount: float) -> None:
        """``amount`` more units of ``flow``'s work exist (made at once, not by a leader)."""
        flow.produced += amount

    def _fold(self, flow: Flow) -> None:
        if flow.leader is not None:
            flow.produced += flow.ratio * (flow.leader.done - flow.lead_mark)
            if flow in flow.leader.followers:
                flow.leader.followers.remove(flow)
            flow.leader, flow.ratio = None, 0.0

    # -- the loop -----------------------------------------------------------------------
    @property
    def has_work(self) -> bool:
        """Whether a flow or a timer is left (a run stopped by ``stop_after_s`` has some)."""
        return bool(self.active or self._timers)

    def run(self) -> float:
        """Run until nothing is left, or until the clock reaches :attr:`stop_after_s`;
        returns the time of the last event. Conservation is checked when nothing is left."""
        while self.has_work:
            if self.now >= self.stop_after_s:
                return self.now
            dt, runnable = self.next_interval()
            self.finish_interval(dt, runnable)
        self._check_conservation()
        return self.now

    def next_interval(self) -> tuple[float, list[Flow]]:
        """The next interval: every runnable flow's rate, and how long until the next event
        (the loop's first half; ``tb/engine_choice.py`` drives it from SimPy's clock)."""
        self.events += 1
        if self.events > MAX_EVENTS:
            raise EngineError(f"more than {MAX_EVENTS} events: a flow that can never finish "
                              f"({', '.join(f.name for f in self.active)})")
        runnable = self._runnable()
        for f in self.active:
            f.rate = 0.0
        if runnable:
            # The same flows, coupled alike, share alike: reuse the last allocation.
            key = tuple((id(f), f.coupled) for f in runnable)
            if self._memo is not None and self._memo[0] == key:
                rates = self._memo[1]
            else:
                rates = self._allocate(runnable)      # checks the interval's invariants
                self._memo = (key, rates)
            for f, x in zip(runnable, rates, strict=True):
                f.rate = x
        dt = self._next_dt(runnable)
        if dt == math.inf:
            blocked = ", ".join(f.name for f in self.active)
            raise EngineError(f"deadlock at {self.now:.9g} s: {blocked} wait for work nobody releases")
        return dt, runnable

    def finish_interval(self, dt: float, runnable: list[Flow]) -> None:
        """The loop's second half: the flows progress ``dt`` at their rates, events fire."""
        self._advance(dt, runnable)
        self._fire()

    def _allocate(self, runnable: list[Flow]) -> list[float]:
        """The sharing rule; a serial closed loop's cap depends on what the DRAM gives its
        bursts, so it is found by fixed-point iteration (a few rounds)."""
        if self.dram_model is not None:
            gemm = [f for f in runnable if f.klass == "compute" and f.cycle is not None]
            if gemm:
                return self._allocate_cycle(runnable, gemm[0])
        rates = self._allocate_fluid(runnable)
        if self.row_model is not None:
            return self._allocate_rows(runnable, rates)
        for f, x in zip(runnable, rates, strict=True):
            f.rate = x
        self._check_interval(runnable, self._caps)
        return rates

    def _allocate_rows(self, runnable: list[Flow], rates: list[float]) -> list[float]:
        """The fluid rates, unless the row-aware channel cannot serve their mix: then each
        class keeps the fraction the channel served (:mod:`.dram_rows`) and the interval is
        shared again under those caps."""
        mix = {"gemm_read": 0.0, "gemm_nmc": 0.0, "comm_read": 0.0, "comm_update": 0.0}
        for f, x in zip(runnable, rates, strict=True):
            if f.dram <= 0 or x <= 0:
                continue
            # A near-memory update is one grant and two units of service.
            rmw = max(0.0, f.dram - f.demand.get(GRANTS, f.dram))
            single = f.dram - 2 * rmw
            if f.klass == "compute":
                mix["gemm_read"] += x * single
                mix["gemm_nmc"] += x * rmw
            else:
                mix["comm_read"] += x * single
                mix["comm_update"] += x * rmw
        row = self.row_model
        compute_s = comm_s = 1.0
        extra_s = 0.0
        self._row_stats = None
        gemms = [f for f in runnable if f.klass == "compute" and f.cap_at_latency is not None]

        def latency_matters(latency_s: float) -> bool:
            return any(f.cap_at_latency(latency_s) < f.cap * (1 - RESOLUTION) for f in gemms)
        if (mix["gemm_read"] + mix["gemm_nmc"]) > 0 and (mix["comm_read"] + mix["comm_update"]) > 0:
            compute_s, comm_s, extra_s = row.served(mix, self.policy.kind, latency_matters)
            self._row_stats = row.last
        short = min(compute_s, comm_s) < 1.0
        if not short and not (extra_s > 0 and latency_matters(extra_s)):
            for f, x in zip(runnable, rates, strict=True):
                f.rate = x
            self._check_interval(runnable, self._caps)
            return rates
        saved = [(f, f.cap, f.static_cap) for f in runnable]
        try:
            for f in gemms if extra_s > 0 else ():
                f.cap = f.static_cap = min(f.cap, f.cap_at_latency(extra_s))
            for f, x in zip(runnable, rates, strict=True):
                if f.dram > 0 and x > 0 and short:
                    share = compute_s if f.klass == "compute" else comm_s
                    f.cap = f.static_cap = max(min(f.cap, x * share), 1e-12 * x)
            rates = self._allocate_fluid(runnable)
            for f, x in zip(runnable, rates, strict=True):
                f.rate = x
            self._check_interval(runnable, self._caps)
            return rates
        finally:
            for f, cap, static in saved:
                f.cap, f.static_cap = cap, static

    def _allocate_fluid(self, runnable: list[Flow]) -> list[float]:
        serial = [f for f in runnable if f.serial is not None]
        if not serial or self._dram < 0:
            return allocate(runnable, self._caps, self.policy, self._dram)
        capacity = self._caps[self._dram]
        burst = capacity
        rates = None
        for _ in range(8):
            for f in serial:
                seconds, reads = f.serial
                f.cap = min(f.static_cap, 1.0 / (seconds + reads / burst))
            rates = allocate(runnable, self._caps, self.policy, self._dram)
            if self.policy.kind != "rr":
                break
            others = sum(f.dram * x for f, x in zip(runnable, rates, strict=True) if f.serial is None)
            new = max(capacity - others, 1e-9 * capacity)
            if abs(new - burst) <= 1e-9 * capacity:
                break
            burst = new
        return rates

    def _allocate_cycle(self, runnable: list[Flow], gemm: Flow) -> list[float]:
        """A GEMM wave beside communication on the cycle-level channel: what the rest of the
        system offers the channel (links, reducers, production; the DRAM out of the way),
        then the wave's time and the communication it serves as the flows' caps."""
        caps = list(self._caps)
        caps[self._dram] = math.inf
        saved = [(f, f.cap) for f in runnable]
        # What communication is offered: paced by the GEMM's waves (the traffic that follows
        # its production, here and at the ring's other GPUs, which run alike). First as the
        # GEMM runs alone on the channel; behind rows, where the communication may slow the
        # waves several times over, again at the pace the channel then gives them, until the
        # two agree (a fixed point: a GEMM cannot offer what it has not produced yet).
        self.dram_model.clock_s = self.now        # for a record of the waves served (recording_waves)
        alone_s, _ = self.dram_model.serve(gemm.cycle, 0.0, 0.0, 0.0)
        pace_s = alone_s
        rounds = PACE_ROUNDS if self.dram_model.channel.get("rows") is not None else 1
        for _ in range(rounds):
            gemm.cap = min(gemm.static_cap, 1.0 / pace_s)
            offered, comm, update, dma, burst, forwarded = self._offered_comm(runnable, gemm, caps)
            wave_s, served_rps = self.dram_model.serve(gemm.cycle, update, dma, burst, forwarded,
                                                       self._dma_lag_bytes(comm))
            if abs(wave_s - pace_s) <= 0.01 * pace_s:
                break
            pace_s = math.sqrt(pace_s * wave_s)
        offered_rps = (update + dma) / self.dram_model.channel["request_bytes"]
        scale = min(1.0, served_rps / offered_rps) if offered_rps > 0 else 1.0
        gemm.cap = min(gemm.static_cap, 1.0 / wave_s)
        for f, x in comm:
            f.cap = max(x * scale, 1e-12 * max(x, 1.0))
        try:
            rates = allocate(runnable, caps, self.policy, self._dram)
            for f, x in zip(runnable, rates, strict=True):
                f.rate = x
            self._check_interval(runnable, caps)
            return rates
        finally:
            for f, cap in saved:
                f.cap = cap

    @staticmethod
    def _dma_lag_bytes(comm: list) -> float:
        """How far the DMA reads offered trail the GEMM's stores (the flow's ``cycle``
        says, where it can: ``dma_lag_bytes``), the furthest behind."""
        return max((f.cycle["dma_lag_bytes"]() for f, _ in comm if f.cycle.get("dma_lag_bytes")), default=0.0)

    def _offered_comm(self, runnable: list[Flow], gemm: Flow, caps: list[float]):
        """The rates the flows ask for beside ``gemm`` at its current cap, and what the
        communication among them offers the cycle-level channel."""
        index = {id(f): i for i, f in enumerate(runnable)}
        coupled = [(f, f.coupled) for f in runnable]
        for f in runnable:
            if f.leader is not None and id(f.leader) in index:
                f.coupled = index[id(f.leader)]
        offered = allocate(runnable, caps, self.policy, self._dram)
        for f, c in coupled:
            f.coupled = c
        update = dma = burst = forwarded = 0.0
        comm = []
        for f, x in zip(runnable, offered, strict=True):
            if f is not gemm and f.cycle is not None and f.dram > 0 and x > 0:
                update += x * f.cycle["update_bytes"]
                dma += x * f.cycle["dma_bytes"]
                # A ring step's updates here are the previous GPU's DMA reads of the same step.
                forwarded += x * min(f.cycle["update_bytes"], f.cycle["dma_bytes"])
                burst = max(burst, f.cycle["burst_bytes"])
                comm.append((f, x))
        return offered, comm, update, dma, burst, forwarded

    def _runnable(self) -> list[Flow]:
        """The flows that can run this interval; a follower caught up with its leader's
        production runs coupled to it (``coupled``: the leader's index), or not at all."""
        leaders, out, followers = {}, [], []
        for f in self.active:
            f.coupled = -1
            if f.leader is None:
                if f.done < f.available - f.tol:
                    leaders[id(f)] = len(out)
                    out.append(f)
            else:
                followers.append(f)
        for f in followers:
            tol = f.tol
            if f.done >= min(f.work, f.released) - tol:
                continue                                      # held by its release cap
            if f.done < f.available - tol:
                out.append(f)
            elif id(f.leader) in leaders:
                f.coupled = leaders[id(f.leader)]
                out.append(f)
        return out

    def _next_dt(self, runnable: list[Flow]) -> float:
        dt = self._timers[0][0] - self.now if self._timers else math.inf
        for f in runnable:
            if f.rate <= 0:
                continue
            target = min(f.work, f.released) if f.leader is not None else f.available
            if f.marks:
                target = min(target, f.marks[0][0])
            dt = min(dt, max(0.0, (target - f.done) / f.rate))
            if f.leader is not None and f.coupled < 0:
                closing = f.rate - f.ratio * f.leader.rate
                if closing > 0:
                    dt = min(dt, max(0.0, (f.available - f.done) / closing))
        return dt

    def _advance(self, dt: float, runnable: list[Flow]) -> None:
        if dt <= 0:
            return
        if self.record:
            use = [0.0] * len(self._caps)
            lanes: dict[str, float] = {}
            for f in runnable:
                for r, a in f.terms:
                    use[r] += a * f.rate
                if self._dram >= 0 and f.dram > 0:
                    lanes[f.lane] = lanes.get(f.lane, 0.0) + f.dram * f.rate / self._caps[self._dram]
            self.intervals.append((self.now, self.now + dt, {f.name: f.rate for f in runnable if f.rate > 0},
                                   {n: use[i] / self._caps[i] for i, n in enumerate(self._names)}, lanes,
                                   self._row_stats))
        used = self._used
        # Leaders first: a follower's limit grows with its leader's progress.
        for f in [g for g in runnable if g.leader is None] + [g for g in runnable if g.leader is not None]:
            if f.rate > 0:
                step = max(min(f.rate * dt, f.available - f.done), 0.0)
                f.done += step
                for r, a in f.terms:
                    used[r] += a * step
        self.now += dt

    def _fire(self) -> None:
        # Marks, then flows that finished, then timers due now: a flow's end may start
        # another whose mark is due at once, so loop until nothing fires.
        fired = True
        while fired:
            fired = False
            for f in list(self.active):
                tol = f.tol
                while f.marks and f.done >= f.marks[0][0] - tol:
                    _, _, callback = heapq.heappop(f.marks)
                    callback(self, f)
                    fired = True
                if f.done >= f.work - tol and f in self.active:
                    f.done = f.work
                    self.active.remove(f)
                    self._finish(f)
                    fired = True
            while self._timers and self._timers[0][0] <= self.now + RESOLUTION * max(self.now, 1e-12):
                _, _, callback = heapq.heappop(self._timers)
                callback(self)
                fired = True

    def _finish(self, f: Flow) -> None:
        f.end_s = self.now
        f.rate = 0.0
        for follower in list(f.followers):
            self._fold(follower)
        for callback in f.on_end:
            callback(self, f)

    # -- invariants ---------------------------------------------------------------------
    def _check_interval(self, runnable: list[Flow], caps: list[float]) -> None:
        use = [0.0] * len(caps)
        for f in runnable:
            x = f.rate
            if x < -RESOLUTION or x > f.cap * (1 + 1e-6):
                raise EngineError(f"flow {f.name!r} given {x:.6g}/s outside [0, cap {f.cap:.6g}]")
            if f.coupled >= 0 and x > f.ratio * runnable[f.coupled].rate * (1 + 1e-6) + RESOLUTION:
                raise EngineError(f"flow {f.name!r} outruns the work its leader makes")
            for r, a in f.terms:
                use[r] += a * x
        saturated = [False] * len(caps)
        for r, u in enumerate(use):
            if u > caps[r] * (1 + 1e-6):
                raise EngineError(f"resource {self._names[r]!r} over-committed at {self.now:.9g} s: "
                                  f"{u:.6g} of {caps[r]:.6g}")
            saturated[r] = u >= caps[r] * (1 - 1e-6) and caps[r] < math.inf
        for f in runnable:
            if f.rate >= f.cap * (1 - 1e-6) or any(saturated[r] for r, _ in f.terms):
                continue
            if f.coupled >= 0 and f.rate >= f.ratio * runnable[f.coupled].rate * (1 - 1e-6):
                continue
            state = ", ".join(f"{self._names[r]} {use[r] / caps[r]:.3f}" for r, _ in f.terms if caps[r] < math.inf)
            raise EngineError(f"work conservation broken at {self.now:.9g} s: flow {f.name!r} runs at "
                              f"{f.rate:.6g}/s, below its cap {f.cap:.6g}, and none of its resources is saturated "
                              f"({state})")

    @property
    def used(self) -> dict[str, float]:
        """Each resource's integrated use so far."""
        return dict(zip(self._names, self._used, strict=True))

    def _check_conservation(self) -> None:
        expected = [0.0] * len(self._caps)
        for f in self.flows:
            if f.end_s is None:
                raise EngineError(f"flow {f.name!r} never finished")
            if abs(f.done - f.work) > RESOLUTION * max(1.0, f.work):
                raise EngineError(f"flow {f.name!r} served {f.done:.9g} of {f.work:.9g}")
            for r, a in f.terms:
                expected[r] += a * f.work
        for r, e in enumerate(expected):
            if abs(self._used[r] - e) > 1e-6 * max(e, 1.0):
                raise EngineError(f"resource {self._names[r]!r} served {self._used[r]:.9g} units, its flows "
                                  f"needed {e:.9g}")
