"""The low-latency tile's assumed speed as a what-if (``studies.serving.ll_tile``): it moves
only the points that run the tile, in the direction physics allows, and the command refuses
a value outside the peak."""

from __future__ import annotations

from dataclasses import replace

import pytest

from system_model.describe.config import PeerConfig
from system_model.describe.presets import PLATFORMS
from system_model.kernels.triton_gemm import LOW_LATENCY_M
from system_model.studies.serving import compare_verdicts, run_serving, serving_verdicts
from system_model.studies.serving.ll_tile import main

B200 = [PLATFORMS["b200"]]


def _points(efficiency=None):
    peer = PeerConfig() if efficiency is None else replace(PeerConfig(), ll_tile_compute_efficiency=efficiency)
    return run_serving(B200, ("llama-3-70b",), (8,), peer=peer)


def test_a_slower_tile_slows_only_the_low_latency_kernel():
    base, slow = _points(), _points(0.3)
    assert len(base) == len(slow) > 0
    for a, b in zip(base, slow, strict=True):
        assert (a.tokens, a.regime) == (b.tokens, b.regime)
        fused_a, fused_b = a.time_s("triton_dist_ar"), b.time_s("triton_dist_ar")
        if a.tokens <= LOW_LATENCY_M:
            assert fused_b >= fused_a * (1 - 1e-12)
        else:
            assert fused_b == pytest.approx(fused_a, rel=1e-12)
        for scheme in ("sequential", "t3_ring", "t3_direct", "flux"):
            assert b.time_s(scheme) == a.time_s(scheme), scheme
    assert any(b.time_s("triton_dist_ar") > a.time_s("triton_dist_ar") * 1.01 for a, b in zip(base, slow, strict=True))


def test_a_slower_tile_moves_verdicts_only_towards_t3_and_only_where_it_runs():
    """A slower low-latency tile can only slow the best software, so T3's ratio to it never
    falls, and a verdict moves only at a token count that runs the tile, away from software."""
    errors = {"gemm": 0.1, "nccl_ring": 0.3, "nccl_nvls": 0.35, "triton_dist_ar": 0.15, "multimem": 0.45,
              "custom": 0.6, "flux": 0.1, "async_tp": 0.2, "copy_engine": 0.1}
    base, slow = serving_verdicts(_points(), errors), serving_verdicts(_points(0.3), errors)
    order = {"software": 0, "within": 1, "T3": 2}
    for a, b in zip(base, slow, strict=True):
        assert b["t3_over_software"] >= a["t3_over_software"] * (1 - 1e-12)
        if a["verdict"] != b["verdict"]:
            assert a["tokens"] <= LOW_LATENCY_M and order[b["verdict"]] > order[a["verdict"]]
    assert compare_verdicts(base, slow)["largest_move"][0] > 0.01


@pytest.mark.parametrize("value", ["0", "1.5", "-0.2"])
def test_an_efficiency_outside_the_peak_is_refused(value, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--efficiency", value])
    assert e.value.code == 2
    assert "--efficiency must be 0.01..1.0" in capsys.readouterr().err


def test_the_field_is_checked():
    with pytest.raises(ValueError, match="ll_tile_compute_efficiency"):
        PeerConfig(ll_tile_compute_efficiency=1.2)
