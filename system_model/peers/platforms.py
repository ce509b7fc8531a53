"""Today's GPUs and their fabrics, for the peers study: the shipped hardware descriptions.

A platform is a :class:`~system_model.descriptions.HardwareDescription`, read from its
TOML file in ``system_model/presets/`` (``python -m system_model show-preset NAME``): a GPU,
its scale-up fabric and NIC, its GEMM library's kernels, and for every figure where it
comes from (``sources``). Figures are the vendors' datasheet values; what a datasheet does
not give is derived and says how (``derived: ...``) or assumed and says so
(``assumed: ...``), and the assumed ones are in the README's calibration table.

Derived alike for every GPU (the values in the files were computed so):

* ``fp16_flops_per_cycle_per_cu`` = dense fp16 FLOP/s / (CUs x the clock the datasheet
  quotes the rate at);
* ``hbm_channels`` = stacks x channels per stack (8 for HBM2e, 16 for HBM3/HBM3e, JEDEC
  JESD235/JESD238);
* ``mc_clock_GHz`` = the pin rate / 2 (a double-data-rate controller clock), with the pin
  rate = bandwidth / (stacks x 128 bytes of interface per stack).

The kernels are the library's for fp16 GEMMs on each architecture (cuBLAS/CUTLASS on
NVIDIA, hipBLASLt/Tensile on AMD), as its kernel names report them, the large tile first;
for a shape the library runs the one that fills the GPU best (:func:`library_kernel`), and
its tile is also T3's tracked tile.
"""

from __future__ import annotations

import math

from ..descriptions import HardwareDescription
from ..gemm import GemmKernelConfig
from ..hardware import GpuConfig
from ..models import GemmShape
from ..presets import DESCRIPTIONS, PAPER_PRESET

__all__ = ["Platform", "PLATFORMS", "DEFAULT_PLATFORMS", "platform", "library_kernel"]

#: A platform is a hardware description.
Platform = HardwareDescription

#: Every shipped description, the T3 paper's ring included.
PLATFORMS: dict[str, Platform] = dict(DESCRIPTIONS)
#: The study's default: today's GPUs (the paper's simulated ring is run only when named).
DEFAULT_PLATFORMS = tuple(name for name in PLATFORMS if name != PAPER_PRESET)


def platform(name: str) -> Platform:
    if name not in PLATFORMS:
        raise ValueError(f"platform must be one of {', '.join(PLATFORMS)}, not {name!r}")
    return PLATFORMS[name]


def library_kernel(kernels: tuple[GemmKernelConfig, ...], shape: GemmShape, gpu: GpuConfig,
                   cus: int | None = None) -> GemmKernelConfig:
    """The kernel a library's heuristic runs for ``shape``: the fewest compute-time units
    (waves x one tile's matrix work), the larger tile on a tie (fewer operand reads)."""
    cus = gpu.cus if cus is None else cus

    def compute_units(k: GemmKernelConfig) -> float:
        tiles = math.ceil(shape.m / k.tile_m) * math.ceil(shape.n / k.tile_n)
        return math.ceil(tiles / cus) * k.tile_m * k.tile_n
    return min(kernels, key=compute_units)
