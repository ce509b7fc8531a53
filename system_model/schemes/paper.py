"""The T3 paper's schemes for one sublayer, and the two ideals every scheme is held under.

* ``sequential``: the GEMM (all CUs, the library's order, stores through the L2), then the
  library's all-reduce (its own choice of algorithm and protocol), nothing shared.
* ``ideal_overlap`` (``ideal_rs``): the bound of every scheme that hides the reduce-scatter
  and runs the library's all-gather after it (T3, Flux, async-TP, ...): the fastest GEMM
  any scheme could run and the reduce-scatter's bytes over the links at their best payload
  rate and one hop, whichever is longer, then the all-gather.
* ``ideal_all_reduce`` (``ideal_ar``): the bound of every scheme, those that hide the whole
  all-reduce (CU sharing) included: the fastest GEMM and the all-reduce's bytes (once each
  way through a reducing switch, twice otherwise), whichever is longer.
* ``ideal_rs_nmc``: the GEMM, then T3's hardware reduce-scatter (no CUs, no flags), not
  overlapped, then the all-gather.
* ``t3``, ``t3_mca``: :mod:`.t3`.
* ``cu_sharing``: software fine-grained overlap, the paper's motivation study: the GEMM in
  ``tp`` stages on ``cus - k`` CUs; whenever the library's all-reduce is free, the stages
  done by then are all-reduced as one collective on the other ``k`` CUs (at most ``k``
  channels' rate), sharing the DRAM round-robin with the GEMM; near the GEMM's end the
  rest waits for it rather than pay one more latency. It hides the all-gather too.
"""

from __future__ import annotations

import math

from ..engine.timeline import Engine
from ..kernels.collectives import Plan, crossings
from .context import GemmRun, SchemeResult, Sublayer, fastest_of, run_to_beat, start_collective, traffic
from .t3 import ideal_rs_nmc, t3_ring

__all__ = ["sequential", "ideal_overlap", "ideal_all_reduce", "rs_lower_bound_s", "ar_lower_bound_s", "cu_sharing",
           "t3", "t3_mca", "ideal_rs_nmc"]


def _collective_traffic(sub: Sublayer, op: str, p: Plan | None = None, nbytes: float | None = None
                        ) -> tuple[tuple[float, float], tuple[float, float]]:
    """(RS, AG) DRAM (reads, writes) of the library's collective that ends the sublayer, or
    of the plan ``p`` the scheme ran for ``nbytes`` of it."""
    p = sub.plan(op) if p is None else p
    if op == "reduce_scatter":
        return (p.dram_read_bytes, p.dram_write_bytes), (0.0, 0.0)
    if p.algorithm in ("nvls", "nvls_tree"):
        return (p.dram_read_bytes, 0.0), (0.0, p.dram_write_bytes)
    rs, ag = crossings("reduce_scatter", sub.tp), crossings("all_gather", sub.tp)
    c = sub.chunk if nbytes is None else nbytes / sub.tp
    return (rs[0] * c, rs[1] * c), (ag[0] * c, ag[1] * c)


def _sequential_traffic(sub: Sublayer) -> dict[str, float]:
    g = sub.gemm()
    rs, ag = _collective_traffic(sub, sub.collective)
    return traffic(g.dram_read_bytes, g.output_bytes, rs, ag)


def sequential(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    op = sub.collective
    p = sub.plan(op)
    total = sub.gemm_alone_s + p.time_s
    tl = [("GEMM", "GEMM", 0.0, sub.gemm_alone_s), ("link", f"{op} ({p.algorithm}/{p.protocol})",
                                                     sub.gemm_alone_s, total)] if record else []
    return SchemeResult("sequential", total, sub.gemm_alone_s, _sequential_traffic(sub), tl, bound="ideal_ar")


def rs_lower_bound_s(sub: Sublayer) -> float:
    """A reduce-scatter's bytes over the GPU's links (and NIC) at the best payload rate any
    of its engines reaches, by the cheapest route the fabric offers; no latency."""
    f, t = sub.fabric, sub.transport
    eff = sub.best_efficiency()
    send = sub.total * (sub.tp - 1) / sub.tp
    if sub.in_domain:
        return send / (sub.link_Bps * eff)
    ppn = sub.ppn
    ring = send * max((ppn - 1) / ppn / (sub.link_Bps * eff), 1 / ppn / (sub.nic_Bps * t.nic_efficiency))
    options = [ring, f.hierarchical_rs_s(sub.total, sub.tp)]
    if f.topology != "ring":
        options.append(f.direct_send_s(sub.chunk, sub.tp))
    return min(options)


def ar_lower_bound_s(sub: Sublayer) -> float:
    """An all-reduce's bytes: twice a reduce-scatter's, or through a reducing switch inside
    its domain the tensor once each way (plus the GPU's own share)."""
    rs = rs_lower_bound_s(sub)
    if sub.fabric.switch_reduction and sub.in_domain:
        return min(2 * rs, sub.total * (sub.tp + 1) / sub.tp / (sub.link_Bps * sub.best_efficiency()))
    return 2 * rs


def ideal_overlap(sub: Sublayer) -> SchemeResult:
    """``ideal_rs``: the reduce-scatter hidden under the fastest GEMM, the all-gather after."""
    g = sub.gemm_lower_bound_s
    comm = _ideal_comm_s(sub, rs_lower_bound_s(sub), "reduce_scatter")
    # The bytes are the baseline's: only hidden.
    return SchemeResult("ideal_overlap", max(g, comm) + sub.after_rs_s, g, _sequential_traffic(sub), bound="ideal_rs")


def ideal_all_reduce(sub: Sublayer) -> SchemeResult:
    """``ideal_ar``: the whole collective hidden under the fastest GEMM."""
    g = sub.gemm_lower_bound_s
    if sub.all_reduce:
        comm = _ideal_comm_s(sub, ar_lower_bound_s(sub), "all_reduce")
    else:
        comm = _ideal_comm_s(sub, rs_lower_bound_s(sub), "reduce_scatter")
    return SchemeResult("ideal_all_reduce", max(g, comm), g, _sequential_traffic(sub), bound="ideal_ar")


def _ideal_comm_s(sub: Sublayer, bytes_bound_s: float, op: str) -> float:
    """The collective at its bytes' bound plus one hop, or the library's own time where that is
    less: the library's cost model has latencies of its own and algorithms (NVLS-tree across
    nodes) that the bytes' bound does not see, and a bound must not be beaten by the library,
    nor by the load-based all-reduce of serving engines."""
    best = min(bytes_bound_s + sub.latency_s, sub.plan(op).time_s)
    if op == "all_reduce" and sub.custom_all_reduce is not None:
        best = min(best, sub.custom_all_reduce.time_s)
    return best


def t3(sub: Sublayer, *, record: bool = False, beat_s: float = math.inf) -> SchemeResult | None:
    """T3 with round-robin arbitration (``beat_s``: :func:`~.t3.t3_ring`'s)."""
    return t3_ring(sub, policy="rr", record=record, beat_s=beat_s)


def t3_mca(sub: Sublayer, *, record: bool = False, name: str = "t3_mca", beat_s: float = math.inf
           ) -> SchemeResult | None:
    """T3-MCA: the arbiter's registers (mode, threshold) are the runtime's, set per GEMM (the
    paper sets the threshold from the GEMM's memory intensity). In compute-first mode a GEMM
    that fills the DRAM alone leaves the transfers only the starvation limit's grants, which
    serialises them behind it; where that is slower, the runtime leaves the arbiter in round
    robin. So T3-MCA is the faster of the two modes for each sublayer, and never slower than T3."""
    mca = t3_ring(sub, policy="mca", record=record, name=name, beat_s=beat_s)
    if mca is not None and not mca.available:
        return mca
    # Round robin is kept only where it is faster (``beat_s``: stopped where it cannot be).
    rr = t3_ring(sub, policy="rr", record=record, name=name, beat_s=beat_s if mca is None else min(beat_s, mca.time_s))
    best = mca if rr is None or (mca is not None and mca.time_s <= rr.time_s) else rr
    if best is None:
        return None
    best.slowdowns = {**best.slowdowns, "mode_mca": 1.0 if best is mca else 0.0}
    return best


def cu_sharing(sub: Sublayer, *, record: bool = False, beat_s: float = math.inf) -> SchemeResult | None:
    """The fastest of the staged GEMM's layouts (``beat_s``: a time to beat, where the caller
    keeps the fastest of several kernels; None when no layout ends before it). A layout is
    stopped once it can no longer be the fastest (:func:`~.context.run_to_beat`)."""
    return fastest_of(lambda gemm, beat: _cu_sharing(sub, record, gemm, beat_s=beat),
                      sub.staged_gemms(cus=sub.gpu.cus - sub.cfg.cu_sharing_cus), beat_s)


def _cu_sharing(sub: Sublayer, record: bool, gemm, beat_s: float = math.inf) -> SchemeResult | None:
    k = sub.cfg.cu_sharing_cus
    op = "all_reduce" if sub.all_reduce else "reduce_scatter"
    engine = sub.engine("rr", record=record)
    timeline: list = []
    pending: list[int] = []
    state = {"busy": False, "last_end": 0.0, "gemm": None, "comm_s": 0.0, "waves_done": 0, "wave_end": 0.0,
             "sent_bytes": 0.0}
    total_bytes = sum(gemm.stage_bytes)
    finished: list[float] = []
    sent: list[tuple[tuple[float, float], tuple[float, float]]] = []

    def next_collective(e: Engine) -> None:
        # The stages done by now go as one collective: one all-reduce of their rows, rather
        # than one after another, each paying the library's latency again (a split that
        # paid them twice made a bigger GEMM finish sooner). Before the GEMM's end the
        # runtime either sends them now, leaving the stages still to come a collective of
        # their own, or waits and sends everything as one at the GEMM's end; it takes the
        # choice its cost model (the library's plans) says ends sooner. A fixed rule (wait
        # when what is left of the GEMM is below the batch's latency) assumed the rest pays
        # the batch's latency again; the library plans a small rest with another protocol,
        # and a GEMM 6% longer, sending at its first wave, ended 40 us sooner.
        if state["busy"] or not pending:
            return
        nbytes = sum(gemm.stage_bytes[s] for s in pending)
        if nbytes <= 0:
            pending.clear()
            return
        p = sub.plan(op, nbytes, channels=k)        # the all-reduce of these stages' rows
        if state["gemm"] is None and state["waves_done"] < gemm.waves:
            per_wave = state["wave_end"] / state["waves_done"]
            left = max(0.0, (gemm.waves - state["waves_done"]) * per_wave - (e.now - state["wave_end"]))
            rest = total_bytes - state["sent_bytes"] - nbytes
            send_end = max(left, p.time_s) + (sub.plan(op, rest, channels=k).time_s if rest > 0 else 0.0)
            wait_end = left + sub.plan(op, nbytes + rest, channels=k).time_s
            if wait_end <= send_end:
                return                              # sent with the rest at the GEMM's end
        state["sent_bytes"] += nbytes
        # The DRAM traffic of the plans it runs: on its CUs the library may pick another
        # algorithm than the whole collective's (NCCL's ring where the full plan is NVLS
        # tree: nearly three times the bytes through the DRAM).
        sent.append(_collective_traffic(sub, op, p, nbytes))
        first, last = pending[0], pending[-1]
        pending.clear()
        state["busy"] = True
        begin = e.now

        def done(e2: Engine) -> None:
            state["busy"] = False
            state["comm_s"] += e2.now - begin
            finished.append(e2.now)
            next_collective(e2)
        name = f"{op} {first + 1}" if first == last else f"{op} {first + 1}-{last + 1}"
        start_collective(e, sub, p, name=name, on_end=done, timeline=timeline if record else None)

    ends: dict[int, list[int]] = {}
    for s, w in enumerate(gemm.stage_end_waves):
        # (a stage inside a tile row an earlier stage needed is done with that stage)
        ends.setdefault(w, []).append(s)

    def on_wave(e: Engine, w: int) -> None:
        state["waves_done"], state["wave_end"] = w + 1, e.now
        pending.extend(ends.get(w, []))
        next_collective(e)

    def gemm_end(e: Engine) -> None:
        state["gemm"] = e.now
        next_collective(e)                          # what waited for the GEMM's end

    run = GemmRun(sub, gemm, on_wave=on_wave, marks_at=set(ends), on_end=gemm_end)
    run.start(engine)
    # It ends with its last event: the GEMM's or a collective's.
    if not run_to_beat(engine, beat_s, lambda t: t):
        return None
    end = max([state["gemm"], *finished])
    if record:
        timeline.append(("GEMM", "GEMM", 0.0, state["gemm"]))
    full = sub.plan(op)
    rs, ag = ((sum(x[0][0] for x in sent), sum(x[0][1] for x in sent)),
              (sum(x[1][0] for x in sent), sum(x[1][1] for x in sent)))
    return SchemeResult("cu_sharing", end, state["gemm"], traffic(gemm.dram_read_bytes, gemm.output_bytes, rs, ag),
                        timeline, slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s,
                                             "collective": state["comm_s"] / full.time_s},
                        bound="ideal_ar", intervals=engine.intervals, events=engine.events)
