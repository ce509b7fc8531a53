"""Published measurements the model is validated against, and the tolerance it is held to.

Written down, with :data:`TOLERANCE`, before the model v3 (the timeline engine and the
transport model) was first run on any of them (issue #25). A point the model misses stays
in the table with the mechanism that explains the miss (:data:`MISS_MECHANISMS` in
:mod:`.validation`); nothing here is adjusted after a run.

Every figure quotes its source: an nccl-tests / rccl-tests output line, a README table row,
a maintainer's comment. Where a source prints bus bandwidth, it is nccl-tests' ``busbw``
(all-reduce: algbw x 2(n-1)/n; all-gather and reduce-scatter: algbw x (n-1)/n, algbw =
the whole buffer / time).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TOLERANCE", "BusBandwidth", "CopyBandwidth", "GemmCollective", "DmaCollective", "SmallAllReduce",
           "BUS_BANDWIDTHS", "COPY_BANDWIDTHS", "GEMM_COLLECTIVES", "DMA_COLLECTIVES", "SMALL_ALL_REDUCES", "GiB", "MiB",
           "KiB", "FusedSpeedup", "FUSED_SPEEDUPS", "MlpPoint", "MLP_POINTS", "AttentionSaving", "ATTENTION_SAVINGS",
           "TokenWeavePoint", "TOKENWEAVE_POINTS", "MULTIMEM_ALL_REDUCES", "FusedNormAllReduce",
           "FUSED_NORM_ALL_REDUCES",
           "OverlapKernelPoint", "OVERLAP_KERNEL_POINTS"]

#: Relative error allowed on every time, bus bandwidth and speedup below (issue #25:
#: "15% on times and bus bandwidths"), chosen before the first run.
TOLERANCE = 0.15

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10


@dataclass(frozen=True)
class BusBandwidth:
    """A collective's bus bandwidth as nccl-tests / rccl-tests print it.

    ``algorithm``: what ran ("ring", "nvls", or "default": the library's own choice, which
    the model makes the same way). ``message_bytes``: the whole buffer (nccl-tests' size).
    """

    platform: str
    gpus: int
    collective: str          # "all_reduce", "reduce_scatter", "all_gather"
    algorithm: str
    message_bytes: int
    busbw_GBps: float
    source: str
    quote: str


@dataclass(frozen=True)
class CopyBandwidth:
    """A copy engine's peer-to-peer copy rate, one direction, one pair of GPUs."""

    platform: str
    GBps: float
    source: str
    quote: str


@dataclass(frozen=True)
class GemmCollective:
    """A GEMM and its collective as a framework times them, and a peer's fused version.

    ``shape``: the GEMM each rank runs, (m, n, k). ``times_ms``: what was published, by
    part: "gemm" (the GEMM alone), "collective" (the library's collective alone), "baseline"
    (the two one after the other), and the peer's scheme name (its fused time).
    """

    name: str
    platform: str
    tp: int
    shape: tuple[int, int, int]
    collective: str          # "reduce_scatter" (GEMM then RS) or "all_gather" (AG then GEMM)
    scheme: str | None
    times_ms: dict[str, float]
    source: str
    quote: str


@dataclass(frozen=True)
class DmaCollective:
    """A DMA-engine collective against the vendor library's, both alone."""

    platform: str
    gpus: int
    collective: str
    message_bytes: int
    speedup: float
    source: str
    quote: str


_ML_ENG = ("stas00/ml-engineering network/README.md (commit 744d01e), nccl-tests tables")
_ROCM_BLOG = ("ROCm blog 'Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X' "
              "(2025-03-02; ROCm/rocm-blogs blogs/software-tools-optimization/mi300x-rccl-xgmi/README.md, "
              "commit 0e81c2c), rccl-tests all_reduce_perf, RCCL 2.22.3, ROCm 6.3.0")

BUS_BANDWIDTHS: tuple[BusBandwidth, ...] = (
    BusBandwidth("h100-sxm", 8, "reduce_scatter", "ring", 8 * GiB, 362.16,
                 "NVIDIA/nccl issue 1047 (2023-10-31), reduce_scatter_perf on 8 x H100",
                 "8589934592 268435456 float sum -1 20754 413.89 362.16 0"),
    BusBandwidth("h100-sxm", 8, "reduce_scatter", "ring", 128 * MiB, 311.34,
                 "NVIDIA/nccl issue 1047 (2023-10-31), reduce_scatter_perf on 8 x H100",
                 "134217728 4194304 float sum -1 377.2 355.81 311.34"),
    BusBandwidth("h100-sxm", 8, "all_gather", "ring", 8 * GiB, 350.0,
                 "NVIDIA/nccl issue 1281 (2024-05-10)",
                 "the result of nccl-tests on H100, reducescatter's busbw is 360GBps, and allgather's busbw is 350GBps"),
    BusBandwidth("h100-sxm", 8, "all_reduce", "nvls", 16 * GiB, 480.0,
                 "NVIDIA/nccl-tests issue 212 (NCCL maintainer, 2024-05-06)",
                 "On 8 GPUs, you should reach a peak busBw of ~480GB/s (algbw ~275GB/s)"),
    BusBandwidth("h100-sxm", 8, "all_reduce", "nvls", 256 * MiB, 423.38,
                 "Azure/AI-benchmarking-guide Azure_Results/ND_H100_v5_results.md (commit ae0b6a7), NCCL 2.18.5, "
                 "all_reduce in place, NVLS",
                 "| 256M | 423.38 |"),
    BusBandwidth("h200-sxm", 8, "all_reduce", "ring", 16 * GiB, 367.2,
                 _ML_ENG + ", 8 x H200, NCCL_NVLS_ENABLE=0",
                 "| all-reduce, NCCL_NVLS_ENABLE=0 | Ring | 367.2GBps | 82% |"),
    BusBandwidth("h200-sxm", 8, "all_gather", "ring", 16 * GiB, 361.4,
                 _ML_ENG + ", 8 x H200", "| all-gather | Ring | 361.4GBps | 80% |"),
    BusBandwidth("h200-sxm", 8, "reduce_scatter", "ring", 16 * GiB, 362.9,
                 _ML_ENG + ", 8 x H200", "| reduce-scatter | Ring | 362.9GBps | 81% |"),
    BusBandwidth("h200-sxm", 8, "all_reduce", "nvls", 16 * GiB, 480.0,
                 _ML_ENG + ", 8 x H200, NCCL_NVLS_ENABLE=1",
                 "| all-reduce, NCCL_NVLS_ENABLE=1 | NVLS | 480.0GBps | 107% |"),
    BusBandwidth("a100-sxm", 8, "all_reduce", "default", 16 * GiB, 234.89,
                 _ML_ENG + ", 8 x A100 (one node)", "17_179_869_184 127997 134.22 234.89"),
    BusBandwidth("a100-sxm", 8, "all_reduce", "default", 128 * MiB, 176.92,
                 _ML_ENG + ", 8 x A100 (one node)", "134_217_728 1327.6 101.10 176.92"),
    BusBandwidth("b200", 8, "all_reduce", "default", 16 * GiB, 845.67,
                 _ML_ENG + ", 8 x B200 (AWS P6-B200, one node), all_reduce_bench.py, torch 2.9.1, NCCL 2.27.7",
                 "| 16GiB | 845.67GBps | 381.80GBps | 2.2x |"),
    BusBandwidth("mi300x", 8, "all_reduce", "default", 16 * GiB, 318.98, _ROCM_BLOG,
                 "17179869184 4294967296 float sum -1 94254 182.27 318.98 0"),
    BusBandwidth("mi300x", 8, "all_reduce", "default", 256 * MiB, 305.62, _ROCM_BLOG,
                 "268435456 67108864 float sum -1 1537.1 174.64 305.62 0"),
    BusBandwidth("mi300x", 8, "all_reduce", "default", 64 * MiB, 273.66, _ROCM_BLOG,
                 "67108864 16777216 float sum -1 429.1 156.38 273.66 0"),
    BusBandwidth("mi300x", 8, "all_reduce", "default", 16 * MiB, 197.26, _ROCM_BLOG,
                 "16777216 4194304 float sum -1 148.8 112.72 197.26 0"),
    # Across nodes (found by the v3 sceptic reviews; added with their quotes, before any run
    # on them): two and four HGX H100 nodes on 8 x 400 Gb/s RoCE, and 248 HGX H200 nodes.
    BusBandwidth("h100-sxm", 16, "all_reduce", "default", 8 * GiB, 430.0,
                 "NVIDIA/nccl issue 1221 (2024-03-13), all_reduce_perf -b 4G -e 8G, NCCL 2.19.3, nodes of 8 x H100 "
                 "with 8 x 400 Gb RoCE; NVLS enabled (NCCL's default, NVLS-tree across nodes)",
                 "if I run all_reduce on single nodes or 2 nodes. when I set NCCL_NVLS_ENABLE=0 /1 . the bus BW "
                 "will upgraded from 330GB to 430GB"),
    BusBandwidth("h100-sxm", 16, "all_reduce", "ring", 8 * GiB, 330.0,
                 "NVIDIA/nccl issue 1221 (2024-03-13), as above, NCCL_NVLS_ENABLE=0 (the ring)",
                 "the bus BW will upgraded from 330GB to 430GB"),
    BusBandwidth("h100-sxm", 32, "all_reduce", "default", 8 * GiB, 320.0,
                 "NVIDIA/nccl issue 1221 (2024-03-13), as above, 4 nodes (32 GPUs)",
                 "but run it on nodes which is more than 2 . I set NCCL_NVLS_ENABLE=0 /1. it do not result in a "
                 "performance improvement. same busbw 320GB"),
    BusBandwidth("h200-sxm", 1984, "all_reduce", "default", 512 * MiB, 350.0,
                 "NVIDIA/nccl-tests issue 283 (2025-01-18), all_reduce_perf --minbytes 512M --maxbytes 512M on 248 "
                 "servers of 8 x H200, default NCCL_ALGO",
                 "The default NCCL_ALGO is being used. During extended testing, the bus bandwidth has been unstable, "
                 "typically measuring around 350G"),
    BusBandwidth("mi355x", 8, "all_reduce", "default", 8 * GiB, 360.97,
                 "ROCm/system-acceptance-docs docs/common/rccl-benchmarking.md (commit 23e7312): example output on "
                 "8 x MI350X, which has MI355X's xGMI links",
                 "8589934592 2147483648 float sum -1 41644 206.27 360.97 0"),
)

COPY_BANDWIDTHS: tuple[CopyBandwidth, ...] = (
    CopyBandwidth("h100-sxm", 375.0,
                  "NVIDIA/nccl issue 1264 (2024-04-24), p2pBandwidthLatencyTest (copy engine, cudaMemcpyPeer) on "
                  "HGX H100, unidirectional P2P writes, 371-377 GB/s per pair",
                  "0 2494.76 371.02 376.65 376.60 376.82 375.59 375.94 375.6"),
    CopyBandwidth("h200-sxm", 396.40,
                  _ML_ENG.replace("nccl-tests tables", "nvbandwidth") + ", 8 x H200",
                  "./nvbandwidth -i 10 -t device_to_device_memcpy_write_ce # 396.40 GB/s per pair"),
)

_FLUX = ("bytedance/flux README 'Performance' (commit 239a13d, 2024-07-25), TP 8, fp16, "
         "M 4096, K 49152 (6144 per rank), N 12288")
_KRAKEN = ("meta-pytorch/kraken PR 19 (2025-07-31), 8 x H100, bf16, GEMM + reduce-scatter, "
           "Torch+NCCL against Async-TP (symmetric memory)")

_TD166 = ("ByteDance-Seed/Triton-distributed PR #166 (2026-04): GEMM + reduce-scatter on H100 80GB (NV18), "
          "PyTorch (cuBLAS + NCCL) against the overlap kernel before the PR and after it (the PR adds the fast path to "
          "cuBLAS + NCCL below 100 GFLOPs that the model follows)")

GEMM_COLLECTIVES: tuple[GemmCollective, ...] = (
    GemmCollective("Flux GEMM+RS, 8 x H800", "h800-sxm", 8, (4096, 12288, 6144), "reduce_scatter", "flux",
                   {"gemm": 0.818, "collective": 0.590, "baseline": 1.408, "flux": 0.932}, _FLUX,
                   "| Gemm+RS(H800) | 4096 | 49152 | 12288 | 0.818ms | 0.590ms | 1.408ms | 0.822ms | 0.111ms | 0.932ms |"),
    GemmCollective("Flux GEMM+RS, 8 x A800", "a800-sxm", 8, (4096, 12288, 6144), "reduce_scatter", "flux",
                   {"gemm": 2.453, "collective": 0.646, "baseline": 3.100, "flux": 2.508}, _FLUX,
                   "| Gemm+RS(A800) | 4096 | 49152 | 12288 | 2.453ms | 0.646ms | 3.100ms | 2.429ms | 0.080ms | 2.508ms |"),
    GemmCollective("Torch AG + GEMM, 8 x H800", "h800-sxm", 8, (4096, 6144, 12288), "all_gather", None,
                   {"gemm": 0.846, "collective": 0.583}, _FLUX.replace("K 49152 (6144 per rank), N 12288",
                                                                        "K 12288, N 49152 (6144 per rank)"),
                   "| AG+Gemm(H800) | 4096 | 12288 | 49152 | 0.846ms | 0.583ms | 1.429ms | 0.814ms | 0.143ms | 0.957ms |"),
    GemmCollective("Torch AG + GEMM, 8 x A800", "a800-sxm", 8, (4096, 6144, 12288), "all_gather", None,
                   {"gemm": 2.438, "collective": 0.662}, _FLUX.replace("K 49152 (6144 per rank), N 12288",
                                                                        "K 12288, N 49152 (6144 per rank)"),
                   "| AG+Gemm(A800) | 4096 | 12288 | 49152 | 2.438ms | 0.662ms | 3.099ms | 2.378ms | 0.091ms | 2.469ms |"),
    GemmCollective("Triton-distributed GEMM+RS, 8 x H100, 8192 x 8192 x 29568", "h100-sxm", 8, (8192, 8192, 3696),
                   "reduce_scatter", "triton_dist_rs", {"baseline": 1.045, "triton_dist_rs": 0.851}, _TD166,
                   "8192x8192x29568, world size 8: PyTorch 1.045 ms, Before 0.855 ms, After 0.851 ms"),
    GemmCollective("Triton-distributed GEMM+RS, 8 x H100, 4096 x 4096 x 8192", "h100-sxm", 8, (4096, 4096, 1024),
                   "reduce_scatter", "triton_dist_rs", {"baseline": 0.167, "triton_dist_rs": 0.167}, _TD166,
                   "4096x4096x8192, world size 8: PyTorch 0.167 ms, Before 0.323 ms, After 0.167 ms"),
    *(GemmCollective(f"Triton-distributed GEMM+RS, {tp} x H100, {m} x {n} x {k}", "h100-sxm", tp, (m, n, k // tp),
                     "reduce_scatter", "triton_dist_rs", {"baseline": base, "triton_dist_rs": after}, _TD166,
                     f"{m}x{n}x{k}, world size {tp}: PyTorch {base} ms, After {after} ms")
      for m, n, k, tp, base, after in ((4096, 4096, 8192, 4, 0.205, 0.231), (4096, 4096, 8192, 2, 0.275, 0.256),
                                       (8192, 8192, 29568, 4, 1.707, 1.575), (8192, 8192, 29568, 2, 3.077, 2.902))),
    GemmCollective("async-TP GEMM+RS, 8 x H100, M 512", "h100-sxm", 8, (512, 4096, 14336), "reduce_scatter",
                   "async_tp", {"baseline": 0.133653, "async_tp": 0.613784}, _KRAKEN,
                   "| (512, 4096,14336) | 0.133653 | 0.613784 | 0.307717 | 0.22x | 0.43x | 1.99x |"),
    GemmCollective("async-TP GEMM+RS, 8 x H100, M 1024", "h100-sxm", 8, (1024, 4096, 14336), "reduce_scatter",
                   "async_tp", {"baseline": 0.223621, "async_tp": 0.666917}, _KRAKEN,
                   "| (1024, 4096,14336) | 0.223621 | 0.666917 | 0.314597 | 0.34x | 0.71x | 2.12x |"),
    GemmCollective("async-TP GEMM+RS, 8 x H100, M 2048", "h100-sxm", 8, (2048, 4096, 14336), "reduce_scatter",
                   "async_tp", {"baseline": 0.422704, "async_tp": 0.755246}, _KRAKEN,
                   "| (2048, 4096,14336) | 0.422704 | 0.755246 | 0.409870 | 0.56x | 1.03x | 1.84x |"),
)

DMA_COLLECTIVES: tuple[DmaCollective, ...] = (
    DmaCollective("mi300x", 8, "all_gather", GiB, 1.16,
                  "DMA collectives on MI300X (arXiv 2511.06605 v1, abstract)",
                  "DMA collectives are at-par or better for large sizes (10s of MB to GB) in terms of both "
                  "performance (16% better) and power (32% better)"),
)


@dataclass(frozen=True)
class SmallAllReduce:
    """An all-reduce's time at the serving regime's sizes (16 KiB to 64 MiB, and the same
    benchmarks' larger sizes), as a framework benchmark prints it; ``collective`` another
    collective of the library's where the benchmark times it beside.

    ``algorithm``: ``"library"`` (NCCL's own choice, through ``torch.distributed`` or
    vLLM's pynccl), ``"one_shot"`` or ``"two_shot"`` (a load-based all-reduce: vLLM's custom
    all-reduce, PyTorch SymmetricMemory). ``harness``: how it was timed, as the source says
    (eager ``torch.distributed`` calls pay the host's launch and the stream's synchronisation
    on top of the kernel; CUDA graphs do not).
    """

    platform: str
    gpus: int
    algorithm: str
    message_bytes: int
    time_us: float
    harness: str
    source: str
    quote: str
    collective: str = "all_reduce"


_TW_FIG5 = ("microsoft/tokenweave artifact/csvs/figure_5.csv: torch.distributed (NCCL, PyTorch 2.6.0) "
            "reduce_scatter and all_gather of tokens x 8192 bf16 on 8 x H100 DGX, eager, L2 flushed, median")
_TD57 = "ByteDance-Seed/Triton-distributed issue #57 (2025-07): torch.distributed all_reduce on 8 x H100, one node"
_HELION = ("pytorch/helion PR #245 (2025-07): one-shot all-reduce benchmark on 8 x H100, bf16, sizes in elements; "
           "the 'dist' column is torch.distributed._symmetric_memory's one_shot_all_reduce")
_VLLM24111 = ("vllm-project/vllm PR #24111 (2025-09): benchmark of vLLM's all-reduce backends on H100, TP 4, bf16; "
              "ca_1stage / ca_2stage are the custom all-reduce's one-shot and two-shot, pynccl is NCCL")
_TOKENWEAVE = ("microsoft/tokenweave artifact/csvs/figure_4.csv: torch.distributed (NCCL, PyTorch 2.6.0) all-reduce "
               "on 8 x H100 DGX, eager, L2 flushed, median")

#: Written with :data:`TOLERANCE` before the model was run on them. Eager timings carry the
#: host's launch; the misses stay in the table with that mechanism. (TokenWeave's figure 4
#: from 2 MiB up and its figure 5 were added later, again before the model was run on them.)
SMALL_ALL_REDUCES: tuple[SmallAllReduce, ...] = (
    *(SmallAllReduce("h100-sxm", 8, "library", size, us, "torch.distributed, eager", _TD57,
                     f"all_reduce {label}: {us} us") for size, label, us in (
        (16 * KiB, "16KB", 20.71), (64 * KiB, "64KB", 23.05), (256 * KiB, "256KB", 24.76), (MiB, "1MB", 32.42),
        (4 * MiB, "4MB", 59.43), (16 * MiB, "16MB", 135.68))),
    *(SmallAllReduce("h100-sxm", 8, "library", size, us, "torch.distributed, eager, L2 flushed", _TOKENWEAVE,
                     f"nccl, {label}: {us} us") for size, label, us in (
        (MiB, "1 MiB", 36.0), (2 * MiB, "2 MiB", 54.9), (4 * MiB, "4 MiB", 66.5), (8 * MiB, "8 MiB", 94.7),
        (16 * MiB, "16 MiB", 137.2), (32 * MiB, "32 MiB", 219.7), (64 * MiB, "64 MiB", 347.6),
        (128 * MiB, "128 MiB", 646.1), (256 * MiB, "256 MiB", 1232.0), (512 * MiB, "512 MiB", 2402.5))),
    # Its figure 5 times NCCL's reduce-scatter and all-gather of the same tensors beside them.
    *(SmallAllReduce("h100-sxm", 8, "library", tokens * 8192 * 2, us, "torch.distributed, eager, L2 flushed",
                     _TW_FIG5, f"{tokens} tokens: pytorch_dist_{column}_us {us}", collective=collective)
      for collective, column, values in (
          ("reduce_scatter", "rs", (29.3, 35.9, 55.6, 64.1, 91.4, 125.5, 208.0, 392.4, 734.9, 1419.6)),
          ("all_gather", "ag", (29.7, 35.4, 49.2, 59.8, 89.2, 135.6, 218.6, 395.2, 740.8, 1422.7)))
      for tokens, us in zip((64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768), values, strict=True)),
    *(SmallAllReduce("h100-sxm", 8, "one_shot", size, us, "torch.distributed._symmetric_memory", _HELION,
                     f"{label} elements: dist 1-shot {us} us") for size, label, us in (
        (8 * KiB, "4k", 16.0), (32 * KiB, "16k", 17.0), (128 * KiB, "64k", 19.8), (256 * KiB, "128k", 25.1),
        (512 * KiB, "256k", 30.4), (MiB, "512k", 43.3), (2 * MiB, "1m", 65.4))),
    *(SmallAllReduce("h100-sxm", 4, algorithm, size, us, "vLLM benchmark", _VLLM24111,
                     f"{label}: {column} {us} us") for algorithm, column, size, label, us in (
        ("one_shot", "ca_1stage", 512 * KiB, "0.5 MB", 10.0), ("one_shot", "ca_1stage", MiB, "1 MB", 15.0),
        ("two_shot", "ca_2stage", 512 * KiB, "0.5 MB", 17.0), ("two_shot", "ca_2stage", MiB, "1 MB", 18.0),
        ("two_shot", "ca_2stage", 2 * MiB, "2 MB", 27.0), ("two_shot", "ca_2stage", 4 * MiB, "4 MB", 43.0),
        ("library", "pynccl", 512 * KiB, "0.5 MB", 17.0), ("library", "pynccl", MiB, "1 MB", 19.0),
        ("library", "pynccl", 2 * MiB, "2 MB", 26.0), ("library", "pynccl", 4 * MiB, "4 MB", 37.0))),
)


@dataclass(frozen=True)
class FusedSpeedup:
    """A fused scheme's speedup over the framework's GEMM then collective, where only the
    ratio is published (a bar chart's value against a baseline of 1.0). ``shape``: the GEMM
    each rank runs (the K of a reduce-scatter divided by the ranks)."""

    name: str
    platform: str
    tp: int
    shape: tuple[int, int, int]
    collective: str
    scheme: str
    speedup: float
    source: str
    quote: str


_TD_README = ("ByteDance-Seed/Triton-distributed README, asset/gemm-rs-intranode-perf.png: GEMM + reduce-scatter on "
              "8 x H800 against PyTorch + NCCL = 1.0 (bar heights read off the figure, +-0.02)")

#: Written with :data:`TOLERANCE` before the model was run on them.
FUSED_SPEEDUPS: tuple[FusedSpeedup, ...] = tuple(
    FusedSpeedup(f"Triton-distributed GEMM+RS, 8 x H800, {m} x {n} x {k}", "h800-sxm", 8, (m, n, k // 8),
                 "reduce_scatter", "triton_dist_rs", x, _TD_README, f"{m}x{n}x{k}: Triton-distributed {x}")
    for m, n, k, x in ((8192, 4096, 11008, 1.07), (8192, 4096, 14336, 1.10), (8192, 3584, 14336, 1.07),
                       (8192, 4608, 36864, 1.43), (8192, 8192, 28672, 1.57), (8192, 8192, 29568, 1.60)))


@dataclass(frozen=True)
class MlpPoint:
    """A tensor-parallel MLP block timed whole: its gate/up GEMM (``m x 2 intermediate/tp x
    hidden``), the SiLU-and-multiply, its down GEMM (``m x hidden x intermediate/tp``) and the
    all-reduce of the down GEMM's output; the baseline runs them one after another (cuBLAS,
    then NCCL), the peer fuses the down GEMM with the all-reduce (``scheme``)."""

    name: str
    platform: str
    tp: int
    m: int
    hidden: int
    intermediate: int
    scheme: str
    times_ms: dict[str, float]
    source: str
    quote: str


_TD_E2E = ("ByteDance-Seed/Triton-distributed docs/getting-started/e2e/e2e_dense.md (commit c5cb9bb6, PR #104) and "
           "docs/e2e.md: 8 x H800, TP 8, bf16, CUDA graphs, 'Torch AR' (cuBLAS GEMMs + torch.distributed.all_reduce) "
           "against the gemm_ar layer; model shapes from the models' config.json (Qwen3-32B: hidden 5120, "
           "intermediate 25600; Seed-OSS-36B: hidden 5120, intermediate 27648)")

#: Written with :data:`TOLERANCE` before the model was run on them.
MLP_POINTS: tuple[MlpPoint, ...] = (
    MlpPoint("Triton-distributed GEMM+AR MLP, Qwen3-32B, 8 x H800, M 2048", "h800-sxm", 8, 2048, 5120, 25600,
             "triton_dist_ar", {"baseline": 0.6012, "triton_dist_ar": 0.4756}, _TD_E2E,
             "| MLP | M=2048 | 0.6012 | 0.4756 | 1.26x |"),
    MlpPoint("Triton-distributed GEMM+AR MLP, Seed-OSS-36B, 8 x H800, M 2048", "h800-sxm", 8, 2048, 5120, 27648,
             "triton_dist_ar", {"baseline": 0.6587, "triton_dist_ar": 0.4930}, _TD_E2E,
             "| MLP | M=2048 | 0.6587 | 0.4930 | 1.34x |"),
)


@dataclass(frozen=True)
class AttentionSaving:
    """The time a fused GEMM + all-reduce saves in a tensor-parallel attention block, timed
    whole against the same block with cuBLAS then the library's all-reduce.

    Both blocks run the same QKV projection, q/k norms, rotary embedding, KV-cache update and
    flash attention (Triton-distributed's ``TP_Attn.torch_fwd`` and
    ``dist_triton_gemm_ar_fwd`` differ only in the output projection and its all-reduce), so
    the difference of the two published times is the output projection's
    (``m x hidden x heads * head_dim / tp``) cuBLAS GEMM + all-reduce less the fused kernel:
    what the model can be held to without a model of the shared kernels."""

    name: str
    platform: str
    tp: int
    shape: tuple[int, int, int]
    scheme: str
    times_ms: dict[str, float]
    source: str
    quote: str

    @property
    def saving_us(self) -> float:
        return (self.times_ms["baseline"] - self.times_ms[self.scheme]) * 1e3


_TD_ATTN = (_TD_E2E + "; attention: Qwen3-32B 64 heads, Seed-OSS-36B 80 heads, head_dim 128, so the output "
            "projection's K is heads x 128 / 8; prefill bsz 1 x ctx 128 and decode bsz 128 (one token each) are "
            "M 128 (the table's parameters; the doc's gemm_ar prefill command reads --bsz 8)")

#: Written with :data:`TOLERANCE` before the model was run on them.
ATTENTION_SAVINGS: tuple[AttentionSaving, ...] = tuple(
    AttentionSaving(f"Triton-distributed GEMM+AR attention, {model}, 8 x H800, {phase} M 128", "h800-sxm", 8,
                    (128, 5120, heads * 128 // 8), "triton_dist_ar", {"baseline": base, "triton_dist_ar": fused},
                    _TD_ATTN, quote)
    for model, heads, phase, base, fused, quote in (
        ("Qwen3-32B", 64, "prefill", 0.1292, 0.0900, "| **Attn Prefill** | `bsz=1, ctx=128` | 0.1292 | 0.0900 |"),
        ("Qwen3-32B", 64, "decode", 0.1435, 0.1036, "| **Attn Decode** | `bsz=128, ctx=128` | 0.1435 | 0.1036 |"),
        ("Seed-OSS-36B", 80, "prefill", 0.1274, 0.0862, "| **Attn Prefill** | `bsz=1, ctx=128` | 0.1274 | 0.0862 |"),
        ("Seed-OSS-36B", 80, "decode", 0.1367, 0.0981, "| **Attn Decode** | `bsz=128, ctx=128` | 0.1367 | 0.0981 |")))


_TW_FIG4 = ("microsoft/tokenweave artifact/csvs/figure_4.csv: PyTorch-derived multimem all-reduce on 8 x H100 DGX, "
            "bf16, hidden 8192, best CTA count, eager, L2 flushed, median of 100")

#: (bytes, us): written with :data:`TOLERANCE` before the model was run on them.
MULTIMEM_ALL_REDUCES: tuple[SmallAllReduce, ...] = tuple(
    SmallAllReduce("h100-sxm", 8, "multimem", tokens * 8192 * 2, us, "eager, L2 flushed", _TW_FIG4,
                   f"{tokens} tokens: multimem {us} us")
    for tokens, us in ((64, 16.5), (128, 20.2), (256, 28.1), (512, 43.7), (1024, 74.8), (2048, 135.9),
                       (4096, 257.2), (8192, 500.2), (16384, 986.0), (32768, 1956.6)))


_TW_FIG10 = ("microsoft/tokenweave artifact/csvs/figure_10.csv: its fused all-reduce + add + RMSNorm kernel on a "
             "given number of CTAs, 8 x H100 DGX, bf16, hidden 8192, eager, L2 flushed, median of 100")


@dataclass(frozen=True)
class FusedNormAllReduce:
    """TokenWeave's fused all-reduce + residual add + RMSNorm kernel of ``tokens`` rows of
    ``hidden`` bf16 on ``ctas`` CTAs (its figure 10)."""

    platform: str
    gpus: int
    tokens: int
    hidden: int
    ctas: int
    time_us: float
    source: str
    quote: str
    #: Its default column (one CTA per token of the slice), not a chosen count.
    default_ctas: bool = False

    @property
    def message_bytes(self) -> int:
        return self.tokens * self.hidden * 2


#: Every cell of its figure 10 but the 2-CTA column, which sets
#: ``PeerConfig.tokenweave_slice_GBps_per_cta`` and is not a point: (tokens, ((CTAs, us), ...)),
#: the first pair its default (one CTA per token of the GPU's slice, tokens / 8). Written
#: with :data:`TOLERANCE` before the model was run on them.
_FIG10 = (
    (64, ((8, 18.4), (4, 18.7), (8, 18.3), (16, 17.1), (32, 17.6), (64, 18.4), (128, 18.3))),
    (128, ((16, 22.1), (4, 27.2), (8, 23.1), (16, 22.0), (32, 21.7), (64, 22.0), (128, 22.6))),
    (256, ((32, 32.3), (4, 42.0), (8, 33.7), (16, 30.1), (32, 31.9), (64, 33.5), (128, 33.2))),
    (512, ((64, 55.1), (4, 70.8), (8, 51.3), (16, 45.1), (32, 48.0), (64, 55.1), (128, 55.6))),
    (1024, ((128, 100.4), (4, 128.0), (8, 86.6), (16, 75.4), (32, 78.7), (64, 86.3), (128, 100.9))),
    (2048, ((256, 188.9), (4, 240.4), (8, 155.4), (16, 137.1), (32, 138.6), (64, 150.0), (128, 163.4))),
    (4096, ((512, 339.0), (4, 465.9), (8, 290.8), (16, 258.2), (32, 259.8), (64, 275.0), (128, 300.2))),
    (8192, ((1024, 621.3), (4, 913.8), (8, 561.7), (16, 503.5), (32, 502.3), (64, 518.1), (128, 567.7))),
    (16384, ((2048, 1198.8), (4, 1797.9), (8, 1103.0), (16, 1004.3), (32, 987.3), (64, 1003.6), (128, 1078.3))),
    (32768, ((4096, 2323.3), (4, 3558.4), (8, 2184.0), (16, 1972.1), (32, 1965.6), (64, 1975.7), (128, 2064.1))),
)
FUSED_NORM_ALL_REDUCES: tuple[FusedNormAllReduce, ...] = tuple(
    FusedNormAllReduce("h100-sxm", 8, tokens, 8192, ctas, us, _TW_FIG10,
                       f"{tokens} tokens, {'its default, ' if k == 0 else ''}{ctas} CTAs: {us} us", default_ctas=k == 0)
    for tokens, cells in _FIG10 for k, (ctas, us) in enumerate(cells))


@dataclass(frozen=True)
class TokenWeavePoint:
    """A prefill's end-to-end latency with TokenWeave, its multimem baseline and without the
    all-reduce (``times_ms``: ``baseline``, ``nocomm``, ``tokenweave``), one prompt of
    ``tokens``."""

    name: str
    platform: str
    tp: int
    model: str
    tokens: int
    times_ms: dict[str, float]
    source: str
    quote: str


_TW_E2E = ("microsoft/tokenweave artifact/csvs/figure_11a.csv (8 x H100) and figure_11b.csv (4 x H100): "
           "Llama-3.3-70B (Llama 3 70B's architecture) prefill latency, batch 1, eager, median")

#: Every Llama row of both figures (their Qwen2.5-72B and Mixtral-8x22B rows are of models
#: the study does not have). Written with :data:`TOLERANCE` before the model was run on them
#: (the 32K and 64K rows, and the 4-GPU rows from 2K with their no-communication times, were
#: added later, again before the model was run on them).
TOKENWEAVE_POINTS: tuple[TokenWeavePoint, ...] = tuple(
    TokenWeavePoint(f"TokenWeave prefill, Llama 3 70B, {gpus} x H100, {t // 1024}K tokens", "h100-sxm", gpus,
                    "llama-3-70b", t, {"baseline": b, "nocomm": n, "tokenweave": w}, _TW_E2E,
                    f"{t // 1024}K: baseline {b} ms, nocomm {n} ms, TokenWeave {w} ms")
    for gpus, rows in (
        (8, ((1024, 53.7, 41.9, 46.2), (2048, 94.2, 74.9, 76.7), (4096, 179.5, 144.9, 142.2),
             (8192, 356.0, 289.5, 279.8), (16384, 744.1, 610.2, 585.3), (32768, 1639.9, 1371.4, 1326.0),
             (65536, 3917.7, 3338.3, 3282.4))),
        (4, ((1024, 82.2, 70.8, 72.5), (2048, 150.6, 132.5, 137.1), (4096, 295.2, 257.2, 261.9),
             (8192, 609.6, 531.5, 529.5), (16384, 1288.3, 1130.4, 1125.9), (32768, 2880.8, 2546.3, 2558.8),
             (65536, 7063.8, 6333.1, 6374.8))))
    for t, b, n, w in rows)


@dataclass(frozen=True)
class OverlapKernelPoint:
    """A fused scheme's overlap kernel timed where its library now falls back to cuBLAS +
    NCCL (PR #166's 'Before' column): the model's overlap path, whatever the size."""

    name: str
    platform: str
    tp: int
    shape: tuple[int, int, int]
    time_ms: float
    source: str
    quote: str


#: Written with :data:`TOLERANCE` before the model was run on them (the review of the
#: serving change found them left out).
OVERLAP_KERNEL_POINTS: tuple[OverlapKernelPoint, ...] = tuple(
    OverlapKernelPoint(f"Triton-distributed GEMM+RS overlap kernel (before PR #166), {tp} x H100, {m} x {n} x {k}",
                       "h100-sxm", tp, (m, n, k // tp), before, _TD166,
                       f"{m}x{n}x{k}, world size {tp}: Before {before} ms")
    for m, n, k, tp, before in ((4096, 4096, 8192, 8, 0.323), (4096, 4096, 8192, 4, 0.286),
                                (4096, 4096, 8192, 2, 0.259), (8192, 8192, 29568, 8, 0.855),
                                (8192, 8192, 29568, 4, 1.548), (8192, 8192, 29568, 2, 2.886)))
