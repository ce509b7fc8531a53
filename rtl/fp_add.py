"""Pipelined IEEE-754 adder for binary16, bfloat16 and binary32, one operation per cycle.

The datapath is a single-path adder with three guard bits (guard, round, sticky):

1. **align**: order the operands by magnitude, shift the smaller significand right by the
   exponent difference, folding the bits shifted out into the sticky bit;
2. **add/normalise**: add or subtract the significands; renormalise by one bit right on
   a carry, or left by the leading-zero count, but never below the minimum exponent
   (the result is then subnormal: no flush-to-zero);
3. **round/pack**: round to nearest, ties to even, by adding the round bit to the packed
   ``{exponent, fraction}``, whose carry renormalises by itself; handle overflow to
   infinity and the special operands.

``latency`` chooses how many of those stage boundaries get a register (the output is always
registered), trading clock rate against latency; the throughput is one operation per cycle
in every case. The near-memory reducer uses ``latency=1``, because a read-add-write to the
same address must feed its sum to the next one in the following cycle.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .fp_format import FloatFormat, float_format
from .params import check_int
from .ports import ValidSignature

__all__ = ["FpAdder", "fp_add_datapath"]

GUARD_BITS = 3  # guard, round, sticky


def _register(m: Module, values: dict, registered: bool, stage: str) -> dict:
    """Pass ``values`` through a pipeline register if ``registered``; else unchanged."""
    if not registered:
        return values
    out = {}
    for name, value in values.items():
        reg = Signal(value.shape(), name=f"{stage}_{name}")
        m.d.sync += reg.eq(value)
        out[name] = reg
    return out


def _leading_zeros(m: Module, value, width: int):
    """Number of leading zeros of the ``width``-bit ``value`` (``width`` if it is zero)."""
    count = Signal(range(width + 1))
    m.d.comb += count.eq(width)
    for i in range(width):  # later assignments win: the highest set bit decides
        with m.If(value[i]):
            m.d.comb += count.eq(width - 1 - i)
    return count


def fp_add_datapath(m: Module, fmt: FloatFormat, a, b, valid, *, registers_after: tuple[bool, bool]):
    """Build the adder's datapath in ``m``; return ``(sum, valid)`` before the output register.

    ``registers_after`` says whether the align and the add/normalise stages end in a
    pipeline register. The reducer calls this directly, to put its forwarding multiplexer
    in front of the datapath.
    """
    E, M = fmt.exp_bits, fmt.frac_bits
    W = fmt.width
    SIG = M + 1 + GUARD_BITS  # hidden bit, fraction, guard bits

    # -- stage 1: classify, order by magnitude, align ---------------------------------------
    def fields(x):
        return x[W - 1], x[M:M + E], x[:M]

    sa, ea, fa = fields(a)
    sb, eb_, fb = fields(b)
    a_nan = (ea == fmt.exp_max) & (fa != 0)
    b_nan = (eb_ == fmt.exp_max) & (fb != 0)
    a_inf = (ea == fmt.exp_max) & (fa == 0)
    b_inf = (eb_ == fmt.exp_max) & (fb == 0)

    swap = b[:W - 1] > a[:W - 1]
    big = Signal(W, name="big")
    small = Signal(W, name="small")
    m.d.comb += [big.eq(Mux(swap, b, a)), small.eq(Mux(swap, a, b))]
    s_big, e_big_field, f_big = fields(big)
    _, e_small_field, f_small = fields(small)
    # Subnormals have exponent 1 and no hidden bit.
    e_big = Mux(e_big_field == 0, 1, e_big_field)
    e_small = Mux(e_small_field == 0, 1, e_small_field)
    shift = Signal(range(SIG + 1), name="align_shift")
    diff = Signal(E, name="exp_diff")
    m.d.comb += [diff.eq(e_big - e_small), shift.eq(Mux(diff > SIG, SIG, diff))]
    small_sig = Cat(Const(0, GUARD_BITS), f_small, e_small_field != 0)
    shifted = Signal(SIG, name="small_shifted")
    m.d.comb += shifted.eq(small_sig >> shift)
    sticky = (shifted << shift) != small_sig  # some bit fell off the end

    stage1 = {
        "valid": valid,
        "sign": s_big,
        "exp": Signal(unsigned(E), name="exp_big"),
        "big": Signal(SIG, name="big_sig"),
        "small": Signal(SIG, name="small_aligned"),
        "subtract": sa ^ sb,
        "nan": a_nan | b_nan | (a_inf & b_inf & (sa ^ sb)),
        "inf": a_inf | b_inf,
        "inf_sign": Mux(a_inf, sa, sb),
        "zero_sign": sa & sb,  # the sign of an exact zero under round-to-nearest
    }
    m.d.comb += [
        stage1["exp"].eq(e_big),
        stage1["big"].eq(Cat(Const(0, GUARD_BITS), f_big, e_big_field != 0)),
        stage1["small"].eq(shifted | sticky),
    ]
    s1 = _register(m, stage1, registers_after[0], "align")

    # -- stage 2: add or subtract, normalise --------------------------------------------------
    total = Signal(SIG + 1, name="sig_sum")
    m.d.comb += total.eq(Mux(s1["subtract"], s1["big"] - s1["small"], s1["big"] + s1["small"]))
    carry = total[SIG]
    lzc = _leading_zeros(m, total[:SIG], SIG)
    # Left shift by the leading zeros, but not below the minimum exponent (subnormal result).
    left = Signal(range(SIG + 1), name="norm_shift")
    m.d.comb += left.eq(Mux(lzc < s1["exp"], lzc, s1["exp"] - 1))
    norm = Signal(SIG, name="normalised")
    exp = Signal(unsigned(E + 1), name="exp_norm")
    with m.If(carry):
        # One right: the bit shifted out joins the sticky bit.
        m.d.comb += [norm.eq(Cat(total[0] | total[1], total[2:SIG + 1])), exp.eq(s1["exp"] + 1)]
    with m.Else():
        m.d.comb += [norm.eq(total[:SIG] << left), exp.eq(s1["exp"] - left)]

    stage2 = {
        "valid": s1["valid"], "sign": s1["sign"], "norm": norm, "exp": exp,
        "zero": total == 0, "nan": s1["nan"], "inf": s1["inf"], "inf_sign": s1["inf_sign"],
        "zero_sign": s1["zero_sign"],
    }
    s2 = _register(m, stage2, registers_after[1], "norm")

    # -- stage 3: round to nearest even, pack, specials ---------------------------------------
    n = s2["norm"]
    lsb, guard, round_bit, sticky_bit = n[GUARD_BITS], n[2], n[1], n[0]
    round_up = guard & (round_bit | sticky_bit | lsb)
    exp_field = Mux(n[SIG - 1], s2["exp"], 0)  # no hidden bit: subnormal
    packed = Signal(unsigned(E + M + 2), name="packed")
    m.d.comb += packed.eq(Cat(n[GUARD_BITS:GUARD_BITS + M], exp_field) + round_up)
    overflow = packed >= fmt.infinity

    result = Signal(W, name="sum")
    with m.If(s2["nan"]):
        m.d.comb += result.eq(fmt.canonical_nan)
    with m.Elif(s2["inf"]):
        m.d.comb += result.eq(Cat(Const(fmt.infinity, W - 1), s2["inf_sign"]))
    with m.Elif(s2["zero"]):
        m.d.comb += result.eq(Cat(Const(0, W - 1), s2["zero_sign"]))
    with m.Elif(overflow):
        m.d.comb += result.eq(Cat(Const(fmt.infinity, W - 1), s2["sign"]))
    with m.Else():
        m.d.comb += result.eq(Cat(packed[:W - 1], s2["sign"]))
    return result, s2["valid"]


class FpAdder(wiring.Component):
    """Pipelined floating-point adder: ``result = a + b``, IEEE-754 exact.

    * Round to nearest, ties to even; subnormal inputs and outputs (no flush-to-zero).
    * ``x + (-x) = +0``; ``(-0) + (-0) = -0``.
    * ``±inf`` propagate; ``inf + (-inf)`` and any NaN operand give the canonical quiet NaN
      :attr:`canonical_nan` (sign 0, exponent all ones, fraction MSB set, rest 0).
    * Overflow gives ``±inf``.

    Timing
    ------
    :attr:`latency` (= ``latency``) cycles from ``operands.valid`` to ``result.valid``;
    :attr:`ops_per_cycle` = 1. No back-pressure: the pipeline never stalls.

    Parameters
    ----------
    format : str
        ``"binary16"``, ``"bfloat16"`` or ``"binary32"``.
    latency : int
        Pipeline registers, 1..3: the output register, plus one after the align stage
        (``latency >= 2``), plus one after the add/normalise stage (``latency == 3``).

    Members
    -------
    operands : ``In(ValidSignature({a, b}))``
    result : ``Out(ValidSignature(width))``
    """

    def __init__(self, *, format: str = "binary16", latency: int = 1):  # noqa: A002 (IEEE term)
        self._fmt = float_format(format)
        self._latency = check_int("latency", latency, 1, 3)
        width = self._fmt.width
        self.operand_layout = data.StructLayout({"a": unsigned(width), "b": unsigned(width)})
        super().__init__({
            "operands": In(ValidSignature(self.operand_layout)),
            "result": Out(ValidSignature(unsigned(width))),
        })

    @property
    def format(self) -> FloatFormat:
        return self._fmt

    @property
    def latency(self) -> int:
        """Cycles from operands to result."""
        return self._latency

    @property
    def ops_per_cycle(self) -> int:
        """Operations accepted per cycle."""
        return 1

    @property
    def canonical_nan(self) -> int:
        """Bit pattern of every NaN result."""
        return self._fmt.canonical_nan

    def elaborate(self, platform):
        m = Module()
        result, valid = fp_add_datapath(
            m, self._fmt, self.operands.payload.a, self.operands.payload.b, self.operands.valid,
            registers_after=(self._latency >= 2, self._latency >= 3))
        m.d.sync += [self.result.payload.eq(result), self.result.valid.eq(valid)]
        return m
