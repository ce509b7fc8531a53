"""vLLM's custom all-reduce rule (``kernels.custom_allreduce.vllm_algorithm``) and the serving
what-if built on it (``studies.serving.vllm_rule``), with the figures docs/peers.md quotes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from system_model.describe.presets import PLATFORMS
from system_model.kernels.custom_allreduce import VLLM_MAX_BYTES, custom_all_reduce, vllm_algorithm
from system_model.studies.serving import vllm_rule as vr

KiB = 1024
DOCS = Path(__file__).resolve().parents[1] / "docs" / "peers.md"


@pytest.mark.parametrize(("nbytes", "n", "expected"), [
    # Two GPUs: one-shot at every size vLLM takes.
    (KiB, 2, "one_shot"), (VLLM_MAX_BYTES - 16, 2, "one_shot"),
    # Up to 4: one-shot strictly below 512 KiB.
    (512 * KiB - 2, 4, "one_shot"), (512 * KiB, 4, "two_shot"),
    # Up to 8 (6 included): one-shot strictly below 256 KiB.
    (256 * KiB - 2, 8, "one_shot"), (256 * KiB, 8, "two_shot"), (300 * KiB, 6, "two_shot"),
    (200 * KiB, 6, "one_shot"),
    # NCCL: 8 MiB or more, or a group size vLLM's kernel does not take.
    (VLLM_MAX_BYTES, 8, None), (VLLM_MAX_BYTES, 2, None), (KiB, 3, None), (KiB, 16, None),
])
def test_vllm_rule(nbytes, n, expected):
    assert vllm_algorithm(nbytes, n) == expected


def test_vllm_rule_rejects_bad_input():
    with pytest.raises(ValueError, match=r"^bytes must be greater than 0, not 0$"):
        vllm_algorithm(0, 4)
    with pytest.raises(ValueError, match=r"^n must be"):
        vllm_algorithm(KiB, 1)


def test_cases_hold_the_faster_and_vllms_pick():
    cases = vr.rule_cases()
    h100 = PLATFORMS["h100-sxm"]
    assert any(c.vllm is None for c in cases) and any(c.vllm and c.vllm != c.fastest for c in cases)
    assert any(c.platform == "mi210" for c in cases)
    for c in cases:
        if c.platform in vr.VLLM_CUSTOM_AR_OFF:
            assert c.vllm is None and c.vllm_s is None
            continue
        assert c.vllm == vllm_algorithm(c.bytes, c.tp)
        if c.vllm is None:
            assert c.vllm_s is None and c.bytes >= VLLM_MAX_BYTES
        elif c.vllm == c.fastest:
            assert c.slowdown == 1.0
        else:
            assert c.slowdown > 1.0
    # One case by hand: Llama 3 70B, TP 4, 32 tokens on H100 is a 512 KiB bf16 tensor.
    c = next(c for c in cases if (c.platform, c.model, c.tp, c.tokens) == ("h100-sxm", "llama-3-70b", 4, 32))
    assert c.bytes == 32 * 8192 * 2 == 512 * KiB and c.vllm == "two_shot"
    args = (c.bytes, 4, h100.fabric, h100.transport, h100.gpu.dram_latency_ns)
    assert c.fastest_s == min(custom_all_reduce(*args, algorithm=a).time_s for a in ("one_shot", "two_shot"))
    assert c.vllm_s == custom_all_reduce(*args, algorithm="two_shot").time_s


def test_docs_figures_are_the_studys():
    """The counts and the worst slowdown docs/peers.md quotes, recomputed."""
    s = vr.rule_summary(vr.rule_cases())
    text = " ".join(DOCS.read_text().split())
    quoted = re.search(r"Of the serving study's (\d+) all-reduces that a load-based library can run, vLLM hands "
                       r"(\d+) to NCCL or RCCL and runs (\d+); its rule picks the modelled faster algorithm in "
                       r"(\d+)\. "
                       r"Where it does not, its all-reduce is ([\d.]+)% to ([\d.]+)% slower", text)
    assert quoted, "docs/peers.md no longer quotes the vLLM rule's figures"
    assert [int(x) for x in quoted.groups()[:4]] == [s["cases"], s["nccl"], s["vllm"], s["agree"]]
    slow = sorted((c.slowdown - 1) * 100 for c in s["missed"])
    assert float(quoted.group(5)) == round(slow[0], 1) and float(quoted.group(6)) == round(slow[-1], 1)
    assert s["worst"].platform == "b200" and s["worst"].tp == 4


def test_vllms_choice_moves_no_serving_verdict_on_b200():
    """Where vLLM's rule costs the most (B200), every serving verdict stays (the full check
    over all platforms is the module's command, quoted in docs/peers.md)."""
    cases = [c for c in vr.rule_cases() if c.platform == "b200"]
    v = vr.verdict_changes(cases, platforms=[PLATFORMS["b200"]])
    assert v["changed"] == [] and v["points"] > 0
    assert all(a == b for a, b in v["pairs"])
