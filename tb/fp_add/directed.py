"""Directed operand pairs for the adder: every pair of special classes, plus crafted cases
for ties, carries, cancellation to subnormals and overflow (pure Python)."""

from __future__ import annotations

from itertools import product

from rtl.fp_format import FloatFormat, float_format

__all__ = ["special_values", "crafted_pairs", "directed_pairs"]


def _bits(fmt: FloatFormat, sign: int, exp: int, frac: int) -> int:
    return (sign << (fmt.width - 1)) | (exp << fmt.frac_bits) | frac


def special_values(fmt: FloatFormat) -> dict[str, int]:
    """Named representatives of each class, both signs."""
    frac_max = (1 << fmt.frac_bits) - 1
    positive = {
        "zero": _bits(fmt, 0, 0, 0),
        "sub_min": _bits(fmt, 0, 0, 1),
        "sub_max": _bits(fmt, 0, 0, frac_max),
        "norm_min": _bits(fmt, 0, 1, 0),
        "one": _bits(fmt, 0, fmt.bias, 0),
        "one_and_half": _bits(fmt, 0, fmt.bias, 1 << (fmt.frac_bits - 1)),
        "norm_max": _bits(fmt, 0, fmt.exp_max - 1, frac_max),
        "inf": _bits(fmt, 0, fmt.exp_max, 0),
    }
    values = {}
    for name, bits in positive.items():
        values["+" + name] = bits
        values["-" + name] = bits | (1 << (fmt.width - 1))
    values["qnan"] = fmt.canonical_nan
    values["qnan_payload"] = _bits(fmt, 1, fmt.exp_max, (1 << (fmt.frac_bits - 1)) | 1)
    values["snan"] = _bits(fmt, 0, fmt.exp_max, 1)
    values["-snan"] = _bits(fmt, 1, fmt.exp_max, frac_max >> 1)
    return values


def crafted_pairs(fmt: FloatFormat) -> list[tuple[str, int, int]]:
    """``(description, a, b)`` cases that stress rounding and normalisation."""
    M, bias = fmt.frac_bits, fmt.bias
    one = _bits(fmt, 0, bias, 0)
    half_ulp_of_one = _bits(fmt, 0, bias - M - 1, 0)       # exactly a tie against 1.0
    quarter_ulp = _bits(fmt, 0, bias - M - 2, 0)
    frac_max = (1 << M) - 1
    norm_max = _bits(fmt, 0, fmt.exp_max - 1, frac_max)
    half_ulp_of_max = _bits(fmt, 0, fmt.exp_max - 2 - M, 0)
    norm_min = _bits(fmt, 0, 1, 0)
    neg = 1 << (fmt.width - 1)
    cases = [
        ("tie rounds down to even", one, half_ulp_of_one),
        ("tie rounds up to even", one | 1, half_ulp_of_one),
        ("below tie rounds down", one, quarter_ulp),
        ("above tie rounds up", one, half_ulp_of_one | 1),
        ("carry out of the top: 1.5 + 1.5", _bits(fmt, 0, bias, 1 << (M - 1)), _bits(fmt, 0, bias, 1 << (M - 1))),
        ("carry from rounding: (2 - ulp) + ulp/2", _bits(fmt, 0, bias, frac_max), half_ulp_of_one),
        ("overflow: max + max", norm_max, norm_max),
        ("overflow by a rounding tie: max + ulp/2", norm_max, half_ulp_of_max),
        ("just below overflow: max + ulp/4", norm_max, _bits(fmt, 0, fmt.exp_max - 3 - M, 0)),
        ("cancellation to a subnormal: 2 nmin - 1.75 nmin", _bits(fmt, 0, 2, 0), _bits(fmt, 1, 1, 3 << (M - 2))),
        ("cancellation to min subnormal", _bits(fmt, 0, 1, 1), _bits(fmt, 1, 1, 0)),
        ("subnormal + subnormal becomes normal", _bits(fmt, 0, 0, frac_max), _bits(fmt, 0, 0, 1)),
        ("normal - subnormal becomes subnormal", norm_min, _bits(fmt, 1, 0, 1)),
        ("massive cancellation", _bits(fmt, 0, bias + 3, frac_max), _bits(fmt, 1, bias + 3, frac_max - 1)),
        ("x + (-x) = +0", one, one | neg),
        ("(-x) + x = +0", one | neg, one),
        ("(-0) + (-0) = -0", neg, neg),
        ("far apart: sticky only", one, _bits(fmt, 0, 1, 3)),
        ("far apart subtract: sticky borrow", one, _bits(fmt, 1, 1, 3)),
        ("subtract with tie after borrow", _bits(fmt, 0, bias + 1, 0), _bits(fmt, 1, bias - M - 1, 0)),
    ]
    return cases


def directed_pairs(fmt_name: str) -> tuple[list[int], list[int]]:
    """Operand lists: all ordered pairs of :func:`special_values`, then :func:`crafted_pairs`
    in both orders."""
    fmt = float_format(fmt_name)
    specials = list(special_values(fmt).values())
    a, b = [], []
    for x, y in product(specials, repeat=2):
        a.append(x)
        b.append(y)
    for _, x, y in crafted_pairs(fmt):
        a += [x, y]
        b += [y, x]
    return a, b
