# amaranth: UnusedElaboratable=no
"""``make characterize``: the measured RTL timing agrees with the components' documented properties."""

from __future__ import annotations

import json

import pytest

from rtl.arbiter import ArbiterMode
from rtl.dma_path import DmaPath
from rtl.nmc import NearMemoryReducer
from rtl.t3_slice import T3Slice
from rtl.tracker import TrackerTable
from tb import characterize as ch
from tb.characterize import REPO

REFERENCE = REPO / "sim_results" / "rtl_timing.json"


@pytest.fixture(scope="module")
def measured():
    return ch.characterize(with_ring=False)["figures"]


def test_measurements_match_documented_properties(measured):
    assert measured["tracker_trigger_latency"]["value"] == TrackerTable().trigger_latency
    assert measured["dma_issue_latency"]["value"] == DmaPath().issue_latency
    assert measured["dma_beats_per_cycle"]["value"] == DmaPath().beats_per_cycle
    # The GEMM's read latency the crosscheck's micro-system takes (system_model/studies/crosscheck.py).
    assert measured["slice_gemm_read_latency"]["value"] == T3Slice().gemm_read_latency
    reducer = NearMemoryReducer()
    assert measured["reducer_updates_per_cycle_distinct"]["value"] == reducer.requests_per_cycle == 1
    # A dependency chain: the first update at once, then one per same_address_interval.
    chain = 200
    assert measured["reducer_updates_per_cycle_same_address"]["value"] == pytest.approx(
        chain / (1 + (chain - 1) * reducer.same_address_interval))
    # Random addresses over 256 words: an update waits only when its word was accepted d
    # cycles before, d within the hazard window (chance 1/256 each), for adder_latency - d
    # cycles: on average sum(L - d) / 256 waits per update (tolerance chosen for 2000 draws).
    waits = sum(reducer.adder_latency - d for d in range(1, reducer.hazard_window + 1)) / 256
    assert measured["reducer_updates_per_cycle_random"]["value"] == pytest.approx(1 / (1 + waits), abs=0.015)
    assert measured["reducer_write_latency"]["value"] == reducer.write_latency


@pytest.fixture(scope="module")
def ring_measured():
    """The ring's figures measured now (a 40,000-cycle ring trace run, the reducer on its
    streams, the cocotb ring bench): about half a minute."""
    return ch.ring_figures()


def test_reducer_keeps_up_with_the_rings_real_stream(ring_measured):
    """Each GPU's bank writes of a ring run, replayed back to back into the reducer, flow at
    0.98 requests per cycle or more (measured in this run, not read from a file)."""
    assert ring_measured["reducer_requests_per_cycle_ring_stream"]["value"] >= 0.98


def test_ring_overlaps_its_parts(ring_measured):
    """The ring's reduce-scatter takes fewer cycles than its parts back to back."""
    assert ring_measured["ring_reduce_scatter_cycles"]["value"] < ring_measured["ring_sum_of_parts_cycles"]["value"]


def test_committed_ring_figures_match(ring_measured):
    """``sim_results/rtl_timing.json`` (make characterize) holds what the ring measures now."""
    reference = json.loads(REFERENCE.read_text())["figures"]
    for name, figure in ring_measured.items():
        assert reference[name]["value"] == pytest.approx(figure["value"]), name
        assert reference[name]["params"] == figure["params"], name


def test_arbiter_measurements(measured):
    for load in (25, 50, 90):
        assert measured[f"arbiter_mca_compute{load}_worst_comm_wait"]["value"] <= 8  # the starvation limit
        mca = measured[f"arbiter_mca_compute{load}_compute_share"]["value"]
        rr = measured[f"arbiter_round_robin_compute{load}_compute_share"]["value"]
        assert mca >= rr - 0.01, f"MCA leaves compute less than round-robin at {load}%"
    # At 90% compute demand MCA serves nearly all of it; round-robin about half.
    assert measured["arbiter_mca_compute90_compute_share"]["value"] > 0.8
    assert measured["arbiter_round_robin_compute90_compute_share"]["value"] < 0.6


def test_committed_reference_matches(measured):
    reference = json.loads(REFERENCE.read_text())
    assert reference["commit"]
    for name, figure in measured.items():
        assert reference["figures"][name]["value"] == pytest.approx(figure["value"]), name
        assert reference["figures"][name]["unit"] == figure["unit"]


def test_system_model_reads_the_reference():
    from system_model.describe.block_timing import load_block_timing

    timing = load_block_timing(REFERENCE)
    assert "rtl_timing.json" in timing.source
    assert timing.trigger_cycles == TrackerTable().trigger_latency


def test_arbiter_mode_names():
    assert {m.name for m in ArbiterMode} == {"MCA", "ROUND_ROBIN"}
