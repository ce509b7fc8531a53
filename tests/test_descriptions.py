"""Hardware and model descriptions from TOML files: every preset round-trips, a preset
copied with `show-preset` reproduces its report, and bad files get one line naming the
file, the field and the bound, with exit status 2."""

from __future__ import annotations

import re

import pytest

from system_model.cli import main
from system_model.describe.files import DescriptionError, dump_hardware, dump_model, parse_hardware, read_hardware
from system_model.describe.models import MODELS, WorkloadConfig
from system_model.describe.presets import DESCRIPTIONS


@pytest.fixture(autouse=True)
def _restore_the_zoo():
    """A --model-file adds its model to the zoo for the process's life; keep other tests' zoo."""
    saved = dict(MODELS)
    yield
    MODELS.clear()
    MODELS.update(saved)


@pytest.mark.parametrize("name", list(DESCRIPTIONS))
def test_every_preset_round_trips(name, tmp_path):
    d = DESCRIPTIONS[name]
    path = tmp_path / f"{name}.toml"
    path.write_text(dump_hardware(d))
    back = read_hardware(path)
    assert back == d and back.sources == d.sources and back.system == d.system


def test_show_preset_then_hardware_file_reproduces_the_preset_report(tmp_path, capsys):
    assert main(["show-preset", "t3-paper"]) == 0
    text = capsys.readouterr().out
    copy = tmp_path / "copy.toml"
    copy.write_text(text)
    small = ["--models", "mega-gpt-2", "--tp", "8", "--phase", "prefill", "--no-plots"]
    assert main(["report", "--preset", "t3-paper", "--out", str(tmp_path / "a"), *small]) == 0
    assert main(["report", "--hardware-file", str(copy), "--out", str(tmp_path / "b"), *small]) == 0
    for name in ("report_t3-paper_mega-gpt-2_tp8.csv", "report_t3-paper_mega-gpt-2_tp8.md"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text(), name


def test_a_changed_copy_changes_the_result(tmp_path, capsys):
    main(["show-preset", "t3-paper"])
    text = capsys.readouterr().out.replace("link_bw_GBps_per_link = 150.0", "link_bw_GBps_per_link = 600.0")
    (tmp_path / "fast.toml").write_text(text.replace('name = "t3-paper"', 'name = "fast-links"'))
    small = ["--models", "mega-gpt-2", "--tp", "8", "--phase", "prefill", "--no-plots"]
    assert main(["report", "--hardware-file", str(tmp_path / "fast.toml"), "--out", str(tmp_path), *small]) == 0
    assert main(["report", "--preset", "t3-paper", "--out", str(tmp_path), *small]) == 0
    fast = (tmp_path / "report_fast-links_mega-gpt-2_tp8.csv").read_text()
    assert fast != (tmp_path / "report_t3-paper_mega-gpt-2_tp8.csv").read_text()


def _preset_text() -> str:
    """A user's copy of a preset, under its own name."""
    return dump_hardware(DESCRIPTIONS["h100-sxm"]).replace('name = "h100-sxm"', 'name = "my-gpu"', 1)


MODEL = """name = "my-llm"
hidden = 4096
ffn = 14336
activation = "swiglu"
heads = 32
kv_heads = 8
layers = 32

[workload]
seq_len = 4096
micro_batch = 2
"""

BAD_HARDWARE = [
    (lambda t: t.replace("cus = 132\n", ""), "my_gpu.toml: [gpu] is missing 'cus'"),
    (lambda t: t.replace("cus = 132", 'cus = "132"'), "my_gpu.toml: [gpu] cus must be an integer, not '132'"),
    (lambda t: t.replace("hbm_GBps = 3350", "hbm_GBps = -5"),
     "my_gpu.toml: [gpu] hbm_GBps must be greater than 0, not -5"),
    (lambda t: t.replace("cus = 132", "cus = 0"), "my_gpu.toml: [gpu] cus must be between 1 and 10000, not 0"),
    (lambda t: t.replace("hbm_GBps = 3350", "hbm_GBs = 3350"), "my_gpu.toml: [gpu] unknown key 'hbm_GBs'"),
    (lambda t: "vendor = 1\n" + t, "my_gpu.toml: unknown key 'vendor'"),
    (lambda t: t.replace('topology = "switch"', 'topology = "torus"'),
     "my_gpu.toml: [fabric] topology must be one of ring, fully_connected, switch, not 'torus'"),
    (lambda t: t.replace("[fabric]", "[fabricx]"), "my_gpu.toml: unknown key 'fabricx'"),
    (lambda t: t.replace("cus = 132", "cus = = 132"), "my_gpu.toml: not valid TOML"),
    (lambda t: t.replace("tile_m = 128", "tile_m = 0", 1),
     "my_gpu.toml: [[kernels]] #1 tile_m must be between 1 and 4096, not 0"),
    (lambda t: t.replace("link_bw_GBps_per_link = 50", "link_bw_GBps_per_link = true"),
     "my_gpu.toml: [fabric] link_bw_GBps_per_link must be a number, not True"),
    (lambda t: t.replace("hbm_efficiency = 0.85", "hbm_efficiency = 1.5"),
     "my_gpu.toml: [gpu] hbm_efficiency must be between 0.05 and 1.0, not 1.5"),
    # The [transport] table is required: what the links, engines and library reach.
    (lambda t: re.sub(r"\[transport\]\n.*?\n\n", "", t, flags=re.S), "my_gpu.toml: missing 'transport'"),
    (lambda t: t.replace('library = "nccl"', 'library = "mpi"'),
     "my_gpu.toml: [transport] library must be one of nccl, rccl, not 'mpi'"),
    (lambda t: t.replace("channels = 24", "channels = 0"),
     "my_gpu.toml: [transport] channels must be between 1 and 1024, not 0"),
    (lambda t: t.replace("channel_GBps = 15.0", "channel_GBps = \"fast\""),
     "my_gpu.toml: [transport] channel_GBps must be a number, not 'fast'"),
]


BAD_HARDWARE += [
    (lambda t: t.replace('name = "my-gpu"', 'name = "lab/gpu"'), "my_gpu.toml: name must be 1-64 letters"),
    (lambda t: t.replace('name = "my-gpu"', 'name = ""'), "my_gpu.toml: name must be 1-64 letters"),
    (lambda t: t.replace("clock_GHz = 1.83", "clock_GHz = 1e300"),
     "my_gpu.toml: [gpu] clock_GHz must be between 0.01 and 100, not 1e+300"),
    (lambda t: t.replace("mc_clock_GHz = 2.62", "mc_clock_GHz = 1e-300"),
     "my_gpu.toml: [gpu] mc_clock_GHz must be between 0.01 and 100, not 1e-300"),
    (lambda t: t.replace("link_bw_GBps_per_link = 50", "link_bw_GBps_per_link = 1e300"),
     "my_gpu.toml: [fabric] link_bw_GBps_per_link must be between 0.001 and 1000000.0, not 1e+300"),
    (lambda t: t.replace("l2_MB = 50", "l2_MB = nan"), "my_gpu.toml: [gpu] l2_MB must be a finite number, not nan"),
    (lambda t: t.replace("t3_blocks = true", 't3_blocks = "yes"'), "my_gpu.toml: t3_blocks must be true or false"),
    (lambda t: t.replace("[gpu]", "[[gpu]]"), "my_gpu.toml: gpu must be a table"),
    # A preset's name on a changed copy: two different platforms must not share a name.
    (lambda t: t.replace("hbm_GBps = 3350", "hbm_GBps = 4000").replace('name = "my-gpu"', 'name = "h100-sxm"'),
     "my_gpu.toml: name 'h100-sxm' is a preset's, but the file changes it"),
]


def test_a_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    path = tmp_path / "my_gpu.toml"
    path.write_bytes(b"\xff\xfe" + _preset_text().encode())
    assert main(["report", "--hardware-file", str(path), "--out", str(tmp_path), "--no-plots"]) == 2
    assert capsys.readouterr().err.strip() == "error: my_gpu.toml: not UTF-8 text"


def test_sources_with_any_key_round_trip(tmp_path):
    import dataclasses
    d = dataclasses.replace(DESCRIPTIONS["mi300x"], sources={"hbm_ü": "x", "a b": "y", "ok_key": "z"})
    path = tmp_path / "s.toml"
    path.write_text(dump_hardware(d))
    assert read_hardware(path).sources == d.sources


@pytest.mark.parametrize("edit, message", BAD_HARDWARE)
def test_bad_hardware_file_is_one_line_and_exit_2(edit, message, tmp_path, capsys):
    path = tmp_path / "my_gpu.toml"
    path.write_text(edit(_preset_text()))
    assert main(["report", "--hardware-file", str(path), "--out", str(tmp_path), "--no-plots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {message}"), err


BAD_MODEL = [
    (lambda t: t.replace('"swiglu"', '"relu"'), [], "m.toml: activation must be one of gelu, swiglu, not 'relu'"),
    (lambda t: t.replace("heads = 32", "heads = 30"), [], "m.toml: heads must divide hidden 4096, not 30"),
    (lambda t: t.replace("layers = 32\n", ""), [], "m.toml: missing 'layers'"),
    (lambda t: t.replace("seq_len = 4096", "seq_len = 0"), [], "m.toml: [workload] seq_len must be at least 1, not 0"),
    (lambda t: t.replace("hidden = 4096", "hidden = 4096.5"), [], "m.toml: hidden must be an integer, not 4096.5"),
    (lambda t: t.replace("kv_heads = 8", "kv_heads = 5"), [], "m.toml: kv_heads must divide heads 32, not 5"),
    (lambda t: t, ["--tp", "3"], "m.toml: heads 32 must be divisible by tp 3"),
    (lambda t: "dropout_p = 0.1\n" + t, [], "m.toml: unknown key 'dropout_p'"),
    (lambda t: t + "warmup = 3\n", [], "m.toml: [workload] unknown key 'warmup'"),
]


@pytest.mark.parametrize("edit, extra, message", BAD_MODEL)
def test_bad_model_file_is_one_line_and_exit_2(edit, extra, message, tmp_path, capsys):
    path = tmp_path / "m.toml"
    path.write_text(edit(MODEL))
    assert main(["report", "--model-file", str(path), "--out", str(tmp_path), "--no-plots", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {message}"), err


def test_a_model_file_runs_alone_with_its_workload(tmp_path, capsys):
    path = tmp_path / "m.toml"
    path.write_text(MODEL)
    assert main(["report", "--model-file", str(path), "--out", str(tmp_path), "--no-plots", "--phase", "prefill"]) == 0
    out = capsys.readouterr().out
    assert "my-llm" in out and "mega-gpt-2" not in out


def test_model_round_trip():
    m = MODELS["llama-3-70b"]
    import tomllib

    from system_model.describe.files import parse_model
    back = parse_model(tomllib.loads(dump_model(m, WorkloadConfig(8192, 2048))), "x.toml")
    assert (back.model.hidden, back.model.ffn, back.model.qkv_width, back.model.fc1_width) == \
        (m.hidden, m.ffn, m.qkv_width, m.fc1_width)
    assert back.workload == WorkloadConfig(8192, 2048)


@pytest.mark.parametrize("argv, message", [
    (["report", "--hardware-file", "/no/such/file.toml"], "error: /no/such/file.toml: no such file"),
    (["report", "--model-file", "/no/such/m.toml"], "error: /no/such/m.toml: no such file"),
    (["report", "--rtl-timing", "/no/such/file.json"], "error: --rtl-timing: no such file: /no/such/file.json"),
])
def test_every_named_file_must_exist(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[0].startswith(message)


def test_rtl_timing_without_figures_names_the_file(tmp_path, capsys):
    bad = tmp_path / "rtl_timing.json"
    bad.write_text('{"version": 1}')
    assert main(["report", "--rtl-timing", str(bad), "--out", str(tmp_path), "--no-plots"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {bad}: not an rtl_timing.json (no 'figures' table")


def test_parse_errors_are_description_errors():
    with pytest.raises(DescriptionError, match="x.toml: missing 'gpu'"):
        parse_hardware({"name": "x", "fabric": {}}, "x.toml")


def test_a_name_with_dots_names_every_output(tmp_path):
    path = tmp_path / "v.toml"
    path.write_text(_preset_text().replace('name = "my-gpu"', 'name = "my.gpu.v2"'))
    assert main(["report", "--hardware-file", str(path), "--models", "t-nlg", "--tp", "8", "--phase", "prefill",
                 "--format", "json", "--out", str(tmp_path)]) == 0
    for name in ("report_my.gpu.v2_t-nlg_tp8.csv", "report_my.gpu.v2_t-nlg_tp8.rows.json",
                 "speedup_my.gpu.v2_t-nlg_tp8.png", "speedup_my.gpu.v2_t-nlg_tp8.svg",
                 "traffic_my.gpu.v2_t-nlg_tp8.png"):
        assert (tmp_path / name).stat().st_size > 0, name
