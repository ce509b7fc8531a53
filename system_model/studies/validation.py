"""Each peer's model against a figure its own authors published, on their hardware.

A :class:`Published` point is a measurement from a peer's paper, README or maintainers:
the GPU (a :data:`~.platforms.PLATFORMS` preset), the TP, the GEMM shape each rank runs,
and the times of the baseline and of the peer. The model runs the same shape on the same
preset with nothing adjusted, and :func:`validate` reports both times and the speedup with
their errors. The tolerance on the speedup, :data:`SPEEDUP_TOLERANCE`, was written here
before the model was first run on these points; the absolute times are reported, not held
(the model's GEMM efficiency and DRAM figures are assumptions, and a speedup cancels most
of them).

Where a peer published no figure that can be reproduced shape by shape (FlashOverlap's
per-shape results and ConCCL's figures are in their papers' plots, not in text we could
read), :data:`UNVALIDATED` says so, and nothing is claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..collectives import software_all_gather, software_reduce_scatter
from ..models import GemmShape
from .platforms import platform
from .schemes import evaluate_peers

__all__ = ["Published", "PUBLISHED", "BUS_BANDWIDTH", "DMA_COLLECTIVES", "UNVALIDATED", "SPEEDUP_TOLERANCE",
           "BUSBW_TOLERANCE", "ValidationRow", "validate", "validation_markdown"]

#: Relative error allowed on a peer's speedup over its baseline (chosen before any run).
SPEEDUP_TOLERANCE = 0.15
#: Relative error allowed on a collective's bus bandwidth (chosen before any run).
BUSBW_TOLERANCE = 0.15


@dataclass(frozen=True)
class Published:
    """A published GEMM + collective measurement of a peer against its baseline."""

    name: str
    scheme: str
    platform: str
    tp: int
    shape: GemmShape
    collective: str
    baseline_ms: float
    peer_ms: float
    source: str

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.peer_ms


PUBLISHED: tuple[Published, ...] = (
    Published("Flux GEMM+RS, 8xH800", "flux", "h800-sxm", 8, GemmShape(4096, 12288, 6144), "reduce_scatter",
              1.408, 0.932,
              "bytedance/flux README 'Performance' (commit 239a13d, 2024-07-25): Gemm+RS(H800) M 4096, N 12288, "
              "K 49152 over TP 8, fp16: torch 0.818 ms + NCCL RS 0.590 ms = 1.408 ms; Flux 0.932 ms"),
    Published("Flux GEMM+RS, 8xA800", "flux", "a800-sxm", 8, GemmShape(4096, 12288, 6144), "reduce_scatter",
              3.100, 2.508,
              "bytedance/flux README 'Performance' (commit 239a13d): Gemm+RS(A800), same shape: torch 2.453 ms + "
              "NCCL RS 0.646 ms = 3.100 ms; Flux 2.508 ms"),
    Published("async-TP matmul+RS, 8xH100", "async_tp", "h100-sxm", 8, GemmShape(2048, 4096, 14336),
              "reduce_scatter", 0.422704, 0.755246,
              "meta-pytorch/kraken PR #19 (2025-07-31), GEMM + reduce-scatter, bf16, (M, N, K) = (2048, 4096, "
              "14336) per rank: torch + NCCL 0.422704 ms; async-TP (symmetric memory) 0.755246 ms"),
)


@dataclass(frozen=True)
class BusBandwidth:
    """A published collective bus bandwidth (NCCL's busBw) at large messages."""

    name: str
    scheme: str          # "ring" or "nvls"
    platform: str
    tp: int
    busbw_GBps: float
    source: str


BUS_BANDWIDTH: tuple[BusBandwidth, ...] = (
    BusBandwidth("NCCL ring RS/AG, 8xH100", "ring", "h100-sxm", 8, 370.0,
                 "NVIDIA/nccl-tests issue 212 (NCCL maintainer): ring 'bandwidth of 370GB/s, which you can observe "
                 "as BusBw' on 8 H100s"),
    BusBandwidth("NCCL NVLS all-reduce, 8xH100", "nvls", "h100-sxm", 8, 480.0,
                 "NVIDIA/nccl-tests issue 212 (NCCL maintainer): 'On 8 GPUs, you should reach a peak busBw of "
                 "~480GB/s (algbw ~275GB/s)' with NVLS"),
)

@dataclass(frozen=True)
class CollectiveSpeedup:
    """A published speedup of a DMA-engine collective over the vendor library's."""

    name: str
    platform: str
    tp: int
    message_bytes: float
    speedup: float
    source: str


DMA_COLLECTIVES: tuple[CollectiveSpeedup, ...] = (
    CollectiveSpeedup("DMA all-gather over RCCL's, 8xMI300X, large messages", "mi300x", 8, 2 ** 30, 1.16,
                      "DMA collectives on MI300X (arXiv 2511.06605 v1, abstract): at large sizes (10s of MB to GB) "
                      "DMA all-gather is at par or better than RCCL, '16% better'"),
)

#: Peers without a reproducible published point, and why.
UNVALIDATED = {
    "flashoverlap": "the paper's per-shape speedups are in its figures (RTX 4090, A800; no Hopper); its text gives "
                    "only 'up to 1.65x' over its whole grid, which includes PCIe GPUs we have no preset for",
    "dma_collective": "ConCCL's GEMM + collective figures (MI300X) are in its paper's plots (its text gives "
                      "fractions of an ideal speedup without the shapes); only the DMA engines' transfers are set "
                      "against a published figure (the all-gather row)",
    "t3_ring": "T3 is validated against its own paper by the report (`make report`) and against the RTL by "
               "`make crosscheck`",
}


@dataclass(frozen=True)
class ValidationRow:
    name: str
    metric: str
    published: float
    model: float
    tolerance: float | None
    source: str

    @property
    def error(self) -> float:
        return self.model / self.published - 1.0

    @property
    def within(self) -> bool | None:
        return None if self.tolerance is None else abs(self.error) <= self.tolerance


def _config(name: str) -> tuple:
    p = platform(name)
    return p, p.study_config()


def _busbw(point: BusBandwidth, message_bytes: float = 2 ** 30) -> float:
    p, cfg = _config(point.platform)
    n = point.tp
    ring = p.fabric.ring_link(n)
    factor = (n - 1) / n
    if point.scheme == "ring":
        rs = software_reduce_scatter(message_bytes, n, ring, cfg.system.gpu, cfg.collective)
        return message_bytes * factor / rs.time_s / 1e9
    shape = GemmShape(message_bytes // (2 * 8192), 8192, 128)     # any GEMM: only the all-reduce is read
    r = evaluate_peers(p, cfg, shape, n, schemes=("nvls",))["nvls"]
    ar_s = r.time_s - r.gemm_s
    return message_bytes * 2 * factor / ar_s / 1e9


def _dma_all_gather_speedup(point: CollectiveSpeedup) -> float:
    """RCCL's ring all-gather against the DMA engines' copies of each GPU's chunk to every
    peer at once (the transfers of the ``dma_collective`` scheme), both alone."""
    p, cfg = _config(point.platform)
    n, gpu = point.tp, cfg.system.gpu
    rccl = software_all_gather(point.message_bytes, n, p.fabric.ring_link(n), gpu, cfg.collective).time_s
    signal = gpu.dram_latency_ns * 1e-9 + p.fabric.hop_latency_s(n)
    dma = p.fabric.direct_send_s(point.message_bytes / n, n) + p.fabric.hop_latency_s(n) + signal
    return rccl / dma


def validate() -> list[ValidationRow]:
    """Every published point against the model (same preset, TP and shape; nothing tuned)."""
    rows = []
    for point in PUBLISHED:
        p, cfg = _config(point.platform)
        r = evaluate_peers(p, cfg, point.shape, point.tp, schemes=("sequential", point.scheme),
                           collective=point.collective)
        base_ms, peer_ms = r["sequential"].time_s * 1e3, r[point.scheme].time_s * 1e3
        rows.append(ValidationRow(f"{point.name}: speedup", "speedup", point.speedup, base_ms / peer_ms,
                                  SPEEDUP_TOLERANCE, point.source))
        rows.append(ValidationRow(f"{point.name}: baseline", "ms", point.baseline_ms, base_ms, None, point.source))
        rows.append(ValidationRow(f"{point.name}: {point.scheme}", "ms", point.peer_ms, peer_ms, None, point.source))
    for point in DMA_COLLECTIVES:
        rows.append(ValidationRow(point.name, "speedup", point.speedup, _dma_all_gather_speedup(point),
                                  SPEEDUP_TOLERANCE, point.source))
    for point in BUS_BANDWIDTH:
        rows.append(ValidationRow(point.name, "busbw GB/s", point.busbw_GBps, _busbw(point), BUSBW_TOLERANCE,
                                  point.source))
    return rows


def validation_markdown(rows: list[ValidationRow]) -> str:
    lines = ["# Peers against their published figures", "",
             "Generated by `python -m system_model peers`. Each peer's model runs the published GEMM shape and TP "
             "on the published GPU's preset, nothing adjusted. Held: the speedup over the baseline within "
             f"{SPEEDUP_TOLERANCE:.0%} and NCCL's bus bandwidth within {BUSBW_TOLERANCE:.0%} (tolerances chosen "
             "before the first run; `tests/test_peers.py`). Absolute times are shown with their error but not held.",
             "", "| point | published | model | error | held |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        fmt = ".2f" if r.metric == "speedup" else ".3f" if r.metric == "ms" else ".0f"
        unit = "x" if r.metric == "speedup" else f" {r.metric}"
        held = "-" if r.within is None else ("yes" if r.within else "**no**")
        lines.append(f"| {r.name} | {r.published:{fmt}}{unit} | {r.model:{fmt}}{unit} | {r.error:+.1%} | {held} |")
    lines += ["", "Sources:", ""]
    for source in dict.fromkeys(r.source for r in rows):
        lines.append(f"- {source}")
    lines += ["", "Not validated (no reproducible published point):", ""]
    lines += [f"- `{k}`: {v}" for k, v in UNVALIDATED.items()]
    return "\n".join(lines) + "\n"
