"""The cycle-level DRAM channel (``system_model.engine.dram_cycle``): hand-checkable limits, the
arbiter's two policies, the starvation finding, a ring's forwarded updates, the
representative-wave scaling and the cache."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from system_model.engine import dram_cycle as dram_queue
from system_model.engine.dram_cycle import WaveLoad, dynamic_threshold, load_cache, save_cache, simulate_wave

MU = 0.415   # requests per cycle: 850 GB/s over 32 channels of 64-byte requests at 1 GHz

BASE = WaveLoad(reads=200, stores=0, stores_nmc=False, compute_cycles=4000, outstanding=32, update_rate=0.0,
                update_units=2, dma_rate=0.0, dma_burst=16, service_rate=MU, latency_cycles=400, queue_entries=64)


def run(load, policy="alone", threshold=16, starvation_limit=8):
    return simulate_wave(load, policy, threshold=threshold, starvation_limit=starvation_limit)


def test_compute_bound_wave_takes_its_compute_and_one_latency():
    r = run(BASE)
    assert r.cycles == pytest.approx(BASE.compute_cycles + BASE.latency_cycles, rel=0.03)
    assert not r.starved and r.comm_served_per_cycle == 0


def test_memory_bound_wave_takes_its_service_time():
    load = replace(BASE, reads=3000, stores=1000, stores_nmc=True, compute_cycles=100, outstanding=4000)
    units = 3000 + 2 * 1000                       # a near-memory store costs its bank two units
    assert run(load).cycles == pytest.approx(units / MU, rel=0.05)


def test_latency_bound_wave_follows_littles_law():
    # 2 requests in flight, 400 cycles each: 200 cycles per request at best.
    load = replace(BASE, reads=100, compute_cycles=100, outstanding=2)
    assert run(load).cycles == pytest.approx(100 / 2 * (400 + 1 / MU), rel=0.08)


def test_communication_below_capacity_is_served_as_offered():
    load = replace(BASE, update_rate=0.03, dma_rate=0.03)
    simulated = load.representative()                 # rates rounded to 0.5% of the service rate
    assert simulated.update_rate + simulated.dma_rate == pytest.approx(0.06, abs=0.005 * MU)
    for policy in ("round_robin", "mca"):
        served = run(load, policy).comm_served_per_cycle
        assert served == pytest.approx(simulated.update_rate + simulated.dma_rate), policy


def test_communication_beyond_capacity_is_back_pressured():
    # 0.4 updates per cycle of two units each against 0.415 units of service.
    load = replace(BASE, update_rate=0.4)
    assert run(load, "round_robin").comm_served_per_cycle < MU / 2


def test_mca_serves_a_saturating_gemm_first():
    load = replace(BASE, reads=2000, compute_cycles=2000, outstanding=512, update_rate=0.1, dma_rate=0.1)
    rr, mca = run(load, "round_robin"), run(load, "mca")
    assert mca.cycles < 0.9 * rr.cycles
    assert mca.comm_served_per_cycle < rr.comm_served_per_cycle
    assert mca.mean_read_latency_cycles < rr.mean_read_latency_cycles


def test_mca_starves_compute_when_slots_free_slower_than_the_starvation_limit():
    # Two-unit updates at 0.2 units per cycle free a queue slot every 10 cycles; with a limit
    # of 8 the backlogged communication has always starved by then and takes every slot.
    load = replace(BASE, reads=40, compute_cycles=1000, service_rate=0.1, update_rate=0.15)
    starved = run(load, "mca", starvation_limit=8)
    assert starved.starved and starved.cycles > 100 * run(load, "round_robin").cycles
    # The channel still serves communication at its capacity: 0.1 units, 0.05 updates per cycle.
    assert starved.comm_served_per_cycle == pytest.approx(0.05, rel=0.05)
    # A limit longer than the slot interval lets compute in; round-robin always does.
    assert not run(load, "mca", starvation_limit=32).starved
    assert not run(load, "round_robin").starved


def test_forwarded_updates_are_offered_as_they_arrive():
    """Below capacity a ring's forwarded updates (one per DMA read served, a hop later) are
    served as offered, as steady arrivals would be."""
    load = replace(BASE, update_rate=0.03, dma_rate=0.03, dma_burst=4, forwarded_share=1.0, hop_cycles=450)
    steady = replace(load, forwarded_share=0.0, hop_cycles=0)
    for policy in ("round_robin", "mca"):
        assert run(load, policy).comm_served_per_cycle == pytest.approx(
            run(steady, policy).comm_served_per_cycle, rel=0.05), policy


def test_mca_holds_back_the_ring_with_its_dma_reads():
    """Under T3-MCA beside a GEMM that fills the channel, the updates a ring forwards arrive
    only as the DMA reads that send them are served: communication gets fewer of the gaps
    compute leaves than if the updates came at a steady rate (what the RTL ring shows)."""
    # One channel of the crosscheck's memory-heavy RTL ring: one request a cycle, a queue of
    # 8, a wave of 40 reads and 16 near-memory stores over 70 cycles of matrix work.
    load = WaveLoad(reads=40, stores=16, stores_nmc=True, compute_cycles=70, outstanding=40, update_rate=0.25,
                    update_units=1, dma_rate=0.25, dma_burst=4, service_rate=1.0, latency_cycles=10,
                    queue_entries=8, nmc_units=1, k_steps=10, reads_first=False, forwarded_share=1.0,
                    hop_cycles=46)
    steady = replace(load, forwarded_share=0.0, hop_cycles=0)
    ring = run(load, "mca", threshold=4, starvation_limit=64)
    open_loop = run(steady, "mca", threshold=4, starvation_limit=64)
    assert ring.comm_served_per_cycle < 0.95 * open_loop.comm_served_per_cycle
    assert ring.cycles <= open_loop.cycles * 1.001


def test_representative_wave_scales_with_the_wave():
    short = replace(BASE, reads=400, compute_cycles=1000)
    long = replace(BASE, reads=4000, compute_cycles=10_000)
    assert short.scale == 1.0 and long.scale == pytest.approx(dram_queue.MAX_WAVE_CYCLES / 10_000)
    simulated = long.representative()
    assert simulated.compute_cycles == dram_queue.MAX_WAVE_CYCLES
    assert simulated.reads == pytest.approx(400, abs=0.01 * MU * dram_queue.MAX_WAVE_CYCLES)
    # Same rates: the long wave is the short one, ten times over (its latency fill once).
    assert run(long).cycles - 400 == pytest.approx(10 * (run(short).cycles - 400), rel=0.02)


def test_dynamic_threshold():
    assert dynamic_threshold(64, 0.0) == 64
    assert dynamic_threshold(64, 0.75) == 16
    assert dynamic_threshold(64, 1.0) == 1
    with pytest.raises(ValueError, match=r"^gemm_bank_utilisation must be between 0.0 and 1.0, not 1.5$"):
        dynamic_threshold(64, 1.5)


def test_unknown_policy():
    with pytest.raises(ValueError, match=r"^policy must be one of alone, round_robin, mca, not 'fifo'$"):
        run(BASE, "fifo")


def test_cache_round_trip_and_version_check(tmp_path, monkeypatch):
    path = tmp_path / "waves.pkl"
    run(replace(BASE, reads=123))
    stored = save_cache(path)
    assert stored == len(dram_queue._STORE) > 0
    monkeypatch.setattr(dram_queue, "_STORE", {})
    assert load_cache(path) == stored and len(dram_queue._STORE) == stored
    # Results written by other code are ignored.
    version, store = pickle.loads(path.read_bytes())
    path.write_bytes(pickle.dumps(("other", store)))
    monkeypatch.setattr(dram_queue, "_STORE", {})
    assert load_cache(path) == 0 and not dram_queue._STORE
    assert load_cache(tmp_path / "missing.pkl") == 0


def test_a_cache_is_tagged_with_the_code_that_ran_not_the_files_edited_since(tmp_path, monkeypatch):
    """A study that ran while its source was edited stored old results under the new code's
    tag (the peers' FlashOverlap fix was read back as its old figures): the tag is fixed
    when the code is imported."""
    from system_model.engine.sim_store import SimStore
    from system_model.schemes import cache
    source = tmp_path / "model.py"
    source.write_text("rate = 1\n")
    store = SimStore("waves.pkl", (source,))
    store.data["wave"] = 1.0
    source.write_text("rate = 2\n")                     # edited while the run goes on
    store.save(tmp_path / "waves.pkl")
    assert SimStore("waves.pkl", (source,)).load(tmp_path / "waves.pkl") == 0
    assert cache._VERSION == cache._version()           # the package's own tag, as imported
