"""Golden floating-point sums from numpy and ml_dtypes, and a NaN-aware bit comparison.

Never from our own adder: binary16 and bfloat16 sums are computed in float32 and rounded
once to the format, which is exact because float32's 24-bit significand holds at least
``2p + 2`` bits for p = 11 and p = 8 (so double rounding cannot occur); binary32 sums use
float32 addition directly.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from rtl.fp_format import FloatFormat, float_format

__all__ = ["NUMPY_TYPES", "golden_add", "is_nan_bits", "mismatches", "random_bits"]

NUMPY_TYPES = {
    "binary16": (np.float16, np.uint16),
    "bfloat16": (ml_dtypes.bfloat16, np.uint16),
    "binary32": (np.float32, np.uint32),
}


def golden_add(fmt_name: str, a_bits: np.ndarray, b_bits: np.ndarray) -> np.ndarray:
    """Bit patterns of ``a + b`` for arrays of bit patterns, computed by numpy."""
    ftype, utype = NUMPY_TYPES[fmt_name]
    a = np.asarray(a_bits, dtype=utype).view(ftype)
    b = np.asarray(b_bits, dtype=utype).view(ftype)
    with np.errstate(all="ignore"):  # overflow to inf and NaN operands are expected here
        if fmt_name == "binary32":
            total = a + b
        else:
            total = (a.astype(np.float32) + b.astype(np.float32)).astype(ftype)
    return total.view(utype)


def is_nan_bits(fmt: FloatFormat, bits: np.ndarray) -> np.ndarray:
    bits = np.asarray(bits, dtype=np.uint64)
    exp = (bits >> np.uint64(fmt.frac_bits)) & np.uint64(fmt.exp_max)
    frac = bits & np.uint64((1 << fmt.frac_bits) - 1)
    return (exp == fmt.exp_max) & (frac != 0)


def mismatches(fmt_name: str, got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Indices where ``got`` differs from ``expected``: bit-exact, except that any NaN
    matches any NaN."""
    fmt = float_format(fmt_name)
    got = np.asarray(got, dtype=np.uint64)
    expected = np.asarray(expected, dtype=np.uint64)
    both_nan = is_nan_bits(fmt, got) & is_nan_bits(fmt, expected)
    return np.flatnonzero((got != expected) & ~both_nan)


def random_bits(rng: np.random.Generator, fmt_name: str, n: int) -> np.ndarray:
    """``n`` uniformly random bit patterns: they hit subnormals, infinities and NaNs."""
    fmt = float_format(fmt_name)
    return rng.integers(0, 1 << fmt.width, size=n, dtype=np.uint64)
