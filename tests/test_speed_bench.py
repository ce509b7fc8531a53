"""`make bench` (``tb/bench.py``): its table and its argument check; the timings themselves are not tests."""

from __future__ import annotations

from tb.bench import main, markdown_table


def _sim(rate, with_startup, build):
    return {"cycles_per_s": rate, "cycles_per_s_with_startup": with_startup, "clean_build_s": build,
            "cycles": 1000, "runs": 3}


def test_markdown_table_has_both_simulators_and_their_ratios():
    result = {
        "benches": {"tracker_table": {"testcase": "random__full__always", "icarus": _sim(2000.0, 1000.0, 1.0),
                                      "verilator": _sim(5000.0, 1500.0, 9.0),
                                      "verilator_over_icarus": 2.5, "verilator_over_icarus_with_startup": 1.5}},
        "report_s": 2.5, "report_cold_s": 4.0, "sweep_configs_per_s": 10000.0, "sweep_cold_configs_per_s": 60.0,
        "make_verilog_s": 8.7,
        "make_test_s": 486.0, "make_test_from_previous_run": True,
    }
    text = markdown_table(result)
    row = "| `tracker_table` (random__full__always) | 1,000 | 2,000 | 1,000 | 1.0 | 5,000 | 1,500 | 9.0 | 2.50 | 1.50 |"
    assert row in text.splitlines()
    assert "| `make test` | 8.1 min (kept from an earlier `make bench`) |" in text
    assert "| sweep, warm result cache | 10,000 configurations/s |" in text
    assert "| full `make report` (with plots), warm result cache | 2.50 s |" in text
    assert "wave cache" not in text
    assert "| sweep, cold | 60 configurations/s |" in text
    assert "| full `make report` (with plots), cold | 4.00 s |" in text


def test_model_only_needs_an_earlier_bench_json(tmp_path, capsys):
    assert main(["--model-only", "--out", str(tmp_path / "none.json")]) == 2
    assert "--model-only needs an existing" in capsys.readouterr().err


def test_runs_below_one_is_refused(capsys):
    assert main(["--runs", "0"]) == 2
    assert capsys.readouterr().err == "error: --runs must be at least 1, not 0\n"
