"""Who does what when: every scheme as a schedule of flows on one timeline (:mod:`system_model.engine`).

:func:`evaluate` runs any of :data:`SCHEMES` on one sublayer. The T3 paper's study runs
:data:`PAPER_SCHEMES`, the peers study :data:`PEER_SCHEMES`. Each result names the ideal it
is held under (``bound``): ``ideal_overlap`` for the schemes that run the all-gather after
the reduce-scatter, ``ideal_all_reduce`` for every scheme.
"""

from __future__ import annotations

from ..describe.config import StudyConfig
from ..describe.models import GemmShape
from ..describe.units import check_int_range
from ..kernels.gemm import library_variants
from . import cache, ficco, paper, peers, t3, triton_dist
from .context import COLLECTIVES, SchemeResult, Sublayer

__all__ = ["SCHEMES", "PAPER_SCHEMES", "PEER_SCHEMES", "SERVING_SCHEMES", "BOUNDS", "SCHEME_LABELS", "SCHEME_SOURCES",
           "evaluate", "SchemeResult", "Sublayer"]

_RUN = {
    "sequential": paper.sequential, "t3": paper.t3, "t3_mca": paper.t3_mca, "cu_sharing": paper.cu_sharing,
    "t3_ring": lambda sub, record=False, **beat: paper.t3_mca(sub, record=record, name="t3_ring", **beat),
    "t3_direct": t3.t3_direct, "flux": peers.flux, "async_tp": peers.async_tp, "flashoverlap": peers.flashoverlap,
    "dma_collective": peers.dma_collective, "dma_nmc": peers.dma_nmc, "nvls": peers.nvls,
    "custom_ar": peers.custom_ar, "triton_dist_rs": triton_dist.triton_dist_rs,
    "triton_dist_ar": triton_dist.triton_dist_ar, "ficco": ficco.ficco,
}
_BOUNDS_RUN = {"ideal_overlap": lambda sub, record=False: paper.ideal_overlap(sub),
               "ideal_all_reduce": lambda sub, record=False: paper.ideal_all_reduce(sub),
               "ideal_rs_nmc": lambda sub, record=False: t3.ideal_rs_nmc(sub)}
#: Schemes that run the library's GEMM as it is (the kernel the library picks for the GEMM
#: alone, or no GEMM of their own); every other scheme runs each of the library's kernels
#: (and each split of K the library offers) and keeps its fastest, as a fused kernel is
#: tuned per shape. (The split the library would pick for the GEMM alone is not enough: a
#: scheme on fewer CUs, T3's or CU sharing's, may want another, and without it a faster HBM
#: made T3 direct slower; the case is an example in the invariant suite.)
_LIBRARY_KERNEL = {"sequential", "nvls", "custom_ar", "async_tp", "ideal_overlap", "ideal_all_reduce"}
#: Schemes whose kernel is their own where this says so: every library kernel would give the
#: same run (Triton-distributed's fused GEMM + AR on NVIDIA: its layer's tile), so one is run.
_OWN_KERNEL = {"triton_dist_ar": lambda sub: sub.triton_ar_gemm_kernel is not None}
#: Schemes that take a time to beat (``beat_s``) and stop a run once it cannot, returning
#: None: their layouts (T3's, T3 direct's, CU sharing's, Flux's) and groupings
#: (FlashOverlap's) are many full simulations each, most of them losing.
_BEATABLE = {"t3", "t3_mca", "t3_ring", "t3_direct", "cu_sharing", "flashoverlap", "flux"}
#: The ideals, and which result field names them.
BOUNDS = {"ideal_rs": "ideal_overlap", "ideal_ar": "ideal_all_reduce"}

PAPER_SCHEMES = ("sequential", "ideal_overlap", "ideal_all_reduce", "ideal_rs_nmc", "t3", "t3_mca", "cu_sharing")
PEER_SCHEMES = ("sequential", "ideal_overlap", "ideal_all_reduce", "t3_ring", "t3_direct", "flux", "async_tp",
                "flashoverlap", "triton_dist_rs", "triton_dist_ar", "ficco", "dma_collective", "dma_nmc", "nvls")
#: The serving study's: the peers and the load-based all-reduce serving engines run.
SERVING_SCHEMES = PEER_SCHEMES + ("custom_ar",)
SCHEMES = tuple(dict.fromkeys(PAPER_SCHEMES + SERVING_SCHEMES))

SCHEME_LABELS = {
    "sequential": "Sequential", "ideal_overlap": "Ideal (RS hidden)", "ideal_all_reduce": "Ideal (AR hidden)",
    "ideal_rs_nmc": "Ideal RS+NMC", "t3": "T3", "t3_mca": "T3-MCA", "cu_sharing": "CU sharing",
    "t3_ring": "T3-MCA ring", "t3_direct": "T3 direct", "flux": "Flux", "async_tp": "async-TP",
    "flashoverlap": "FlashOverlap", "dma_collective": "DMA coll.", "dma_nmc": "DMA + NMC", "nvls": "NVLS",
    "custom_ar": "one/two-shot AR", "triton_dist_rs": "Triton-dist RS", "triton_dist_ar": "Triton-dist AR",
    "ficco": "FiCCO",
}

SCHEME_SOURCES = {
    "sequential": "the GEMM, then the library's all-reduce (NCCL/RCCL's own choice of algorithm and protocol)",
    "ideal_overlap": "bound: the reduce-scatter's bytes hidden under the fastest GEMM, then the all-gather",
    "ideal_all_reduce": "bound: the whole all-reduce's bytes hidden under the fastest GEMM",
    "ideal_rs_nmc": "the GEMM, then T3's hardware reduce-scatter alone, then the all-gather",
    "t3": "Pati et al., ASPLOS 2024 (arXiv 2401.16677): track & trigger, NMC, round-robin DRAM arbiter",
    "t3_mca": "Pati et al., ASPLOS 2024: T3 with compute-first memory-controller arbitration (T3-MCA)",
    "cu_sharing": "the T3 paper's motivation study: the stages done so far all-reduced by the library on k CUs",
    "t3_ring": "T3-MCA on a ring laid over the platform's fabric",
    "t3_direct": "T3's tracker and NMC with direct remote updates (this model's extension)",
    "flux": "Chang et al., arXiv 2406.06858; github.com/bytedance/flux",
    "async_tp": "PyTorch async-TP: torch.distributed._symmetric_memory.fused_matmul_reduce_scatter",
    "flashoverlap": "Hong et al., arXiv 2504.19519 (FlashOverlap)",
    "dma_collective": "Agrawal et al., arXiv 2412.14335 (ConCCL: collectives on GPU DMA engines)",
    "dma_nmc": "ConCCL-style DMA transfers with T3's near-memory reduction (no tracker: stage flags)",
    "nvls": "NCCL 2.17+ NVLink SHARP all-reduce",
    "custom_ar": "vLLM custom all-reduce / TensorRT-LLM / PyTorch SymmetricMemory one-shot and two-shot all-reduce",
    "triton_dist_rs": "Triton-distributed / TileLink GEMM + reduce-scatter (arXiv 2503.20313; "
                      "ByteDance-Seed/Triton-distributed)",
    "triton_dist_ar": "Triton-distributed fused GEMM + all-reduce (its gemm_ar layer: per-tile flags, NVLS two-shot)",
    "ficco": "Pal, Aga, Pati, Islam, John, arXiv 2512.10236 (FiCCO: DMA overlap finer than the shard)",
}


def evaluate(cfg: StudyConfig, shape: GemmShape, tp: int, *, schemes=PAPER_SCHEMES, collective: str = "all_reduce",
             record: bool = False) -> dict[str, SchemeResult]:
    """Every scheme of ``schemes`` for one sublayer GEMM (per GPU) at tensor parallelism ``tp``.

    ``collective``: ``all_reduce`` (the sublayer) or ``reduce_scatter`` (the GEMM + RS that
    Flux and async-TP publish). ``record`` keeps the timelines and the engine's intervals
    (for plots); sweeps leave it off.
    """
    check_int_range("tp", tp, 2, 1 << 16)
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}, not {collective!r}")
    for name in schemes:
        if name not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, not {name!r}")
    sub = others = None
    out = {}
    base = None if record else cache.key(cfg, shape, tp, collective, "")
    for name in schemes:
        k = None if base is None else (*base[:-1], name)
        if k is not None and (hit := cache.lookup(k)) is not None:
            out[name] = hit
            continue
        run = _RUN.get(name) or _BOUNDS_RUN[name]
        if sub is None:
            sub = Sublayer(cfg, shape, tp, collective)
            variants = library_variants(shape, cfg.kernels, sub.gpu.cus)
            others = [sub.with_kernel(k) for k in variants if k != sub.kernel]
        best = run(sub, record=record)
        own = _OWN_KERNEL.get(name)
        if name not in _LIBRARY_KERNEL and best.available and not (own and own(sub)):
            for other in others:
                r = run(other, record=record, beat_s=best.time_s) if name in _BEATABLE else run(other, record=record)
                if r is not None and r.time_s < best.time_s:
                    best = r
        out[name] = best
        if k is not None:
            best.intervals = []
            cache.store(k, best)
    return out
