"""Validation of keyword-only constructor parameters, shared by every RTL block.

The wording is fixed, because tests match it:

* ``TypeError``:  ``"<name> must be an integer, not <value!r>"``
* ``ValueError``: ``"<name> must be between <lo> and <hi>, not <value>"``
* ``ValueError``: ``"<name> must be a power of two between <lo> and <hi>, not <value>"``
"""

from __future__ import annotations

__all__ = ["check_int", "check_power_of_two", "check_choice"]


def check_int(name: str, value, lo: int, hi: int) -> int:
    """Return ``value`` if it is an ``int`` in ``[lo, hi]``; raise otherwise."""
    # bool is an int subclass, but ``entries=True`` is always a mistake.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, not {value}")
    return value


def check_power_of_two(name: str, value, lo: int, hi: int) -> int:
    """Return ``value`` if it is a power-of-two ``int`` in ``[lo, hi]``; raise otherwise."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not (lo <= value <= hi and value & (value - 1) == 0):
        raise ValueError(f"{name} must be a power of two between {lo} and {hi}, not {value}")
    return value


def check_choice(name: str, value, choices):
    """Return ``value`` if it is one of ``choices``; raise ``ValueError`` otherwise."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, not {value!r}")
    return value
