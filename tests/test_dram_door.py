"""The cycle-level channel behind rows (``system_model.engine.dram_door``): the door's rule
against hand-counted cycles, closed forms of streams through it, bounds on random waves,
and the reduce-scatter's rate behind rows."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system_model.describe.config import CycleRows, StudyConfig
from system_model.engine.dram_cycle import STARVATION_CAP, TRACE_WINDOW, WAVES, CycleDram, WaveLoad, simulate_wave
from system_model.engine.dram_door import DoorCensus, DoorRows, simulate_door

ROWS = CycleRows(banks=4, row_requests=16, miss_cycles=8, bank_requests=1024, chunk_requests=64)
STREAM = WaveLoad(reads=256, stores=0, stores_nmc=False, compute_cycles=1, outstanding=1024, update_rate=0.0,
                  update_units=1, dma_rate=0.0, dma_burst=4, service_rate=1.0, latency_cycles=10, queue_entries=8,
                  nmc_units=1, reads_first=False, rows=ROWS)


def offers(door: DoorRows, addresses: list[int], limit: int = 1000) -> list[int]:
    """The cycles in which each address, offered in turn until it goes, is granted."""
    granted, t = [], 0
    for a in addresses:
        while not door.cycle(a):
            t += 1
            assert t < limit
        granted.append(t)
        t += 1
    return granted


def test_a_closed_row_waits_its_miss_cycles_then_hits_go_every_cycle():
    rows = CycleRows(banks=2, row_requests=8, miss_cycles=5, bank_requests=64, chunk_requests=8)
    assert offers(DoorRows(rows), list(range(8))) == [5, 6, 7, 8, 9, 10, 11, 12]


def test_two_rows_of_one_bank_in_turn_pay_a_miss_each():
    rows = CycleRows(banks=2, row_requests=8, miss_cycles=5, bank_requests=64, chunk_requests=8, bank_hash=False)
    # Addresses 0 and 16: bank 0, rows 0 and 1.
    granted = offers(DoorRows(rows), [0, 16, 0, 16])
    assert [b - a for a, b in zip([-1] + granted[:-1], granted, strict=True)] == [6, 6, 6, 6]


def test_two_banks_in_turn_keep_both_rows_open():
    rows = CycleRows(banks=2, row_requests=8, miss_cycles=5, bank_requests=64, chunk_requests=8, bank_hash=False)
    # Addresses 0 and 8: banks 0 and 1, each opened once.
    door = DoorRows(rows)
    granted = offers(door, [0, 8, 0, 8, 0, 8])
    assert granted[2:] == [granted[1] + 1, granted[1] + 2, granted[1] + 3, granted[1] + 4]
    assert door.misses == 2


def test_the_bank_hash_puts_one_offset_of_two_rows_in_two_banks():
    plain, hashed = (CycleRows(banks=4, row_requests=16, bank_requests=256, bank_hash=h) for h in (False, True))
    for offset in range(64):
        a, b = offset, offset + 64                   # the same offset a stripe (one row) apart
        assert plain.bank_row(a)[0] == plain.bank_row(b)[0]
        assert hashed.bank_row(a)[0] != hashed.bank_row(b)[0]
        assert hashed.bank_row(a)[1] == plain.bank_row(a)[1] == 0 and hashed.bank_row(b)[1] == 1
    # Within a row the hash permutes the banks: a stripe still covers every bank once.
    assert sorted(hashed.bank_row(64 + 16 * k)[0] for k in range(4)) == [0, 1, 2, 3]


def test_the_bank_hash_folds_every_row_bit():
    # Chunks of 4 stripes (the full crosscheck's 256 requests): rows 0, 4, 8, 12 differ only
    # above the row's low digit, so hashing that digit alone would put one offset of all
    # four chunks in one bank. The fold (0 ^ 0, 0 ^ 1, 0 ^ 2, 0 ^ 3) puts each in its own.
    hashed = CycleRows(banks=4, row_requests=16, bank_requests=1024, chunk_requests=256)
    for offset in range(256):
        assert sorted(hashed.bank_row(offset + 256 * c)[0] for c in range(4)) == [0, 1, 2, 3]
    # Three digits: row 0b01_10_11 folds to 1 ^ 2 ^ 3 = 0.
    assert hashed.bank_row(0b011011 * 64) == (0, 0b011011)
    assert hashed.bank_row(0b011011 * 64 + 16) == (1, 0b011011)


def test_a_streaming_read_wave_pays_one_miss_per_row():
    # 256 sequential reads: 16 rows, each opened while the stream waits (one offer at a time).
    r = simulate_wave(STREAM, "alone", threshold=1, starvation_limit=1)
    want = 256 + 256 // 16 * 8 + STREAM.latency_cycles
    assert r.cycles == pytest.approx(want, rel=0.03)
    assert r.scale == 1.0


def test_reads_alternating_with_stores_in_one_bank_open_a_row_each():
    # One bank: the reads in row 0, the stores in the chunk at the middle of the memory (row 2).
    rows = CycleRows(banks=1, row_requests=64, miss_cycles=8, bank_requests=256, chunk_requests=64)
    load = replace(STREAM, reads=32, stores=32, stores_nmc=True, rows=rows)
    alternating = simulate_wave(load, "alone", threshold=1, starvation_limit=1)
    assert alternating.cycles == pytest.approx(64 * (8 + 1), rel=0.10)
    reads_first = simulate_wave(replace(load, reads_first=True), "alone", threshold=1, starvation_limit=1)
    assert reads_first.cycles < alternating.cycles / 4


@settings(max_examples=40, deadline=None)
@given(reads=st.integers(1, 120), stores=st.integers(0, 40), compute=st.integers(1, 400),
       outstanding=st.integers(1, 64), banks=st.sampled_from([1, 2, 4, 8]), row=st.sampled_from([4, 16, 64]),
       miss=st.integers(1, 20), update=st.floats(0.0, 0.4), dma=st.floats(0.0, 0.4),
       policy=st.sampled_from(["alone", "round_robin", "mca"]), reads_first=st.booleans())
def test_random_waves_behind_rows_keep_their_bounds(reads, stores, compute, outstanding, banks, row, miss, update,
                                                    dma, policy, reads_first):
    """A wave is never shorter than its matrix work or its requests at one per cycle, and
    communication is never served above what was offered."""
    rows = CycleRows(banks=banks, row_requests=row, miss_cycles=miss, bank_requests=4 * banks * row,
                     chunk_requests=banks * row)
    load = replace(STREAM, reads=reads, stores=stores, stores_nmc=True, compute_cycles=compute,
                   outstanding=outstanding, update_rate=update, dma_rate=dma, reads_first=reads_first, rows=rows,
                   k_steps=min(4, compute))
    r = simulate_wave(load, policy, threshold=4, starvation_limit=16)
    assert r.cycles >= max(compute, reads + stores) - 1
    simulated = load.representative()          # arrival rates rounded to 0.5% of the service rate
    offered = 0.0 if policy == "alone" else simulated.update_rate + simulated.dma_rate
    assert r.comm_served_per_cycle <= offered + 1e-9
    assert 0.0 <= r.bank_utilisation <= 1.0


def test_the_census_counts_who_opens_whose_row():
    rows = CycleRows(banks=2, row_requests=8, miss_cycles=3, bank_requests=64, chunk_requests=8, bank_hash=False)
    census = DoorCensus()
    door = DoorRows(rows, census)
    # Bank 0: a read opens row 0 (nothing open), a store opens row 1 (closing the read's), a
    # read opens row 0 again (closing the store's); bank 1: a DMA read opens row 0.
    for addr, kind in ((0, "gemm_read"), (16, "gemm_store"), (0, "gemm_read"), (8, "dma_read")):
        while not door.cycle(addr, kind):
            pass
        door.note_grant(addr, kind)
    assert census.openings == {("gemm_read", None): 1, ("gemm_store", "gemm_read"): 1,
                               ("gemm_read", "gemm_store"): 1, ("dma_read", None): 1}
    assert census.grants == {"gemm_read": 2, "gemm_store": 1, "dma_read": 1} and door.misses == 4


@settings(max_examples=40, deadline=None)
@given(reads=st.integers(1, 80), stores=st.integers(0, 32), compute=st.integers(1, 300),
       update=st.floats(0.0, 0.3), dma=st.floats(0.0, 0.3), policy=st.sampled_from(["round_robin", "mca"]),
       stage=st.integers(0, 3))
def test_a_census_watches_the_wave_without_changing_it(reads, stores, compute, update, dma, policy, stage):
    """Taking the census changes nothing in the wave; it counts the measured waves' grants
    (the GEMM's, one unit each, are the bank's utilisation), no more openings than the door
    made, and the stores only in the stages' chunks from the stage before's (the warm-up's)
    on."""
    rows = CycleRows(banks=4, row_requests=16, miss_cycles=8, bank_requests=1024, chunk_requests=128,
                     chunk_order=(7, 6, 5, 4, 3, 2, 1, 0))
    load = replace(STREAM, reads=reads, stores=stores, stores_nmc=True, compute_cycles=compute, outstanding=16,
                   update_rate=update, dma_rate=dma, rows=rows, k_steps=min(4, compute), stage=stage,
                   read_start=stage * 320, measured_waves=4)
    args = (load, policy, 4, 16)
    kw = {"waves": WAVES, "trace_window": TRACE_WINDOW, "starvation_cap": STARVATION_CAP}
    plain = simulate_door(*args, **kw)
    census = DoorCensus()
    assert simulate_door(*args, **kw, census=census) == plain
    gemm = census.grants.get("gemm_read", 0) + census.grants.get("gemm_store", 0)
    assert gemm == round(plain["bank_utilisation"] * census.cycles)
    assert sum(census.openings.values()) <= plain["row_misses"]
    assert all(step is not None and step >= -1 for (kind, step) in census.places if kind == "gemm_store")


def channel(rows: CycleRows | None) -> dict:
    out = {"service_rate": 1.0, "latency_cycles": 10, "queue_entries": 8, "nmc_units": 1, "reads_first": False,
           "request_bytes": 8, "hz": 1e9, "hop_cycles": 46, "tile_requests": 4}
    return out if rows is None else {**out, "rows": rows}


def test_a_reduce_scatter_alone_gets_the_link_without_rows_and_no_more_behind_them():
    free = CycleDram(channel=channel(None), policy="round_robin", threshold=1, starvation_limit=64)
    assert free.reduce_scatter_requests_per_cycle(0.25) == pytest.approx(0.5)
    assert free.reduce_scatter_requests_per_cycle(1.0) == pytest.approx(1.0)
    behind = CycleDram(channel=channel(ROWS), policy="round_robin", threshold=1, starvation_limit=64)
    rate = behind.reduce_scatter_requests_per_cycle(0.25)
    assert 0.0 < rate <= 0.5 + 1e-9


def test_a_reduce_scatter_behind_rows_is_averaged_over_the_neighbours_phase():
    """Where the previous GPU reads against this one is not known (their GEMMs end apart):
    the rate is between the slowest and the fastest phase's, and the phase matters (some
    lags put the arriving updates in the DMA's bank on another row)."""
    behind = CycleDram(channel=channel(ROWS), policy="round_robin", threshold=1, starvation_limit=64)
    rate = behind.reduce_scatter_requests_per_cycle(0.25)
    base = WaveLoad(reads=0, stores=0, stores_nmc=False, compute_cycles=640, outstanding=1, update_rate=0.25,
                    update_units=1, dma_rate=0.25, dma_burst=4, service_rate=1.0, latency_cycles=10, queue_entries=8,
                    nmc_units=1, reads_first=False, forwarded_share=1.0, hop_cycles=46, rows=ROWS,
                    dma_backlogged=True)
    served = [simulate_wave(replace(base, update_lag_requests=lag), "round_robin", threshold=1,
                            starvation_limit=1).comm_served_per_cycle for lag in range(0, 64, 4)]
    assert min(served) <= rate + 1e-9 and rate <= max(served) + 1e-9
    assert max(served) > 1.2 * min(served)
    # The lag moves the arriving updates: the DMA reads are where they were.
    load = replace(base, update_lag_requests=20)
    assert load.representative().update_lag_requests == 20


class GrantLog(DoorRows):
    """The door, recording the address of every request it lets go (every ``True`` is a
    grant where every request takes one unit of service)."""

    granted: list[int] = []

    def cycle(self, addr, kind=None):
        ready = super().cycle(addr, kind)
        if ready:
            GrantLog.granted.append(addr)
        return ready


def grants(monkeypatch, load: WaveLoad) -> list[int]:
    GrantLog.granted = []
    monkeypatch.setattr("system_model.engine.dram_door.DoorRows", GrantLog)
    simulate_wave(load, "round_robin", threshold=1, starvation_limit=1)
    return GrantLog.granted


#: Three chunks apart in the banks: stage 0 at 0, stage 1 at 320, stage 2 at 576.
ORDERED = replace(ROWS, chunk_order=(0, 5, 9, 3))
#: A stage-2 wave of 16 single-unit stores spread over it, and a DMA of 4-request tiles; no
#: GEMM reads, no updates, so every grant is a store or a DMA read.
DMA_WAVE = WaveLoad(reads=0, stores=16, stores_nmc=False, compute_cycles=64, outstanding=1, update_rate=0.0,
                    update_units=1, dma_rate=0.25, dma_burst=4, service_rate=1.0, latency_cycles=10,
                    queue_entries=8, nmc_units=1, reads_first=False, rows=ORDERED, stage=2, read_start=1,
                    measured_waves=1)


def test_a_dma_that_keeps_up_reads_only_tiles_the_stores_finished(monkeypatch):
    """A wave of one tile's stores and a DMA four times as fast: the two warm-up waves store
    the stage before's last 8 requests (376...), the measured wave the stage's first 4
    (576...). Each is first granted to its store, in the stores' order; the DMA reads none
    after them (it re-reads the last finished tile), and before them only the stage
    before's earlier tiles (finished before the window)."""
    stored = list(range(376, 384)) + list(range(576, 580))
    log = grants(monkeypatch, replace(DMA_WAVE, stores=4, dma_rate=1.0))
    order = [a for a in dict.fromkeys(log) if a in stored]
    assert len(order) > 8 and order == stored[:len(order)]    # (the last stores may go after the wave)
    assert all(320 <= a < 384 or 576 <= a < 580 for a in log)
    assert len(log) > 2 * len(stored)                 # the DMA read them too


def test_a_dma_a_chunk_behind_reads_the_stage_befores_tiles_in_order(monkeypatch):
    """``dma_lag_requests`` = one chunk: in the measured wave the DMA reads the stage
    before's chunk from its first tile (320...), which no store of this run wrote, in the
    order the tiles finished."""
    log = grants(monkeypatch, replace(DMA_WAVE, dma_lag_requests=64))
    behind = [a for a in log if 320 <= a < 352]
    assert behind and behind[0] == 320
    assert behind == sorted(behind) == list(range(320, 320 + len(behind)))
    assert replace(DMA_WAVE, dma_lag_requests=64).representative().dma_lag_requests == 64


def test_a_dma_never_reads_an_address_before_its_store_is_granted(monkeypatch):
    """The review's counter-example (a quick crosscheck wave under round robin): a tile
    counted as finished when its last store entered the compute FIFO, and the DMA read some
    of its addresses up to 19 cycles before their stores were granted; the tracker counts
    granted writes. Each cycle's grant: its kind from the door's per-cycle trace, its
    address from the door's log."""
    from system_model.engine.dram_door import simulate_door

    rows = CycleRows(banks=4, row_requests=16, miss_cycles=8, bank_requests=256, chunk_requests=64,
                     chunk_order=(1, 0, 3, 2))
    load = WaveLoad(reads=16, stores=16, stores_nmc=True, compute_cycles=128, outstanding=16, update_rate=0.0,
                    update_units=1, dma_rate=0.135, dma_burst=4, service_rate=1.0, latency_cycles=10,
                    queue_entries=8, nmc_units=1, k_steps=4, reads_first=False, hop_cycles=46, rows=rows,
                    read_start=192, stage=3, measured_waves=4)
    cycles = []

    class Logged(DoorRows):
        def cycle(self, addr, kind=None):
            ready = super().cycle(addr, kind)
            cycles.append(addr if ready else None)
            return ready
    monkeypatch.setattr("system_model.engine.dram_door.DoorRows", Logged)
    out = simulate_door(load, "round_robin", 1, 1, waves=0, trace_window=1, starvation_cap=20)
    first = len(cycles) - len(out["trace"])                 # the measured waves' first cycle
    stored, dma_reads, base = set(), 0, rows.chunk_base(3)
    for (_, _, reads, stores, dmas, updates), addr in zip(out["trace"], cycles[first:], strict=True):
        assert reads + stores + dmas + updates == (addr is not None)
        if stores:
            stored.add(addr)
        elif dmas and base <= addr < base + 64:
            # A tile of this stage's chunk (stored in the measured waves) is read only once
            # its stores went; the stage before's were stored before them.
            dma_reads += 1
            assert addr in stored, addr
    assert dma_reads > 16 and len(stored) > 16


def test_a_senders_tile_arrives_whole():
    """Updates at 0.1 per cycle arrive as 4-request tiles (one per 40 cycles), into one
    open row: served in the 4 cycles after they land, so they wait 0, 1, 2 and 3 cycles."""
    one_row = CycleRows(banks=1, row_requests=1024, miss_cycles=8, bank_requests=4096, chunk_requests=1024)
    load = WaveLoad(reads=0, stores=0, stores_nmc=False, compute_cycles=400, outstanding=1, update_rate=0.1,
                    update_units=1, dma_rate=0.0, dma_burst=4, service_rate=1.0, latency_cycles=10,
                    queue_entries=8, nmc_units=1, reads_first=False, rows=one_row, measured_waves=1)
    wave = simulate_wave(load, "round_robin", threshold=1, starvation_limit=1)
    assert wave.mean_comm_wait_cycles == pytest.approx(1.5)
    single = simulate_wave(replace(load, dma_burst=1), "round_robin", threshold=1, starvation_limit=1)
    assert single.mean_comm_wait_cycles == pytest.approx(0.0)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("banks", 0, "banks must be between 1 and 64"),
    ("banks", 3, "banks must be a power of two, not 3"),
    ("miss_cycles", 0, "miss_cycles must be between 1 and 4096"),
    ("bank_requests", 100, "bank_requests must be between 128 and"),
    ("chunk_requests", 1000, "chunk_requests must be between 1 and 512"),
])
def test_bad_rows(field, value, message):
    with pytest.raises(ValueError, match=message):
        replace(ROWS, **{field: value})


def test_rows_need_the_cycle_channel():
    from system_model.describe.presets import DESCRIPTIONS, PAPER_PRESET

    cfg = DESCRIPTIONS[PAPER_PRESET].study_config()
    with pytest.raises(ValueError, match="cycle_rows needs dram_model 'cycle', not 'fluid'"):
        replace(cfg, cycle_rows=ROWS)
    assert replace(cfg, dram_model="cycle", cycle_rows=ROWS).cycle_rows == ROWS
    with pytest.raises(TypeError, match="cycle_rows must be a CycleRows"):
        StudyConfig(system=cfg.system, block=cfg.block, dram_model="cycle", cycle_rows=(4, 16))
