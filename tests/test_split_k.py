"""Split K: a library that cuts a skinny GEMM's K over idle CUs (``GemmKernelConfig.split_k``,
``max_split_k``), its traffic and timing by hand, and why every preset leaves it off."""

from __future__ import annotations

import math
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from system_model.describe.files import DescriptionError, dump_hardware, parse_hardware
from system_model.describe.kernels import GemmKernelConfig
from system_model.describe.models import GemmShape
from system_model.describe.presets import PLATFORMS
from system_model.kernels.gemm import (
    PARTIAL_SUM_BYTES,
    choose_kernel,
    gemm_alone_s,
    gemm_timing,
    split_variants,
    wave_traffic,
)
from system_model.studies.validation import validate

SPLITTING = GemmKernelConfig(max_split_k=16)


def test_every_preset_library_is_unsplit():
    for name, p in PLATFORMS.items():
        assert all(k.max_split_k == 1 and k.split_k == 1 for k in p.kernels), name
        shape = GemmShape(1, 8192, 3584)
        assert split_variants(shape, p.kernels[0], p.gpu.cus) == (p.kernels[0],), name


def test_variants_only_where_the_tiles_underfill_the_gpu():
    k = SPLITTING
    # 2 x 8 = 16 tiles on 64 CUs: 1, 2, 4, 8 and 16 parts.
    assert [v.split_k for v in split_variants(GemmShape(256, 1024, 4096), k, 64)] == [1, 2, 4, 8, 16]
    # 64 tiles on 64 CUs: none; and for a bound, every split whatever the tiles.
    assert split_variants(GemmShape(1024, 2048, 4096), k, 64) == (k,)
    assert len(split_variants(GemmShape(1024, 2048, 4096), k, 64, underfilled_only=False)) == 5
    # At most max_split_k parts, and at least one element of K a part.
    assert [v.split_k for v in split_variants(GemmShape(256, 1024, 4096), replace(k, max_split_k=4), 64)] == [1, 2, 4]
    assert [v.split_k for v in split_variants(GemmShape(256, 1024, 5), k, 64)] == [1, 2, 4]
    # A kernel that is a split already is not split again.
    assert split_variants(GemmShape(256, 1024, 4096), replace(k, split_k=2), 64) == (replace(k, split_k=2),)


@pytest.mark.parametrize("split", [2, 4, 16])
def test_split_traffic_and_timing_by_hand(split):
    # 256 x 1024 x 4096 in 128 x 128 tiles: 2 x 8 tiles; an L2 that holds everything, so each
    # operand byte is read from DRAM exactly once, split or not.
    shape = GemmShape(256, 1024, 4096)
    unsplit, kernel = GemmKernelConfig(), GemmKernelConfig(split_k=split)
    reads1, items1, stages1, bytes1, ws1, _ = wave_traffic(shape, unsplit, cus=1000, l2_bytes=1e12,
                                                        stores_cached=True, stages=1)
    reads, items, stages, out, ws, _ = wave_traffic(shape, kernel, cus=1000, l2_bytes=1e12, stores_cached=True,
                                                 stages=1)
    compulsory = (2 * 128 * 4096 + 8 * 128 * 4096) * 2           # two A panels and eight B panels
    assert sum(reads1) == sum(reads) == compulsory
    assert items1 == (16,) and items == (16 * split,) and stages == (16 * split,)
    assert out == bytes1 == (256 * 1024 * 2,)
    # Parts but the last write a partial fp32 tile; the last reads them back.
    assert sum(ws1) == 0
    assert sum(ws) == 2 * (split - 1) * 256 * 1024 * PARTIAL_SUM_BYTES
    gpu = PLATFORMS["mi300x"].gpu
    g1, g = gemm_timing(shape, gpu, unsplit, stages=1), gemm_timing(shape, gpu, kernel, stages=1)
    assert g.tile_compute_s == pytest.approx(g1.tile_compute_s / split)
    assert g.k_steps_per_tile == math.ceil(4096 / split / kernel.k_tile)
    assert g.dram_read_bytes == pytest.approx(compulsory + sum(ws) / 2)      # (the L2 holds both operands)
    assert g.dram_write_bytes == pytest.approx(256 * 1024 * 2 + sum(ws) / 2)
    # The GEMM alone moves all of it through the DRAM (at split 16 the workspace dominates).
    assert gemm_alone_s(g, gpu) >= (compulsory + sum(ws) + 256 * 1024 * 2) / gpu.dram_bytes_per_s * (1 - 1e-12)


def test_a_splitting_library_splits_a_decode_gemm_and_stays_above_its_weight_reads():
    # MI300X, Llama 3 70B FC-2 at TP 8, one token: 64 tiles of 304 CUs.
    p = PLATFORMS["mi300x"]
    shape = GemmShape(1, 8192, 3584)
    unsplit_k = choose_kernel(shape, p.gpu, p.kernels)
    kernels = tuple(replace(k, max_split_k=16) for k in p.kernels)
    chosen = choose_kernel(shape, p.gpu, kernels)
    assert unsplit_k.split_k == 1 and chosen.split_k > 1
    split_s = gemm_alone_s(gemm_timing(shape, p.gpu, chosen, stages=1), p.gpu)
    unsplit_s = gemm_alone_s(gemm_timing(shape, p.gpu, unsplit_k, stages=1), p.gpu)
    weights_s = 8192 * 3584 * 2 / p.gpu.dram_bytes_per_s
    assert weights_s <= split_s < unsplit_s / 2
    # A GEMM that fills the GPU is never split.
    big = GemmShape(8192, 8192, 3584)
    assert choose_kernel(big, p.gpu, kernels).split_k == 1


def test_max_split_k_in_a_hardware_file_and_by_name():
    data = PLATFORMS["mi300x"]
    split = data.with_changes(max_split_k=8)
    assert all(k.max_split_k == 8 for k in split.kernels) and split.gpu == data.gpu
    with pytest.raises(ValueError, match="max_split_k"):
        data.with_changes(max_split_k=0)
    with pytest.raises(ValueError, match="split_k"):
        GemmKernelConfig(split_k=65)
    with pytest.raises(ValueError, match="max_split_k"):
        GemmKernelConfig(max_split_k=17)
    # A hardware file carries it, and a bad value is refused naming the field.
    text = dump_hardware(split)
    assert "max_split_k = 8" in text
    assert parse_hardware(tomllib.loads(text)).kernels == split.kernels
    with pytest.raises(DescriptionError, match="max_split_k"):
        parse_hardware(tomllib.loads(text.replace("max_split_k = 8", "max_split_k = 0")))


def test_the_published_points_say_the_presets_do_not_split():
    """docs/model.md: with a library that splits K, every async-TP row misses and no row
    moves closer by more than 0.1 point; unsplit, the async-TP times are within the tolerance."""
    base = {r.name: r for r in validate()}
    split = {r.name: r for r in validate(max_split_k=16)}
    async_tp = [n for n in base if n.startswith("async-TP GEMM+RS") and n.endswith("async_tp")]
    assert len(async_tp) == 3
    assert all(base[n].within for n in async_tp)
    assert not any(split[n].within for n in async_tp)
    assert all(abs(split[n].error) >= abs(base[n].error) - 0.001 for n in base)
    assert sum(abs(split[n].error) > abs(base[n].error) + 0.1 for n in base) >= 7


def test_the_what_if_cli_refuses_a_split_it_does_not_try():
    from system_model.studies.serving.split_k import main

    for bad in ("1", "17"):
        with pytest.raises(SystemExit) as exc:
            main(["--max-split-k", bad])
        assert exc.value.code == 2


def test_the_what_if_keeps_mi300x_serving_verdicts_and_speeds_its_decode_gemms():
    """docs/peers.md: with a library that splits K no serving verdict changes, and MI300X's
    decode GEMMs (Llama 3 70B, TP 8, 1 token) run in less than half the time, but no less
    than their weights take to read; the figures docs/peers.md quotes are these."""
    from system_model.studies.serving.split_k import verdict_changes
    from system_model.studies.validation import transport_error

    v = verdict_changes(transport_error(validate()), platforms=[PLATFORMS["mi300x"]])
    assert v["points"] > 0 and not v["changed"]
    assert sum(v["pairs"].values()) == v["points"]
    unsplit, split = v["gemm_us"][("mi300x", "llama-3-70b", 8, 1)]
    weights_us = (8192 * 1024 + 8192 * 3584) * 2 / PLATFORMS["mi300x"].gpu.dram_bytes_per_s * 1e6
    assert weights_us <= split < unsplit / 2
    text = " ".join((Path(__file__).parents[1] / "docs" / "peers.md").read_text().split())
    assert f"{unsplit:.1f} us on MI300X" in text and f"runs them in {split:.1f}," in text
