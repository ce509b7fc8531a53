"""The trace library's own checks, on synthetic records (no simulator).

* The record layout: a Verilog concatenation the harness writes, evaluated here bit by bit
  as Verilog defines it, decodes to the values that went in (narrow ports packed into
  shared words, wide ports across words).
* The stream protocol check, the plan check, the junk check and the quiet-reset check each
  catch the fault they exist for, and pass a clean record.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from tb.trace.audit import check_junk, check_plan, check_quiet_reset
from tb.trace.check import Coverage, Trace, TraceMismatch, check_stream_protocol
from tb.trace.harness import Port, Ports, RecordLayout
from tb.trace.stimulus import Stimulus

VERILOG = """
module toy(clk, rst, a__valid, a__ready, a__payload, b__valid, b__ready, b__payload, out__valid, out__ready,
           out__payload, cfg);
  input clk;
  input rst;
  input a__valid;
  output a__ready;
  input [7:0] a__payload;
  input b__valid;
  output b__ready;
  input [69:0] b__payload;
  output out__valid;
  input out__ready;
  output [39:0] out__payload;
  input [2:0] cfg;
endmodule
"""


def _eval_concat(expr: str, values: dict[str, int], widths: dict[str, int]) -> int:
    """Evaluate ``{p1, p2[hi:lo], n'd0}`` as Verilog does: the first element is the most significant."""
    value = 0
    for part in (p.strip() for p in expr.strip()[1:-1].split(",")):
        if m := re.fullmatch(r"(\d+)'d0", part):
            width, bits = int(m[1]), 0
        elif m := re.fullmatch(r"(\w+)\[(\d+):(\d+)\]", part):
            hi, lo = int(m[2]), int(m[3])
            width, bits = hi - lo + 1, (values[m[1]] >> lo) & ((1 << (hi - lo + 1)) - 1)
        else:
            width, bits = widths[part], values[part]
        value = (value << width) | bits
    return value


def _record(layout: RecordLayout, rows: list[dict[str, int]], widths: dict[str, int]) -> np.ndarray:
    """Encode rows through the Verilog expressions of :meth:`RecordLayout.verilog_words`."""
    exprs = layout.verilog_words()
    out = np.zeros((len(rows), layout.words), dtype=np.uint32)
    for r, row in enumerate(rows):
        for w, expr in enumerate(exprs):
            word = _eval_concat(expr, row, widths)
            assert word < 1 << 32, f"word {w} is wider than 32 bits: {expr}"
            out[r, w] = word
    return out


@pytest.mark.parametrize("seed", range(20))
def test_layout_decodes_what_the_verilog_concatenation_encodes(seed):
    rng = random.Random(seed)
    ports = [Port(f"p{k}", "input", rng.choice([1, 2, 5, 8, 17, 31, 32, 33, 64, 65, 100, 130]))
             for k in range(rng.randint(1, 12))]
    layout = RecordLayout(ports)
    rows = [{p.name: rng.getrandbits(p.width) for p in ports} for _ in range(8)]
    record = _record(layout, rows, {p.name: p.width for p in ports})
    for p in ports:
        assert list(layout.wide_column(record, p.name)) == [row[p.name] for row in rows], p


def _trace(rows: list[dict[str, int]], ports: Ports) -> Trace:
    layout = RecordLayout(ports.recorded())
    widths = {p.name: p.width for p in ports.recorded()}
    full = [{p.name: row.get(p.name, 0) for p in ports.recorded()} for row in rows]
    return Trace("toy", _record(layout, full, widths), layout, replay="replay: test", coverage=Coverage("toy", []))


def _clean_rows() -> list[dict[str, int]]:
    """Power-up reset, then a transfers 1, 2 (2 waits a cycle for ready), b transfers once."""
    rows = [{"rst": 1}, {"rst": 1}]
    rows += [{"a__valid": 1, "a__payload": 1, "a__ready": 1, "b__payload": 5},
             {"a__valid": 1, "a__payload": 2, "a__ready": 0, "b__payload": 6},
             {"a__valid": 1, "a__payload": 2, "a__ready": 1, "b__payload": 7},
             {"b__valid": 1, "b__payload": 9, "b__ready": 1, "a__payload": 0x33},
             {"a__payload": 0x44, "b__payload": 11}]
    return rows


def _stimulus() -> Stimulus:
    stim = Stimulus(7, ["a", "b"])
    stim.sources["a"].add(1)
    stim.sources["a"].add(2)
    stim.sources["b"].add(9, after=("a", 1))
    return stim


def test_clean_record_passes_every_check():
    ports = Ports(VERILOG, "toy")
    trace = _trace(_clean_rows(), ports)
    check_stream_protocol(trace, ports)
    assert check_plan(trace, ports, _stimulus()) == 3
    check_junk(trace, ports)
    check_quiet_reset(trace, ports, ["out__valid", "a__valid"])


def test_protocol_check_catches_a_payload_change_while_waiting():
    ports = Ports(VERILOG, "toy")
    rows = _clean_rows()
    rows[4]["a__payload"] = 3
    with pytest.raises(TraceMismatch, match="a.payload.*protocol"):
        check_stream_protocol(_trace(rows, ports), ports)


def test_plan_check_catches_a_transfer_out_of_plan():
    ports = Ports(VERILOG, "toy")
    rows = _clean_rows()
    rows[2]["a__payload"] = 7
    with pytest.raises(TraceMismatch, match="plan"):
        check_plan(_trace(rows, ports), ports, _stimulus())


def test_plan_check_catches_a_broken_dependency():
    ports = Ports(VERILOG, "toy")
    stim = _stimulus()
    stim.sources["b"].deps[0] = ("a", 1, False)
    rows = _clean_rows()
    rows[4].update({"b__valid": 1, "b__payload": 9, "b__ready": 1})   # b in a's cycle, not allowed
    rows[5] = {"a__payload": 0x33}
    with pytest.raises(TraceMismatch, match="dependency"):
        check_plan(_trace(rows, ports), ports, stim)


def test_junk_check_catches_a_source_that_holds_its_payload_when_idle():
    ports = Ports(VERILOG, "toy")
    rows = _clean_rows() + [{"a__payload": 0x44, "b__payload": 11}] * 4
    with pytest.raises(TraceMismatch, match="junk"):
        check_junk(_trace(rows, ports), ports)


def test_quiet_reset_check_catches_a_valid_in_reset():
    ports = Ports(VERILOG, "toy")
    rows = _clean_rows()
    rows[1]["out__valid"] = 1
    with pytest.raises(TraceMismatch, match="in reset"):
        check_quiet_reset(_trace(rows, ports), ports, ["out__valid"])


def test_ports_refuse_a_declaration_they_cannot_read():
    with pytest.raises(ValueError, match="cannot read"):
        Ports(VERILOG.replace("input [2:0] cfg;", "input signed [2:0] cfg;"), "toy")


def test_plan_check_follows_a_dependency_on_an_output_stream():
    """A source may wait for the k-th handshake of an output stream (``out``: counted at
    ``valid & ready``); the audit holds it to the cycle after."""
    ports = Ports(VERILOG, "toy")
    assert ports.outputs == ["out"]
    stim = _stimulus()
    stim.sources["b"].deps[0] = ("out", 0, False)
    rows = _clean_rows()
    rows[3].update({"out__valid": 1, "out__ready": 1})      # out's first handshake, b two cycles later
    assert check_plan(_trace(rows, ports), ports, stim) == 3
    rows[5].update({"out__valid": 1, "out__ready": 0})      # ... only an offer before b: broken
    rows[3].update({"out__valid": 1, "out__ready": 0})
    with pytest.raises(TraceMismatch, match="dependency"):
        check_plan(_trace(rows, ports), ports, stim)


def test_harness_refuses_a_dependency_it_cannot_follow():
    from tb.trace.harness import build_harness

    ports = Ports(VERILOG, "toy")
    for target, same_cycle, message in (("nowhere", False, "neither a source nor an output stream"),
                                        ("out", True, "cannot be same_cycle")):
        stim = _stimulus()
        stim.sources["b"].deps[0] = (target, 0, same_cycle)
        with pytest.raises(ValueError, match=message):
            build_harness(ports, stim, [])


def test_a_valid_input_without_ready_is_a_plain_input():
    verilog = VERILOG.replace("input [2:0] cfg;", "input [2:0] cfg;\n  input ev__valid;\n  input [3:0] ev__payload;")
    ports = Ports(verilog.replace("cfg);", "cfg, ev__valid, ev__payload);"), "toy")
    assert "ev" not in ports.sources
    assert {"ev__valid", "ev__payload"} <= set(ports.plain_inputs)
