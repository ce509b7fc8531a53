"""IEEE-754-style binary floating-point formats supported by the near-memory ALU."""

from __future__ import annotations

from dataclasses import dataclass

from .params import check_choice

__all__ = ["FloatFormat", "FORMATS", "float_format"]


@dataclass(frozen=True)
class FloatFormat:
    """A binary interchange format: 1 sign bit, ``exp_bits`` exponent bits, ``frac_bits``
    stored fraction bits (the significand has one more, hidden, bit)."""

    name: str
    exp_bits: int
    frac_bits: int

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.frac_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def exp_max(self) -> int:
        """The all-ones exponent field of infinities and NaNs."""
        return (1 << self.exp_bits) - 1

    @property
    def canonical_nan(self) -> int:
        """The quiet NaN the adder returns for every NaN result: sign 0, exponent all ones,
        fraction MSB set and the rest 0 (0x7E00, 0x7FC0, 0x7FC00000), as on most GPUs."""
        return (self.exp_max << self.frac_bits) | (1 << (self.frac_bits - 1))

    @property
    def infinity(self) -> int:
        """+inf; set the top bit for -inf."""
        return self.exp_max << self.frac_bits


FORMATS = {
    "binary16": FloatFormat("binary16", 5, 10),
    "bfloat16": FloatFormat("bfloat16", 8, 7),
    "binary32": FloatFormat("binary32", 8, 23),
}


def float_format(name: str) -> FloatFormat:
    """The :class:`FloatFormat` called ``name``; ``ValueError`` naming the choices otherwise."""
    return FORMATS[check_choice("format", name, tuple(FORMATS))]
