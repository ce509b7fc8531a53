"""Hardware and model descriptions in TOML: read, checked, written.

A **hardware file** describes one platform: a GPU, its fabric and NIC, its GEMM library's
kernels, and where each figure comes from. Every preset (``python -m system_model
show-preset NAME``) is such a file, shipped in ``system_model/describe/presets/``::

    name = "my-gpu"
    description = "what it is"
    t3_blocks = true            # optional: may the T3 schemes run (default true)

    [gpu]                       # GpuConfig: cus, clock_GHz, fp16_flops_per_cycle_per_cu,
    cus = 132                   # l2_MB, hbm_GBps, hbm_efficiency, mc_clock_GHz,
    ...                         # hbm_channels, dram_latency_ns, ... (see hardware.py)

    [fabric]                    # FabricConfig: topology, link_bw_GBps_per_link, links_per_gpu, ...
    ...

    [transport]                 # TransportConfig: library, generation, sm_link_efficiency,
    ...                         # ce_link_efficiency, channels, channel_GBps, nvls_efficiency, ...

    [[kernels]]                 # optional, the GEMM library's kernels, large tile first
    tile_m = 128
    ...

    [sources]                   # optional: field -> where its value comes from
    cus = "NVIDIA H100 datasheet"

A **model file** describes a Transformer: ``name``, ``hidden``, ``ffn``, ``activation``
(``gelu`` or ``swiglu``), ``heads``, ``kv_heads``, ``layers``, optionally ``biases`` and
``dropout``, and a ``[workload]`` table with ``seq_len`` and ``micro_batch`` (training
tokens per GEMM = seq_len x micro_batch; prefill = one sequence).

Every error names the file, the field and the bound, in one line:
``my_gpu.toml: [gpu] hbm_GBps must be greater than 0, not -5``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .fabric import FabricConfig
from .hardware import GpuConfig, SystemConfig
from .kernels import GemmKernelConfig
from .models import TransformerModel, WorkloadConfig
from .transport import TransportConfig

if TYPE_CHECKING:
    from .config import StudyConfig

__all__ = ["DescriptionError", "HardwareDescription", "ModelDescription", "read_hardware", "parse_hardware",
           "dump_hardware", "read_model", "parse_model", "dump_model"]


class DescriptionError(ValueError):
    """A description file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class HardwareDescription:
    """A platform: a GPU, its fabric and NIC, its GEMM library's kernels (large tile first),
    where each figure comes from, and whether the T3 schemes may run (``t3_blocks``: no
    shipping GPU has T3's tracker or near-memory reducer; the studies ask what they would
    add, so presets say True)."""

    name: str
    description: str
    gpu: GpuConfig
    fabric: FabricConfig
    transport: TransportConfig
    kernels: tuple[GemmKernelConfig, ...]
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    t3_blocks: bool = True

    @property
    def system(self) -> SystemConfig:
        """The GPU, its fabric and its transports."""
        return SystemConfig(self.name, self.gpu, self.fabric, self.transport, self.description)

    def study_config(self, workload: WorkloadConfig | None = None, *, rtl_timing=None,
                     dram_model: str = "fluid") -> StudyConfig:
        """The model's configuration: the system, its library's kernels, T3's blocks, and how
        the timeline serves the DRAM (``StudyConfig.dram_model``)."""
        from .block_timing import RTL_TIMING_JSON, load_block_timing
        from .config import StudyConfig

        block = load_block_timing(RTL_TIMING_JSON if rtl_timing is None else rtl_timing)
        return StudyConfig(system=self.system, block=block, kernels=self.kernels,
                           workload=workload or WorkloadConfig(), t3_blocks=self.t3_blocks, dram_model=dram_model)

    def with_changes(self, **changes) -> HardwareDescription:
        """A copy with GPU, fabric or transport fields, ``t3_blocks``, or ``max_split_k`` (every
        kernel's) changed by name."""
        own = {k: v for k, v in changes.items() if k == "t3_blocks"}
        if "max_split_k" in changes:
            own["kernels"] = tuple(dataclasses.replace(k, max_split_k=changes["max_split_k"]) for k in self.kernels)
        system = self.system.with_changes(**{k: v for k, v in changes.items() if k not in ("t3_blocks", "max_split_k")})
        return dataclasses.replace(self, gpu=system.gpu, fabric=system.fabric, transport=system.transport, **own)


@dataclass(frozen=True)
class ModelDescription:
    model: TransformerModel
    workload: WorkloadConfig | None


def _fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _typed(where: str, key: str, value, annotation: str):
    """Check a TOML value against a dataclass field's annotation (ints may stand for floats)."""
    kind = annotation.replace(" ", "")
    if kind in ("int",):
        if isinstance(value, bool) or not isinstance(value, int):
            raise DescriptionError(f"{where} {key} must be an integer, not {value!r}")
    elif kind in ("float",):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DescriptionError(f"{where} {key} must be a number, not {value!r}")
    elif kind in ("bool",):
        if not isinstance(value, bool):
            raise DescriptionError(f"{where} {key} must be true or false, not {value!r}")
    elif kind in ("str",):
        if not isinstance(value, str):
            raise DescriptionError(f"{where} {key} must be a string, not {value!r}")
    return value


#: Fields renamed so that the name says the scope (issue #26: one meaning per field): the old
#: name is refused with the new one, never read as something else.
RENAMED = {"link_bw_GBps": ("link_bw_GBps_per_link", "one link, both directions"),
           "scale_out_GBps": ("scale_out_GBps_per_gpu", "one GPU's NIC, one direction")}


def _build(cls, table, where: str):
    if not isinstance(table, dict):
        raise DescriptionError(f"{where} must be a table, not {_short(table)}")
    known = _fields(cls)
    unknown = sorted(set(table) - set(known))
    for key in unknown:
        if key in RENAMED:
            raise DescriptionError(f"{where} {key!r} is now {RENAMED[key][0]!r} ({RENAMED[key][1]}): rename it")
    if unknown:
        raise DescriptionError(f"{where} unknown key {unknown[0]!r} (expected one of {', '.join(known)})")
    missing = [name for name, f in known.items() if name not in table
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise DescriptionError(f"{where} is missing {missing[0]!r}")
    values = {k: _typed(where, k, v, str(known[k].type)) for k, v in table.items()}
    try:
        return cls(**values)
    except (ValueError, TypeError) as error:
        raise DescriptionError(f"{where} {error}") from None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_WORDS = {str: "a string", bool: "true or false", dict: "a table", list: "an array of tables", int: "an integer"}

#: A name becomes part of output file names: letters, digits, '.', '_', '-', not starting with '.'.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _check_name(file: str, name: str) -> None:
    if not _NAME.fullmatch(name) or ".." in name:
        raise DescriptionError(f"{file}: name must be 1-64 letters, digits, '.', '_' or '-' (it names the output "
                               f"files), not {name!r}")


#: The largest description file read (a hardware or model file is a few KB; this refuses a
#: device or a log handed over by mistake before reading it).
MAX_FILE_BYTES = 1 << 20


def _load(path: Path) -> dict:
    try:
        if path.exists() and not path.is_dir() and not path.is_file():
            raise DescriptionError(f"{path}: not a regular file (a device, a pipe or a socket)")
        if path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
            raise DescriptionError(f"{path}: {path.stat().st_size:,} bytes; a description is at most "
                                   f"{MAX_FILE_BYTES:,}")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DescriptionError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DescriptionError(f"{path}: a folder, not a file") from None
    except UnicodeDecodeError:
        raise DescriptionError(f"{path.name}: not UTF-8 text") from None
    except OSError as error:
        raise DescriptionError(f"{path}: cannot be read ({error.strerror})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DescriptionError(f"{path.name}: not valid TOML ({error})") from None


def _top(data: dict, file: str, allowed: dict[str, type], required: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise DescriptionError(f"{file}: unknown key {unknown[0]!r} (expected one of {', '.join(allowed)})")
    for key in required:
        if key not in data:
            raise DescriptionError(f"{file}: missing {key!r}")
    for key, kind in allowed.items():
        if key in data and (not isinstance(data[key], kind) or kind is not bool and isinstance(data[key], bool)):
            raise DescriptionError(f"{file}: {key} must be {_WORDS.get(kind, kind.__name__)}, not {_short(data[key])}")


def parse_hardware(data: dict, file: str = "<hardware>") -> HardwareDescription:
    _top(data, file, {"name": str, "description": str, "t3_blocks": bool, "gpu": dict, "fabric": dict,
                      "transport": dict, "kernels": list, "sources": dict}, ("name", "gpu", "fabric", "transport"))
    _check_name(file, data["name"])
    gpu = _build(GpuConfig, data["gpu"], f"{file}: [gpu]")
    fabric = _build(FabricConfig, data["fabric"], f"{file}: [fabric]")
    transport = _build(TransportConfig, data["transport"], f"{file}: [transport]")
    kernels = tuple(_build(GemmKernelConfig, k, f"{file}: [[kernels]] #{i + 1}")
                    for i, k in enumerate(data.get("kernels", [{}])))
    if not kernels:
        raise DescriptionError(f"{file}: [[kernels]] must hold at least one kernel")
    sources = data.get("sources", {})
    for key, value in sources.items():
        if not isinstance(value, str):
            raise DescriptionError(f"{file}: [sources] {key} must be a string, not {value!r}")
    return HardwareDescription(data["name"], data.get("description", ""), gpu, fabric, transport, kernels,
                               dict(sources), data.get("t3_blocks", True))


def read_hardware(path: str | Path, *, presets: dict | None = None) -> HardwareDescription:
    """Read and check a hardware file. With ``presets``, a file may take a preset's name only
    as an unchanged copy (results are named after it; two different platforms must not be)."""
    path = Path(path)
    d = parse_hardware(_load(path), path.name)
    if presets and d.name in presets and presets[d.name] != d:
        raise DescriptionError(f"{path.name}: name {d.name!r} is a preset's, but the file changes it: give it its "
                               f"own name (name = \"my-gpu\")")
    return d


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"cannot write {value!r} as TOML")


def _toml_key(key: str) -> str:
    """A bare key where TOML allows one (ASCII letters, digits, '_', '-'), else a quoted one."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _table(obj) -> list[str]:
    return [f"{f.name} = {_toml_value(getattr(obj, f.name))}" for f in dataclasses.fields(obj)]


def dump_hardware(h: HardwareDescription) -> str:
    """The description as TOML that :func:`read_hardware` reads back to an equal description."""
    lines = [f"name = {_toml_value(h.name)}", f"description = {_toml_value(h.description)}",
             f"t3_blocks = {_toml_value(h.t3_blocks)}", "", "[gpu]", *_table(h.gpu), "", "[fabric]",
             *_table(h.fabric), "", "[transport]", *_table(h.transport)]
    for kernel in h.kernels:
        lines += ["", "[[kernels]]", *_table(kernel)]
    if h.sources:
        lines += ["", "[sources]", *(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in h.sources.items())]
    return "\n".join(lines) + "\n"


_ACTIVATIONS = ("gelu", "swiglu")


def parse_model(data: dict, file: str = "<model>") -> ModelDescription:
    allowed = {"name": str, "hidden": int, "ffn": int, "activation": str, "heads": int, "kv_heads": int,
               "layers": int, "biases": bool, "dropout": bool, "params_B": (int, float), "source": str,
               "workload": dict}
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise DescriptionError(f"{file}: unknown key {unknown[0]!r} (expected one of {', '.join(allowed)})")
    for key in ("name", "hidden", "ffn", "activation", "heads", "layers"):
        if key not in data:
            raise DescriptionError(f"{file}: missing {key!r}")
    for key, kind in allowed.items():
        if key in data:
            value = data[key]
            if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
                what = {int: "an integer", bool: "true or false", str: "a string",
                        dict: "a table"}.get(kind, "a number")
                raise DescriptionError(f"{file}: {key} must be {what}, not {value!r}")
    _check_name(file, data["name"])
    if data["activation"] not in _ACTIVATIONS:
        raise DescriptionError(f"{file}: activation must be one of {', '.join(_ACTIVATIONS)}, not "
                               f"{data['activation']!r}")
    params = data.get("params_B", 0.0)
    if not isinstance(params, bool) and (not math.isfinite(params) or params < 0):
        raise DescriptionError(f"{file}: params_B must be a finite number >= 0, not {params!r}")
    gated = data["activation"] == "swiglu"
    heads, hidden = data["heads"], data["hidden"]
    if heads > 0 and hidden % heads:
        raise DescriptionError(f"{file}: heads must divide hidden {hidden}, not {heads}")
    kv = data.get("kv_heads", heads)
    if isinstance(kv, int) and kv > 0 and heads % kv:
        raise DescriptionError(f"{file}: kv_heads must divide heads {heads}, not {kv}")
    try:
        model = TransformerModel(
            data["name"], float(data.get("params_B", 0.0)), hidden, heads, data["layers"],
            kv_heads=kv, ffn_dim=data["ffn"], gated_mlp=gated, biases=data.get("biases", not gated),
            dropout=data.get("dropout", not gated), source=data.get("source", f"model file {file}"))
    except (ValueError, TypeError) as error:
        # The class's names where the file's differ (the file's `ffn` is the class's ffn_dim).
        raise DescriptionError(f"{file}: {str(error).replace('ffn_dim', 'ffn')}") from None
    workload = None
    if "workload" in data:
        w = data["workload"]
        extra = sorted(set(w) - {"seq_len", "micro_batch"})
        if extra:
            raise DescriptionError(f"{file}: [workload] unknown key {extra[0]!r} (expected seq_len, micro_batch)")
        for key in ("seq_len", "micro_batch"):
            if key not in w:
                raise DescriptionError(f"{file}: [workload] is missing {key!r}")
            if isinstance(w[key], bool) or not isinstance(w[key], int):
                raise DescriptionError(f"{file}: [workload] {key} must be an integer, not {w[key]!r}")
            if w[key] < 1:
                raise DescriptionError(f"{file}: [workload] {key} must be at least 1, not {w[key]}")
        try:
            workload = WorkloadConfig(training_tokens=w["seq_len"] * w["micro_batch"], prefill_tokens=w["seq_len"])
        except (ValueError, TypeError) as error:
            raise DescriptionError(f"{file}: [workload] seq_len x micro_batch: {error}") from None
    return ModelDescription(model, workload)


def read_model(path: str | Path) -> ModelDescription:
    path = Path(path)
    return parse_model(_load(path), path.name)


def dump_model(m: TransformerModel, workload: WorkloadConfig | None = None) -> str:
    lines = [f"name = {_toml_value(m.name)}", f"params_B = {_toml_value(float(m.params_B))}",
             f"hidden = {m.hidden}", f"ffn = {m.ffn}",
             f"activation = {_toml_value('swiglu' if m.gated_mlp else 'gelu')}", f"heads = {m.heads}",
             f"kv_heads = {m.heads if m.kv_heads is None else m.kv_heads}", f"layers = {m.layers}",
             f"biases = {_toml_value(m.biases)}", f"dropout = {_toml_value(m.dropout)}",
             f"source = {_toml_value(m.source)}"]
    if workload is not None:
        if workload.training_tokens % workload.prefill_tokens:
            raise ValueError("training_tokens must be a multiple of prefill_tokens to be written as a workload")
        lines += ["", "[workload]", f"seq_len = {workload.prefill_tokens}",
                  f"micro_batch = {workload.training_tokens // workload.prefill_tokens}"]
    return "\n".join(lines) + "\n"
