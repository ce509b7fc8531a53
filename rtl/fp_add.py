"""Pipelined IEEE-754 adder for binary16, bfloat16 and binary32, one operation per cycle.

The datapath is a single-path adder with three guard bits (guard, round, sticky), in seven
stages whose boundaries (:data:`BOUNDARIES`) may each hold a pipeline register:

1. **classify**: specials; compare the operands' magnitudes; both exponent differences;
2. **order**: order the operands by the comparison; the shift amount;
3. **align**: shift the smaller significand right by the difference, folding the bits
   shifted out into the sticky bit;
4. **add**: add or subtract the significands;
5. **count**: the leading zeros, stopped at the minimum exponent (a subnormal result:
   no flush-to-zero);
6. **normalise**: one bit right on a carry, else left by the count;
7. **round/pack**: round to nearest, ties to even, by adding the round bit to the packed
   ``{exponent, fraction}``, whose carry renormalises by itself; overflow to infinity and
   the special operands. Its output register is always there.

``latency`` (1..7) chooses how many boundaries get a register, trading clock rate against
latency; the throughput is one operation per cycle in every case. The near-memory reducer
(:class:`~rtl.nmc.NearMemoryReducer`) uses latency 5 for the 16-bit formats and 7 for
binary32 (``rtl.nmc.DEFAULT_ADDER_LATENCY``: the lowest at which the reducer closes
100 MHz on ECP5), and forwards each result into the adder's input for a later update of
the same address.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .fp_format import FloatFormat, float_format
from .params import check_int
from .ports import ValidSignature

__all__ = ["FpAdder", "fp_add_datapath", "registers_for_latency", "BOUNDARIES", "MAX_LATENCY"]

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
    """Number of leading zeros of the ``width``-bit ``value`` (``width`` if it is zero).

    A tree of halves (log2 levels of two-way choices) rather than a priority chain, whose
    depth grows with the width: this count sits on the adder's longest path.
    """
    size = 1 << (width - 1).bit_length()
    padded = Cat(Const((1 << (size - width)) - 1, size - width), value) if size > width else value
    # Pad with ones below the value: the count never passes ``width`` unless the value is zero.

    def count(bits, n):  # -> (all zero, leading zeros of the n-bit ``bits``, width log2(n))
        if n == 1:
            return ~bits[0], Const(0, 0)
        hi_zero, hi_count = count(bits[n // 2:], n // 2)
        lo_zero, lo_count = count(bits[:n // 2], n // 2)
        return hi_zero & lo_zero, Cat(Mux(hi_zero, lo_count, hi_count), hi_zero)

    _, total = count(padded, size)
    result = Signal(range(width + 1), name="leading_zeros")
    m.d.comb += result.eq(total)
    return result


def _shift_left(value, amount):
    """``value << amount``, truncated to ``len(value)`` bits, shifting by the amount's most
    significant bit first.

    The leading-zero count settles from its most significant bit down (the tree decides the
    halves first), and yosys's shifter takes the amount's least significant bit first: in
    this order the last bit to settle drives only the last level of multiplexers.
    """
    width = len(value)
    for i in reversed(range(len(amount))):
        step = 1 << i
        if step < width:
            value = Mux(amount[i], Cat(Const(0, step), value[:width - step]), value)
        else:
            value = Mux(amount[i], Const(0, width), value)
    return value


#: The datapath's stage boundaries, in datapath order: ``classify`` (magnitudes compared),
#: ``order`` (operands ordered), ``align`` (smaller significand shifted), ``add`` (significands added),
#: ``count`` (leading zeros counted), ``normalise`` (significand shifted back). The output
#: register after the last stage (round and pack) is always there.
BOUNDARIES = ("classify", "order", "align", "add", "count", "normalise")

#: Which boundaries get a register, by latency, chosen by measured Fmax on ECP5 (nextpnr,
#: ``make synth``): the placement that balances the stages best for each depth. Latencies 2
#: and 3 keep their placement from the first version, so that the table's earlier rows stay
#: comparable.
REGISTERED_BOUNDARIES = {
    1: (),
    2: ("align",),
    3: ("align", "normalise"),
    4: ("classify", "add", "normalise"),
    5: ("classify", "align", "add", "normalise"),
    6: ("classify", "align", "add", "count", "normalise"),
    7: ("classify", "order", "align", "add", "count", "normalise"),
}
MAX_LATENCY = max(REGISTERED_BOUNDARIES)


def registers_for_latency(latency: int) -> tuple[bool, ...]:
    """``registers_after`` (one flag per :data:`BOUNDARIES` entry) of an adder of ``latency``."""
    chosen = REGISTERED_BOUNDARIES[latency]
    return tuple(name in chosen for name in BOUNDARIES)


def fp_add_datapath(m: Module, fmt: FloatFormat, a, b, valid, *, registers_after: tuple[bool, ...]):
    """Build the adder's datapath in ``m``; return ``(sum, valid)`` before the output register.

    ``registers_after`` has one flag per :data:`BOUNDARIES` entry: whether that stage ends in
    a pipeline register. The reducer calls this directly, to put its forwarding multiplexer
    in front of the datapath and carry its own fields alongside.
    """
    if len(registers_after) != len(BOUNDARIES):
        raise ValueError(f"registers_after must have {len(BOUNDARIES)} flags, not {len(registers_after)}")
    reg = dict(zip(BOUNDARIES, registers_after, strict=True))
    E, M = fmt.exp_bits, fmt.frac_bits
    W = fmt.width
    SIG = M + 1 + GUARD_BITS  # hidden bit, fraction, guard bits

    # -- classify: specials, magnitude comparison, exponent differences ----------------------
    def fields(x):
        return x[W - 1], x[M:M + E], x[:M]

    sa, ea, fa = fields(a)
    sb, eb_, fb = fields(b)
    a_nan = (ea == fmt.exp_max) & (fa != 0)
    b_nan = (eb_ == fmt.exp_max) & (fb != 0)
    a_inf = (ea == fmt.exp_max) & (fa == 0)
    b_inf = (eb_ == fmt.exp_max) & (fb == 0)

    swap = Signal(name="swap")
    m.d.comb += swap.eq(b[:W - 1] > a[:W - 1])
    # Subnormals have exponent 1 and no hidden bit.
    ea_eff = Mux(ea == 0, 1, ea)
    eb_eff = Mux(eb_ == 0, 1, eb_)
    # Both differences at once, chosen by the comparison (the two subtractions run beside it).
    diff_ab = Signal(E, name="diff_ab")
    diff_ba = Signal(E, name="diff_ba")
    m.d.comb += [diff_ab.eq(ea_eff - eb_eff), diff_ba.eq(eb_eff - ea_eff)]
    stage = {
        "valid": valid, "a": a, "b": b, "swap": swap, "diff_ab": diff_ab, "diff_ba": diff_ba,
        "subtract": sa ^ sb,
        "nan": a_nan | b_nan | (a_inf & b_inf & (sa ^ sb)),
        "inf": a_inf | b_inf,
        "inf_sign": Mux(a_inf, sa, sb),
        "zero_sign": sa & sb,  # the sign of an exact zero under round-to-nearest
    }
    s = _register(m, stage, reg["classify"], "classify")

    # -- order: the operands ordered by the comparison (after the compare's register) -------
    big = Signal(W, name="big")
    small = Signal(W, name="small")
    diff = Signal(E, name="exp_diff")
    m.d.comb += [big.eq(Mux(s["swap"], s["b"], s["a"])), small.eq(Mux(s["swap"], s["a"], s["b"])),
                 diff.eq(Mux(s["swap"], s["diff_ba"], s["diff_ab"]))]
    s_big, e_big_field, f_big = fields(big)
    _, e_small_field, f_small = fields(small)
    shift = Signal(range(SIG + 1), name="align_shift")
    m.d.comb += shift.eq(Mux(diff > SIG, SIG, diff))
    exp_big = Signal(unsigned(E), name="exp_big")
    big_sig = Signal(SIG, name="big_sig")
    small_sig = Signal(SIG, name="small_sig")
    m.d.comb += [
        exp_big.eq(Mux(e_big_field == 0, 1, e_big_field)),
        big_sig.eq(Cat(Const(0, GUARD_BITS), f_big, e_big_field != 0)),
        small_sig.eq(Cat(Const(0, GUARD_BITS), f_small, e_small_field != 0)),
    ]
    flags = {k: s[k] for k in ("valid", "subtract", "nan", "inf", "inf_sign", "zero_sign")}
    s = _register(m, {**flags, "sign": s_big, "exp": exp_big, "big": big_sig, "small": small_sig, "shift": shift},
                  reg["order"], "order")

    # -- align: shift the smaller significand right, fold the lost bits into sticky ----------
    shifted = Signal(SIG, name="small_shifted")
    m.d.comb += shifted.eq(s["small"] >> s["shift"])
    # Sticky: a set bit below the shift amount (a mask, not a second shifter).
    lost_mask = Signal(SIG, name="lost_mask")
    m.d.comb += lost_mask.eq(~(Const((1 << SIG) - 1, SIG) << s["shift"])[:SIG])
    sticky = (s["small"] & lost_mask) != 0
    small_aligned = Signal(SIG, name="small_aligned")
    m.d.comb += small_aligned.eq(shifted | sticky)
    stage = {
        "valid": s["valid"], "sign": s["sign"], "exp": s["exp"], "big": s["big"], "small": small_aligned,
        "subtract": s["subtract"], "nan": s["nan"], "inf": s["inf"], "inf_sign": s["inf_sign"],
        "zero_sign": s["zero_sign"],
    }
    s = _register(m, stage, reg["align"], "align")

    # -- add: add or subtract the significands --------------------------------------------------
    total = Signal(SIG + 1, name="sig_sum")
    m.d.comb += total.eq(Mux(s["subtract"], s["big"] - s["small"], s["big"] + s["small"]))
    # Beside the addition, the one that will stop the normalising shift at the minimum
    # exponent: bit SIG - exp (leading zeros exp - 1); none when the exponent allows any shift.
    limit = Signal(SIG, name="shift_limit")
    m.d.comb += limit.eq(Mux(s["exp"] <= SIG, Const(1 << (SIG - 1), SIG) >> (s["exp"] - 1)[:E], 0))
    common = {k: s[k] for k in ("valid", "sign", "exp", "nan", "inf", "inf_sign", "zero_sign")}
    s = _register(m, {**common, "total": total, "limit": limit}, reg["add"], "add")

    # -- count: leading zeros, and the left shift they allow ----------------------------------
    total = s["total"]
    # Left shift by the leading zeros, but not below the minimum exponent (a subnormal
    # result): a one at the lowest position the shift may bring to the top stops the count
    # there, so no comparison follows the count.
    left = _leading_zeros(m, total[:SIG] | s["limit"], SIG)
    common = {k: s[k] for k in ("valid", "sign", "exp", "nan", "inf", "inf_sign", "zero_sign")}
    s = _register(m, {**common, "total": total, "left": left}, reg["count"], "count")

    # -- normalise: one right on a carry, else left by the count ------------------------------
    total = s["total"]
    carry = total[SIG]
    norm = Signal(SIG, name="normalised")
    exp = Signal(unsigned(E + 1), name="exp_norm")
    with m.If(carry):
        # One right: the bit shifted out joins the sticky bit.
        m.d.comb += [norm.eq(Cat(total[0] | total[1], total[2:SIG + 1])), exp.eq(s["exp"] + 1)]
    with m.Else():
        m.d.comb += [norm.eq(_shift_left(total[:SIG], s["left"])), exp.eq(s["exp"] - s["left"])]
    stage = {
        "valid": s["valid"], "sign": s["sign"], "norm": norm, "exp": exp,
        "zero": total == 0, "nan": s["nan"], "inf": s["inf"], "inf_sign": s["inf_sign"],
        "zero_sign": s["zero_sign"],
    }
    s2 = _register(m, stage, reg["normalise"], "normalise")

    # -- round to nearest even, pack, specials ------------------------------------------------
    n = s2["norm"]
    lsb, guard, round_bit, sticky_bit = n[GUARD_BITS], n[2], n[1], n[0]
    round_up = guard & (round_bit | sticky_bit | lsb)
    exp_field = Mux(n[SIG - 1], s2["exp"], 0)  # no hidden bit: subnormal
    packed = Signal(unsigned(E + M + 2), name="packed")
    m.d.comb += packed.eq(Cat(n[GUARD_BITS:GUARD_BITS + M], exp_field) + round_up)
    # packed >= infinity, decided from the operands of the rounding addition rather than
    # its sum, so that it runs beside the carry chain instead of after it: the exponent
    # field already at least all ones, or one below with an all-ones fraction that rounds up.
    exp_top = s2["exp"]
    frac_ones = n[GUARD_BITS:GUARD_BITS + M].all()
    overflow = n[SIG - 1] & ((exp_top >= fmt.exp_max) | ((exp_top == fmt.exp_max - 1) & frac_ones & round_up))

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
        Pipeline registers, 1..7: the output register plus ``latency - 1`` of the six
        stage boundaries, chosen by :data:`REGISTERED_BOUNDARIES`.

    Members
    -------
    operands : ``In(ValidSignature({a, b}))``
    result : ``Out(ValidSignature(width))``
    """

    def __init__(self, *, format: str = "binary16", latency: int = 1):  # noqa: A002 (IEEE term)
        self._fmt = float_format(format)
        self._latency = check_int("latency", latency, 1, MAX_LATENCY)
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
            registers_after=registers_for_latency(self._latency))
        m.d.sync += [self.result.payload.eq(result), self.result.valid.eq(valid)]
        return m
