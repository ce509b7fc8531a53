"""The shipped hardware descriptions (one TOML file per platform, package data), read once.

``t3-model show-preset NAME`` prints one, to copy and change; ``--hardware-file`` reads such
a copy back (:mod:`system_model.describe.files`). A platform is a
:class:`~system_model.describe.files.HardwareDescription`: a GPU, its scale-up fabric and
NIC, its transports, its GEMM library's kernels, and for every figure where it comes from
(``sources``). Derived alike for every GPU (the values in the files were computed so):

* ``fp16_flops_per_cycle_per_cu`` = dense fp16 FLOP/s / (CUs x the clock the datasheet
  quotes the rate at);
* ``hbm_channels`` = stacks x channels per stack (8 for HBM2e, 16 for HBM3/HBM3e, JEDEC
  JESD235/JESD238);
* ``mc_clock_GHz`` = the pin rate / 2 (a double-data-rate controller clock), with the pin
  rate = bandwidth / (stacks x 128 bytes of interface per stack).
"""

from __future__ import annotations

from pathlib import Path

from ..files import HardwareDescription, read_hardware
from ..hardware import SystemConfig

__all__ = ["PRESET_DIR", "DESCRIPTIONS", "PAPER_PRESET", "PRESETS", "preset", "PLATFORMS", "DEFAULT_PLATFORMS",
           "platform", "Platform"]

PRESET_DIR = Path(__file__).resolve().parent
#: The T3 paper's simulated system, first; then today's platforms by vendor and generation,
#: then any other file by name.
PAPER_PRESET = "t3-paper"
ORDER = (PAPER_PRESET, "a100-sxm", "a800-sxm", "h100-sxm", "h800-sxm", "h200-sxm", "b200", "mi210", "mi300x",
         "mi355x")

#: A platform is a hardware description.
Platform = HardwareDescription


def _read_all() -> dict[str, HardwareDescription]:
    found = {}
    for path in sorted(PRESET_DIR.glob("*.toml")):
        d = read_hardware(path)
        if d.name != path.stem:
            raise ValueError(f"{path.name}: name must be {path.stem!r} (the file's name), not {d.name!r}")
        found[d.name] = d
    ordered = {name: found.pop(name) for name in ORDER if name in found}
    return {**ordered, **found}


DESCRIPTIONS: dict[str, HardwareDescription] = _read_all()
#: Every shipped description, the T3 paper's ring included.
PLATFORMS: dict[str, Platform] = dict(DESCRIPTIONS)
#: The peers study's default: today's GPUs (the paper's simulated ring is run only when named).
DEFAULT_PLATFORMS = tuple(name for name in PLATFORMS if name != PAPER_PRESET)
#: Every shipped preset's system.
PRESETS: dict[str, SystemConfig] = {name: d.system for name, d in DESCRIPTIONS.items()}


def platform(name: str) -> Platform:
    if name not in PLATFORMS:
        raise ValueError(f"platform must be one of {', '.join(PLATFORMS)}, not {name!r}")
    return PLATFORMS[name]


def preset(name: str) -> SystemConfig:
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)}, not {name!r}")
    return PRESETS[name]
