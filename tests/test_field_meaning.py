"""One meaning per field (issue #26): every field a sweep can vary means, as ``--axis``, what
the same field means in a hardware file.

For each hardware axis of every preset, a changed value is set twice: once as the sweep sets
it (``--axis NAME=value``) and once by editing the preset's hardware file. The two study
configurations must be equal, field for field. Names renamed to carry their scope are
refused in both places with the new name.
"""

from __future__ import annotations

import tomllib

import pytest

from system_model.describe.files import RENAMED, DescriptionError, dump_hardware, parse_hardware
from system_model.describe.presets import PLATFORMS
from system_model.studies.sweep import HARDWARE_AXES, SweepSpec, parse_axis, task_config

SECTION = {"gpu": "gpu", "fabric": "fabric", "transport": "transport"}


def _file_config(data: dict):
    return parse_hardware(data, "edited.toml").study_config(None, rtl_timing=None)


def _edited(preset: str, name: str, value) -> dict:
    data = tomllib.loads(dump_hardware(PLATFORMS[preset]))
    part = HARDWARE_AXES[name]
    if part == "kernel":
        for kernel in data["kernels"]:
            kernel[name] = value
    else:
        data[SECTION[part]][name] = value
    return data


def _candidates(value):
    """Changed values near the preset's (the first that the description accepts is used)."""
    if isinstance(value, bool) or isinstance(value, str):
        return []
    if isinstance(value, int):
        out = [value * 2, value + 1, value - 1, max(1, value // 2)]
    else:
        out = [value * 1.5, value * 0.5, value + 1.0]
    return [v for v in out if v != value]


@pytest.mark.parametrize("preset", sorted(PLATFORMS))
def test_every_axis_means_what_the_hardware_file_means(preset):
    spec = SweepSpec(hardware=PLATFORMS[preset], axes=(), models=(), tps=None, phases=())
    base = tomllib.loads(dump_hardware(PLATFORMS[preset]))
    checked = 0
    for name, part in HARDWARE_AXES.items():
        current = (base["kernels"][0] if part == "kernel" else base[SECTION[part]]).get(name)
        for value in _candidates(current):
            try:
                from_file = _file_config(_edited(preset, name, value))
            except (DescriptionError, ValueError):
                continue                              # not a valid value here; try the next
            axis = parse_axis(f"{name}={value}")
            from_axis = task_config(spec, {name: axis.values[0]})
            assert from_axis == from_file, f"{preset}: --axis {name}={value} differs from {name} = {value} in a file"
            assert from_axis != _file_config(base), f"{preset}: {name}={value} changed nothing"
            checked += 1
            break
    # Every numeric field but the few whose neighbours are all invalid on this preset.
    numeric = [n for n, p in HARDWARE_AXES.items()
               if not isinstance((base["kernels"][0] if p == "kernel" else base[SECTION[p]]).get(n), (bool, str))]
    assert checked >= len(numeric) - 2, f"{preset}: only {checked} of {len(numeric)} numeric fields checked"


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_a_renamed_field_is_refused_with_its_new_name(old):
    new, scope = RENAMED[old]
    data = tomllib.loads(dump_hardware(PLATFORMS["h100-sxm"]))
    data["fabric"][old] = data["fabric"].pop(new)
    with pytest.raises(DescriptionError, match=f"'{old}' is now '{new}'"):
        parse_hardware(data, "old.toml")
    with pytest.raises(ValueError, match=f"--axis {old}: now {new}"):
        parse_axis(f"{old}=100")
