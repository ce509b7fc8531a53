# amaranth: UnusedElaboratable=no
"""NearMemoryReducer: constructor checks, then Amaranth-simulator runs against the golden model."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtl.nmc import NearMemoryReducer
from tb.common.packing import pack, unpack
from tb.fp_add.golden import mismatches as lane_mismatches
from tb.nmc.model import SPEC_READ_LATENCY, NearMemoryReducerModel, beat_to_lanes, lanes_to_beat, spec_write_latency


def test_init():
    r = NearMemoryReducer()
    assert (r.format.name, r.beat_width, r.depth, r.addr_width, r.lanes) == ("binary16", 256, 1024, 10, 16)
    assert NearMemoryReducer(format="binary32").lanes == 8
    assert r.adder_latency == 5 and r.requests_per_cycle == 1 and r.read_latency == SPEC_READ_LATENCY == 2
    assert r.write_latency == spec_write_latency(5) == 7
    assert r.same_address_interval == 5 and r.hazard_window == 4
    assert NearMemoryReducer(adder_latency=1).write_latency == 3
    assert set(r.signature.members) == {"request", "read", "status"}


def test_init_wrong_format():
    with pytest.raises(ValueError, match=r"^format must be one of 'binary16', 'bfloat16', 'binary32', not 'int8'$"):
        NearMemoryReducer(format="int8")


@pytest.mark.parametrize(("fmt", "beat_width", "unit"), [("binary16", 8, 16), ("binary32", 48, 32),
                                                         ("binary16", 2048, 16)])
def test_init_wrong_beat_width(fmt, beat_width, unit):
    with pytest.raises(ValueError, match=rf"^beat_width must be a multiple of {unit} between 16 and 1024, "
                                         rf"not {beat_width}$"):
        NearMemoryReducer(format=fmt, beat_width=beat_width)


@pytest.mark.parametrize("latency", [0, 8])
def test_init_wrong_adder_latency(latency):
    with pytest.raises(ValueError, match=rf"^adder_latency must be between 1 and 7, not {latency}$"):
        NearMemoryReducer(adder_latency=latency)


@pytest.mark.parametrize("depth", [1, 3, 131072])
def test_init_wrong_depth(depth):
    with pytest.raises(ValueError, match=rf"^depth must be a power of two between 2 and 65536, not {depth}$"):
        NearMemoryReducer(depth=depth)


def test_lane_packing_round_trip():
    lanes = np.array([0x3C00, 0x8001, 0x7E00], dtype=np.uint16)
    beat = lanes_to_beat(lanes)
    assert beat == 0x7E00_8001_3C00
    assert list(beat_to_lanes(beat, np.uint16, 3)) == list(lanes)


def run_reducer(params: dict, stimulus: list[tuple]) -> tuple[NearMemoryReducerModel, list[int]]:
    """stimulus: (request (addr, op, lanes) or None, read addr or None) per cycle.

    Requests queue up in order; the head is offered (valid held) until accepted, as a
    stream source must. Returns the model and the cycles in which requests were accepted.
    """
    dut = NearMemoryReducer(**params)
    model = NearMemoryReducerModel(format=dut.format.name, lanes=dut.lanes, depth=dut.depth,
                                   adder_latency=dut.adder_latency)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    mismatches = []
    accepted_at = []
    tail = [(None, None)] * (dut.write_latency + 2)

    async def bench(ctx):
        queue = []
        cycle = 0
        steps = iter(stimulus + tail)
        while True:
            step = next(steps, None)
            if step is None:
                if not queue:
                    break
                step = (None, None)
            request, read_addr = step
            if request is not None:
                addr, op, lanes = request
                queue.append((addr, op, lanes_to_beat(np.array(lanes, dtype=np.uint16))))
            req = queue[0] if queue else None
            if req is not None:
                ctx.set(dut.request.payload.as_value(),
                        pack(dut.request_layout, {"addr": req[0], "op": req[1], "data": req[2]}))
            ctx.set(dut.request.valid, req is not None)
            ctx.set(dut.read.en, read_addr is not None)
            ctx.set(dut.read.addr, read_addr or 0)
            exp = model.outputs()
            want_ready = model.ready_for(req[0], req[1]) if req is not None else True
            if ctx.get(dut.request.ready) != want_ready:
                mismatches.append((cycle, "ready"))
            if exp.read_data is not None:
                got = beat_to_lanes(ctx.get(dut.read.data), np.uint16, dut.lanes)
                want = beat_to_lanes(exp.read_data, np.uint16, dut.lanes)
                if len(lane_mismatches("binary16", got, want)):  # any NaN matches any NaN
                    mismatches.append((cycle, "read", got, want))
            if unpack(dut.status_layout, ctx.get(dut.status.as_value())) != exp.status:
                mismatches.append((cycle, "status"))
            if model.step(request=req, read_addr=read_addr):
                queue.pop(0)
                accepted_at.append(cycle)
            await ctx.tick()
            cycle += 1

    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, f"first mismatch: {mismatches[0]}"
    return model, accepted_at


#: The bank powers up with pseudo-random words (it makes no promise): every test stores a
#: word before it updates or reads it.
SMALL = {"format": "binary16", "beat_width": 32, "depth": 4, "power_up_seed": 5}
ONE, TWO, THREE = 0x3C00, 0x4000, 0x4200


def test_sim_back_to_back_updates_forward():
    stimulus = [((1, 0, [ONE, TWO]), None), ((1, 1, [ONE, ONE]), None), ((1, 1, [ONE, 0]), 1), (None, 1),
                (None, 1), (None, 1)]
    model, _ = run_reducer(SMALL, stimulus)
    assert list(model.logical[1]) == [THREE, THREE]


@pytest.mark.parametrize("adder_latency", [1, 3, 5])
@pytest.mark.parametrize("chain", range(1, 10))
def test_sim_same_address_chain_runs_at_one_per_adder_latency(adder_latency, chain):
    """N updates of one word offered back to back (N up to write_latency + 2 at the default
    adder latency 5): each waits for the previous sum, so they are accepted exactly
    ``adder_latency`` cycles apart; the word ends as the sequential sum, read back from
    the RTL."""
    params = SMALL | {"adder_latency": adder_latency}
    stimulus = [((2, 0, [ONE, 0x8000]), None)] + [((2, 1, [ONE, ONE]), None)] * chain
    model, accepted = run_reducer(params, stimulus + [(None, None)] * 12 + [(None, 2)])
    gaps = np.diff(accepted)
    # The store is the first link of the chain: every update waits for the one before it.
    assert list(gaps) == [adder_latency] * chain, "an update waited more or less than its dependency"
    total = np.float16(1.0)
    for _ in range(chain):
        total = np.float16(total + np.float16(1.0))
    assert model.logical[2][0] == total.view(np.uint16)


@pytest.mark.parametrize("adder_latency", [1, 5])
def test_sim_alternating_and_distinct_addresses_flow_at_one_per_cycle(adder_latency):
    """Updates to addresses that repeat no sooner than adder_latency cycles never wait."""
    params = SMALL | {"adder_latency": adder_latency, "depth": 8}
    init = [((a, 0, [a, 0]), None) for a in range(8)]
    updates = [((k % 6, 1, [ONE, TWO]), k % 8) for k in range(60)]
    model, accepted = run_reducer(params, init + updates)
    assert list(np.diff(accepted)) == [1] * (len(accepted) - 1)
    alternating = [((k % 2, 1, [ONE, ONE]), None) for k in range(12)]
    _, accepted = run_reducer(params, init + alternating)
    # Two addresses alternate: each update depends on the one two requests before it, and is
    # accepted as soon as that one is adder_latency cycles old.
    times = accepted[8:]
    for k in range(2, len(times)):
        assert times[k] == max(times[k - 1] + 1, times[k - 2] + adder_latency), (k, times)


half_st = st.integers(0, 0xFFFF) | st.sampled_from([0, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0x0001])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.none() | st.tuples(st.integers(0, 3), st.integers(0, 1), st.lists(half_st, min_size=2,
                                                                                               max_size=2)),
                          st.none() | st.integers(0, 3)), min_size=1, max_size=40))
def test_sim_random_against_model(stimulus):
    """Random traffic after the driver has initialised every word with a STORE."""
    init = [((addr, 0, [addr, 0x8000 | addr]), None) for addr in range(SMALL["depth"])]
    run_reducer(SMALL, init + stimulus)
    run_reducer(SMALL | {"adder_latency": 2}, init + stimulus)


def test_model_reads_of_unknown_words_are_not_predicted():
    """Power-up contents are unknown until a STORE; an UPDATE keeps a word unknown."""
    model = NearMemoryReducerModel(format="binary16", lanes=2, depth=4, adder_latency=1)
    model.step(request=(1, 1, lanes_to_beat(np.array([ONE, ONE], dtype=np.uint16))), read_addr=None)
    model.step(request=(2, 0, lanes_to_beat(np.array([ONE, TWO], dtype=np.uint16))), read_addr=None)
    model.step(request=None, read_addr=None)
    model.step(request=None, read_addr=1)
    assert not model.outputs().read_issued    # its data shows SPEC_READ_LATENCY = 2 cycles later
    model.step(request=None, read_addr=2)
    assert model.outputs().read_issued and model.outputs().read_data is None
    model.step(request=None, read_addr=None)
    assert model.outputs().read_data == lanes_to_beat(np.array([ONE, TWO], dtype=np.uint16))
    assert list(model.known) == [False, False, True, False]


def test_model_reset_drops_requests_in_flight_and_keeps_the_rest():
    model = NearMemoryReducerModel(format="binary16", lanes=2, depth=4, adder_latency=1)   # write latency 3
    beat = lanes_to_beat(np.array([ONE, TWO], dtype=np.uint16))
    for addr in range(4):
        model.step(request=(addr, 0, beat), read_addr=None)
    model.reset()   # the stores to 1, 2 and 3 were still in the pipeline
    assert list(model.known) == [True, False, False, False]
    assert model.status == {"stores": 0, "updates": 0}
    model.step(request=None, read_addr=0)
    model.step(request=None, read_addr=None)
    assert model.outputs().read_data == beat
