"""The documentation builds (``make docs``): MkDocs in strict mode, so a broken internal
link, a page missing from the navigation or an include of a missing result fails; the
reference pages are generated from the code and say what the code does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_site_builds_without_warnings(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    site = tmp_path / "site"
    # The results pages include the committed tables (not copies), and the figures are served.
    report = (site / "results" / "report" / "index.html").read_text()
    assert "Sublayer study, preset" in report and "<table" in report
    assert (site / "results" / "speedup_t3-paper.png").is_file()
    # The references are generated from the code.
    hardware = (site / "reference" / "hardware-file" / "index.html").read_text()
    assert "link_bw_GBps_per_link" in hardware and "between" in hardware
    assert "gemm__payload" in (site / "reference" / "ports" / "index.html").read_text()
    assert "--hardware-file" in (site / "reference" / "cli" / "index.html").read_text()


def test_the_readme_is_short_and_links_what_it_names():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200, "the README is a front page: details go to docs/"
    for target in __import__("re").findall(r"\]\(((?:docs|examples)/[^)#]+)", text):
        assert (REPO / target).exists(), f"README links {target}, which does not exist"


def test_the_examples_run(tmp_path, capsys):
    from system_model.cli import main
    from system_model.describe.models import MODELS

    zoo = dict(MODELS)
    examples = REPO / "examples"
    assert main(["point", "--hardware-file", str(examples / "my_gpu.toml"), "--gemm", "4096,4096,1024",
                 "--tp", "8"]) == 0
    for model in ("dense_model.toml", "gqa_model.toml"):
        assert main(["report", "--model-file", str(examples / model), "--tp", "8", "--phase", "prefill",
                     "--no-plots", "--out", str(tmp_path)]) == 0, capsys.readouterr().err
    # A model file's model joins the zoo for its command only (it once stayed, and a later
    # command in the same process swept it too).
    assert MODELS == zoo


def test_the_readme_headline_is_the_committed_one():
    """The README's headline table says what sim_results/report_t3-paper.json holds."""
    import json
    import re

    rows = {(r["figure"], r["set"]): r for r in
            json.loads((REPO / "sim_results" / "report_t3-paper.json").read_text())["paper_comparison"]}
    names = {("T3-MCA speedup, geomean", "headline"): "speedup_geomean",
             ("T3-MCA speedup, max", "headline"): "speedup_max",
             ("DRAM data movement cut, geomean", "headline"): "dram_cut_geomean",
             ("DRAM data movement cut, max", "headline"): "dram_cut_max",
             ("T3-MCA speedup, geomean", "PaLM / MT-NLG"): "palm_mtnlg_speedup_geomean"}
    text = (REPO / "README.md").read_text()
    seen = 0
    for line in text.splitlines():
        match = re.match(r"^\| ([^|]+?) \| (headline|PaLM / MT-NLG) \| \*\*([\d.]+)(x|%)\*\* \|.*\| ([^|]*) \|$", line)
        if not match:
            continue
        figure, where, value, unit, verdict = match.groups()
        key = names[(figure, where)]
        row = rows[(key, "palm_mtnlg" if where != "headline" else "headline")]
        expected = row["ours"] * (100 if unit == "%" else 1)
        assert f"{expected:.{1 if unit == '%' else 3}f}" == value, (figure, where, value, expected)
        assert ("not reproduced" in verdict) == (not row["within"]), (figure, verdict)
        seen += 1
    assert seen == len(names)
