"""Design-space sweeps: axes, a 2-worker Dask LocalCluster bit for bit against one process,
an existing scheduler, resuming an interrupted sweep, and the output formats."""

from __future__ import annotations

import csv
import json

import pytest

from system_model.cli import main
from system_model.studies.sweep import parse_axis

# dask.distributed's scheduler, run inside this process by the in-process CLI calls, leaves
# listening sockets for the garbage collector when it closes; the warnings that raises at a
# later collection are its own, not this project's (every other warning stays an error).
pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

SMALL = ["--models", "t-nlg", "--tp", "8,16", "--axis", "link_bw_GBps_per_link=75:300:75",
         "--axis", "hbm_GBps=1000,2000"]



def _sweep_csv(folder):
    """The one sweep file a run wrote (named after the hardware, and the models and TPs chosen)."""
    found = sorted(folder.glob("sweep_*.csv"))
    assert len(found) == 1, found
    return found[0]

def _rows(path):
    with path.open() as f:
        return list(csv.reader(f))


def test_axes_lists_ranges_and_types():
    assert parse_axis("link_bw_GBps_per_link=100:400:100").values == (100.0, 200.0, 300.0, 400.0)
    assert parse_axis("hbm_GBps=1000,2000,4000").values == (1000.0, 2000.0, 4000.0)
    assert parse_axis("tp=4,8,16").values == (4, 8, 16)
    assert parse_axis("cus=64:128:32").values == (64, 96, 128)
    assert parse_axis("compute_efficiency=0.6:0.8:0.1").values == (0.6, 0.7, 0.8)
    # Transport fields are axes too (the library's channels and what each moves).
    assert parse_axis("channels=8:32:8").values == (8, 16, 24, 32)
    assert parse_axis("channel_GBps=6,12").values == (6.0, 12.0)


@pytest.mark.parametrize("text, message", [
    ("hbm=1000", "--axis hbm: not a sweepable field"),
    ("cus=64.5", "--axis cus: expected an integer, not '64.5'"),
    ("link_bw_GBps_per_link=100:50:10", "--axis link_bw_GBps_per_link: a range needs step > 0 and stop >= start"),
    ("link_bw_GBps_per_link=1:2", "--axis link_bw_GBps_per_link: a range is start:stop:step"),
    ("hbm_GBps=1000,1000", "--axis hbm_GBps: repeated values"),
    ("tp", "--axis must be NAME=VALUES"),
    ("model=gpt-5", "--axis model: model must be one of"),
    ("mc_reads_first=1", "--axis mc_reads_first: a true/false field is not swept"),
    ("library=rccl", "--axis library: a text field is not swept"),
    ("channels=0,8", "--axis channels=0: channels must be between 1 and 1024, not 0"),
    ("cus=inf", "--axis cus: expected a finite number, not 'inf'"),
    ("tp=0,8", "--axis tp: tp must be between 2 and 1024, not 0"),
    ("link_bw_GBps_per_link=1:1000000:1", "--axis link_bw_GBps_per_link: 1000000 values; at most 100000"),
    ("hbm_GBps=-5,1000", "--axis hbm_GBps=-5.0: hbm_GBps must be greater than 0, not -5.0"),
])
def test_bad_axes_are_one_line_and_exit_2(text, message, tmp_path, capsys):
    # Two workers: a bad value must be caught before any worker runs (one line, no worker traceback).
    assert main(["sweep", "--axis", text, "--workers", "2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {message}"), err


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    assert main(["sweep", *SMALL, "--workers", "1", "--out", str(out)]) == 0
    return _sweep_csv(out)


def test_one_process_sweep_has_every_configuration(one_process):
    rows = _rows(one_process)
    assert rows[0][:3] == ["task", "link_bw_GBps_per_link", "hbm_GBps"]
    assert len(rows) - 1 == 4 * 2 * 2 * 6    # links x HBMs x TPs x sublayers
    assert [int(r[0]) for r in rows[1:]] == sorted(int(r[0]) for r in rows[1:])


def test_two_dask_workers_match_one_process_bit_for_bit(one_process, tmp_path, capsys):
    assert main(["sweep", *SMALL, "--workers", "2", "--out", str(tmp_path)]) == 0
    assert (_sweep_csv(tmp_path)).read_bytes() == one_process.read_bytes()
    for ext in ("png", "svg"):      # the heat map over the two axes
        assert next(tmp_path.glob(f"sweep_t3-paper*_heatmap.{ext}")).stat().st_size > 5000
    err = capsys.readouterr().err
    assert "configurations" in err and "/s" in err and "ETA" in err


def test_an_existing_scheduler_runs_the_same_sweep(one_process, tmp_path):
    from dask.distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        assert main(["sweep", *SMALL, "--scheduler", cluster.scheduler_address, "--out", str(tmp_path)]) == 0
    assert (_sweep_csv(tmp_path)).read_bytes() == one_process.read_bytes()


def test_an_interrupted_sweep_resumes_without_redoing_finished_tasks(one_process, tmp_path, capsys):
    assert main(["sweep", *SMALL, "--workers", "1", "--out", str(tmp_path)]) == 0
    path = _sweep_csv(tmp_path)
    rows = _rows(path)
    per_task = 2 * 6
    # Interrupted: three tasks done, the fourth cut short.
    kept = rows[:1 + 3 * per_task + per_task // 2]
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(kept)
    capsys.readouterr()
    assert main(["sweep", *SMALL, "--workers", "1", "--resume", "--out", str(tmp_path)]) == 0
    assert f"{(8 - 3) * per_task} configurations in" in capsys.readouterr().out
    assert path.read_bytes() == one_process.read_bytes()


def test_resume_refuses_another_sweeps_results(tmp_path, capsys):
    assert main(["sweep", *SMALL, "--workers", "1", "--out", str(tmp_path)]) == 0
    other = [a if a != "hbm_GBps=1000,2000" else "hbm_GBps=1000,3000" for a in SMALL]
    assert main(["sweep", *other, "--workers", "1", "--resume", "--out", str(tmp_path)]) == 2
    assert "was written by another sweep" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_formats_hold_the_same_rows(fmt, one_process, tmp_path):
    assert main(["sweep", *SMALL, "--workers", "1", "--format", fmt, "--out", str(tmp_path)]) == 0
    expected = _rows(one_process)
    if fmt == "json":
        records = json.loads((tmp_path / "sweep_t3-paper_t-nlg_tp8-16.rows.json").read_text())
    else:
        import pyarrow.parquet as pq
        records = pq.read_table(tmp_path / "sweep_t3-paper_t-nlg_tp8-16.parquet").to_pylist()
    assert len(records) == len(expected) - 1
    assert list(records[0]) == expected[0]
    assert [str(r["model"]) for r in records] == [row[expected[0].index("model")] for row in expected[1:]]
    assert [f"{r['speedup_t3_mca']:.4f}" for r in records] == \
        [row[expected[0].index("speedup_t3_mca")] for row in expected[1:]]


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_report_and_peers_write_their_tables_in_the_format(fmt, tmp_path):
    assert main(["report", "--models", "t-nlg", "--tp", "8", "--phase", "prefill", "--no-plots", "--format", fmt,
                 "--out", str(tmp_path)]) == 0
    assert main(["peers", "--platforms", "h100-sxm", "--models", "llama-3-8b", "--tp", "8", "--phase", "prefill",
                 "--no-plots", "--no-validation", "--format", fmt, "--out", str(tmp_path)]) == 0
    for stem in ("report_t3-paper_t-nlg_tp8", "peers_h100-sxm_llama-3-8b_tp8"):
        with (tmp_path / f"{stem}.csv").open() as f:
            expected = list(csv.DictReader(f))
        if fmt == "json":
            records = json.loads((tmp_path / f"{stem}.rows.json").read_text())
        else:
            import pyarrow.parquet as pq
            records = pq.read_table(tmp_path / f"{stem}.parquet").to_pylist()
        assert len(records) == len(expected) and list(records[0]) == list(expected[0])
        assert [str(r["tp"]) for r in records] == [r["tp"] for r in expected]


def test_a_model_field_is_an_axis_too(tmp_path, capsys):
    base = ["--models", "llama-3-8b", "--tp", "8", "--phase", "prefill", "--no-plots"]
    assert main(["sweep", *base, "--axis", "link_bw_GBps_per_link=75", "--workers", "1",
                 "--out", str(tmp_path / "a")]) == 0
    assert main(["sweep", *base, "--axis", "hidden=4096,8192", "--axis", "link_bw_GBps_per_link=75", "--workers", "1",
                 "--out", str(tmp_path / "b")]) == 0
    assert main(["sweep", *base, "--axis", "hidden=4096,8192", "--axis", "link_bw_GBps_per_link=75", "--workers", "2",
                 "--out", str(tmp_path / "c")]) == 0
    plain, swept = _rows(_sweep_csv(tmp_path / "a")), _rows(_sweep_csv(tmp_path / "b"))
    at_4096 = [r[:1] + r[2:] for r in swept[1:] if r[1] == "4096"]
    assert at_4096 == plain[1:]                                      # the model's own width: the plain sweep
    at_8192 = [r[3:] for r in swept[1:] if r[1] == "8192"]
    assert at_8192 != [r[2:] for r in plain[1:]]                     # twice as wide: other speedups
    assert (_sweep_csv(tmp_path / "c")).read_bytes() == (_sweep_csv(tmp_path / "b")).read_bytes()
    assert main(["sweep", *base, "--axis", "hidden=4100", "--workers", "1", "--out", str(tmp_path)]) == 2
    assert "--axis hidden=4100: llama-3-8b: heads 32 must divide hidden 4100" in capsys.readouterr().err


def test_resume_drops_a_row_cut_short_and_blank_lines(one_process, tmp_path, capsys):
    assert main(["sweep", *SMALL, "--workers", "1", "--out", str(tmp_path)]) == 0
    path = _sweep_csv(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    per_task = 2 * 6
    # Three tasks and the fourth's rows but its last one cut in the middle, then a blank line.
    cut = "".join(lines[:1 + 4 * per_task - 1]) + lines[4 * per_task][:30] + "\n\n"
    path.write_text(cut)
    capsys.readouterr()
    assert main(["sweep", *SMALL, "--workers", "1", "--resume", "--out", str(tmp_path)]) == 0
    assert f"{(8 - 3) * per_task} configurations in" in capsys.readouterr().out
    assert path.read_bytes() == one_process.read_bytes()


def test_resume_refuses_the_same_name_with_other_values(tmp_path, capsys):
    from system_model.describe.files import dump_hardware
    from system_model.describe.presets import DESCRIPTIONS
    copy = tmp_path / "mine.toml"
    text = dump_hardware(DESCRIPTIONS["t3-paper"]).replace('name = "t3-paper"', 'name = "mine"')
    copy.write_text(text)
    args = ["sweep", *SMALL, "--workers", "1", "--hardware-file", str(copy), "--out", str(tmp_path)]
    assert main(args) == 0
    copy.write_text(text.replace("link_latency_ns = 500.0", "link_latency_ns = 5000.0"))
    assert main([*args, "--resume"]) == 2
    assert "was written by another sweep" in capsys.readouterr().err


def test_a_kernel_field_is_an_axis(tmp_path):
    assert main(["sweep", "--models", "t-nlg", "--tp", "8", "--phase", "prefill", "--axis",
                 "compute_efficiency=0.5,0.8", "--workers", "1", "--no-plots", "--out", str(tmp_path)]) == 0
    rows = _rows(_sweep_csv(tmp_path))
    t3 = rows[0].index("speedup_t3")
    by = {e: [r[t3] for r in rows[1:] if r[1] == e] for e in ("0.5", "0.8")}
    assert by["0.5"] != by["0.8"]           # a slower GEMM hides more of the collective


def test_a_transport_field_is_an_axis(tmp_path):
    # t3-paper: 16 channels of 6 GB/s (96 GB/s) feed a 75 GB/s ring direction; at 3 GB/s a
    # channel the library's collective is channel-bound (48 GB/s), so sequential slows down.
    assert main(["sweep", "--models", "t-nlg", "--tp", "8", "--phase", "prefill", "--axis",
                 "channel_GBps=3,6", "--workers", "1", "--no-plots", "--out", str(tmp_path)]) == 0
    rows = _rows(_sweep_csv(tmp_path))
    assert rows[0][1] == "channel_GBps"
    t3 = rows[0].index("speedup_t3_mca")
    by = {c: [float(r[t3]) for r in rows[1:] if r[1] == c] for c in ("3.0", "6.0")}
    assert len(by["3.0"]) == len(by["6.0"]) == 2
    assert all(slow > fast for slow, fast in zip(by["3.0"], by["6.0"], strict=True))   # more to hide


def test_t3_blocks_false_in_a_file_makes_t3_na_in_peers(tmp_path, capsys):
    from system_model.describe.files import dump_hardware
    from system_model.describe.presets import DESCRIPTIONS
    path = tmp_path / "bare.toml"
    path.write_text(dump_hardware(DESCRIPTIONS["mi300x"]).replace('name = "mi300x"', 'name = "bare"')
                    .replace("t3_blocks = true", "t3_blocks = false"))
    assert main(["peers", "--hardware-file", str(path), "--models", "llama-3-8b", "--tp", "8", "--phase", "prefill",
                 "--no-plots", "--no-validation", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "peers_bare_llama-3-8b_tp8.md").read_text()
    assert "bare, T3-MCA ring (TP 8): no tracker or near-memory reducer" in text
