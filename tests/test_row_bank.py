# amaranth: UnusedElaboratable=no
"""The GEMM ring harness's DRAM-like memory (tb/gemm_ring/row_bank.py) against its rule,
cycle by cycle, and the slice's door that it paces (``T3Slice(dram_ready=True)``)."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from tb.common.seeds import derive_seed
from tb.gemm_ring.row_bank import RowBank, RowBankReference, RowTiming


def _run(timing: RowTiming, offers: list[int | None], addr_width: int = 10) -> list[int]:
    dut = RowBank(addr_width=addr_width, timing=timing)
    got: list[int] = []

    async def bench(ctx):
        for offer in offers:
            ctx.set(dut.request.valid, offer is not None)
            ctx.set(dut.request.payload.addr, offer or 0)
            got.append(ctx.get(dut.ready))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return got


def test_a_miss_waits_miss_cycles_and_a_hit_goes_at_once():
    t = RowTiming(banks=2, row_beats=4, miss_cycles=3)
    # Word 0 (bank 0, row 0): closed, so it waits 3 cycles, then goes; word 1 shares the row.
    assert _run(t, [0, 0, 0, 0, 1]) == [0, 0, 0, 1, 1]
    # Word 16 is bank 0, row 2: a conflict with row 0 costs the same 3 cycles.
    assert _run(t, [0, 0, 0, 0, 16, 16, 16, 16]) == [0, 0, 0, 1, 0, 0, 0, 1]
    # One miss cycle: the row is open in the next cycle.
    assert _run(RowTiming(banks=1, row_beats=1, miss_cycles=1), [5, 5, 6, 6]) == [0, 1, 0, 1]


def test_the_hash_folds_every_row_bit_into_the_bank():
    # Row 27 = 0b01_10_11 folds to 1 ^ 2 ^ 3 = 0: its first stripe is in bank 0, the bank of
    # word 0 (row 0), so the two rows take turns in one bank and every switch is a miss. With
    # the row's low digit alone (3) it would be bank 3, and word 0's row would stay open.
    t = RowTiming(banks=4, row_beats=16, miss_cycles=3)
    far = 27 * 64
    assert t.bank_row(far) == (0, 27)
    assert _run(t, [0] * 4 + [far] * 4 + [0] * 4, addr_width=12) == [0, 0, 0, 1] * 3
    # Its second stripe (block 1) is bank 1, away from word 0's.
    assert _run(t, [0] * 4 + [far + 16] * 4 + [0] * 2, addr_width=12) == [0, 0, 0, 1] * 2 + [1, 1]


@pytest.mark.parametrize("banks,row_beats,miss,bank_hash", [(1, 1, 1, True), (4, 16, 8, True), (4, 16, 8, False),
                                                             (2, 8, 28, True), (16, 4, 3, True), (16, 4, 3, False)])
def test_matches_the_rule_on_random_offers(banks, row_beats, miss, bank_hash):
    seed = derive_seed("row_bank", banks, row_beats, miss, bank_hash)
    print(f"SEED-derived seed {seed}")
    rng = random.Random(seed)
    t = RowTiming(banks=banks, row_beats=row_beats, miss_cycles=miss, bank_hash=bank_hash)
    offers: list[int | None] = []
    while len(offers) < 3000:
        # Offers held for a while (as the slice holds one until its grant), switched at random.
        addr = rng.randrange(1024) if rng.random() < 0.5 else rng.randrange(64)
        offers += [addr if rng.random() < 0.9 else None] * rng.randint(1, 2 * miss)
    ref = RowBankReference(t)
    want = [ref.cycle(a) for a in offers]
    got = _run(t, offers)
    for cycle, (w, g) in enumerate(zip(want, got, strict=True)):
        assert w == g, f"cycle {cycle}: offer {offers[cycle]} ready {g}, the rule says {w} (seed {seed})"
    assert 0 < sum(want) < len(want)


def test_bad_geometry_is_named():
    with pytest.raises(ValueError, match="banks"):
        RowTiming(banks=3)
    with pytest.raises(ValueError, match="miss_cycles"):
        RowTiming(miss_cycles=0)
    with pytest.raises(ValueError, match="row_beats x banks"):
        RowBank(addr_width=4, timing=RowTiming(banks=4, row_beats=4))
