"""Triton-distributed / TileLink (ByteDance Seed, MLSys'25, arXiv 2503.20313;
github.com/ByteDance-Seed/Triton-distributed): tile-granular GEMM + reduce-scatter and
GEMM + all-reduce with signal/wait primitives, on the same timeline as every other scheme.

What the kernels do, as their sources state it (``python/triton_dist/kernels/nvidia``,
``gemm_reduce_scatter.py`` and ``gemm_allreduce.py``; the layers in ``python/triton_dist/layers``):

* ``triton_dist_rs`` (GEMM + RS, one node): one GEMM on every SM, which computes the next
  rank's rows first and its own last; a counter per destination rank, raised as that rank's
  tiles are stored; the copy engine waits on the counter (``cuStreamWaitValue``) and copies
  the rank's whole chunk to it (``cudaMemcpyAsync``), one rank after another, while the GEMM
  goes on; after a barrier a reduction kernel sums the ``tp`` received chunks. No SM is taken
  by the communication. Below 100 GFLOPs of GEMM it runs cuBLAS, then NCCL's
  reduce-scatter, instead. On AMD its own kernel stores each tile straight into its owner's
  buffer from the GEMM's epilogue (no copy engine, no fallback), then reduces after a
  barrier.
* ``triton_dist_ar`` (the fused GEMM + AR of its ``gemm_ar`` layer): the GEMM runs on all SMs
  but the communication CTAs (16 when M <= 256, the "low-latency" kernel; 4 otherwise), on
  NVIDIA in its layer's own tile (:mod:`system_model.kernels.triton_gemm`; on AMD, whose
  kernel is autotuned, the library's); each output tile's flag is raised on every rank when
  it is stored; the communication CTAs wait for a tile's flags from every rank and
  all-reduce it in place: on a node whose switch reduces, a two-shot NVLS all-reduce
  (``multimem.ld_reduce``, then ``multimem.st``); on NVIDIA GPUs without it, its automatic
  choice ``Consumer_Load``: every rank loads every tile from every peer (a one-shot), after
  two NVSHMEM barriers; on AMD its own kernel, on 32 CTAs, where each tile's owner loads it
  from every rank and stores the sum to every rank (a two-shot). There is no all-gather
  after. The 16/4 rule and the tile are keyed in its layers on the largest M the layer was
  built for; here on the GEMM's own M (a layer built for it).

Both need every peer one hop away, inside one NVLink or xGMI domain (``direct_na``).

The model (nothing fitted): a wave's tiles are available as the wave ends (they store in
their epilogues side by side, as :func:`.peers.flux`); the copies run at the copy engine's
pair rate; the all-reduce runs at NCCL's NVLS rate (TokenWeave measured a multimem
all-reduce on 4 CTAs within 3% of its best), or by loads at the links' SM payload rate; the
last tile adds a flag's latency and one reduce round trip. The communication CTAs cost the
GEMM their SMs.
"""

from __future__ import annotations

from ..engine.sharing import DRAM, GRANTS
from ..engine.timeline import Engine, Flow
from ..kernels.gemm import wave_bytes_before, wave_stage_bytes, wave_stage_share
from ..kernels.triton_gemm import LOW_LATENCY_M
from .context import GemmRun, SchemeResult, Sublayer, direct_na, fastest, na, traffic
from .peers import _reduce_kernel

__all__ = ["triton_dist_rs", "fallback_rs", "overlap_rs", "epilogue_rs", "triton_dist_ar", "ar_ctas",
           "SMALL_GEMM_FLOPS"]

#: Below this many FLOPs of the rank's GEMM its GEMM + RS runs cuBLAS then NCCL instead
#: (``gemm_reduce_scatter.py``: ``_SMALL_GEMM_FLOPS_THRESHOLD = 1e11``, "fall back to cuBLAS +
#: NCCL when overlap overhead > benefit").
SMALL_GEMM_FLOPS = 1e11


#: Communication CTAs of its AMD GEMM + AR kernel (``kernels/amd/gemm_allreduce.py``).
AMD_AR_CTAS = 32


def ar_ctas(m: int) -> int:
    """Communication CTAs of the fused GEMM + AR for an M-row output."""
    return 16 if m <= LOW_LATENCY_M else 4


def triton_dist_rs(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    """The library's rule picks the path: below :data:`SMALL_GEMM_FLOPS` cuBLAS then NCCL
    (:func:`fallback_rs`), else the overlap kernel (:func:`overlap_rs`). The time is
    discontinuous where the rule switches, as the library's own is."""
    if (n := direct_na(sub, "triton_dist_rs", "its copies and signals")) is not None:
        return n
    if sub.transport.library == "rccl":
        return epilogue_rs(sub, record=record)
    if 2 * sub.shape.m * sub.shape.n * sub.shape.k < SMALL_GEMM_FLOPS:
        return fallback_rs(sub)
    return overlap_rs(sub, record=record)


def epilogue_rs(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    """Its AMD kernel (``kernels/amd/gemm_reduce_scatter.py``, ``matmul_fuse_scatter``): the
    GEMM's epilogue stores each tile straight into its owner's buffer (no copy engine, no
    fallback); after a barrier the reduction kernel sums the ``tp`` received pieces. A
    wave's tiles store as the wave ends (its epilogues run side by side), so a wave's remote
    stores leave then, beside the next wave."""
    return fastest(_epilogue_rs(sub, record, g) for g in sub.staged_gemms())


def _epilogue_rs(sub: Sublayer, record: bool, gemm) -> SchemeResult:
    tp = sub.tp
    sb = gemm.stage_bytes
    peers = sum(sb[:-1])
    remote = dict(sub.direct_demand(sub.transport.sm_link_efficiency))
    remote.update({DRAM: 1.0, GRANTS: 1.0})             # each remote store lands in a peer's memory
    engine = sub.engine("rr", record=record)
    # The waves' remote stores leave as one stream, in the order the waves end: one flow whose
    # bytes exist as each wave ends (``produce``). (A flow per wave, all at once, took an
    # arbitrating share each: with a thousand short waves the stores outweighed the GEMM a
    # thousand to one, and the engine's work grew with the square of the waves.)
    stores = Flow("remote stores", peers, remote, produced=0.0, lane="link")
    state = {}

    def local_fraction(w: int) -> float:
        return wave_stage_share(gemm, w, tp - 1)

    def stored(e: Engine, f: Flow) -> None:
        state["stored"] = True
        finish(e)

    def on_wave(e: Engine, w: int) -> None:
        b = wave_bytes_before(gemm, w, tp - 1)
        if b > 0 and not stores.finished:
            e.produce(stores, b)

    def finish(e: Engine) -> None:
        if "gemm" in state and "stored" in state and "reduce" not in state:
            state["reduce"] = True
            e.after(sub.signal_s + sub.latency_s,
                    lambda e2: _reduce_kernel(e2, sub, tp, lambda e3: state.__setitem__("end", e3.now)))

    def gemm_end(e: Engine) -> None:
        state["gemm"] = e.now
        if not stores.finished:            # every tile exists now (the waves' sum, to rounding)
            e.produce(stores, max(0.0, peers - stores.produced))
        finish(e)
    GemmRun(sub, gemm, local_fraction=local_fraction, on_wave=on_wave, on_end=gemm_end).start(engine)
    engine.start(stores, stored)
    engine.run()
    return SchemeResult("triton_dist_rs", state["end"] + sub.after_rs_s, state["gemm"],
                        traffic(gemm.dram_read_bytes, gemm.output_bytes, (tp * sub.chunk, peers + sub.chunk),
                                sub.ag_traffic),
                        slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s}, bound="ideal_rs",
                        intervals=engine.intervals, events=engine.events)


def fallback_rs(sub: Sublayer) -> SchemeResult:
    """cuBLAS, then NCCL's reduce-scatter (then the all-gather that completes an all-reduce)."""
    p = sub.plan("reduce_scatter")
    g = sub.gemm()
    return SchemeResult("triton_dist_rs", sub.gemm_alone_s + p.time_s + sub.after_rs_s, sub.gemm_alone_s,
                        traffic(g.dram_read_bytes, g.output_bytes, (p.dram_read_bytes, p.dram_write_bytes),
                                sub.ag_traffic), bound="ideal_rs")


def overlap_rs(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    """The overlap kernel, whatever the GEMM's size."""
    return fastest(_overlap_rs(sub, record, g) for g in sub.staged_gemms())


def _overlap_rs(sub: Sublayer, record: bool, gemm) -> SchemeResult:
    tp = sub.tp
    sb = gemm.stage_bytes
    pair_cap = sub.fabric.pair_Bps(tp) * sub.transport.ce_link_efficiency
    demand = {"link": 1.0 / sub.transport.ce_link_efficiency, DRAM: 2.0, GRANTS: 2.0}  # read here, a peer's lands here
    engine = sub.engine("rr", record=record)
    state = {"waves": 0, "next": 0, "busy": False, "copies": 0, "gemm": None}

    def pump(e: Engine) -> None:
        """The copy engine copies the ranks' chunks in order, each once its counter is full:
        every tile of its rows stored (its last wave done; a tile row may hold the end of one
        chunk and the start of the next, so bytes stored are no measure)."""
        j = state["next"]
        if state["busy"] or j >= tp - 1 or state["waves"] <= gemm.stage_end_waves[j]:
            return
        state["busy"], state["next"] = True, j + 1

        def done(e2: Engine, f: Flow) -> None:
            state["busy"] = False
            state["copies"] += 1
            pump(e2)
            finish(e2)
        e.after(sub.signal_s, lambda e2: e2.start(Flow(f"copy {j + 1}", sb[j], demand, cap=pair_cap, lane="link"),
                                                   done))

    def on_wave(e: Engine, w: int) -> None:
        state["waves"] = w + 1
        pump(e)

    def finish(e: Engine) -> None:
        if state["gemm"] is not None and state["copies"] == tp - 1 and "reduce" not in state:
            state["reduce"] = True
            e.after(sub.signal_s, lambda e2: _reduce_kernel(e2, sub, tp, lambda e3: state.__setitem__("end", e3.now)))

    def gemm_end(e: Engine) -> None:
        state["gemm"] = e.now
        finish(e)
    GemmRun(sub, gemm, on_wave=on_wave, on_end=gemm_end).start(engine)
    engine.run()
    sent = sum(sb[:-1])
    return SchemeResult("triton_dist_rs", state["end"] + sub.after_rs_s, state["gemm"],
                        traffic(gemm.dram_read_bytes, gemm.output_bytes, (sent + tp * sub.chunk, sent + sub.chunk),
                                sub.ag_traffic),
                        slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s}, bound="ideal_rs",
                        intervals=engine.intervals, events=engine.events)


def triton_dist_ar(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    if not sub.all_reduce:
        return na("triton_dist_ar", "its fused kernel ends in an all-reduce, not a reduce-scatter")
    if (n := direct_na(sub, "triton_dist_ar", "its flags and peer loads")) is not None:
        return n
    f, t = sub.fabric, sub.transport
    switch = f.switch_reduction and t.nvls_efficiency > 0
    amd = t.library == "rccl"
    # AMD's kernel (kernels/amd/gemm_allreduce.py) fixes NUM_COMM_SMS = 32.
    ctas = AMD_AR_CTAS if amd else ar_ctas(sub.shape.m)
    if ctas >= sub.gpu.cus:
        return na("triton_dist_ar", f"its {ctas} communication CTAs leave no SM for the GEMM")
    n = sub.tp
    start_s = 0.0
    if switch:
        # From 4 CTAs a multimem all-reduce runs at the switch's rate: TokenWeave's sweep on
        # 8 x H100 (artifact/csvs/figure_7.csv) has 4 SMs within 0-3% of the best CTA count
        # from 64 to 32K tokens of 8,192 bf16 elements.
        p = sub.plan("all_reduce", algorithm="nvls")
        rate = p.rate_Bps
        demand = p.demand(t.sm_link_efficiency)
        moved = p.egress_bytes
        rs, ag = (p.dram_read_bytes, 0.0), (0.0, p.dram_write_bytes)
        tail_s = 2 * sub.latency_s + f.switch_reduce_latency_ns * 1e-9
    elif amd:
        # Each tile's owner loads it from every rank, sums it and stores the sum to every
        # rank: a two-shot by loads and stores.
        rate = sub.link_Bps * t.sm_link_efficiency
        moved = 2 * (n - 1) / n * sub.total
        reads = sub.total + (n - 1) / n * sub.total
        demand = {"link": 1.0 / t.sm_link_efficiency, DRAM: (reads + sub.total) / moved,
                  GRANTS: (reads + sub.total) / moved}
        rs, ag = (sub.total, sub.chunk), ((n - 1) / n * sub.total, (n - 1) / n * sub.total)
        tail_s = 2 * sub.latency_s + sub.dram_latency_s + sub.latency_s
    else:
        # NVIDIA without multimem: its automatic choice is Consumer_Load (kernels/allreduce.py):
        # every rank loads every tile from every peer and sums it, a one-shot; two NVSHMEM
        # barriers on the stream run before the GEMM.
        rate = sub.link_Bps * t.sm_link_efficiency
        moved = (n - 1) * sub.total
        demand = {"link": 1.0 / t.sm_link_efficiency, DRAM: (n * sub.total + sub.total) / moved,
                  GRANTS: (n * sub.total + sub.total) / moved}
        rs, ag = (n * sub.total, sub.total), (0.0, 0.0)
        tail_s = 2 * sub.latency_s + sub.dram_latency_s
        start_s = 2 * sub.signal_s
    # On NVIDIA its layer's own tile, whichever library kernel this run was offered; on AMD,
    # whose kernel is autotuned, the library's kernel stands for its pick.
    gemm = sub.with_kernel(sub.triton_ar_gemm_kernel or sub.kernel).gemm(cus=sub.gpu.cus - ctas)
    engine = sub.engine("rr", record=record)
    ar = Flow("all-reduce", moved, demand, cap=rate, produced=0.0, lane="link")
    state = {}

    def on_wave(e: Engine, w: int) -> None:
        ready = sum(wave_stage_bytes(gemm, w).values()) / gemm.output_bytes * moved
        if ready > 0 and not ar.finished:
            e.produce(ar, ready)
    def begin(e: Engine) -> None:
        GemmRun(sub, gemm, on_wave=on_wave, on_end=lambda e2: state.__setitem__("gemm", e2.now)).start(e)
        e.start(ar, lambda e2, fl: state.__setitem__("ar", e2.now))
    if start_s > 0:
        engine.after(start_s, begin)
    else:
        begin(engine)
    engine.run()
    done = max(state["gemm"], state["ar"]) + sub.signal_s + tail_s
    return SchemeResult("triton_dist_ar", done, state["gemm"],
                        traffic(gemm.dram_read_bytes, gemm.output_bytes, rs, ag),
                        slowdowns={"gemm": (state["gemm"] - start_s) / sub.gemm_alone_s}, bound="ideal_ar",
                        intervals=engine.intervals, events=engine.events)
