"""Performance model of T3's sublayer study, built on the timing of the verified RTL blocks.

``python -m system_model --help`` runs it; :func:`build_config` and :func:`run_study` are the
library entry points.
"""

from .block_timing import BlockTiming, load_block_timing
from .hardware import PRESETS, SystemConfig, preset
from .schemes import SCHEMES, StudyConfig, evaluate
from .study import run_study, study_points, summarise

__all__ = ["BlockTiming", "load_block_timing", "PRESETS", "SystemConfig", "preset", "SCHEMES", "StudyConfig",
           "evaluate", "run_study", "study_points", "summarise", "build_config"]


def build_config(preset_name: str = "t3-paper", *, rtl_timing=None, **hardware_changes) -> StudyConfig:
    """The study configuration of a preset, optionally with hardware fields changed.

    ``rtl_timing`` is a path to an ``rtl_timing.json``; by default the committed
    ``sim_results/rtl_timing.json`` if present, else the RTL components' properties.
    """
    from dataclasses import replace

    from .presets import DESCRIPTIONS

    preset(preset_name)                      # checks the name (one line naming the presets)
    cfg = DESCRIPTIONS[preset_name].study_config(rtl_timing=rtl_timing)
    return replace(cfg, system=cfg.system.with_changes(**hardware_changes)) if hardware_changes else cfg
