"""Today's GPUs and their fabrics, each figure with its source.

A :class:`Platform` is a GPU (:class:`~system_model.hardware.GpuConfig`), its scale-up
fabric and NIC (:class:`~system_model.fabric.FabricConfig`) and, for every figure, where it
comes from (``sources``: field name -> source). Figures are the vendors' datasheet values;
what a datasheet does not give is derived and says how (``derived: ...``) or assumed and
says so (``assumed: ...``), and the assumed ones are in the README's calibration table.

Derived for every GPU alike:

* ``fp16_flops_per_cycle_per_cu`` = dense fp16 FLOP/s / (CUs x the clock the datasheet
  quotes the rate at);
* ``hbm_channels`` = stacks x channels per stack (8 for HBM2e, 16 for HBM3/HBM3e, JEDEC
  JESD235/JESD238);
* ``mc_clock_GHz`` = the pin rate / 2 (a double-data-rate controller clock), with the pin
  rate = bandwidth / (stacks x 128 bytes of interface per stack).

``t3_blocks`` says whether the T3 schemes (and DMA collectives' near-memory reduction) may
run: True by default, since the study asks what T3 would add to each GPU; no shipping GPU
has the tracker or the near-memory reducer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..block_timing import load_block_timing
from ..fabric import FabricConfig
from ..gemm import GemmKernelConfig
from ..hardware import GpuConfig, SystemConfig
from ..models import GemmShape, WorkloadConfig
from ..schemes import StudyConfig

__all__ = ["Platform", "PLATFORMS", "platform", "ASSUMED", "library_kernel"]

#: Values no datasheet gives, used on every platform (README calibration table).
ASSUMED = {
    "hbm_efficiency": (0.85, "assumed: achieved fraction of HBM peak for streaming traffic (as the t3-paper preset)"),
    "dram_latency_ns": (500.0, "assumed: L2-miss latency of current GPUs; microbenchmarks report about 450-700 ns "
                               "for H100 and MI300X (Chips and Cheese)"),
    "link_latency_ns": (1000.0, "assumed: a remote store's flight GPU to GPU memory through NVSwitch or xGMI"),
    "scale_out_latency_ns": (3000.0, "assumed: a one-way RDMA write through two NICs and a switch"),
    "switch_reduce_latency_ns": (500.0, "assumed: NVSwitch's in-network reduction of every GPU's operand"),
}


@dataclass(frozen=True)
class Platform:
    """A GPU, its fabric, and where every figure comes from."""

    name: str
    gpu: GpuConfig
    fabric: FabricConfig
    kernels: tuple[GemmKernelConfig, ...]
    description: str
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    t3_blocks: bool = True

    def study_config(self, workload: WorkloadConfig | None = None) -> StudyConfig:
        """The model's configuration: the GPU, its ring, its GEMM library's large-tile kernel, T3's blocks."""
        return StudyConfig(system=self.system, block=load_block_timing(), kernel=self.kernels[0],
                           workload=workload or WorkloadConfig())

    @property
    def system(self) -> SystemConfig:
        """The model's system: the GPU, and the ring a collective over the whole domain runs on."""
        return SystemConfig(self.name, self.gpu, self.fabric.ring_link(self.fabric.domain_gpus), self.description)

    def with_changes(self, **changes) -> Platform:
        """A copy with GPU or fabric fields changed by name."""
        gpu = {k: v for k, v in changes.items() if k in GpuConfig.__dataclass_fields__}
        fabric = {k: v for k, v in changes.items() if k in FabricConfig.__dataclass_fields__}
        own = {k: v for k, v in changes.items() if k == "t3_blocks"}
        unknown = set(changes) - set(gpu) - set(fabric) - set(own)
        if unknown:
            raise ValueError(f"unknown platform field(s): {', '.join(sorted(unknown))}")
        return replace(self, gpu=replace(self.gpu, **gpu), fabric=replace(self.fabric, **fabric), **own)


def _gpu(*, cus: int, boost_GHz: float, dense_fp16_TFLOPS: float, l2_MB: float, hbm_GBps: float, stacks: int,
         channels_per_stack: int) -> GpuConfig:
    pin_Gbps = hbm_GBps / (stacks * 128)          # GB/s over a stack's 128-byte (1024-bit) interface
    return GpuConfig(cus=cus, clock_GHz=boost_GHz,
                     fp16_flops_per_cycle_per_cu=round(dense_fp16_TFLOPS * 1e12 / (cus * boost_GHz * 1e9)),
                     l2_MB=l2_MB, hbm_GBps=hbm_GBps, hbm_efficiency=ASSUMED["hbm_efficiency"][0],
                     mc_clock_GHz=round(pin_Gbps / 2, 2), hbm_channels=stacks * channels_per_stack,
                     dram_latency_ns=ASSUMED["dram_latency_ns"][0])


def _fabric(topology: str, *, link_bw_GBps: float, links: int, domain: int, nic_Gbps: float,
            sharp: bool = False) -> FabricConfig:
    return FabricConfig(topology=topology, link_bw_GBps=link_bw_GBps, links_per_gpu=links,
                        link_latency_ns=ASSUMED["link_latency_ns"][0], domain_gpus=domain,
                        scale_out_GBps=nic_Gbps / 8, scale_out_latency_ns=ASSUMED["scale_out_latency_ns"][0],
                        switch_reduction=sharp,
                        switch_reduce_latency_ns=ASSUMED["switch_reduce_latency_ns"][0] if sharp else 0.0)


#: The GEMM library's kernels for fp16 GEMMs on each architecture (macro tile, k-slice,
#: pipeline stages), as its kernel names report them, the large-tile kernel first. For a
#: shape the library runs the one that fills the GPU best (:func:`library_kernel`); its
#: tile is also T3's tracked tile.
_KERNELS = {
    # cuBLAS on A100: ampere_fp16_s16816gemm_fp16_{256x128,128x128}_ldg8_f2f_stages_32x3.
    "ampere": ((GemmKernelConfig(tile_m=256, tile_n=128, k_tile=32, prefetch_stages=3),
                GemmKernelConfig(tile_m=128, tile_n=128, k_tile=32, prefetch_stages=3)),
               "cuBLAS Ampere fp16 kernel names: 256x128 and 128x128 tiles, k-slice 32, 3 stages"),
    # cuBLAS/CUTLASS on Hopper: sm90 warp-specialised 128x256x64 and 128x128x64 tiles; 228 KB
    # of shared memory hold 4 stages of (128 + 256) x 64 fp16 operands.
    "hopper": ((GemmKernelConfig(tile_m=128, tile_n=256, k_tile=64, prefetch_stages=4),
                GemmKernelConfig(tile_m=128, tile_n=128, k_tile=64, prefetch_stages=4)),
               "cuBLAS/CUTLASS sm90 kernel names: 128x256x64 and 128x128x64 tiles; 4 stages fit 228 KB of shared "
               "memory"),
    "blackwell": ((GemmKernelConfig(tile_m=256, tile_n=256, k_tile=64, prefetch_stages=4),
                   GemmKernelConfig(tile_m=128, tile_n=256, k_tile=64, prefetch_stages=4),
                   GemmKernelConfig(tile_m=128, tile_n=128, k_tile=64, prefetch_stages=4)),
                  "CUTLASS sm100 UMMA: 256x256 (2-SM), 128x256 and 128x128 tiles, k-slice 64, 4 stages (assumed as "
                  "Hopper)"),
    # rocBLAS/Tensile on CDNA2: MT128x128x32 double-buffered (the t3-paper preset's kernel).
    "cdna2": ((GemmKernelConfig(), GemmKernelConfig(tile_m=64, tile_n=64)),
              "rocBLAS/Tensile CDNA2: MT128x128x32 and MT64x64x32, double-buffered (the t3-paper kernel)"),
    # hipBLASLt on CDNA3/4: MT256x256x64 and MT128x128x64 kernels with PrefetchGlobalRead 2.
    "cdna3": ((GemmKernelConfig(tile_m=256, tile_n=256, k_tile=64, prefetch_stages=3),
               GemmKernelConfig(tile_m=128, tile_n=128, k_tile=64, prefetch_stages=3)),
              "hipBLASLt CDNA3 kernel names: MT256x256x64 and MT128x128x64, PrefetchGlobalRead 2 (3 slices held)"),
}


def library_kernel(kernels: tuple[GemmKernelConfig, ...], shape: GemmShape, gpu: GpuConfig,
                   cus: int | None = None) -> GemmKernelConfig:
    """The kernel a library's heuristic runs for ``shape``: the fewest compute-time units
    (waves x one tile's matrix work), the larger tile on a tie (fewer operand reads)."""
    cus = gpu.cus if cus is None else cus

    def compute_units(k: GemmKernelConfig) -> float:
        tiles = math.ceil(shape.m / k.tile_m) * math.ceil(shape.n / k.tile_n)
        return math.ceil(tiles / cus) * k.tile_m * k.tile_n
    return min(kernels, key=compute_units)


_DERIVED = {
    "fp16_flops_per_cycle_per_cu": "derived: dense fp16 FLOP/s / (CUs x clock)",
    "hbm_channels": "derived: HBM stacks x channels per stack (JEDEC)",
    "mc_clock_GHz": "derived: HBM pin rate / 2",
    **{k: v[1] for k, v in ASSUMED.items()},
}

_NV_A100 = ("NVIDIA A100 datasheet (nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
            "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf); NVIDIA Ampere tuning guide "
            "(docs.nvidia.com/cuda/ampere-tuning-guide): 40 MB L2, NVLink 12 x 50 GB/s")
_NV_H100 = ("NVIDIA H100 datasheet; NVIDIA Hopper tuning guide (docs.nvidia.com/cuda/hopper-tuning-guide): 50 MB L2, "
            "NVLink 18 x 50 GB/s; 989.4 TF dense fp16 at 1.83 GHz")
_NV_H200 = ("NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s; MLPerf Inference v4.1 H200-SXM-141GBx8 system description "
            "(18 NVLink 4, 900 GB/s); L2 as H100 (same die)")
_NV_B200 = ("NVIDIA DGX/HGX B200 datasheets (64 TB/s HBM3e and 36 PF dense fp16 per 8 GPUs); NVIDIA Blackwell tuning "
            "guide (docs.nvidia.com/cuda/blackwell-tuning-guide): 126 MB L2; Chips and Cheese, B200: 148 SMs measured")
_AMD_MI210 = ("AMD Instinct MI210 product page and ROCm GPU specifications (rocm.docs.amd.com/en/latest/reference/"
              "gpu-specs.html): 104 CUs, 1.7 GHz, 181 TF fp16, 1.6 TB/s HBM2e, 8 MB L2")
_AMD_MI300X = ("AMD CDNA 3 white paper (amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/"
               "amd-cdna-3-white-paper.pdf); ROCm MI300 microarchitecture (rocm.docs.amd.com/en/latest/reference/"
               "gpu-arch/mi300.html): 304 CUs, 1307.4 TF fp16, 5.3 TB/s, 8 HBM3 stacks, 256 MB Infinity Cache")
_AMD_MI355X = ("AMD CDNA 4 white paper (amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/"
               "amd-cdna-4-architecture-whitepaper.pdf); ROCm GPU specifications: 256 CUs, 2.4 GHz, 2.5 PF fp16, "
               "8 TB/s HBM3E, 256 MB Infinity Cache")

def _sources(arch: str, gpu_source: str, fabric_source: str, nic_source: str, **specific: str) -> dict[str, str]:
    base = {name: gpu_source for name in ("cus", "clock_GHz", "dense_fp16_TFLOPS", "l2_MB", "hbm_GBps",
                                          "hbm_stacks")}
    base.update({name: fabric_source for name in ("topology", "link_bw_GBps", "links_per_gpu", "domain_gpus",
                                                  "switch_reduction")})
    base["scale_out_GBps"] = nic_source
    base["kernel"] = _KERNELS[arch][1]
    base.update(_DERIVED)
    base.update(specific)
    return base


PLATFORMS: dict[str, Platform] = {p.name: p for p in [
    Platform(
        "a100-sxm",
        _gpu(cus=108, boost_GHz=1.41, dense_fp16_TFLOPS=312, l2_MB=40, hbm_GBps=2039, stacks=5,
             channels_per_stack=8),
        _fabric("switch", link_bw_GBps=50, links=12, domain=8, nic_Gbps=200),
        _KERNELS["ampere"][0],
        "NVIDIA A100 SXM4 80GB, HGX A100 8-GPU (NVLink 3 through NVSwitch gen 2, no in-switch reduction)",
        _sources("ampere", _NV_A100,
                 "A100 datasheet: NVLink 600 GB/s (12 third-generation links x 50 GB/s); HGX A100 8-GPU with NVSwitch",
                 "HGX A100 reference: one ConnectX-6 HDR 200 Gb/s NIC per GPU")),
    Platform(
        "a800-sxm",
        _gpu(cus=108, boost_GHz=1.41, dense_fp16_TFLOPS=312, l2_MB=40, hbm_GBps=2039, stacks=5,
             channels_per_stack=8),
        _fabric("switch", link_bw_GBps=50, links=8, domain=8, nic_Gbps=200),
        _KERNELS["ampere"][0],
        "NVIDIA A800 SXM4 80GB (the A100 with NVLink cut to 400 GB/s for export), HGX 8-GPU",
        _sources("ampere", _NV_A100 + "; A800: the A100 die, compute and memory unchanged (no NVIDIA datasheet "
                 "found; Tweakers and AI Wiki report the A800 announcement)",
                 "A800: NVLink 'reduced from 600 GB/s to 400 GB/s' (AI Wiki, Tweakers; link count unpublished, "
                 "8 x 50 GB/s assumed); 8-GPU NVSwitch gen 2 board assumed as HGX A100",
                 "assumed as HGX A100: ConnectX-6 HDR 200 Gb/s per GPU")),
    Platform(
        "h100-sxm",
        _gpu(cus=132, boost_GHz=1.83, dense_fp16_TFLOPS=989.4, l2_MB=50, hbm_GBps=3350, stacks=5,
             channels_per_stack=16),
        _fabric("switch", link_bw_GBps=50, links=18, domain=8, nic_Gbps=400, sharp=True),
        _KERNELS["hopper"][0],
        "NVIDIA H100 SXM5 80GB, HGX H100 8-GPU (NVLink 4 through NVSwitch gen 3 with NVLink SHARP)",
        _sources("hopper", _NV_H100, "H100 datasheet: NVLink 900 GB/s (18 fourth-generation links x 50 GB/s); Hopper "
                 "whitepaper: NVSwitch gen 3 with NVLink SHARP",
                 "NVIDIA HGX AI factory reference architecture (H100, H200, B200): 400 Gb/s per GPU")),
    Platform(
        "h800-sxm",
        _gpu(cus=132, boost_GHz=1.83, dense_fp16_TFLOPS=989.4, l2_MB=50, hbm_GBps=3350, stacks=5,
             channels_per_stack=16),
        _fabric("switch", link_bw_GBps=50, links=8, domain=8, nic_Gbps=400, sharp=True),
        _KERNELS["hopper"][0],
        "NVIDIA H800 SXM5 (the H100 with NVLink cut to 400 GB/s for export), HGX 8-GPU",
        _sources("hopper", _NV_H100 + "; H800: the H100 die with NVLink cut to 400 GB/s (no NVIDIA datasheet; "
                 "Zhao et al., DeepSeek, ISCA'25: 'reduced from 900 GB/s to 400 GB/s')",
                 "DeepSeek ISCA'25: NVLink 400 GB/s (link count unpublished; 8 x 50 GB/s assumed) on an HGX H800 "
                 "NVSwitch board; NVLS presumed as H100",
                 "assumed as HGX H100: ConnectX-7 NDR 400 Gb/s per GPU")),
    Platform(
        "h200-sxm",
        _gpu(cus=132, boost_GHz=1.83, dense_fp16_TFLOPS=989.4, l2_MB=50, hbm_GBps=4800, stacks=6,
             channels_per_stack=16),
        _fabric("switch", link_bw_GBps=50, links=18, domain=8, nic_Gbps=400, sharp=True),
        _KERNELS["hopper"][0],
        "NVIDIA H200 SXM 141GB, HGX H200 8-GPU (H100 compute, HBM3e, NVLink 4 + NVSwitch gen 3)",
        _sources("hopper", _NV_H200, "H200 datasheet: NVLink 900 GB/s; HGX H200 with NVSwitch gen 3",
                 "HGX H200: ConnectX-7 NDR 400 Gb/s per GPU")),
    Platform(
        "b200",
        _gpu(cus=148, boost_GHz=1.86, dense_fp16_TFLOPS=2250, l2_MB=126, hbm_GBps=8000, stacks=8,
             channels_per_stack=16),
        _fabric("switch", link_bw_GBps=100, links=18, domain=8, nic_Gbps=400, sharp=True),
        _KERNELS["blackwell"][0],
        "NVIDIA B200 180GB, HGX B200 8-GPU (NVLink 5 through NVSwitch gen 4 with NVLink SHARP)",
        _sources("blackwell", _NV_B200,
                 "HGX B200: NVLink 1.8 TB/s per GPU (18 fifth-generation links x 100 GB/s), NVSwitch",
                 "HGX B200: ConnectX-7 400 Gb/s per GPU")),
    Platform(
        "mi210",
        _gpu(cus=104, boost_GHz=1.7, dense_fp16_TFLOPS=181, l2_MB=8, hbm_GBps=1638, stacks=4,
             channels_per_stack=8),
        _fabric("fully_connected", link_bw_GBps=100, links=3, domain=4, nic_Gbps=200),
        _KERNELS["cdna2"][0],
        "AMD Instinct MI210 64GB PCIe, four GPUs fully connected by Infinity Fabric Link bridges",
        _sources("cdna2", _AMD_MI210, "MI210 datasheet: up to 3 Infinity Fabric links, 300 GB/s peak peer-to-peer; a "
                 "four-GPU hive with the bridge", "assumed: one 200 Gb/s NIC per GPU")),
    Platform(
        "mi300x",
        _gpu(cus=304, boost_GHz=2.1, dense_fp16_TFLOPS=1307.4, l2_MB=256, hbm_GBps=5300, stacks=8,
             channels_per_stack=16),
        _fabric("fully_connected", link_bw_GBps=128, links=7, domain=8, nic_Gbps=400),
        _KERNELS["cdna3"][0],
        "AMD Instinct MI300X 192GB, eight GPUs fully connected by xGMI (Infinity Platform)",
        _sources("cdna3", _AMD_MI300X, "MI300X data sheet: 7 Infinity Fabric links x 128 GB/s (896 GB/s aggregate), "
                 "fully connected 8-GPU platform", "MI300X platforms: one 400 Gb/s NIC per GPU",
                 l2_MB="MI300X data sheet: 256 MB AMD Infinity Cache (memory-side; the 4 MB L2 per XCD is "
                       "smaller), used as the L2 the reuse model sees")),
    Platform(
        "mi355x",
        _gpu(cus=256, boost_GHz=2.4, dense_fp16_TFLOPS=2516, l2_MB=256, hbm_GBps=8000, stacks=8,
             channels_per_stack=16),
        _fabric("fully_connected", link_bw_GBps=153.6, links=7, domain=8, nic_Gbps=400),
        _KERNELS["cdna3"][0],
        "AMD Instinct MI355X 288GB, eight GPUs fully connected by xGMI",
        _sources("cdna3", _AMD_MI355X,
                 "MI355X data sheet: 7 Infinity Fabric links, 153.6 GB/s each (1075 GB/s aggregate)",
                 "MI355X platforms: one 400 Gb/s NIC per GPU (AMD Pensando Pollara 400)",
                 l2_MB="MI355X data sheet: 256 MB AMD Infinity Cache, used as the L2 the reuse model sees")),
]}


def platform(name: str) -> Platform:
    if name not in PLATFORMS:
        raise ValueError(f"platform must be one of {', '.join(PLATFORMS)}, not {name!r}")
    return PLATFORMS[name]
