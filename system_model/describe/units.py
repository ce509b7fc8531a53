"""Validation helpers for the model's configuration dataclasses (fixed wording, like rtl.params)."""

from __future__ import annotations

import math

__all__ = ["check_positive", "check_range", "check_int_range"]


def check_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value}")
    if not value > 0:
        raise ValueError(f"{name} must be greater than 0, not {value}")
    return value


def check_range(name: str, value, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, not {value}")
    return value


def check_int_range(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, not {value}")
    return value
