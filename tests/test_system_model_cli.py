"""``python -m system_model``: help, report files and plots, sweep, sensitivity, and one-line errors
with exit 2."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from system_model import build_config, run_study, study_points
from system_model.cli import main
from system_model.plots import plot_speedups, plot_timeline, plot_traffic
from system_model.report import (
    TRAFFIC_COMPONENTS,
    format_table,
    slowdown_schemes,
    slowdown_summary,
    traffic_breakdown,
    write_outputs,
)
from system_model.schemes import SCHEMES
from system_model.study import summarise

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path):
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC), path


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "system_model", *args], capture_output=True, text=True)


def test_help_documents_every_option():
    result = run_cli("report", "--help")
    assert result.returncode == 0
    for option in ("--preset", "--models", "--tp", "--phase", "--out", "--no-plots", "--rtl-timing"):
        assert option in result.stdout
    sweep = run_cli("sweep", "--help")
    assert "--link-bw-GBps" in sweep.stdout and "--hbm-GBps" in sweep.stdout
    sensitivity = run_cli("sensitivity", "--help")
    assert sensitivity.returncode == 0
    for option in ("--preset", "--out", "--rtl-timing", "--step", "--jobs"):
        assert option in sensitivity.stdout
    top = run_cli("--help")
    assert all(command in top.stdout for command in ("report", "sweep", "sensitivity"))


@pytest.mark.parametrize("args", [
    ["--preset", "a100"],
    ["--tp", "eight"],
    ["--models", "gpt-5"],
    ["--phase", "decode"],
    ["--tp", "7"],
    ["sweep", "--hbm-GBps", "-5"],
    ["--frobnicate"],
    ["sensitivity", "--step", "0"],
    ["sensitivity", "--step", "1.5"],
    ["sensitivity", "--step", "-0.25"],
    ["sensitivity", "--step", "quarter"],
    ["sensitivity", "--jobs", "0"],
    ["sensitivity", "--preset", "a100"],
    ["sensitivity", "--rtl-timing", "no/such/rtl_timing.json"],
    ["--rtl-timing", "no/such/rtl_timing.json"],
    ["sweep", "--tp", "7", "--models", "mega-gpt-2"],
    ["sweep", "--hbm-GBps", "inf"],
    ["sweep", "--hbm-GBps", "1e-9"],
    ["sweep", "--link-bw-GBps", ""],
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
    assert "memory-controller cycles at 1 GHz" in out   # the clock the block figures assume
    for name in ("report_t3-paper.csv", "report_t3-paper.json", "report_t3-paper.md"):
        assert (tmp_path / name).stat().st_size > 0, name
    for name in ("speedup_t3-paper.png", "traffic_t3-paper.png", "timeline_fc2_t3-paper.png"):
        assert_png(tmp_path / name)
        assert (tmp_path / name).with_suffix(".svg").read_text().lstrip().startswith("<?xml")
    data = json.loads((tmp_path / "report_t3-paper.json").read_text())
    assert {r["scheme"] for r in data["rows"]} == set(SCHEMES)
    assert data["config"]["block_timing"]["source"]
    # The traffic breakdown per scheme: per row, and per set and scheme.
    assert all({"gemm_reads_MB", "gemm_writes_MB", "rs_reads_MB", "rs_writes_MB", "ag_MB"} <= set(r)
               for r in data["rows"])
    headline = data["traffic"]["headline"]
    assert set(headline) == set(SCHEMES)
    for scheme, row in headline.items():
        assert set(TRAFFIC_COMPONENTS) <= set(row["mean_bytes"])
        assert row["total_bytes"] == pytest.approx(sum(row["mean_bytes"].values()))
        assert row["vs_sequential_geomean"] == pytest.approx(1 - data["summaries"]["headline"]["dram_cut_geomean"]
                                                             [scheme])
    assert "cu_sharing" in data["slowdowns"]["headline"]
    md = (tmp_path / "report_t3-paper.md").read_text()
    assert "## DRAM traffic per scheme" in md and "| scheme | GEMM reads (MB) |" in md
    assert "## Overlap: slowdowns and net speedup" in md and "cu_sharing GEMM slowdown" in md
    assert "Overlap: GEMM and collective slowdowns" in out


def test_report_without_plots_writes_no_png(tmp_path):
    assert main(["--models", "t-nlg", "--tp", "8", "--phase", "prefill", "--no-plots", "--out", str(tmp_path)]) == 0
    assert not list(tmp_path.glob("*.png"))


def test_sweep_writes_csv_with_progress(tmp_path, capsys):
    assert main(["sweep", "--models", "t-nlg", "--tp", "8,16", "--link-bw-GBps", "75,150",
                 "--hbm-GBps", "1000", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "configurations" in captured.err and "/s" in captured.err
    with (tmp_path / "sweep_t3-paper.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * 6  # link values x TP x (4 training + 2 prefill sublayers)
    assert {r["link_bw_GBps"] for r in rows} == {"75.0", "150.0"}


# -- the report's pieces on synthetic results: slowdowns and DRAM traces that the model may
# -- not report yet ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def results():
    return run_study(build_config(), study_points(["t-nlg"], [8, 16]))


def _trace(n: int = 64, queue: float = 20.0):
    return SimpleNamespace(t_s=[i * 1e-8 for i in range(n)], queue_occupancy=[queue + i % 7 for i in range(n)],
                           GBps={"gemm_reads": [300.0] * n, "gemm_writes": [100.0] * n,
                                 "dma_reads": [float(75 * (i % 2)) for i in range(n)], "updates": [75.0] * n})


@contextmanager
def patched(results, scheme_attributes):
    """Give every point's schemes the attributes ``{scheme: {name: value}}`` (fields the model
    may not have yet), and the other schemes' ``slowdowns`` none; restore them after."""
    saved = [(res, name, getattr(res, name, None)) for r in results for res in r.schemes.values()
             for name in ("slowdowns", "trace")]
    try:
        for r in results:
            for scheme, res in r.schemes.items():
                object.__setattr__(res, "slowdowns", {})  # the fields may not exist yet
                for name, value in scheme_attributes.get(scheme, {}).items():
                    object.__setattr__(res, name, value)
        yield results
    finally:
        for res, name, value in saved:
            object.__setattr__(res, name, value)


def test_traffic_breakdown_sums_to_the_scheme_bytes(results):
    for r in results:
        for res in r.schemes.values():
            parts = traffic_breakdown(res)
            assert list(parts)[:5] == list(TRAFFIC_COMPONENTS)
            assert sum(parts.values()) == pytest.approx(res.dram_bytes)
            assert parts["ag"] == res.traffic["ag_reads"] + res.traffic["ag_writes"]


def test_slowdown_table_lists_schemes_that_report_slowdowns(results):
    with patched(results, {"t3": {"slowdowns": {"gemm": 1.05, "collective": 1.25}},
                           "cu_sharing": {"slowdowns": {"gemm": 1.1, "collective": 2.0}}}):
        assert slowdown_schemes(results) == ["t3", "cu_sharing"]
        summary = slowdown_summary(results, "headline")
        assert summary["t3"]["gemm"] == pytest.approx(1.05) and summary["cu_sharing"]["collective"] == pytest.approx(2)
        assert summary["t3"]["speedup"] == pytest.approx(summarise(results, "headline").speedup_geomean["t3"])
        table = format_table(results, {"headline": summarise(results, "headline")})
        block = table.split("Overlap: GEMM and collective slowdowns")[1]
        assert "t3" in block and "cu-share" in block and "1.05x" in block and "2.00x" in block
        assert "geomean headline" in block
    with patched(results, {}):  # cu_sharing is listed even before the model reports its slowdowns
        assert slowdown_schemes(results) == ["cu_sharing"]
        assert slowdown_summary(results, "headline")["cu_sharing"]["gemm"] is None


def test_plots_are_png(results, tmp_path):
    assert_png(plot_speedups(results, tmp_path / "speedup.png"))
    assert_png(plot_traffic(results, tmp_path / "traffic.png"))
    assert_png(plot_timeline(results, tmp_path / "timeline.png"))


def test_timeline_plots_the_dram_trace(results, tmp_path):
    cfg = build_config()
    with patched(results, {"t3": {"trace": _trace(queue=40)}, "t3_mca": {"trace": _trace(queue=10)}}):
        assert_png(plot_timeline(results, tmp_path / "trace.png", cfg=cfg))
        assert len(write_outputs(results, cfg, tmp_path / "report")) == 6
        assert_png(tmp_path / "report" / "timeline_fc2_t3-paper.png")
    with patched(results, {"t3": {"trace": None}, "t3_mca": {"trace": None}}):
        assert_png(plot_timeline(results, tmp_path / "gantt.png", cfg=cfg))  # no trace: the Gantt chart
