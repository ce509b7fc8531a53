"""T3 on the timeline: the staged GEMM, track & trigger, near-memory reduction, and the DRAM
arbiter (round robin for ``t3``, compute first for ``t3_mca``).

The protocol (the paper's Fig. 7), per GPU of a ring of ``tp``: the GEMM computes its output
in ``tp`` stages, one chunk each, in the ring's staggered order (:func:`~system_model.kernels.gemm.gemm_timing`
with ``stages=tp``; T3's tracked stores bypass the L2):

* **stage 1**'s stores go straight to the next GPU as the epilogue writes them, through a
  wave's worth of output buffer: the GEMM may run one wave ahead of the link, no more;
* a **middle stage**'s chunk is forwarded by the DMA engine, tile by tile as the tracker
  triggers it, once its local updates and the previous GPU's have landed: it can start when
  its first tile is done and the link has sent the previous stage's chunk, it can only send
  what the GEMM has produced, and its last tile waits for the previous GPU's last one
  (a hop after that GPU's previous step ends, the same time by symmetry);
* the **last stage** stays local: its chunk is this GPU's result once the last arrival has
  been added (the reducer's write latency).

Every local tracked store and every arrival is a near-memory update: one grant, two units of
bank time (``nmc_update_units``) and a reducer's slot; a forward reads its chunk once (the
DMA) and, by symmetry, the previous GPU's forward arrives here at the same rate. The
all-gather that completes the all-reduce then runs alone (the library's ring).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import replace

from ..engine.sharing import DRAM, GRANTS
from ..engine.timeline import Engine, Flow
from ..kernels.collectives import hardware_rs_crossings
from ..kernels.gemm import wave_bytes_before, wave_stage_bytes, wave_stage_share
from .context import GemmRun, SchemeResult, Sublayer, direct_na, fastest_of, na, run_to_beat, traffic

__all__ = ["t3_ring", "arrival_demand", "ring_step_Bps", "hardware_rs_s", "hardware_rs_from_s",
           "ring_chains", "hardware_rs_on_timeline", "t3_direct", "ideal_rs_nmc"]


def _trigger_s(sub: Sublayer) -> float:
    """A tile's last write to its first byte on the wire: the tracker and DMA path (RTL
    timing), the DMA's first DRAM read, and beyond the node the NIC's doorbell and work
    request."""
    t = sub.block.trigger_to_link_s(sub.gpu.mc_clock_GHz) + sub.dram_latency_s
    if not sub.in_domain:
        t += sub.transport.nic_doorbell_ns * 1e-9
    return t


def _forward_demand(sub: Sublayer, *, dma_read: bool, efficiency: float) -> dict[str, float]:
    """Resource units per byte a ring step forwards: the wire's, the DMA's read here (with
    ``dma_read``), and the update the arrival makes in memory and in a reducer."""
    u = sub.gpu.nmc_update_units
    d = dict(sub.ring_demand(efficiency))
    d[DRAM] = (1.0 if dma_read else 0.0) + u          # the DMA's read here, the arrival's update here
    d[GRANTS] = (1.0 if dma_read else 0.0) + 1.0
    d["reducers"] = 1.0
    return d


def arrival_demand(sub: Sublayer) -> dict[str, float]:
    """Resource units per byte a ring step's arrival takes here: its update in memory and
    in a reducer (the wire is the sender's)."""
    return {r: a for r, a in _forward_demand(sub, dma_read=False, efficiency=1.0).items() if r not in ("link", "nic")}


def ring_step_Bps(sub: Sublayer) -> float:
    """Bytes per second a ring step of T3's reduce-scatter moves on its own: its DMA read,
    the link and the arrival's update, whichever bounds it."""
    demand = _forward_demand(sub, dma_read=True, efficiency=sub.transport.ce_link_efficiency)
    caps = sub.capacities()
    return min(caps[r] / a for r, a in demand.items() if r in caps and a > 0)


#: A staged layout replaces the fastest so far only when it is faster by more than this
#: fraction: the engine resolves work to a billionth, and which of two layouts within that
#: is reported is rounding, not a result.
LAYOUT_TIE = 1e-6
#: What the engine's completion tolerance and rounding may take off a run's lower bound
#: (:func:`_t3_ring` stops a layout once the bound shows it cannot win).
BOUND_SLACK = 1e-7

#: Runs of up to this many waves alike produce wave by wave (:class:`_Production`).
EXACT_RUN_WAVES = 16


class _Production:
    """What a staged GEMM has produced of each stage, and the transfers that follow it.

    A wave's tiles exist at its end: its CUs start their tiles together and each computes
    one for the whole wave. (The production once followed the GEMM's progress within a wave,
    as if its tiles finished at staggered times: a forward that had started sent the next
    wave's tiles while they were still being computed, which the peers' schemes, whose tiles
    store as their wave ends, could not. On MI355X a 128-row GEMM of one wave on 256 CUs took
    T3 139.6 us and a 130-row one of two waves 132.8 us; on 120 CUs rather than 112 the first
    was 9.5 us faster for 8 tiles of its third stage in the first wave.)

    Waves alike run as one flow (:class:`~system_model.schemes.context.GemmRun`). A run of
    up to :data:`EXACT_RUN_WAVES` waves produces at each wave's end: the DMA's burst as a
    wave's tiles complete together, which the cycle-level crosscheck's micro-system (runs of
    a few waves) resolves against the RTL. A longer run's production is followed one wave
    behind: after ``x`` of its ``n`` waves, ``x - 1`` waves' bytes exist (none in its first
    wave), and all ``n`` at its end; never ahead of the waves that ended (``floor(x)``),
    behind them by at most a wave, and exact at the run's end. An event at every wave's end
    took a GEMM of 8,000 waves (48,617 x 113,663 x 48,617 on MI210, TP 20) 2.3 times as long
    to evaluate. The two agree to round-off on the paper's headline study and on 260 random
    configurations (the sceptic review of 2026-12-07); in the sweep T3 under round robin is
    up to 1.5 points faster at 19 of 3,072 rows, its DMA's reads spread over a wave meeting
    the GEMM's less than in bursts."""

    def __init__(self, gemm, stages: int):
        self.gemm = gemm
        self.base = [0.0] * stages           # produced by the waves credited so far
        self.ratio = [0.0] * stages          # bytes per wave in the current run
        self.run: Flow | None = None         # the GEMM's current run of waves
        self.exact = False                   # the current run produces wave by wave
        self.credited = 0                    # of the current run's waves, in ``base``
        self.following = False               # a long run's first wave has ended
        self.followers: dict[int, Flow] = {}
        self.first_wave = [None] * stages    # the first wave holding stage s's tiles
        for w in range(gemm.waves):
            for st in wave_stage_bytes(gemm, w):
                if self.first_wave[st] is None:
                    self.first_wave[st] = w

    def produced(self, s: int) -> float:
        if self.run is None or self.exact:
            return self.base[s]
        x = self.run.work if self.run.finished else self.run.done
        return self.base[s] + self.ratio[s] * max(0.0, x - 1.0)

    def start_run(self, engine: Engine, flow: Flow, w: int) -> None:
        """A run of waves alike starts at wave ``w``."""
        self.end_run(engine)
        parts = wave_stage_bytes(self.gemm, w)
        self.ratio = [parts.get(st, 0.0) for st in range(len(self.ratio))]
        self.run, self.credited, self.following = flow, 0, False
        self.exact = flow.work <= EXACT_RUN_WAVES
        if self.exact:
            for i in range(1, round(flow.work) + 1):
                engine.mark(flow, i, lambda e, f: self._credit(e, 1))
        elif flow.work > 1:
            engine.mark(flow, 1.0, lambda e, f: self._follow(e))

    def _credit(self, engine: Engine, waves: int, *, followed: bool = False) -> None:
        """``waves`` more of the current run's waves have ended (``followed``: the followers
        followed all but the last of them, one wave behind)."""
        self.credited += waves
        for st, r in enumerate(self.ratio):
            if r <= 0:
                continue
            self.base[st] += r * waves
            f = self.followers.get(st)
            if f is not None and not f.finished:
                # Followed: the engine folded the waves it followed (all but the last) as the
                # run ended; the last wave's bytes are added here.
                engine.produce(f, r if followed else r * waves)

    def _follow(self, engine: Engine) -> None:
        self.following = True
        for st, f in self.followers.items():
            if not f.finished and self.ratio[st] > 0:
                engine.follow(f, self.run, self.ratio[st])

    def end_run(self, engine: Engine) -> None:
        """The current run's last wave has ended: all its tiles exist."""
        if self.run is None:
            return
        self._credit(engine, round(self.run.work) - self.credited, followed=not self.exact)
        self.run = None

    def link(self, engine: Engine, s: int, f: Flow) -> None:
        """``f`` sends stage ``s``'s bytes as they are produced."""
        f.produced = self.produced(s)
        self.followers[s] = f
        run = self.run
        # (Following only once the first wave's mark has fired: the engine fires it within
        # its tolerance of 1.0, so ``done`` may still be just under it.)
        if run is not None and self.following and not run.finished and self.ratio[s] > 0:
            engine.follow(f, run, self.ratio[s])


#: The most waves a launch on fewer CUs may take (:func:`staged_launches`).
LAUNCH_MAX_WAVES = 4


def staged_launches(gemm) -> list[int]:
    """CU counts, fewer than ``gemm``'s, that the runtime may also launch a staged GEMM of
    at most three waves on; T3 takes the fastest launch.

    A GEMM of one wave finishes every chunk at once and nothing overlaps (of two uneven
    waves, most of it). A GEMM whose waves wait on DRAM (few tile columns: a wave spans many
    tile rows and reads as many panels of A) puts its first chunk out only after a long
    first wave. On fewer CUs the first chunks leave while the rest computes:
    * two, three or four even waves (``ceil(tiles / w)`` CUs);
    * launches whose waves hold whole stages: ``ceil(largest stage's tiles / w)`` CUs, so
      that each stage fills ``w`` waves and its last tile is not pushed into the next
      stage's wave (159 + 156 tiles on 158 CUs put one tile of the first stage in the second
      wave and overlapped nothing), up to :data:`LAUNCH_MAX_WAVES` waves.
    The candidates follow the stage sizes, so a bigger GEMM is never offered a layout its
    smaller self is not (the invariant suite found M 13,360 -> 13,778 on an MI300X variant 6.6%
    faster when only even halves were tried, and N 256 -> 513 on an H100 variant at TP 30 10%
    faster when three-wave GEMMs were offered nothing: the bigger GEMM's six shorter waves
    started the ring 22 us sooner).
    """
    if gemm.waves >= LAUNCH_MAX_WAVES:
        return []
    candidates = {math.ceil(gemm.tiles / w) for w in range(2, LAUNCH_MAX_WAVES + 1)}
    largest = max(gemm.stage_tiles)
    for w in range(1, LAUNCH_MAX_WAVES + 1):
        cus = math.ceil(largest / w)
        if cus >= 1 and math.ceil(gemm.tiles / cus) <= LAUNCH_MAX_WAVES:
            candidates.add(cus)
    return sorted(c for c in candidates if 1 <= c < gemm.cus)


def _staged_gemms(sub: Sublayer):
    """T3's staged GEMMs to try: each way of cutting the output the sublayer allows
    (:attr:`~system_model.schemes.context.Sublayer.stage_layouts`), on every CU and on the
    fewer CUs of :func:`staged_launches`; the first is the GEMM by rows on every CU."""
    for columns in sub.stage_layouts:
        gemm = sub.gemm(stages=sub.tp, stores_cached=False, stage_columns=columns)
        yield gemm
        for cus in staged_launches(gemm):
            yield sub.gemm(stages=sub.tp, stores_cached=False, cus=cus, stage_columns=columns)
        yield from sub.staged_gemms(stores_cached=False, stage_columns=columns)[1:]


def t3_ring(sub: Sublayer, *, policy: str, record: bool = False, name: str | None = None,
            gemm=None, beat_s: float = math.inf) -> SchemeResult | None:
    """T3 (``policy`` "rr") or T3-MCA ("mca") on a ring of ``sub.tp`` GPUs (``gemm``: its
    staged waves, when given rather than derived from the sublayer: the crosscheck's).

    ``beat_s``: a time to beat, where the caller keeps the fastest of several runs (of the
    library's kernels): None when the run is sure to end no sooner (each staged layout is
    stopped once it cannot win, :func:`_t3_ring`)."""
    name = name or ("t3_mca" if policy == "mca" else "t3")
    if not sub.cfg.t3_blocks:
        return na(name, "no tracker or near-memory reducer on this GPU")
    if gemm is None:
        # The same sublayer, policy and recording give the same run (T3, T3-MCA and the
        # peers' T3 ring share it); a run stopped is known only to end no sooner than the
        # time it was asked to beat (a float).
        memo = sub.__dict__.setdefault("_t3_runs", {})
        key = (policy, record)
        known = memo.get(key)
        if known is None or (isinstance(known, float) and beat_s > known):
            best = fastest_of(lambda gemm, beat: _t3_ring(sub, policy=policy, record=record, gemm=gemm, beat_s=beat),
                              _staged_gemms(sub), beat_s, tie=LAYOUT_TIE)
            # A layout stopped by beat_s ends no sooner; where no layout ended before it, the
            # fastest that ran is not known to be the fastest of all: only that none beats it.
            if best is None or (best.available and best.time_s >= beat_s):
                best = beat_s * (1 - LAYOUT_TIE)
            known = memo[key] = best
        return None if isinstance(known, float) else replace(known, scheme=name)
    return _t3_ring(sub, policy=policy, record=record, gemm=gemm, name=name)


def _t3_ring(sub: Sublayer, *, policy: str, record: bool, gemm, name: str = "t3",
             beat_s: float = math.inf) -> SchemeResult | None:
    """One staged GEMM's run; None once it is sure to end no sooner than ``beat_s``.

    :func:`t3_ring` keeps the fastest of several layouts, so a run that has lost is stopped
    where a lower bound on its end shows it, not simulated to its end. The bound: the
    reduce-scatter's forwarded steps (2 to ``tp - 1``) follow one another (a step starts
    when the previous one has ended), and each takes at least its chunk at a forward's rate
    alone, and at least a hop, a trigger and its last tile after the previous step's end
    (its last tile is released then); step 1 (the epilogue's stores) is bounded only by the
    clock; the last step's end, a hop, the reducer's write and what follows the
    reduce-scatter are still to come. While the GEMM runs the sublayer ends after now, its
    runs of waves still to come at their least (:meth:`GemmRun.least_s`), and those three.
    The rates are the engine's allocation's, which fills to a billionth of a capacity
    (:data:`BOUND_SLACK` covers that and the completion tolerance)."""
    tp = sub.tp
    stage_bytes = gemm.stage_bytes
    tr = sub.transport
    u = sub.gpu.nmc_update_units
    trigger_s, hop = _trigger_s(sub), sub.latency_s
    engine = sub.engine(policy, record=record)
    timeline: list = []
    prod = _Production(gemm, tp)
    write_s = sub.block.reducer_write_s(sub.gpu.mc_clock_GHz)
    bound = _RingBound(stage_bytes[:max(tp - 1, 0)], _forward_rate_Bps(sub, engine), gemm.out_tile_bytes,
                       hop + _trigger_s(sub), hop, write_s + sub.after_rs_s, beat_s)
    flows: list[Flow | None] = [None] * tp
    ends: list[float | None] = [None] * tp
    state = {"gemm_end": None}

    # Stage 1: the epilogue's stores go to the next GPU through one wave's output buffer:
    # all but a wave's worth cross while the GEMM computes (its waves carry them on the
    # links), the last wave's worth drains after. The previous GPU's stage 1 arrives here,
    # by symmetry at the same pace, as near-memory updates: communication's, in the DRAM.
    b0 = stage_bytes[0] if tp > 1 else 0.0
    buffered = min(b0, gemm.cus * gemm.out_tile_bytes)
    on_link = (b0 - buffered) / b0 if b0 > 0 else 0.0
    stage1 = _forward_demand(sub, dma_read=False, efficiency=tr.sm_link_efficiency)
    wire = {r: a for r, a in stage1.items() if r in ("link", "nic")}
    landing = arrival_demand(sub)
    stage1_waves = [w for w in range(gemm.waves) if 0 in wave_stage_bytes(gemm, w)]
    arrivals = Flow("step 1 (arrivals)", b0 - buffered, landing, produced=0.0, lane="link",
                    cycle=sub.comm_cycle(dma_read=False))
    step1_parts = {"arrivals": None, "buffer": None}

    def extra(w: int) -> dict:
        b = wave_stage_bytes(gemm, w).get(0, 0.0) * on_link
        return {r: a * b for r, a in wire.items()} if b > 0 and tp > 1 else {}

    # Each run of waves' least time (GemmRun.least_s, below), and the least of the runs
    # after it: the bound's GEMM side.
    least_runs: dict[int, float] = {}
    rest_after: dict[int, float] = {}

    def on_run(e: Engine, flow: Flow, w: int, n: int) -> None:
        e.stop_after_s = bound.run_started(e.now, least_runs[w], rest_after[w])
        prod.start_run(e, flow, w)
        if not arrivals.finished:
            e.follow(arrivals, flow, wave_stage_bytes(gemm, w).get(0, 0.0) * on_link)

    def step1_part_done(part: str, t: float) -> None:
        step1_parts[part] = t
        if all(v is not None for v in step1_parts.values()):
            step_done(0, max(step1_parts.values()))

    def local_fraction(w: int) -> float:
        parts = wave_stage_bytes(gemm, w)
        total = sum(parts.values())
        return 1.0 - parts.get(0, 0.0) / total if total else 1.0

    produced_at: list[float | None] = [None] * tp      # when the GEMM finished a stage's tiles

    def arrival_s() -> float:
        """A hop, and on a cycle-level DRAM the arrival's wait at the arbiter before it is
        added in memory (the tracker counts it then)."""
        return hop + (engine.dram_model.comm_wait_s if engine.dram_model is not None else 0.0)

    def last_tile_free(s: int) -> float | None:
        """A step's last tile leaves once both its copies are complete: the previous GPU's
        (a hop after that GPU's previous step ends, the same time by symmetry) and this
        GPU's own (the stage's last wave), and its trigger has fired."""
        if ends[s - 1] is None or produced_at[s] is None:
            return None
        return max(ends[s - 1] + arrival_s(), produced_at[s]) + trigger_s

    def schedule_release(s: int) -> None:
        t = last_tile_free(s)
        if t is not None and 1 <= s < tp - 1:
            engine.at(t, lambda e: _release_all(e, s))

    def step_done(s: int, t_end: float) -> None:
        ends[s] = t_end
        engine.stop_after_s = bound.step_ended(s, t_end)
        if record:
            timeline.append(("link", f"step {s + 1}", flows[s].start_s if flows[s] else t_end, t_end + hop))
        schedule_release(s + 1)
        try_start(s + 1)

    def _release_all(e: Engine, s: int) -> None:
        f = flows[s]
        if f is not None and not f.finished:
            e.release(f, f.work)

    def start_forward(s: int) -> None:
        demand = _forward_demand(sub, dma_read=True, efficiency=tr.ce_link_efficiency)
        free = last_tile_free(s)
        hold = free is None or engine.now < free - 1e-15
        cycle = sub.comm_cycle(dma_read=True)
        f = Flow(f"step {s + 1}", stage_bytes[s], demand, lane="link",
                 released=max(0.0, stage_bytes[s] - gemm.out_tile_bytes) if hold else None, cycle=cycle)
        if cycle is not None and sub.cfg.cycle_rows is not None:
            # Behind rows, where the DMA reads among the stores matters: it reads its chunk's
            # tiles in the order they finished, as far behind the GEMM's stores (the stages'
            # chunks end to end) as the link has left it.
            before = sum(stage_bytes[:s])
            cycle["dma_lag_bytes"] = lambda: max(0.0, sum(prod.produced(k) for k in range(tp)) - before - f.done)
        flows[s] = f
        prod.link(engine, s, f)
        engine.start(f, lambda e, fl: step_done(s, e.now))

    def try_start(s: int) -> None:
        """Forward of stage ``s`` (1 < s + 1 < tp) once the previous step has left the link
        and its first tile is done and triggered."""
        if s < 1 or s >= tp - 1 or flows[s] is not None or ends[s - 1] is None:
            return
        if stage_bytes[s] == 0:
            # An empty stage (more GPUs than tile rows) is done at once; its successor starts
            # from the event queue, not from here, so that a run of empty stages is a loop of
            # events, not a recursion as deep as the ring (a TP of 512 overflowed the stack).
            flows[s] = engine.start(Flow(f"step {s + 1}", 0.0, {}, cap=1.0),
                                    lambda e, fl: e.after(0.0, lambda e2: step_done(s, e2.now)))
            return
        w = prod.first_wave[s]
        if run.waves_done() < w + 1 - 1e-9:
            return                                          # the wave end's mark calls again
        ready = state.setdefault(("ready", s), engine.now + trigger_s)
        if ready > engine.now + 1e-15:
            engine.at(ready, lambda e: try_start(s))
        else:
            start_forward(s)

    def wave_end(e: Engine, w: int) -> None:
        for s in range(1, tp - 1):
            if gemm.stage_end_waves[s] == w and produced_at[s] is None:
                produced_at[s] = e.now
                schedule_release(s)
            if prod.first_wave[s] == w:
                state[("ready", s)] = e.now + trigger_s
                try_start(s)
        if stage1_waves and w == stage1_waves[-1] and tp > 1:
            # The buffered part of stage 1 drains (its first tile already left: no trigger).
            f0 = Flow("step 1 (buffer)", buffered, stage1, lane="link", cycle=sub.comm_cycle(dma_read=False))
            flows[0] = f0
            e.start(f0, lambda e2, fl: step1_part_done("buffer", e2.now))

    def gemm_end(e: Engine) -> None:
        prod.end_run(e)
        state["gemm_end"] = e.now
        e.stop_after_s = bound.gemm_ended()

    marks = {prod.first_wave[s] for s in range(1, tp - 1) if prod.first_wave[s] is not None}
    marks |= {gemm.stage_end_waves[s] for s in range(1, tp - 1) if gemm.stage_end_waves[s] >= 0}
    if stage1_waves:
        marks.add(stage1_waves[-1])
    run = GemmRun(sub, gemm, store_units=u, local_fraction=local_fraction, on_wave=wave_end, on_end=gemm_end,
                  on_run=on_run, extra=extra, marks_at=marks)
    rest = 0.0
    for first, n, _ in reversed(gemm.segments):
        least_runs[first] = run.least_s(first, n)
        rest_after[first] = rest
        rest += least_runs[first]
    if tp > 1 and b0 > 0:
        engine.start(arrivals, lambda e, fl: step1_part_done("arrivals", e.now))
    run.start(engine)
    if tp > 1 and b0 == 0:
        step_done(0, 0.0)
    last = tp - 2
    engine.stop_after_s = min(engine.stop_after_s, bound.deadline())
    engine.run()
    if engine.has_work:
        return None
    received = (ends[last] + hop) if last >= 0 else 0.0
    rs_done = max(state["gemm_end"], received) + write_s
    total = rs_done + sub.after_rs_s
    if record:
        timeline.append(("GEMM", "GEMM", 0.0, state["gemm_end"]))
        if sub.all_reduce:
            timeline.append(("AG", "all-gather", rs_done, total))
    out = gemm.output_bytes
    forwarded = sum(stage_bytes[1:tp - 1])
    rs_alone = hardware_rs_s(sub)
    return SchemeResult(
        name, total, state["gemm_end"],
        traffic(gemm.dram_read_bytes, out - stage_bytes[0], (forwarded, out - stage_bytes[-1]), sub.ag_traffic),
        timeline, slowdowns={"gemm": state["gemm_end"] / sub.gemm_alone_s,
                             "collective": rs_done / rs_alone if rs_alone > 0 else 1.0},
        bound="ideal_rs", intervals=engine.intervals, events=engine.events)


def _forward_rate_Bps(sub: Sublayer, engine: Engine) -> float:
    """The most bytes per second a ring step's forward can move: its wire, reducer and link
    resources at the engine's capacities (the DRAM's left out: a cycle-level channel serves
    it by its own rule)."""
    demand = _forward_demand(sub, dma_read=True, efficiency=sub.transport.ce_link_efficiency)
    return min((engine.capacities[r] / a for r, a in demand.items()
                if r in engine.capacities and r != DRAM and a > 0), default=math.inf)


class _RingBound:
    """A lower bound on when T3's ring run ends, as the clock at which it passes ``beat_s``
    (:func:`_t3_ring`'s docstring says why each term holds). ``stage_bytes``: the steps'
    chunks, step 1's first; ``rate_Bps``: a forward's most; ``latency_s``: a hop and a
    trigger; ``tail_s``: the reducer's write and what follows the reduce-scatter."""

    def __init__(self, stage_bytes, rate_Bps: float, tile_bytes: float, latency_s: float, hop_s: float,
                 tail_s: float, beat_s: float):
        # A forwarded step's least time after the previous one's end: its chunk at the rate,
        # or a hop, a trigger and its last tile; an empty stage none. (Step 1's, the
        # epilogue's stores, is never counted: only the clock bounds it.)
        least = [0.0] + [0.0 if b <= 0 else max(b / rate_Bps, latency_s + min(tile_bytes, b) / rate_Bps)
                         for b in stage_bytes[1:]]
        # after[k]: the least time from step k's end to the sublayer's.
        self.after = [0.0] * len(least)
        rest = hop_s + tail_s
        for k in range(len(least) - 1, -1, -1):
            self.after[k] = rest
            rest += least[k]
        self.tail_s = tail_s
        self.target_s = beat_s / (1 - BOUND_SLACK)
        self.steps_ended = 0
        self.gemm_done = False
        self.gemm_rest_s = 0.0        # the GEMM's least time after the run of waves now running
        self.fixed_s = 0.0            # the bound from the last step's end or run's start, the clock aside

    def deadline(self) -> float:
        if self.target_s == math.inf:
            return math.inf
        if self.fixed_s >= self.target_s:
            return -math.inf
        clock = []
        if self.steps_ended < len(self.after):
            # The first step not ended ends no sooner than now.
            clock.append(self.target_s - self.after[self.steps_ended])
        if not self.gemm_done:
            # Nor does the GEMM's running run of waves; the runs after it take their least.
            clock.append(self.target_s - self.tail_s - self.gemm_rest_s)
        return min(clock, default=math.inf)

    def step_ended(self, s: int, t_s: float) -> float:
        self.steps_ended = s + 1
        # The next step ends a least time after this one's (after[s] counts it).
        self.fixed_s = max(self.fixed_s, t_s + self.after[s])
        return self.deadline()

    def run_started(self, t_s: float, least_s: float, rest_s: float) -> float:
        """A run of the GEMM's waves started at ``t_s``: it takes ``least_s`` at least (its
        waves at their cap), and the runs after it ``rest_s``."""
        self.gemm_rest_s = rest_s
        self.fixed_s = max(self.fixed_s, t_s + least_s + rest_s + self.tail_s)
        return self.deadline()

    def gemm_ended(self) -> float:
        self.gemm_done = True
        return self.deadline()


def hardware_rs_s(sub: Sublayer) -> float:
    """T3's reduce-scatter of an output already in memory, alone (``ideal_rs_nmc``): every
    step a DMA forward of a chunk whose arrivals are added in memory, pipelined tile by tile
    (a step starts when the previous one has left the link; its last tile waits for the
    previous GPU's, a hop and a trigger after that GPU's step ends).

    The timeline of these flows alone, in closed form (:func:`hardware_rs_on_timeline` runs
    them on the engine; a test holds the two equal)."""
    if sub.tp < 2:
        return 0.0
    rate, trigger_s, hop = ring_step_Bps(sub), _trigger_s(sub), sub.latency_s
    chunk = sub.chunk
    tile = min(sub.tile_bytes, chunk)
    step = max(chunk / rate, hop + trigger_s + tile / rate)
    return (trigger_s + chunk / rate + (sub.tp - 2) * step + hop
            + sub.block.reducer_write_s(sub.gpu.mc_clock_GHz))


def hardware_rs_from_s(sub: Sublayer, doorbells_s: list[float], local_s: list[list[float]] | None = None,
                       beside_Bps: list[float] | None = None) -> float:
    """T3's reduce-scatter of outputs already in memory when each GPU's starts on its own
    (``doorbells_s[g]``: GPU ``g``'s first step may go, its GEMM done; ``local_s[g][k]``:
    when GPU ``g``'s own part of the chunk it forwards in step ``k + 1`` exists, and at
    ``k = N - 1``, where the list is that long, of the chunk it keeps; by default its
    doorbell): when the last GPU's chunk is complete (:func:`ring_chains`)."""
    return ring_chains(sub, doorbells_s, local_s, beside_Bps)[0]


def ring_chains(sub: Sublayer, doorbells_s: list[float], local_s: list[list[float]] | None = None,
                beside_Bps: list[float] | None = None) -> tuple[float, dict[tuple[int, int], tuple]]:
    """:func:`hardware_rs_from_s`, and every step: ``{(origin GPU, step): (GPU, start, end)}``,
    a chain's last step with a fourth field: when the chunk is complete at the GPU that keeps
    it (its last tile added, and that GPU's own part of the chunk written).

    Why not :func:`hardware_rs_s` after the last doorbell: the hardware forwards a tile when
    its count is complete, not step by step. Each GPU's first chunk starts a chain through
    the next ``N - 2`` GPUs; a GPU forwards a chain's chunk as its tiles arrive and its own
    part exists, on a link that serves the chunks in the order they became ready. A chain
    that reaches GPUs whose own GEMMs ended before finds their links free, and pays a hop, a
    trigger and a tile per step rather than a chunk, so the ring may end sooner than a
    whole reduce-scatter after the last GEMM.

    Every step as in :func:`hardware_rs_s`: a chunk at the ring step's rate, or while the
    sending or the receiving GPU's GEMM still runs (before its doorbell) at the rate the ring
    gets beside it (``beside_Bps[g]``, the slower of the two); its first tile forwarded a
    trigger after it arrives, its last a hop, a trigger and a tile after the previous GPU's
    last. With every doorbell at one time it is :func:`hardware_rs_s` later."""
    n = sub.tp
    if len(doorbells_s) != n or not all(math.isfinite(d) and d >= 0 for d in doorbells_s):
        raise ValueError(f"doorbells_s must have one finite time >= 0 per GPU ({n}), not {doorbells_s}")
    if local_s is not None and (len(local_s) != n or min(map(len, local_s)) < n - 1):
        raise ValueError(f"local_s must have one list per GPU ({n}), each of at least {n - 1} times")
    if beside_Bps is not None and (len(beside_Bps) != n or not all(b > 0 for b in beside_Bps)):
        raise ValueError(f"beside_Bps must have one rate per GPU ({n}), each above 0")
    if n < 2:
        return max(doorbells_s, default=0.0), {}
    rate, trigger_s, hop = ring_step_Bps(sub), _trigger_s(sub), sub.latency_s
    chunk = sub.chunk
    tile = min(sub.tile_bytes, chunk)
    chunk_s, tile_s = chunk / rate, tile / rate

    def took(g: int, start: float) -> float:
        """A chunk from ``start`` between GPU ``g`` and the next, each at its rate until its
        GEMM ends."""
        if beside_Bps is None:
            return chunk_s
        pair = ((doorbells_s[g], beside_Bps[g]), (doorbells_s[(g + 1) % n], beside_Bps[(g + 1) % n]))
        t, left = start, chunk
        for until in sorted({d for d, _ in pair if d > start}) + [math.inf]:
            r = min([rate] + [b for d, b in pair if t < d])
            if left <= r * (until - t):
                return t + left / r - start
            left -= r * (until - t)
            t = until
        return t - start

    link_free = [0.0] * n
    steps: dict[tuple[int, int], tuple] = {}
    last_done = 0.0
    write_s = sub.block.reducer_write_s(sub.gpu.mc_clock_GHz)
    # (ready, origin GPU, step, the step before's end) in the order they become ready.
    ready = [(doorbells_s[o] + trigger_s, o, 1, 0.0) for o in range(n)]
    heapq.heapify(ready)
    while ready:
        at, o, k, before_end = heapq.heappop(ready)
        g = (o + k - 1) % n
        start = max(at, link_free[g])
        step = took(g, start)
        end = start + step if k == 1 else max(start + step, before_end + hop + trigger_s + tile_s)
        link_free[g] = end
        steps[(o, k)] = (g, start, end)
        nxt = (g + 1) % n
        if k == n - 1:
            # The chain's last chunk is complete at the GPU that keeps it once the last tile
            # has arrived and been added, and that GPU's own part of it exists (its last
            # stage's, by its doorbell at the latest): no GPU's result precedes its GEMM.
            kept = local_s[nxt][n - 1] if local_s is not None and len(local_s[nxt]) >= n else doorbells_s[nxt]
            done = max(end + hop, kept) + write_s
            steps[(o, k)] = (g, start, end, done)
            last_done = max(last_done, done)
            continue
        first_tile = start + tile_s + hop + trigger_s
        own = local_s[nxt][k] if local_s is not None else doorbells_s[nxt]
        heapq.heappush(ready, (max(first_tile, own), o, k + 1, end))
    return last_done, steps


def hardware_rs_on_timeline(sub: Sublayer) -> float:
    """:func:`hardware_rs_s` run on the engine."""
    return _hardware_rs(sub)[0]


def _hardware_rs(sub: Sublayer) -> tuple[float, Engine]:
    tp = sub.tp
    engine = sub.engine("rr")
    trigger_s, hop = _trigger_s(sub), sub.latency_s
    demand = _forward_demand(sub, dma_read=True, efficiency=sub.transport.ce_link_efficiency)
    chunk = sub.chunk
    ends = []

    def step(e: Engine, s: int) -> None:
        if s >= tp - 1:
            return
        f = Flow(f"step {s + 1}", chunk, demand, released=max(0.0, chunk - sub.tile_bytes) if s > 0 else chunk)

        def done(e2: Engine, flow: Flow) -> None:
            ends.append(e2.now)
            step(e2, s + 1)
        e.start(f, done)
        if s > 0:
            prev = ends[-1]
            e.at(prev + hop + trigger_s, lambda e2: e2.release(f, chunk) if not f.finished else None)
    engine.after(trigger_s, lambda e: step(e, 0))
    engine.run()
    time = (ends[-1] + hop if ends else 0.0) + sub.block.reducer_write_s(sub.gpu.mc_clock_GHz)
    return time, engine


def ideal_rs_nmc(sub: Sublayer) -> SchemeResult:
    """The GEMM alone, then T3's reduce-scatter (no overlap), then the all-gather."""
    if not sub.cfg.t3_blocks:
        return na("ideal_rs_nmc", "no tracker or near-memory reducer on this GPU")
    rs = hardware_rs_s(sub)
    g = sub.gemm()
    reads, writes = hardware_rs_crossings(sub.tp)
    return SchemeResult("ideal_rs_nmc", sub.gemm_alone_kernel_s + rs + sub.after_rs_s, sub.gemm_alone_kernel_s,
                        traffic(g.dram_read_bytes, g.output_bytes, (reads * sub.chunk, writes * sub.chunk),
                                sub.ag_traffic), bound="ideal_rs")


def t3_direct(sub: Sublayer, *, record: bool = False, beat_s: float = math.inf) -> SchemeResult | None:
    """T3 beyond a ring: each tracked tile goes from the epilogue straight to its owner as a
    remote near-memory update, which the owner's reducer adds; no forwarding, no DMA reads.
    The GEMM computes the peers' chunks first (every wave holds every peer's rows, so the
    updates use every link at once) and its own chunk last, while the last updates drain.
    The epilogue's stores leave through a wave's worth of output buffer, as T3's stage 1."""
    if not sub.cfg.t3_blocks:
        return na("t3_direct", "no tracker or near-memory reducer on this GPU")
    if (n := direct_na(sub, "t3_direct", "remote near-memory updates")) is not None:
        return n
    # As for T3's ring: of one wave or two uneven ones, the peers' chunks finish with little
    # left to hide behind, and fewer CUs may hide them (found by the invariant suite: on A100
    # at TP 2, N 256 -> 321 made T3 direct 10% faster).
    # (``beat_s``: a time to beat, :func:`~.context.fastest_of`.)
    return fastest_of(lambda gemm, beat: _t3_direct(sub, record=record, gemm=gemm, beat_s=beat),
                      _staged_gemms(sub), beat_s)


def _t3_direct(sub: Sublayer, *, record: bool, gemm, beat_s: float = math.inf) -> SchemeResult | None:
    tp = sub.tp
    sb = gemm.stage_bytes
    peers = sum(sb[:-1])
    engine = sub.engine("mca", record=record)
    u = sub.gpu.nmc_update_units
    demand = dict(sub.direct_demand(sub.transport.sm_link_efficiency))
    demand.update({DRAM: float(u), GRANTS: 1.0, "reducers": 1.0})
    buffered = min(peers, gemm.cus * gemm.out_tile_bytes)
    on_link = (peers - buffered) / peers if peers > 0 else 0.0
    peer_waves = [w for w in range(gemm.waves) if any(s < tp - 1 for s in wave_stage_bytes(gemm, w))]
    state = {}

    def peer_bytes(w: int) -> float:
        return wave_bytes_before(gemm, w, tp - 1)

    def extra(w: int) -> dict:
        b = peer_bytes(w) * on_link
        return {r: a * b for r, a in demand.items()} if b > 0 else {}

    def local_fraction(w: int) -> float:
        return wave_stage_share(gemm, w, tp - 1)

    def wave_end(e: Engine, w: int) -> None:
        e.start(Flow("updates (buffer)", buffered, demand, lane="link"),
                lambda e2, f: state.__setitem__("sent", e2.now))
    run = GemmRun(sub, gemm, store_units=u, local_fraction=local_fraction, extra=extra, on_wave=wave_end,
                  marks_at={peer_waves[-1]} if peer_waves else set(),
                  on_end=lambda e: state.__setitem__("gemm", e.now))
    run.start(engine)
    # It ends with the GEMM or the buffer's updates (and a hop), whichever is last.
    write_s = sub.block.reducer_write_s(sub.gpu.mc_clock_GHz)
    if not run_to_beat(engine, beat_s, lambda t: t + write_s + sub.after_rs_s):
        return None
    received = state.get("sent", 0.0) + sub.latency_s
    done = max(state["gemm"], received) + write_s
    return SchemeResult("t3_direct", done + sub.after_rs_s, state["gemm"],
                        traffic(gemm.dram_read_bytes, sb[-1], (0.0, peers), sub.ag_traffic),
                        slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s}, bound="ideal_rs",
                        intervals=engine.intervals, events=engine.events)
