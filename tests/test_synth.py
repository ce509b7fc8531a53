"""`make synth` essentials that CI can afford: block RAM for the tracker, the timing harness, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtl.flow.generate import to_verilog
from rtl.flow.synth import SYNTH_SETS, main, merge_rows, synthesize, verilog_sha1

SYNTH_JSON = Path(__file__).resolve().parents[1] / "sim_results" / "synth.json"


def test_tracker_256_counters_are_block_ram(tmp_path):
    row = synthesize("tracker 256", "tracker_table", {"entries": 256}, tmp_path, pnr=False, generic=False)
    # Counts (16 b), thresholds (16 b) and command indices (8 b) of 256 entries: 2 DP16KD.
    assert row["brams"] >= 2, row
    # The armed bits are flip-flops: one per entry, plus the pipeline (about 150: two
    # stages of counts, thresholds and commands) and status registers (about 190).
    assert 256 <= row["ffs"] < 700, row


def test_latency_1_adder_is_timed_behind_input_registers(tmp_path):
    # Without the harness the adder has no register-to-register path and no Fmax at all.
    # Place and route (the `synth` extra) is not installed in CI: check the netlist it would time.
    row = synthesize("adder", "fp_adder", {"format": "bfloat16"}, tmp_path, pnr=False, register_inputs=True,
                     generic=False)
    # Resource counts are those of the bare block: 16 result bits and a valid bit.
    assert row["ffs"] == 17, row
    # The timed netlist adds one register per input bit: operands a, b (16 bits each) and valid.
    assert row["timed_ffs"] == 17 + 33, row


def test_merge_keeps_other_rows_in_table_order():
    old = [{"label": "tracker 64", "luts": 1}, {"label": "T3 slice", "luts": 2}]
    new = [{"label": "tracker 64", "luts": 3}, {"label": "memory arbiter (64-bit requests)", "luts": 4}]
    assert merge_rows(old, new) == [{"label": "tracker 64", "luts": 3},
                                {"label": "memory arbiter (64-bit requests)", "luts": 4},
                                {"label": "T3 slice", "luts": 2}]


@pytest.mark.parametrize(("argv", "message"), [
    (["--only", "no such block"], "--only 'no such block' matches none of: tracker 64, "),
    (["--only", "("], "--only is not a regular expression: "),
    (["--jobs", "0"], "--jobs must be at least 1, not 0"),
    (["--extra-seeds", "2,x"], "--extra-seeds must be comma-separated integers, not '2,x'"),
    (["--extra-seeds", "-1"], "--extra-seeds must be at least 0, not '-1'"),
])
def test_cli_rejects_bad_arguments(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "synth.json").exists()


@pytest.mark.parametrize("spec", [s for s in SYNTH_SETS if s.target_MHz], ids=lambda s: s.label)
def test_committed_synth_row_is_of_this_design(spec):
    """A change detector, not a timing check: ``make test`` does not place and route. The
    committed ``make synth`` row (LFE5U-85F, nextpnr) must be of the design in the tree (same
    generated Verilog), so any RTL change that could move timing fails here until ``make
    synth`` is re-run; the row it then holds must meet the block's target."""
    rows = {r["label"]: r for r in json.loads(SYNTH_JSON.read_text())["rows"]}
    row = rows[spec.label]
    assert row["params"] == spec.params
    assert row["verilog_sha1"] == verilog_sha1(to_verilog(spec.block, **spec.params)), (
        f"{spec.label}: sim_results/synth.json is of another design; run `make synth`")
    assert row["fmax_MHz"] is not None and row["fmax_MHz"] >= spec.target_MHz, (
        f"{spec.label}: {row['fmax_MHz']} MHz, target {spec.target_MHz} MHz")
