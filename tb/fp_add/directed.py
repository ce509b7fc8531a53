"""Directed operand pairs for the adder: every pair of special classes, plus crafted cases
for ties, carries, cancellation to subnormals and overflow (pure Python).

Only operands live here; the expected sums come from numpy / ml_dtypes
(:mod:`tb.fp_add.golden`). :func:`rounding_profile` says, in exact integer arithmetic, what
a pair exercises, so that a case's construction can prove its intent.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from rtl.fp_format import FloatFormat, float_format

__all__ = ["AdditionProfile", "rounding_profile", "special_values", "carry_sticky_pairs", "crafted_pairs",
           "directed_pairs"]


def _bits(fmt: FloatFormat, sign: int, exp: int, frac: int) -> int:
    return (sign << (fmt.width - 1)) | (exp << fmt.frac_bits) | frac


def _decode(fmt: FloatFormat, bits: int) -> tuple[int, int, int]:
    """``(sign, significand, lsb_exponent)`` of a finite value: ``(-1)**sign * significand *
    2**lsb_exponent``."""
    M = fmt.frac_bits
    sign, exp, frac = bits >> (fmt.width - 1), (bits >> M) & fmt.exp_max, bits & ((1 << M) - 1)
    if exp == fmt.exp_max:
        raise ValueError(f"{bits:#x} is not finite")
    return sign, frac | ((exp != 0) << M), max(exp, 1) - fmt.bias - M


@dataclass(frozen=True)
class AdditionProfile:
    """What adding two finite operands exercises, from the exact sum (not from an adder).

    ``carry_out``: the signs agree and the sum reaches the binade above the larger operand,
    so an adder renormalises it by one bit to the right. ``alignment_sticky``: the smaller
    operand has a set bit below a quarter of the larger one's ulp, i.e. below the guard and
    round positions once aligned, so only a sticky bit can carry it. ``rounding``: the part
    of the exact sum below the result's ulp against half that ulp: ``"exact"`` (nothing
    discarded), ``"below"``, ``"tie"`` or ``"above"``.
    """

    carry_out: bool
    alignment_sticky: bool
    rounding: str


def rounding_profile(fmt: FloatFormat, a: int, b: int) -> AdditionProfile:
    """The :class:`AdditionProfile` of ``a + b`` (bit patterns of finite values)."""
    M = fmt.frac_bits
    (sa, ma, qa), (sb, mb, qb) = _decode(fmt, a), _decode(fmt, b)
    lowest = min(qa, qb)
    if ma << (qa - lowest) >= mb << (qb - lowest):
        (big_m, big_q), (small_m, small_q) = (ma, qa), (mb, qb)
    else:
        (big_m, big_q), (small_m, small_q) = (mb, qb), (ma, qa)
    base = min(lowest, big_q - 2)  # a common scale fine enough for a quarter of the big ulp
    big, small = big_m << (big_q - base), small_m << (small_q - base)
    total = big + small if sa == sb else big - small
    carry_out = sa == sb and total >= 1 << (M + 1 + big_q - base)
    alignment_sticky = small % (1 << (big_q - 2 - base)) != 0
    if total == 0:
        return AdditionProfile(carry_out, alignment_sticky, "exact")
    # The result's ulp: M fraction bits below the leading one, but never below the subnormal ulp.
    ulp_q = max(total.bit_length() - 1 + base - M, 1 - fmt.bias - M)
    if ulp_q <= base:
        return AdditionProfile(carry_out, alignment_sticky, "exact")
    rest, half = total % (1 << (ulp_q - base)), 1 << (ulp_q - base - 1)
    rounding = "exact" if rest == 0 else "below" if rest < half else "tie" if rest == half else "above"
    return AdditionProfile(carry_out, alignment_sticky, rounding)


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


_CARRY_STICKY_INTENT = {  # where the discarded part lies -> (alignment sticky, rounding)
    "just below half an ulp": (True, "below"),
    "exactly half an ulp": (False, "tie"),
    "just above half an ulp": (True, "above"),
}


def carry_sticky_pairs(fmt: FloatFormat) -> list[tuple[str, int, int]]:
    """``(description, a, b)``: additions whose significand sum carries out while the aligned
    smaller operand leaves sticky bits, around the rounding tie.

    The carry renormalises the sum one bit to the right, so the bits below the new ulp are
    the old LSB, guard and round bits and the alignment's sticky bit: an adder that drops or
    misplaces the sticky bit in that shift rounds "just above half an ulp" as a tie. For
    each of two alignment shifts (4, and ``frac_bits - 2``: the widest that still carries),
    the smaller operand is chosen so that the discarded part is one unit of its ulp below,
    exactly at, or one unit above half the result's ulp (the exact tie has no sticky bit:
    it is the neighbour that ties-to-even decides), with an even and an odd result LSB, in
    both signs. Each pair's intent is checked here with :func:`rounding_profile` (exact
    integer arithmetic); the expected sums come from numpy like every other case.
    """
    M, bias = fmt.frac_bits, fmt.bias
    frac_max = (1 << M) - 1
    cases = []
    for shift in (4, M - 2):
        # big = 2 - ulp, small = (1 + g / 2**M) * 2**-shift. In units of small's ulp the sum is
        # start + g; its ulp after the carry is 2**(shift + 1), half of that 2**shift.
        start = (((1 << M) + frac_max) << shift) + (1 << M)
        half = 1 << shift
        for where, (sticky, rounding) in _CARRY_STICKY_INTENT.items():
            rest = {"below": half - 1, "tie": half, "above": half + 1}[rounding]
            for step in (0, 1):  # one more result ulp flips the result's LSB
                g = (rest - start) % (2 * half) + step * 2 * half
                lsb = "odd" if ((start + g) >> (shift + 1)) & 1 else "even"
                for sign in (0, 1):
                    a, b = _bits(fmt, sign, bias, frac_max), _bits(fmt, sign, bias - shift, g)
                    got = rounding_profile(fmt, a, b)
                    want = AdditionProfile(carry_out=True, alignment_sticky=sticky, rounding=rounding)
                    if got != want:  # a wrong construction must not pass silently as a weaker case
                        raise AssertionError(f"{fmt.name} {a:#x} + {b:#x}: {got}, wanted {want}")
                    cases.append((f"carry with sticky, shift {shift}: {where}, {lsb} LSB, {'-+'[sign == 0]}",
                                  a, b))
    return cases


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
        *carry_sticky_pairs(fmt),
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
