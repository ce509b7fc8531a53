"""Every conflicting, ignored or impossible option is a one-line error with exit status 2,
raised before any work is done, and nothing is written (issue #26). One row per case."""

from __future__ import annotations

import pytest

from system_model.cli import main
from system_model.describe.files import dump_hardware
from system_model.describe.presets import DESCRIPTIONS

PRESET_FILE = "h100.toml"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / PRESET_FILE).write_text(dump_hardware(DESCRIPTIONS["h100-sxm"]))
    no_t3 = dump_hardware(DESCRIPTIONS["t3-paper"]).replace("t3_blocks = true", "t3_blocks = false")
    (tmp_path / "no_t3.toml").write_text(no_t3.replace('name = "t3-paper"', 'name = "no-t3"'))
    (tmp_path / "big.toml").write_text('name = "big"\nhidden = 4096\nffn = 16384\nactivation = "gelu"\n'
                                       'heads = 32\nlayers = 1048576\n')
    (tmp_path / "a_file").write_text("")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    return tmp_path


CASES = [
    (["report", "--preset", "h100-sxm", "--hardware-file", PRESET_FILE], "--preset and --hardware-file"),
    (["sweep", "--tp", "8", "--axis", "tp=4,8"], "--tp and --axis tp"),
    (["sweep", "--models", "gpt-3", "--axis", "model=gpt-3"], "--models and --axis model"),
    (["crosscheck", "--only", "bogus"], "--only must be one of"),
    (["crosscheck", "--gpus", "3"], "--gpus must be one of"),
    (["crosscheck", "--schedule", "t3"], "--schedule needs --rtl"),
    (["crosscheck", "--seed", "3"], "--seed needs --rtl"),
    (["crosscheck", "--rtl", "--recorded", "x.json"], "--recorded and --rtl"),
    (["report", "--hardware-file", "no_t3.toml"], "t3_blocks = false"),
    (["sweep", "--hardware-file", "no_t3.toml"], "t3_blocks = false"),
    (["report", "--models", "gpt-3,gpt-3"], "gpt-3 is given twice"),
    (["report", "--tp", "8,8"], "8 is given twice"),
    (["peers", "--platforms", "h100-sxm,h100-sxm"], "h100-sxm is given twice"),
    (["report", "--out", ""], "expected a folder, not an empty string"),
    (["sweep", "--resume", "--models", "gpt-3"], "nothing to resume"),
    (["report", "--out", "a_file"], "a file is there, not a folder"),
    (["report", "--out", "a_file/below"], "is not a folder this user can write in"),
    (["report", "--hardware-file", "/dev/zero"], "not a regular file"),
    (["reprot"], "did you mean 'report'"),
    (["report", "--model-file", "big.toml", "--tp", "8"], r"big\.toml: layers must be between 1 and 10000"),
    (["sweep", "--axis", "link_bw_GBps=100,200"], "now link_bw_GBps_per_link"),
    # Found by the sceptic review of #26:
    (["report", "--preset", "h100-sxm", "--preset", "mi300x"], "--preset is given twice"),
    (["point", "--gemm", "8,8,8", "--tp", "8", "--tp", "16"], "--tp is given twice"),
    (["sweep", "--link-bw-GBps", "100"], "unrecognized arguments: --link-bw-GBps"),
    (["point", "--gemm", "8,8,8", "--tp", "8", "--out", "x"], "unrecognized arguments: --out"),
    (["sweep", "--scheduler", "tcp://localhost:1", "--workers", "2"], "--scheduler and --workers"),
    (["sweep", "--scheduler", "notaurl"], "must be a Dask address"),
    (["sweep", "--model-file", "big.toml", "--axis", "model=gpt-3"], "--model-file and --axis model"),
    (["report", "--out", "dangling"], "a link to nothing"),
    (["report", "--out", "/proc/t3-model-test"], "cannot be created"),
]


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_refused_before_any_work(folder, capsys, argv, message):
    before = sorted(p.name for p in folder.iterdir())
    assert main([*argv, "--no-plots"] if argv[0] in ("report", "sweep") else argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert __import__("re").search(message, err[0]), err[0]
    assert sorted(p.name for p in folder.iterdir()) == before, "a refused command wrote something"


@pytest.mark.parametrize("argv", [
    ["point", "--preset", "h100-sxm", "--gemm", "2048,4096,1024", "--tp", "8"],
    ["report", "--models", "gpt-3", "--tp", "32", "--no-plots"],
    ["sweep", "--models", "gpt-3", "--tp", "32", "--workers", "1", "--no-plots"],
])
def test_what_does_not_conflict_still_runs(folder, capsys, argv):
    assert main([*argv, *(["--out", "out"] if argv[0] != "point" else [])]) == 0, capsys.readouterr().err


def test_without_out_a_run_writes_a_folder_named_after_the_tool(folder, capsys):
    """A bare run writes ./t3-model-results/, not a sim_results/ that looks like the repository's."""
    assert main(["report", "--models", "gpt-3", "--tp", "32", "--no-plots"]) == 0, capsys.readouterr().err
    assert (folder / "t3-model-results" / "report_t3-paper_gpt-3_tp32.csv").is_file()
    assert not (folder / "sim_results").exists()


@pytest.mark.parametrize(("argv", "missing", "extra"), [
    (["sweep", "--workers", "2", "--models", "gpt-3"], "dask.distributed", "[sweep]"),
    (["report", "--format", "parquet"], "pyarrow", "[parquet]"),
])
def test_an_option_needing_an_extra_says_which(folder, capsys, monkeypatch, argv, missing, extra):
    import system_model.cli as cli

    monkeypatch.setattr(cli, "_has", lambda module: module != missing)
    assert main(argv) == 2
    assert extra in capsys.readouterr().err
    assert not (folder / "t3-model-results").exists()


def test_the_console_script_finds_the_repository_for_crosscheck(tmp_path):
    """`t3-model crosscheck` (the console script, whose sys.path has no repository) reaches the
    RTL scenarios of the clone it is installed from (it once said they were missing)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).with_name("t3-model")
    if not script.exists():
        script = Path(shutil.which("t3-model") or "t3-model")
    done = subprocess.run([str(script), "crosscheck", "--only", "bogus"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 2 and "--only must be one of" in done.stderr, done.stderr
