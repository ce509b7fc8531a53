"""The calibration table: every value the model assumes rather than derives, with its source.

Each :class:`Calibrated` names a field of :class:`~system_model.describe.config.StudyConfig` by a
dotted path (``system.gpu.hbm_efficiency``), says where its value comes from, and is what
``python -m system_model sensitivity`` moves by ±25%. Nothing here is fitted to a paper
figure: a value is either a datasheet/source number or an assumption stated as one.

:func:`value_of` reads a path; :func:`with_value` returns a copy of a configuration with
one path changed (the dataclasses are frozen, so every level is rebuilt).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace

__all__ = ["Calibrated", "CALIBRATION", "value_of", "with_value", "calibrated"]


@dataclass(frozen=True)
class Calibrated:
    """One calibrated value.

    Attributes
    ----------
    path : str
        Dotted path of the field in a ``StudyConfig`` (``kernel.compute_efficiency``).
    unit : str
        Its unit ("" for a ratio or a count).
    source : str
        Where the value comes from: a datasheet, a library's default, or "assumed: <why>".
    integer : bool
        Whether the field is an integer (a ±25% move is rounded, and kept at least 1).
    """

    path: str
    unit: str
    source: str
    integer: bool = False

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]


#: The table, in the order of the README's calibration table and of the sensitivity report.
CALIBRATION: tuple[Calibrated, ...] = (
    Calibrated("system.gpu.fp16_flops_per_cycle_per_cu", "flop/cycle",
               "CDNA2 matrix cores: MI210 181 TFLOPS = 104 CU x 1.7 GHz x 1024", integer=True),
    Calibrated("system.gpu.hbm_efficiency", "",
               "assumed: typical achieved fraction of HBM2 peak for streaming traffic"),
    Calibrated("system.gpu.dram_latency_ns", "ns",
               "assumed: unloaded L2-miss latency seen by a CU; GPU microbenchmarks "
               "(Jia et al. 2018, Volta; Chips and Cheese, CDNA2) report 300-600 ns"),
    Calibrated("system.gpu.dram_request_bytes", "B",
               "a 64-byte access: two HBM2 32-byte bursts (pseudo-channel burst length 4); sets T3-MCA's "
               "starvation floor in bytes", integer=True),
    Calibrated("kernels.compute_efficiency", "",
               "assumed: tuned fp16 GEMMs reach ~80% of matrix-core peak"),
    Calibrated("kernels.k_tile", "elements",
               "rocBLAS/Tensile fp16 macro tile depth (DepthU) of 32", integer=True),
    Calibrated("kernels.prefetch_stages", "",
               "double-buffered global-to-LDS prefetch (Tensile PrefetchGlobalRead)", integer=True),
    Calibrated("kernels.group_rows", "tile rows",
               "grouped rasterisation for L2 locality (Tensile WorkGroupMapping 8, CUTLASS swizzle)", integer=True),
    Calibrated("system.transport.channels", "CUs",
               "assumed: RCCL ring channels (one workgroup, one CU each) of the baseline collective", integer=True),
    Calibrated("system.transport.channel_GBps", "GB/s",
               "RCCL on MI300X: 336 GB/s over 56 channels (rome_models.cc model 79): a CDNA CU channel moves 6 GB/s"),
    Calibrated("arbiter.starvation_limit_cycles", "cycles",
               "assumed: well above a channel's slot interval (about 10 cycles for a two-unit update at 500 GB/s "
               "HBM), so that starvation is a bound, not the common path", integer=True),
    Calibrated("cu_sharing_cus", "CUs",
               "the paper's CU-sharing study: 8 of 80 CUs (16 is reported beside it)", integer=True),
)


def calibrated(path: str) -> Calibrated:
    for entry in CALIBRATION:
        if entry.path == path:
            return entry
    raise ValueError(f"path must be one of {', '.join(c.path for c in CALIBRATION)}, not {path!r}")


def value_of(cfg, path: str):
    """The value at a dotted ``path`` of ``cfg`` (through a tuple of configurations, such as
    the library's kernels: the first's)."""
    obj = cfg
    for part in path.split("."):
        if isinstance(obj, tuple):
            obj = obj[0]
        if not is_dataclass(obj) or part not in {f.name for f in fields(obj)}:
            raise ValueError(f"path must name a configuration field, not {path!r}")
        obj = getattr(obj, part)
    return obj


def with_value(cfg, path: str, value):
    """A copy of ``cfg`` with the field at ``path`` set to ``value`` (validated by the
    dataclasses' own checks); through a tuple of configurations, every one takes it."""
    if isinstance(cfg, tuple):
        return tuple(with_value(c, path, value) for c in cfg)
    head, _, rest = path.partition(".")
    if not is_dataclass(cfg) or head not in {f.name for f in fields(cfg)}:
        raise ValueError(f"path must name a configuration field, not {path!r}")
    if not rest:
        return replace(cfg, **{head: value})
    return replace(cfg, **{head: with_value(getattr(cfg, head), rest, value)})
