"""The shipped hardware descriptions (one TOML file per platform, package data), read once.

``python -m system_model show-preset NAME`` prints one, to copy and change; the CLI's
``--hardware-file`` reads such a copy back (:mod:`system_model.descriptions`).
"""

from __future__ import annotations

from pathlib import Path

from ..descriptions import HardwareDescription, read_hardware

__all__ = ["PRESET_DIR", "DESCRIPTIONS", "PAPER_PRESET"]

PRESET_DIR = Path(__file__).resolve().parent
#: The T3 paper's simulated system, first; then today's platforms by vendor and generation,
#: then any other file by name.
PAPER_PRESET = "t3-paper"
ORDER = (PAPER_PRESET, "a100-sxm", "a800-sxm", "h100-sxm", "h800-sxm", "h200-sxm", "b200", "mi210", "mi300x",
         "mi355x")


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
