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


_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def _gpu(platform: str) -> str:
    """How the prose names a platform: 'h200-sxm' is 'H200'."""
    return platform.split("-")[0].upper()


def _model(name: str) -> str:
    """How the prose names a model: 'llama-3-70b' is 'Llama 3 70B'."""
    family, version, size = name.split("-")
    return f"{family.capitalize()} {version} {size.upper()}"


def _span(values, fmt: str) -> str:
    low, high = f"{min(values):{fmt}}", f"{max(values):{fmt}}"
    return low if low == high else f"{low} to {high}"


def _list(values) -> str:
    """'32', '128 and 256', '1, 2, 4, 8 and 16'."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def test_the_serving_summary_is_the_committed_one():
    """The serving verdicts that the README and docs/peers.md state by hand (how many points,
    where each side wins, by how much) are what sim_results/peers_serving.json holds: a
    model change that moves a verdict fails here until the prose follows."""
    import json

    data = json.loads((REPO / "sim_results" / "peers_serving.json").read_text())
    points, layers = data["points"], data["prefill_layers"]
    readme = " ".join((REPO / "README.md").read_text().split())
    peers = " ".join((REPO / "docs" / "peers.md").read_text().split())
    assert f"of the {len(points)}" in readme and f"Of the {len(points)} sublayer points" in peers
    assert f"Of the {len(layers)} whole prefill layers" in peers

    t3 = [p for p in points if p["verdict"] == "T3"]
    software = [p for p in points if p["verdict"] == "software"]
    tokenweave = [p for p in layers if p["verdict"] == "software"]
    assert len(t3) + len(software) + sum(p["verdict"] == "within" for p in points) == len(points)

    # T3's wins: one platform and TP; per model a run of token counts and T3's lead there.
    (platform, tp), = {(p["platform"], p["tp"]) for p in t3}
    assert f"in serving on {_gpu(platform)} at TP {tp} (" in readme
    assert f"T3 wins at {_WORDS[len(t3)]}**: {_gpu(platform)} at TP {tp}" in peers
    for model in sorted({p["model"] for p in t3}):
        wins = [p for p in t3 if p["model"] == model]
        said = (f"{_model(model)} at {_span([p['tokens'] for p in wins], ',')} tokens, "
                f"{_span([p['t3_over_software'] for p in wins], '.2f')}x")
        assert said in readme and said in peers, said

    # Software's wins in sublayers: where, and its speed over T3's there.
    assert f"Software wins at {_WORDS[len(software)]}**" in peers
    where = {}
    for p in software:
        where.setdefault(_gpu(p["platform"]), []).append(p)
    for gpu, wins in where.items():
        said = (f"{gpu} at {_list(sorted(p['tokens'] for p in wins))} tokens "
                f"({_span([1 / p['t3_over_software'] for p in wins], '.2f')}x)")
        assert said in readme and said in peers, said

    # TokenWeave's wins in whole prefill layers.
    (gpu,), = {(_gpu(p["platform"]),) for p in tokenweave}
    assert f"on {gpu} ({_span([1 / p['t3_over_best'] for p in tokenweave], '.2f')}x)" in readme
    assert f"TokenWeave wins {_WORDS[len(tokenweave)]}, on {gpu}" in peers


def test_the_validated_errors_quoted_are_the_committed_ones():
    """docs/peers.md quotes the validated errors that decide its verdicts; they are those of
    sim_results/peers_validation.md's table (each family's largest error)."""
    import math
    import re

    table = dict(re.findall(r"^\| ([a-z_]+) \| ([\d.]+)% \|$",
                            (REPO / "sim_results" / "peers_validation.md").read_text(), re.MULTILINE))
    error = {k: float(v) for k, v in table.items()}
    assert {"nccl_ring", "nccl_nvls", "custom", "triton_dist_rs", "rccl_ring", "copy_engine"} <= set(error)
    peers = " ".join((REPO / "docs" / "peers.md").read_text().split())
    pct = {k: f"{round(v)}%" for k, v in error.items()}
    assert (f"validated error of NCCL's transports to {pct['nccl_ring']} (ring) and {pct['nccl_nvls']} (NVLS), "
            f"and of the load-based all-reduce to {pct['custom']}") in peers
    assert f"validated error of its GEMM + RS, ±{pct['triton_dist_rs']}" in peers
    assert f"validated error (≤{math.ceil(max(error['rccl_ring'], error['copy_engine']))}%)" in peers
