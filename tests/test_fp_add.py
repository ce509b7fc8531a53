# amaranth: UnusedElaboratable=no
"""FpAdder: constructor checks, then bit-exact comparison with numpy / ml_dtypes.

Random *bit patterns* (not random floats) hit subnormals, infinities and NaNs. Counts per
``make test``: 1,000,000 binary16, 200,000 bfloat16 and 200,000 binary32 at latency 1 (the
reducer's), plus 20,000 per format at latencies 2 and 3, plus the directed list in every
format and latency.
"""

from __future__ import annotations

import numpy as np
import pytest

from rtl.fp_add import FpAdder
from rtl.fp_format import FORMATS
from tb.common.seeds import derive_seed
from tb.common.stats import add_stats
from tb.fp_add.directed import crafted_pairs, directed_pairs, special_values
from tb.fp_add.golden import golden_add, is_nan_bits, mismatches, random_bits
from tb.fp_add.vectors import run_vectors, vector_simulator

BULK_COUNTS = {"binary16": 1_000_000, "bfloat16": 200_000, "binary32": 200_000}


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


@pytest.mark.parametrize("latency", [0, 4])
def test_init_wrong_latency(latency):
    with pytest.raises(ValueError, match=rf"^latency must be between 1 and 3, not {latency}$"):
        FpAdder(latency=latency)


def check(fmt: str, a, b, got, what: str) -> None:
    expected = golden_add(fmt, a, b)
    bad = mismatches(fmt, got, expected)
    add_stats(f"fp_adder[{fmt}]", cases=len(a), mismatches=len(bad))
    if len(bad):
        rows = [f"{int(a[i]):#x} + {int(b[i]):#x} = {int(got[i]):#x}, numpy {int(expected[i]):#x}" for i in bad[:10]]
        pytest.fail(f"{len(bad)} of {len(a)} {what} sums differ:\n" + "\n".join(rows))


@pytest.mark.parametrize("latency", [1, 2, 3])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_directed(fmt, latency, tmp_path):
    a, b = (np.array(x, dtype=np.uint64) for x in directed_pairs(fmt))
    got = run_vectors(fmt, a, b, tmp_path, latency=latency)
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
    a, b = random_bits(rng, fmt, n), random_bits(rng, fmt, n)
    print(f"{fmt}: {n} random pairs on {vector_simulator()}, numpy seed {seed}")
    check(fmt, a, b, run_vectors(fmt, a, b, tmp_path), f"random (numpy seed {seed})")


@pytest.mark.parametrize("latency", [2, 3])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_random_bit_patterns_deeper_pipelines(fmt, latency, tmp_path):
    rng = np.random.default_rng(derive_seed("fp_add", fmt, latency))
    a, b = random_bits(rng, fmt, 20_000), random_bits(rng, fmt, 20_000)
    check(fmt, a, b, run_vectors(fmt, a, b, tmp_path, latency=latency), f"latency-{latency}")


def test_icarus_and_verilator_agree(tmp_path):
    """The fallback simulator gives the same bits (when Verilator is present at all)."""
    rng = np.random.default_rng(derive_seed("fp_add", "cross"))
    a, b = random_bits(rng, "binary16", 5_000), random_bits(rng, "binary16", 5_000)
    icarus = run_vectors("binary16", a, b, tmp_path / "i", simulator="icarus")
    check("binary16", a, b, icarus, "Icarus")
    if vector_simulator() == "verilator":
        assert list(run_vectors("binary16", a, b, tmp_path / "v", simulator="verilator")) == list(icarus)
