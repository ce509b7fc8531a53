"""Today's software overlap on the same timeline: Flux, PyTorch async-TP, FlashOverlap, DMA-engine
collectives (with and without T3's near-memory reduction) and NVLS.

Every scheme runs the sublayer's GEMM through the same wave and L2 model, its transfers and
reductions as flows on the same DRAM, links and NICs (:mod:`.context`), so each pays for
what it shares. The all-gather that completes the all-reduce is the library's, after the
reduce-scatter, in every scheme but NVLS (whose all-reduce is one collective).

* ``flux``: Flux's fused GEMM + RS as it runs on Hopper (Chang et al. 2024, arXiv
  2406.06858; bytedance/flux): the epilogue stores each tile locally and raises its flag;
  the owner's spare producer warps pull it over the fabric (a read here) and add it
  atomically into the owner's reduce buffer (a read and a write there) while the GEMM goes
  on; the GEMM computes the peers' rows first and its own last; no SM is taken.
* ``async_tp``: PyTorch's ``fused_matmul_reduce_scatter`` over SymmetricMemory: one matmul
  per rank's chunk (each with the library kernel its shape runs fastest, after a launch
  gap), each chunk pushed to its owner by the copy engine, one peer at a time, while the
  next computes; a reduction kernel over the received chunks at the end.
* ``flashoverlap``: FlashOverlap (Hong et al. 2025, arXiv 2504.19519): one GEMM on the SMs
  NCCL leaves, its waves in groups of whole waves; a counter per group signals a
  communication stream that runs NCCL's reduce-scatter of the group (on NCCL's SMs, at
  their channels' rate); the result is put back in row order after. Its search keeps the
  fastest of 1 to ``groups_per_gemm`` groups (one group: no overlap, the GEMM on every SM).
* ``dma_collective``: copy/DMA-engine collectives (ConCCL: Agrawal et al. 2024, arXiv
  2412.14335): one staged GEMM on every CU; each stage's slices copied to their owners by
  the DMA engines when the stage's flag is seen; the CUs sum the arrivals after the GEMM.
* ``dma_nmc``: the same transfers, the arrivals added by T3's near-memory reducer (T3
  without its tracker: a stage's flag, not a tile's count, starts them).
* ``nvls``: the GEMM, then NCCL's NVLS all-reduce (the switch reduces and multicasts).
* ``custom_ar``: the GEMM, then a one-shot or two-shot all-reduce by loads from the peers'
  memory (vLLM, TensorRT-LLM, PyTorch SymmetricMemory): what serving engines run for small
  tensors.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..describe.models import GemmShape
from ..engine.sharing import DRAM, GRANTS
from ..engine.timeline import Engine, Flow
from ..kernels.custom_allreduce import custom_na_reason
from ..kernels.gemm import wave_bytes_before
from .context import GemmRun, SchemeResult, Sublayer, direct_na, fastest, fastest_of, na, run_to_beat, traffic
from .paper import sequential

__all__ = ["flux", "async_tp", "flashoverlap", "wave_groups", "dma_collective", "dma_nmc", "nvls", "custom_ar"]


def _reduce_kernel(engine: Engine, sub: Sublayer, chunks: int, on_end, name: str = "reduction") -> None:
    """A kernel that sums ``chunks`` chunk-sized buffers into one: DRAM-bound on the CUs,
    after a launch gap."""
    moved = (chunks + 1) * sub.chunk

    def go(e: Engine) -> None:
        e.start(Flow(name, moved, {DRAM: 1.0, GRANTS: 1.0}, klass="compute", lane="GEMM"),
                lambda e2, f: on_end(e2))
    engine.after(sub.launch_s, go)


def flux(sub: Sublayer, *, record: bool = False, beat_s: float = math.inf) -> SchemeResult | None:
    """Flux (``beat_s``: a time to beat, :func:`~.context.fastest_of`)."""
    if (n := direct_na(sub, "flux")) is not None:
        return n
    # Its GEMM cut as the sublayer allows (by columns too for an all-reduce of few rows, as
    # T3's: a fair comparison gives both the same choice).
    return fastest_of(lambda g, beat: _flux(sub, record, g, beat),
                      (g for c in sub.stage_layouts for g in sub.staged_gemms(stage_columns=c)), beat_s)


def _flux(sub: Sublayer, record: bool, gemm, beat_s: float = math.inf) -> SchemeResult | None:
    tp = sub.tp
    sb = gemm.stage_bytes
    peers = sum(sb[:-1])
    engine = sub.engine("rr", record=record)
    demand = dict(sub.direct_demand(sub.transport.sm_link_efficiency))
    demand.update({DRAM: 3.0, GRANTS: 3.0})       # read here; the atomic add's read and write at the owner
    pull = Flow("pulls", peers, demand, produced=0.0, lane="link")
    state = {}

    def on_wave(e: Engine, w: int) -> None:
        # A wave's tiles run side by side and store in their epilogues as the wave ends:
        # their flags rise then, and only then may the owners pull them.
        ready = wave_bytes_before(gemm, w, tp - 1)
        if ready > 0 and not pull.finished:
            e.produce(pull, ready)
    run = GemmRun(sub, gemm, on_wave=on_wave,
                  on_end=lambda e: state.__setitem__("gemm", e.now))
    engine.start(pull, lambda e, f: state.__setitem__("pulled", e.now))
    run.start(engine)
    # It ends with the GEMM or the pulls (and a signal), whichever is last.
    if not run_to_beat(engine, beat_s, lambda t: t + sub.after_rs_s):
        return None
    done = max(state["gemm"], state.get("pulled", 0.0) + sub.signal_s)
    return SchemeResult("flux", done + sub.after_rs_s, state["gemm"],
                        traffic(gemm.dram_read_bytes, gemm.output_bytes, (peers, 2 * peers), sub.ag_traffic),
                        slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s}, bound="ideal_rs",
                        intervals=engine.intervals, events=engine.events)


def async_tp(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    if sub.fabric.topology == "ring":
        return na("async_tp", "a ring reaches only its two neighbours: SymmetricMemory maps every peer's memory "
                              "over a direct link")
    if not sub.in_domain:
        return na("async_tp", f"SymmetricMemory spans one NVLink/xGMI domain ({sub.fabric.domain_gpus} GPUs), "
                              f"not TP {sub.tp}")
    tp = sub.tp
    rows = math.ceil(sub.shape.m / tp)
    chunk_gemm = sub.gemm(shape=GemmShape(rows, sub.shape.n, sub.shape.k))
    chunk_bytes = chunk_gemm.output_bytes
    pair_cap = sub.fabric.pair_Bps(tp) * sub.transport.ce_link_efficiency
    demand = {"link": 1.0 / sub.transport.ce_link_efficiency, DRAM: 2.0, GRANTS: 2.0}   # read here, a peer's lands here
    engine = sub.engine("rr", record=record)
    state = {"copies_done": 0, "gemm": None, "busy": False, "queue": []}
    timeline: list = []

    def pump(e: Engine) -> None:
        """The copy engine takes the copies in order, each a launch after its matmul's event."""
        if state["busy"] or not state["queue"]:
            return
        j, ready = state["queue"].pop(0)
        state["busy"] = True

        def go(e2: Engine) -> None:
            def done(e3: Engine, fl: Flow) -> None:
                state["copies_done"] += 1
                state["busy"] = False
                if record:
                    timeline.append(("link", f"copy {j + 1}", fl.start_s, e3.now))
                pump(e3)
                finish(e3)
            e2.start(Flow(f"copy {j + 1}", chunk_bytes, demand, cap=pair_cap, lane="link"), done)
        e.at(ready, go)

    def copy(e: Engine, j: int) -> None:
        state["queue"].append((j, e.now + sub.launch_s))
        pump(e)

    def matmul(e: Engine, j: int) -> None:
        def ended(e2: Engine) -> None:
            if j < tp - 1:
                copy(e2, j)
                e2.after(sub.launch_s, lambda e3: matmul(e3, j + 1))
            else:
                state["gemm"] = e2.now
                finish(e2)
        run = GemmRun(sub, chunk_gemm, name=f"matmul {j + 1}", on_end=ended)
        run.start(e)
    engine.after(sub.launch_s, lambda e: matmul(e, 0))

    def finish(e: Engine) -> None:
        if state["gemm"] is not None and state["copies_done"] == tp - 1 and "reduce" not in state:
            state["reduce"] = True
            e.after(sub.signal_s, lambda e2: _reduce_kernel(e2, sub, tp, lambda e3: state.__setitem__("end", e3.now)))
    engine.run()
    total_out = chunk_bytes * tp
    return SchemeResult("async_tp", state["end"] + sub.after_rs_s, state["gemm"],
                        traffic(chunk_gemm.dram_read_bytes * tp, total_out,
                                ((tp - 1) * chunk_bytes + tp * chunk_bytes, (tp - 1) * chunk_bytes + chunk_bytes),
                                sub.ag_traffic),
                        timeline, slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s}, bound="ideal_rs",
                        intervals=engine.intervals, events=engine.events)


def _staged_sends(sub: Sublayer, scheme: str, *, gemm, groups: list[int] | None, start_send, record: bool,
                  policy: str = "rr", beat_s: float = math.inf, end_s=lambda t: t) -> tuple[Engine, dict] | None:
    """A GEMM whose stages (``groups``: new tiles per group, in dispatch order; a group of
    none is done with the group before it; None: the GEMM's own stages) are sent one after
    another as each completes: ``start_send(engine, stage, on_end)`` starts the send of a
    stage. None once it cannot end before ``beat_s`` (``end_s(t)``: the scheme's end if the
    GEMM's or the last send's end is ``t``; :func:`~.context.run_to_beat`)."""
    engine = sub.engine(policy, record=record)
    ends = {}
    if groups is None and gemm.stage_group > 1:
        # Stages dispatched together interleave: each ends with the last wave holding it.
        for s, w in enumerate(gemm.stage_end_waves):
            ends.setdefault(max(w, 0), []).append(s)
    else:
        cum, acc = [], 0
        for tiles in (gemm.stage_tiles if groups is None else groups):
            acc += tiles
            cum.append(acc)
        for s, total in enumerate(cum):
            ends.setdefault((max(total, 1) - 1) // gemm.cus, []).append(s)
    state = {"gemm": None, "busy": False, "sent": 0.0, "produced": 0, "next": 0, "pending": []}

    def pump(e: Engine) -> None:
        if state["busy"] or not state["pending"]:
            return
        s = state["pending"].pop(0)
        state["busy"] = True

        def done(e2: Engine) -> None:
            state["busy"] = False
            state["sent"] = e2.now
            pump(e2)
        start_send(e, s, done)

    def on_wave(e: Engine, w: int) -> None:
        state["pending"].extend(ends.get(w, []))
        pump(e)
    GemmRun(sub, gemm, on_wave=on_wave, marks_at=set(ends),
            on_end=lambda e: state.__setitem__("gemm", e.now)).start(engine)
    if not run_to_beat(engine, beat_s, end_s):
        return None
    return engine, state


def wave_groups(tiles: int, cus: int, groups: int) -> list[int]:
    """Tiles per group when ``tiles`` run in waves of ``cus`` and the waves are split into
    ``groups`` runs of whole waves, as even as possible, the longer runs last (FlashOverlap
    signals a group when its last wave ends: a group of part of a wave would wait for the
    rest of that wave anyway)."""
    waves = math.ceil(tiles / cus)
    if not 1 <= groups <= waves:
        raise ValueError(f"groups must be between 1 and the GEMM's {waves} waves, not {groups}")
    runs = [waves // groups + (1 if g >= groups - waves % groups else 0) for g in range(groups)]
    sizes, done = [], 0
    for w in runs:
        sizes.append(min(w * cus, tiles - done))
        done += sizes[-1]
    return sizes


def flashoverlap(sub: Sublayer, *, record: bool = False, beat_s: float = math.inf) -> SchemeResult:
    """FlashOverlap as its search leaves it: the best of 1 to ``groups_per_gemm`` groups of
    whole waves (its ``tune/search.py`` tries partitions of the GEMM's waves and keeps the
    fastest; one group is the GEMM on every SM, then the library's collective). ``beat_s``:
    a time to beat (the caller keeps the fastest of several kernels): a grouping is stopped
    once it can no longer beat it or the best so far."""
    k = sub.cfg.peer.nccl_sms
    if k >= sub.gpu.cus:
        return na("flashoverlap", f"NCCL's {k} SMs leave none for the GEMM")
    alone = sequential(sub, record=record)
    best = replace(alone, scheme="flashoverlap", slowdowns={"gemm": 1.0})
    gemm = sub.gemm(cus=sub.gpu.cus - k)
    for groups in range(2, min(sub.cfg.peer.groups_per_gemm, gemm.waves) + 1):
        r = _flashoverlap_groups(sub, gemm, wave_groups(gemm.tiles, gemm.cus, groups), record=record,
                                 beat_s=min(beat_s, best.time_s))
        if r is not None and r.time_s < best.time_s:
            best = r
    return best


def _flashoverlap_groups(sub: Sublayer, gemm, groups: list[int], *, record: bool, beat_s: float = math.inf
                         ) -> SchemeResult | None:
    """The GEMM on the SMs NCCL leaves, each group of tiles reduce-scattered by NCCL (its
    SMs' channels) once its last wave ends, one group after another."""
    from .context import start_collective
    k = sub.cfg.peer.nccl_sms
    tile_bytes = gemm.output_bytes / gemm.tiles

    def send(e: Engine, s: int, on_end) -> None:
        p = sub.plan("reduce_scatter", groups[s] * tile_bytes, channels=k)
        e.after(sub.signal_s, lambda e2: start_collective(e2, sub, p, name=f"RS group {s + 1}/{len(groups)}",
                                                          on_end=on_end))
    # The reduce-scatter's result of each group lies in group order: put back in row order.
    reorder_s = sub.launch_s + 2 * sub.chunk / sub.gpu.dram_bytes_per_s
    ran = _staged_sends(sub, "flashoverlap", gemm=gemm, groups=groups, start_send=send, record=record,
                        beat_s=beat_s, end_s=lambda t: t + reorder_s + sub.after_rs_s)
    if ran is None:
        return None
    engine, state = ran
    end = max(state["gemm"], state["sent"]) + reorder_s
    p = sub.plan("reduce_scatter")
    return SchemeResult("flashoverlap", end + sub.after_rs_s, state["gemm"],
                        traffic(gemm.dram_read_bytes, gemm.output_bytes, (p.dram_read_bytes + 2 * sub.chunk,
                                                                          p.dram_write_bytes), sub.ag_traffic),
                        slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s}, bound="ideal_rs",
                        intervals=engine.intervals, events=engine.events)


def _dma(sub: Sublayer, scheme: str, *, nmc: bool, record: bool) -> SchemeResult:
    if (n := direct_na(sub, scheme, "the DMA engines' copies")) is not None:
        return n
    if nmc and not sub.cfg.t3_blocks:
        return na(scheme, "no near-memory reducer on this GPU")
    return fastest(_dma_run(sub, scheme, nmc=nmc, record=record, gemm=g) for g in sub.staged_gemms())


def _dma_run(sub: Sublayer, scheme: str, *, nmc: bool, record: bool, gemm) -> SchemeResult:
    tp = sub.tp
    u = sub.gpu.nmc_update_units if nmc else 1
    demand = dict(sub.direct_demand(sub.transport.ce_link_efficiency))
    demand.update({DRAM: 1.0 + u, GRANTS: 2.0})          # the engines read here; the peers' copies land here
    if nmc:
        demand["reducers"] = 1.0

    def send(e: Engine, s: int, on_end) -> None:
        nbytes = gemm.stage_bytes[s] * (tp - 1) / tp      # every owner's slice but this GPU's own

        def go(e2: Engine) -> None:
            e2.start(Flow(f"copies {s + 1}", nbytes, demand, lane="link"), lambda e3, f: on_end(e3))
        e.after(sub.signal_s, go)
    engine, state = _staged_sends(sub, scheme, gemm=gemm, groups=None, start_send=send,
                                  record=record, policy="mca" if nmc else "rr")
    end = max(state["gemm"], state["sent"] + sub.latency_s)
    sent = gemm.output_bytes * (tp - 1) / tp
    if nmc:
        done = end + sub.block.reducer_write_s(sub.gpu.mc_clock_GHz)
        rs = (sent, sent)
    else:
        e2 = sub.engine("rr")
        out = {}
        e2.after(sub.signal_s, lambda e: _reduce_kernel(e, sub, tp, lambda e3: out.__setitem__("t", e3.now)))
        e2.run()
        done = end + out["t"]
        rs = (sent + tp * sub.chunk, sent + sub.chunk)
    return SchemeResult(scheme, done + sub.after_rs_s, state["gemm"],
                        traffic(gemm.dram_read_bytes, gemm.output_bytes, rs, sub.ag_traffic),
                        slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s}, bound="ideal_rs",
                        intervals=engine.intervals, events=engine.events)


def dma_collective(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    return _dma(sub, "dma_collective", nmc=False, record=record)


def dma_nmc(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    return _dma(sub, "dma_nmc", nmc=True, record=record)


def nvls(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    f = sub.fabric
    if not (f.switch_reduction and sub.transport.nvls_efficiency > 0):
        return na("nvls", "no reducing switch (NVLink SHARP needs NVSwitch gen 3)")
    if not sub.in_domain:
        return na("nvls", f"TP {sub.tp} spans more than the {f.domain_gpus}-GPU NVSwitch domain")
    if not sub.all_reduce:
        return na("nvls", "NVLS reduces an all-reduce; its reduce-scatter is slower than the ring")
    p = sub.plan("all_reduce", algorithm="nvls")
    g = sub.gemm()
    return SchemeResult("nvls", sub.gemm_alone_s + p.time_s, sub.gemm_alone_s,
                        traffic(g.dram_read_bytes, g.output_bytes, (p.dram_read_bytes, 0.0), (0.0, p.dram_write_bytes)),
                        bound="ideal_ar")


def custom_ar(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    """The GEMM, then the load-based all-reduce serving engines run for small tensors (vLLM's
    custom all-reduce, TensorRT-LLM's, PyTorch SymmetricMemory's one-shot and two-shot; the
    faster of the two), :mod:`system_model.kernels.custom_allreduce`."""
    if not sub.all_reduce:
        return na("custom_ar", "a load-based all-reduce, not a reduce-scatter")
    p = sub.custom_all_reduce
    if p is None:
        return na("custom_ar", custom_na_reason(sub.fabric, sub.tp))
    g = sub.gemm()
    total = sub.gemm_alone_s + p.time_s
    tl = [("GEMM", "GEMM", 0.0, sub.gemm_alone_s),
          ("link", f"all_reduce ({p.algorithm})", sub.gemm_alone_s, total)] if record else []
    return SchemeResult("custom_ar", total, sub.gemm_alone_s,
                        traffic(g.dram_read_bytes, g.output_bytes, (p.dram_read_bytes, p.dram_write_bytes)),
                        tl, bound="ideal_ar")
