"""``python -m system_model``: help, report files, sweep, and one-line errors with exit 2."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from system_model.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "system_model", *args], capture_output=True, text=True)


def test_help_documents_every_option():
    result = run_cli("report", "--help")
    assert result.returncode == 0
    for option in ("--preset", "--models", "--tp", "--phase", "--out", "--no-plots", "--rtl-timing"):
        assert option in result.stdout
    sweep = run_cli("sweep", "--help")
    assert "--link-bw-GBps" in sweep.stdout and "--hbm-GBps" in sweep.stdout


@pytest.mark.parametrize("args", [
    ["--preset", "a100"],
    ["--tp", "eight"],
    ["--models", "gpt-5"],
    ["--phase", "decode"],
    ["--tp", "7"],
    ["sweep", "--hbm-GBps", "-5"],
    ["--frobnicate"],
])
def test_bad_input_is_one_line_and_exit_2(args, tmp_path):
    result = run_cli(*args, "--out", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr


def test_report_writes_table_and_files(tmp_path, capsys):
    assert main(["--models", "t-nlg", "--tp", "8", "--phase", "training", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "t-nlg" in out and "geomean headline" in out and "block timing:" in out
    for name in ("report_t3-paper.csv", "report_t3-paper.json", "report_t3-paper.md", "speedup_t3-paper.png",
                 "traffic_t3-paper.png", "timeline_fc2_t3-paper.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    data = json.loads((tmp_path / "report_t3-paper.json").read_text())
    assert {r["scheme"] for r in data["rows"]} == {"sequential", "ideal_overlap", "ideal_rs_nmc", "t3", "t3_mca",
                                                   "cu_sharing"}
    assert data["config"]["block_timing"]["source"]


def test_sweep_writes_csv_with_progress(tmp_path, capsys):
    assert main(["sweep", "--models", "t-nlg", "--tp", "8,16", "--link-bw-GBps", "75,150",
                 "--hbm-GBps", "1000", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "configurations" in captured.err and "/s" in captured.err
    with (tmp_path / "sweep_t3-paper.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * 6  # link values x TP x (4 training + 2 prefill sublayers)
    assert {r["link_bw_GBps"] for r in rows} == {"75.0", "150.0"}
