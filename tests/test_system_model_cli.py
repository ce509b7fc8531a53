"""``python -m system_model``: help, report files and plots, sweep, sensitivity, and one-line errors
with exit 2."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from system_model.cli import main
from system_model.describe.presets import DESCRIPTIONS
from system_model.schemes import PAPER_SCHEMES
from system_model.studies.plots import plot_speedups, plot_timeline, plot_traffic
from system_model.studies.report import (
    TRAFFIC_COMPONENTS,
    format_table,
    slowdown_schemes,
    slowdown_summary,
    traffic_breakdown,
    write_outputs,
)
from system_model.studies.study import run_study, study_points, summarise

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
    assert "--link-bw-GBps-per-link" in sweep.stdout and "--hbm-GBps" in sweep.stdout
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
    ["sweep", "--link-bw-GBps-per-link", ""],
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
    for name in ("report_t3-paper_t-nlg_tp8.csv", "report_t3-paper_t-nlg_tp8.json", "report_t3-paper_t-nlg_tp8.md"):
        assert (tmp_path / name).stat().st_size > 0, name
    for name in ("speedup_t3-paper_t-nlg_tp8.png", "traffic_t3-paper_t-nlg_tp8.png",
                 "timeline_fc2_t3-paper_t-nlg_tp8.png"):
        assert_png(tmp_path / name)
        assert (tmp_path / name).with_suffix(".svg").read_text().lstrip().startswith("<?xml")
    data = json.loads((tmp_path / "report_t3-paper_t-nlg_tp8.json").read_text())
    assert {r["scheme"] for r in data["rows"]} == set(PAPER_SCHEMES)
    assert data["config"]["block_timing"]["source"]
    # The traffic breakdown per scheme: per row, and per set and scheme.
    assert all({"gemm_reads_MB", "gemm_writes_MB", "rs_reads_MB", "rs_writes_MB", "ag_MB"} <= set(r)
               for r in data["rows"])
    headline = data["traffic"]["headline"]
    assert set(headline) == set(PAPER_SCHEMES)
    for scheme, row in headline.items():
        assert set(TRAFFIC_COMPONENTS) <= set(row["mean_bytes"])
        assert row["total_bytes"] == pytest.approx(sum(row["mean_bytes"].values()))
        assert row["vs_sequential_geomean"] == pytest.approx(1 - data["summaries"]["headline"]["dram_cut_geomean"]
                                                             [scheme])
    assert "cu_sharing" in data["slowdowns"]["headline"]
    md = (tmp_path / "report_t3-paper_t-nlg_tp8.md").read_text()
    assert "## DRAM traffic per scheme" in md and "| scheme | GEMM reads (MB) |" in md
    assert "## Overlap: slowdowns and net speedup" in md and "cu_sharing GEMM slowdown" in md
    assert "Overlap: GEMM and collective slowdowns" in out


def test_the_result_cache_is_reported_and_changes_nothing(tmp_path):
    """The CLI's last stderr line: the evaluated sublayers it loaded from and stored in the
    result cache (T3_MODEL_CACHE names its file; empty turns it off)."""
    args = [sys.executable, "-m", "system_model", "report", "--models", "t-nlg", "--tp", "8", "--phase", "prefill",
            "--no-plots"]
    cache = tmp_path / "results.pkl"
    env = {**os.environ, "T3_MODEL_CACHE": str(cache)}
    runs, written = [], []
    for out in ("cold", "warm"):
        result = subprocess.run([*args, "--out", str(tmp_path / out)], capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr
        found = re.search(r"^evaluated sublayers: (\d+) loaded from and (\d+) stored in (.+)$", result.stderr, re.M)
        assert found and found.group(3) == str(cache), result.stderr
        runs.append((int(found.group(1)), int(found.group(2))))
        written.append(cache.stat().st_mtime_ns)
    (cold_loaded, stored), (warm_loaded, warm_stored) = runs
    assert cold_loaded == 0 and stored > 0 and warm_loaded == stored == warm_stored
    assert written[0] == written[1], "a run that evaluated nothing new rewrote the cache file"
    for name in ("report_t3-paper_t-nlg_tp8.csv", "report_t3-paper_t-nlg_tp8.md"):
        assert (tmp_path / "cold" / name).read_text() == (tmp_path / "warm" / name).read_text(), name
    off = subprocess.run([*args, "--out", str(tmp_path / "off")], capture_output=True, text=True,
                         env={**os.environ, "T3_MODEL_CACHE": ""})
    assert off.returncode == 0 and "evaluated sublayers: no cache file" in off.stderr


def test_a_refused_command_never_reads_the_result_cache(monkeypatch, capsys):
    """The one-line error comes before any work: the cache file (a well-used one holds about
    100,000 results, a second to read) is read only when a result is first looked up."""
    from system_model.schemes import cache

    reads = []
    monkeypatch.setattr(cache, "load", lambda *a, **k: reads.append(a) or 0)
    monkeypatch.setattr(cache, "_STATE", {"path": None, "read": 0, "new": 0})
    monkeypatch.setattr(cache, "CACHE_FILE", Path("never-read.pkl"))
    assert main(["sweep", "--axis", "hbm=1000"]) == 2
    assert "not a sweepable field" in capsys.readouterr().err
    assert reads == []


def test_report_without_plots_writes_no_png(tmp_path):
    assert main(["--models", "t-nlg", "--tp", "8", "--phase", "prefill", "--no-plots", "--out", str(tmp_path)]) == 0
    assert not list(tmp_path.glob("*.png"))


def test_sweep_writes_csv_with_progress(tmp_path, capsys):
    assert main(["sweep", "--models", "t-nlg", "--tp", "8,16", "--link-bw-GBps-per-link", "75,150",
                 "--hbm-GBps", "1000", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "configurations" in captured.err and "/s" in captured.err
    with (tmp_path / "sweep_t3-paper_t-nlg_tp8-16.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * 6  # link values x TP x (4 training + 2 prefill sublayers)
    assert {r["link_bw_GBps_per_link"] for r in rows} == {"75.0", "150.0"}


# -- the report's pieces on synthetic results: slowdowns and DRAM use over time that the model
# -- may not report at every point ------------------------------------------------------------


def _paper_config():
    return DESCRIPTIONS["t3-paper"].study_config()


@pytest.fixture(scope="module")
def results():
    return run_study(_paper_config(), study_points(["t-nlg"], [8, 16]))


def _intervals(n: int = 64, comm: float = 0.3):
    """The timeline engine's record (``Engine.intervals``): (start, end, {flow: rate}, {resource:
    use / capacity}, {lane: DRAM use / capacity}), here made up."""
    return [(i * 1e-8, (i + 1) * 1e-8, {}, {"dram": 0.6 + comm * (i % 2), "link": 0.8, "reducers": 0.4},
             {"GEMM": 0.6, "link": comm * (i % 2)}) for i in range(n)]


@contextmanager
def patched(results, scheme_attributes):
    """Give every point's schemes the attributes ``{scheme: {name: value}}`` (values the model
    may not report), and the other schemes' ``slowdowns`` none; restore them after."""
    saved = [(res, name, getattr(res, name)) for r in results for res in r.schemes.values()
             for name in ("slowdowns", "intervals")]
    try:
        for r in results:
            for scheme, res in r.schemes.items():
                object.__setattr__(res, "slowdowns", {})
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


def test_timeline_plots_the_dram_use(results, tmp_path):
    cfg = _paper_config()
    # The study keeps the engine's record of every scheme (run_study's timeline=True).
    assert all(r.schemes[s].intervals for r in results for s in ("t3", "t3_mca"))
    assert_png(plot_timeline(results, tmp_path / "recorded.png", cfg=cfg))
    with patched(results, {"t3": {"intervals": _intervals(comm=0.4)}, "t3_mca": {"intervals": _intervals(comm=0.1)}}):
        assert_png(plot_timeline(results, tmp_path / "intervals.png", cfg=cfg))
        assert len(write_outputs(results, cfg, tmp_path / "report")) == 6
        assert_png(tmp_path / "report" / "timeline_fc2_t3-paper.png")
    with patched(results, {"t3": {"intervals": []}, "t3_mca": {"intervals": []}}):
        assert_png(plot_timeline(results, tmp_path / "gantt.png", cfg=cfg))  # no record: the Gantt chart


def test_the_result_cache_keeps_what_another_process_stored(tmp_path, monkeypatch):
    """Parallel processes (a sweep's workers, make test's) each save what they evaluated: a
    save merges with what the file holds by then, so neither's results are lost."""
    import pickle

    from system_model.schemes import cache

    path = tmp_path / "results.pkl"
    monkeypatch.setattr(cache, "_RESULTS", {})
    monkeypatch.setattr(cache, "_STATE", {"path": None, "read": 0, "new": 0})
    assert cache.load(path) == 0
    cache.store(("ours",), "our result")
    # Another process saves after this one read the file.
    path.write_bytes(pickle.dumps((cache._VERSION, {("theirs",): "their result"})))
    assert cache.save(path) == 2
    _, stored = pickle.loads(path.read_bytes())
    assert stored == {("ours",): "our result", ("theirs",): "their result"}
