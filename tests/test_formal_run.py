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
