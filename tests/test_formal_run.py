# amaranth: UnusedElaboratable=no
"""``make formal``'s runner: it reports induction where the step closes and falls back to
BMC where it does not, and the engine refuses bad arguments (fast subsets only; the full
run is ``make formal``)."""

from __future__ import annotations

import json

import pytest

from tb.formal import run
from tb.formal.engine import prove


def test_runner_reports_induction_and_bmc_fallback(tmp_path, capsys):
    assert run.main(["--only", "^(arbiter|reducer)$", "--bmc-depth", "8", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "formal.json").read_text())
    methods = {p["name"]: (p["method"], p["depth"], p["proven"]) for p in report["proofs"]}
    assert methods == {"arbiter": ("induction", 20, True), "reducer": ("bmc", 8, True)}
    assert report["proofs"][1]["broken"]["no_forwarding"]["refuted"]
    assert "by induction" in capsys.readouterr().out
    # Where the step fails the report names the assertion it broke, and what closing it needs.
    reducer = report["proofs"][1]
    assert "on 'a read returns the requests applied in order' (test_nmc_formal.py:" in reducer["note"]
    assert reducer["induction_gap"] == next(p.gap for p in run.PROOFS() if p.name == "reducer")


def test_a_failed_step_is_named_by_its_assertion(tmp_path):
    source = tmp_path / "harness.py"
    source.write_text('x = 1\n        m.d.comb += Assert(a | b, "the words agree")\n'
                      '        Assert(c, f"{name} waited {bound} cycles")\n'
                      '            Assert(~w | (a <= b), "the command\'s unsent beats are still owed"),\n'
                      '        m.d.comb += Assert(~(mine & last),\n')
    log = f"##   0:00:00  Temporal induction failed!\n##   0:00:00  Assert failed in top: {source}:2 ($197)\n"
    assert run.step_failure(log) == "'the words agree' (harness.py:2)"
    assert run.step_failure(log.replace(":2 ", ":3 ")) == "'{name} waited {bound} cycles' (harness.py:3)"
    assert run.step_failure(log.replace(":2 ", ":4 ")) == "'the command's unsent beats are still owed' (harness.py:4)"
    assert run.step_failure(log.replace(":2 ", ":5 ")) == "harness.py:5"          # the message on its own line
    assert run.step_failure("##   Status: FAILED\n") == ""
    assert run.step_failure(f"Assert failed in top: {tmp_path / 'gone.py'}:4 ($1)") == "gone.py:4"


def test_every_proof_has_a_broken_design_or_false_property():
    names = {p.name: p for p in run.PROOFS()}
    assert set(names) == {"arbiter", "arbiter-starvation", "tracker", "dma-path", "reducer", "slice-liveness"}
    for name in ("tracker", "dma-path", "reducer", "slice-liveness"):
        assert names[name].broken, name


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(mode="sat", depth=4), "mode must be one of 'bmc', 'induction', not 'sat'"),
    (dict(mode="bmc", depth=0), "depth must be between 1 and 200, not 0"),
])
def test_engine_validates_its_arguments(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        prove(None, [], tmp_path, **kwargs)


@pytest.mark.parametrize("flag", ["--bmc-depth", "--induction-depth"])
def test_runner_refuses_a_depth_out_of_range(flag, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        run.main(["--only", "^arbiter$", flag, "0", "--out", str(tmp_path)])
    assert stop.value.code == 2
    assert f"{flag} must be between 1 and 200, not 0" in capsys.readouterr().err
    assert not (tmp_path / "formal.json").exists()
