"""A model-only install, checked as a new user would meet it (``make install-check``; CI runs it).

In a fresh virtual environment outside the repository: ``pip install <repository>`` with no
extras, then, from another folder, ``t3-model report`` must write the same tables the
repository commits (the installed model reads the same presets and block timing), the
RTL-side command must refuse in one line, and the install must stay light:

* under :data:`MAX_VENV_MB` in all (the issue's bound for a model user);
* no generic top-level packages (``rtl``, ``tb``, ``build``) in site-packages;
* no cache written into the installed package.

Prints the figures and writes them to ``--json`` if given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Megabytes a model-only virtual environment may take (issue #26: under 250 MB).
MAX_VENV_MB = 250
#: Tables `t3-model report` writes that the repository commits.
TABLES = ("report_t3-paper.csv", "report_t3-paper.json", "report_t3-paper.md")


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def _run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def check(work: Path) -> dict:
    venv, elsewhere = work / "venv", work / "elsewhere"
    elsewhere.mkdir(parents=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = _run([str(python), "-m", "pip", "install", "--quiet", str(REPO)])
    if done.returncode:
        raise SystemExit(f"pip install failed:\n{done.stdout}\n{done.stderr}")
    install_s = time.perf_counter() - started
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     check=True).stdout.strip())
    problems = []
    for name in ("rtl", "tb", "build"):
        if (site / name).exists():
            problems.append(f"site-packages has a top-level {name!r}")
    size = _size_mb(venv)
    if size > MAX_VENV_MB:
        problems.append(f"the model-only venv is {size:.0f} MB (at most {MAX_VENV_MB})")
    t3_model = venv / "bin" / "t3-model"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "T3_MODEL_CACHE")}
    env["XDG_CACHE_HOME"] = str(work / "cache")
    started = time.perf_counter()
    report = _run([str(t3_model), "report", "--no-plots", "--out", "results"], cwd=elsewhere, env=env)
    report_s = time.perf_counter() - started
    if report.returncode:
        problems.append(f"t3-model report failed: {report.stderr.strip()[-500:]}")
    else:
        for name in TABLES:
            got, committed = elsewhere / "results" / name, REPO / "sim_results" / name
            if not got.is_file():
                problems.append(f"t3-model report did not write {name}")
            elif got.read_bytes() != committed.read_bytes():
                problems.append(f"the installed model's {name} differs from sim_results/{name}")
    if not (work / "cache" / "t3-model" / "results.pkl").is_file():
        problems.append("the result cache is not in the user's cache folder")
    package = site / "system_model"
    if any(p.suffix == ".pkl" for p in package.rglob("*")):
        problems.append("a cache file was written inside the installed package")
    refused = _run([str(t3_model), "crosscheck"], cwd=elsewhere, env=env)
    lines = refused.stderr.strip().splitlines()
    if refused.returncode != 2 or len(lines) != 1 or "needs the repository" not in lines[0]:
        problems.append(f"crosscheck without the repository: exit {refused.returncode}, {refused.stderr.strip()!r}")
    return {"venv_MB": round(size, 1), "max_venv_MB": MAX_VENV_MB, "install_s": round(install_s, 1),
            "report_s": round(report_s, 2), "site_packages": sorted(p.name for p in site.iterdir()
                                                                    if not p.name.endswith((".dist-info", ".pth"))),
            "problems": problems}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.install_check", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="t3-install-check-") as tmp:
        result = check(Path(tmp))
    print(f"model-only venv: {result['venv_MB']:.0f} MB (at most {MAX_VENV_MB}); pip install {result['install_s']} s; "
          f"t3-model report from another folder {result['report_s']} s")
    print("site-packages: " + ", ".join(result["site_packages"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    for problem in result["problems"]:
        print(f"FAIL {problem}")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
