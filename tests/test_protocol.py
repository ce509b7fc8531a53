"""The valid/ready stream protocol checker on hand-made per-cycle samples (no simulator)."""

from __future__ import annotations

import pytest
from cocotb.types import Logic, LogicArray

from tb.common.protocol import BenchRegistry, ProtocolViolation, StreamProtocolChecker, bits, stream_ports


def feed(checker, samples):
    """``samples``: (valid, ready, payload) per cycle, from cycle 0."""
    for cycle, (valid, ready, payload) in enumerate(samples):
        checker.sample(valid, ready, payload, cycle=cycle)


def test_legal_traffic_passes():
    c = StreamProtocolChecker("s")
    feed(c, [(0, 0, None), (0, 1, "xxxx"),          # idle: payload is don't-care
             (1, 1, 5),                             # transfer at once
             (1, 0, 6), (1, 0, 6), (1, 1, 6),      # stalled twice, held, then taken
             (1, 0, 7), (1, 1, 7), (1, 1, 8),      # back to back
             (0, 0, None), (1, 0, "0x1"), (1, 1, "0x1")])  # X bits held bit for bit are legal
    assert (c.samples, c.transfers, c.stall_cycles) == (12, 5, 4)


def test_valid_dropping_without_ready_is_caught():
    c = StreamProtocolChecker("trigger", context="replay: SEED=1 pytest -k 'x' (cocotb seed 2)")
    with pytest.raises(ProtocolViolation) as info:
        feed(c, [(1, 1, 3), (1, 0, 4), (1, 0, 4), (0, 0, None)])
    assert str(info.value) == (
        "stream protocol violation on 'trigger' at cycle 3: valid fell before the transfer (offered since "
        "cycle 1, never ready); valid=0 ready=0 payload=- (held payload 4)\n"
        "  replay: SEED=1 pytest -k 'x' (cocotb seed 2)")
    assert isinstance(info.value, AssertionError)


def test_valid_dropping_in_the_cycle_ready_rises_is_caught():
    c = StreamProtocolChecker("s")
    with pytest.raises(ProtocolViolation, match="cycle 1: valid fell before the transfer"):
        feed(c, [(1, 0, 4), (0, 1, None)])


def test_payload_change_while_waiting_is_caught():
    c = StreamProtocolChecker("egress")
    with pytest.raises(ProtocolViolation, match=r"^stream protocol violation on 'egress' at cycle 2: payload changed "
                                                r"while waiting for ready \(offered since cycle 1\); valid=1 ready=1 "
                                                r"payload=0x12 \(held payload 0x11\)$"):
        feed(c, [(1, 1, 0x10), (1, 0, 0x11), (1, 1, 0x12)])


def test_payload_bit_turning_x_while_waiting_is_caught():
    c = StreamProtocolChecker("s")
    with pytest.raises(ProtocolViolation, match="payload changed"):
        feed(c, [(1, 0, LogicArray("0101")), (1, 0, LogicArray("01X1"))])


@pytest.mark.parametrize("valid", ["x", "z", Logic("X"), Logic("Z"), LogicArray("X")])
def test_x_or_z_on_valid_is_caught(valid):
    c = StreamProtocolChecker("arm")
    with pytest.raises(ProtocolViolation, match=r"on 'arm' at cycle 1: valid is X/Z; valid=(x|z|X|Z) ready=1"):
        feed(c, [(0, 1, None), (valid, 1, None)])


def test_x_on_ready_is_caught_even_when_idle():
    c = StreamProtocolChecker("update")
    with pytest.raises(ProtocolViolation, match="cycle 0: ready is X/Z; valid=0 ready=X"):
        c.sample(0, Logic("X"), None, cycle=0)


def test_x_in_a_valid_payload_only_when_asked():
    StreamProtocolChecker("s").sample(1, 1, "1x", cycle=0)
    c = StreamProtocolChecker("s", check_payload_x=True)
    c.sample(0, 1, "xx", cycle=0)   # not valid: don't-care
    with pytest.raises(ProtocolViolation, match="payload has X/Z bits while valid; valid=1 ready=1 payload=1x"):
        c.sample(1, 1, "1x", cycle=1)


def test_no_ready_stream_checks_valid_only():
    c = StreamProtocolChecker("notify", has_ready=False)
    feed(c, [(1, "x", 1), (0, "x", None), (1, None, 2)])
    assert c.transfers == 2
    with pytest.raises(ProtocolViolation, match="valid is X/Z; valid=x ready=\\(none\\)"):
        c.sample("x", None, None, cycle=3)


def test_reset_restarts_the_hold_rule():
    c = StreamProtocolChecker("s")
    feed(c, [(1, 0, 9), (1, 0, 9)])
    c.reset()                             # the DUT was reset with the item stalled
    c.sample(1, 0, 0, cycle=2)            # a new first item: no violation
    c.sample(1, 1, 0, cycle=3)
    assert c.resets == 1 and c.transfers == 1


def test_a_gap_in_sampling_restarts_the_hold_rule_and_repeats_are_ignored():
    c = StreamProtocolChecker("s")
    c.sample(1, 0, 1, cycle=0)
    c.sample(0, 0, None, cycle=0)         # second sample of cycle 0: ignored
    c.sample(0, 0, None, cycle=5)         # cycles 1-4 unseen: nothing to hold against
    assert c.samples == 2


def test_relaxed_stream_keeps_x_checks_only():
    c = StreamProtocolChecker("grant")
    c.relax("re-decided every cycle")
    feed(c, [(1, 0, 1), (1, 0, 2), (0, 0, None)])
    with pytest.raises(ProtocolViolation, match="valid is X/Z"):
        c.sample("x", 0, None, cycle=3)


def test_cycle_comes_from_the_clock_callable():
    now = [10]
    c = StreamProtocolChecker("s", cycle=lambda: now[0], context=lambda: "sim time 100 ns")
    c.sample(1, 0, 1)
    now[0] = 11
    with pytest.raises(ProtocolViolation, match=r"at cycle 11: valid fell.*\n  sim time 100 ns$"):
        c.sample(0, 0, None)


def test_registry_ends_cycles_and_resets_endpoints():
    class Endpoint:
        def __init__(self, name):
            self.name, self.ended, self.resets = name, [], 0

        def end_cycle(self, cycle):
            self.ended.append(cycle)

        def reset(self):
            self.resets += 1

    reg = BenchRegistry()
    a, b = Endpoint("a"), Endpoint("b")
    reg.add(a)
    reg.add(b)
    reg.end_cycle(4)
    reg.reset()
    assert reg.names() == {"a", "b"} and a.ended == b.ended == [4] and a.resets == b.resets == 1


def test_bits():
    assert bits(5) == 5 and bits(True) == 1 and bits("101") == 5 and bits(LogicArray("0110")) == 6
    assert bits("10x") is None and bits("") is None and bits(Logic("Z")) is None


VERILOG = """
module top(a__valid, a__ready, a__payload, b__valid, b__payload, c__valid, clk);
  input a__valid;
  output a__ready;
  input [7:0] a__payload;
  output b__valid;
  output [3:0] b__payload;
  output c__valid;
  input clk;
  wire d__valid;
endmodule
module \\top.sub (x__valid);
  input x__valid;
endmodule
"""


def test_stream_ports():
    assert stream_ports(VERILOG, "top") == [
        {"name": "a", "dir": "in", "ready": True, "payload": True},
        {"name": "b", "dir": "out", "ready": False, "payload": True},
        {"name": "c", "dir": "out", "ready": False, "payload": False},
    ]
    with pytest.raises(ValueError, match="no module 'nope'"):
        stream_ports(VERILOG, "nope")
