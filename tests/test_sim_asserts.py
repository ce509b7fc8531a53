"""``rtl.flow.generate.simulation_asserts``: Amaranth's assertions become checks that stop the simulator."""

from __future__ import annotations

import pytest

from rtl.flow.generate import ASSERT_PREFIX, simulation_asserts, to_verilog

# What Amaranth 0.5 writes for two sync-domain Asserts (one with a formatted message, one
# with none) in a module with a sync domain.
AMARANTH = """\
module t(a, b, clk, rst);
  input a;
  output [3:0] b;
  input clk;
  wire clk;
  input rst;
  wire rst;
  always @(posedge clk) begin
    if (1'h1) begin
      assert (\\$1 );
    end
    if (1'h1) begin
      if (!\\$3 )
        $write("a was %0d b %0h", $unsigned(a), $unsigned(b));
      assert (\\$3 );
    end
  end
endmodule
"""


def test_rewrite_of_amaranth_asserts():
    text = simulation_asserts(AMARANTH)
    assert "assert" not in text and "$write(\"a was" not in text
    assert text == """\
module t(a, b, clk, rst);
  reg t3_sim_live_clk = 1'h0;
  always @(posedge clk)
    if (rst === 1'b1) t3_sim_live_clk <= 1'h1;
  input a;
  output [3:0] b;
  input clk;
  wire clk;
  input rst;
  wire rst;
  always @(posedge clk) begin
    if (1'h1) begin
      if ((\\$1 ) !== 1'b1 && t3_sim_live_clk) begin
        $write("ASSERTION FAILED (ASSERT) in %m: ");
        $display("$1 is not 1");
        $fatal(1);
      end
    end
    if (1'h1) begin
      if ((\\$3 ) !== 1'b1 && t3_sim_live_clk) begin
        $write("ASSERTION FAILED (ASSERT) in %m: ");
        $display("a was %0d b %0h", $unsigned(a), $unsigned(b));
        $fatal(1);
      end
    end
  end
endmodule
"""


def test_text_without_asserts_is_unchanged():
    text = "module t(clk);\n  input clk;\n  always @(posedge clk) x <= 1;\nendmodule\n"
    assert simulation_asserts(text) == text


def test_unrecognised_assert_is_an_error():
    text = AMARANTH.replace("assert (\\$1 );", "assert property (@(posedge clk) \\$1 );")
    with pytest.raises(ValueError, match=r"module t: unrecognised assertion 'assert property"):
        simulation_asserts(text)


def test_assert_word_in_a_message_is_not_an_assertion():
    text = AMARANTH.replace('"a was %0d b %0h"', '"assert (a) was %0d b %0h"')
    assert '$display("assert (a) was %0d b %0h"' in simulation_asserts(text)


def test_message_guarding_another_condition_is_an_error():
    text = AMARANTH.replace("if (!\\$3 )", "if (!\\$4 )")
    with pytest.raises(ValueError, match="assertion message guards"):
        simulation_asserts(text)


def test_combinational_assert_is_an_error():
    text = AMARANTH.replace("always @(posedge clk) begin", "always @* begin")
    with pytest.raises(ValueError, match="not in an always @\\(posedge"):
        simulation_asserts(text)


def test_module_without_reset_is_an_error():
    text = AMARANTH.replace("  input rst;\n", "")
    with pytest.raises(ValueError, match="module t: an assertion clocked by clk needs a rst input"):
        simulation_asserts(text)


def test_other_domain_uses_its_reset():
    text = AMARANTH.replace("clk", "fast_clk").replace("rst", "fast_rst")
    out = simulation_asserts(text)
    assert "if (fast_rst === 1'b1) t3_sim_live_fast_clk <= 1'h1;" in out


def test_arbiter_verilog_for_simulation():
    plain = to_verilog("memory_arbiter")
    sim = to_verilog("memory_arbiter", simulation=True)
    asserts = plain.count("assert (")
    assert asserts >= 6, "the arbiter carries its properties as Asserts"
    assert "assert (" not in sim and "$fatal" not in plain
    assert sim.count("$fatal(1);") == asserts and sim.count(ASSERT_PREFIX) == asserts
    assert sim.count("reg t3_sim_live_clk = 1'h0;") == 1
    assert "two grants in one cycle" in sim
