"""The production-size ring run of ``make soak`` (tb/gemm_ring/production.py): its sizes
follow from the model's dimensions and the RTL's limits, and its command line refuses bad
input before any work. The run itself is ``make soak``'s (minutes a round)."""

from __future__ import annotations

import pytest

from tb.gemm_ring import production


def test_the_rounds_cover_the_sublayer_and_fit_the_rtl():
    from system_model.describe.models import MODELS, WorkloadConfig

    scenario = production.production_scenario()
    sysm, gemm = scenario.system, scenario.gemm
    params = sysm.ring_params(gemm.tiles_per_stage)
    m = MODELS[production.MODEL]
    out = WorkloadConfig().prefill_tokens * m.hidden * 2          # binary16, the whole hidden width per GPU
    assert production.output_bytes_per_gpu() == out
    rounds, per_round = production.rounds_needed(), production.round_bytes_per_gpu(scenario)
    assert (rounds - 1) * per_round < out <= rounds * per_round
    # Every tile of a round has a tracker entry; every forwarded tile its own descriptor.
    assert params["entries"] >= gemm.tiles(sysm.gpus)
    assert params["commands"] > (sysm.gpus - 1) * gemm.tiles_per_stage
    assert params["depth"] >= gemm.tiles(sysm.gpus) * sysm.tile_beats
    assert sysm.beat_width == 256 and 2 * sysm.tile_beats <= 255      # the tracker's 8-bit count


BAD = [["--rounds", "0"], ["--rounds", str(production.rounds_needed() + 1)], ["--jobs", "0"], ["--schedule", "fast"]]


@pytest.mark.parametrize("argv", BAD)
def test_bad_input_is_refused_before_any_work(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        production.main(argv)
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err
