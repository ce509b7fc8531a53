"""Every figure, rendered: nothing outside the canvas, no bar outside its axis, display names,
one colour per scheme, and ratios on scales symmetric around 1.0 (issue #26).

The commands draw their figures with ``T3_CHECK_FIGURES=1``, which makes ``save_figure``
refuse a figure with a layout problem (:func:`system_model.studies.figures.layout_problems`).
The cases include the small ones that once broke (one model: the traffic chart's title and
legend ran off the canvas) and the full studies' (bars far above 1: T3 at TP 32).
"""

from __future__ import annotations

import pytest

from system_model.cli import main
from system_model.schemes import SCHEME_LABELS, SCHEMES
from system_model.studies.figures import SCHEME_COLOURS, layout_problems, ratio_norm
from system_model.studies.plots import TRAFFIC_COLOURS


@pytest.fixture(autouse=True)
def check_figures(monkeypatch):
    monkeypatch.setenv("T3_CHECK_FIGURES", "1")


# The make targets' own figures (the whole study, the sweep, the peers, the sensitivity) are
# drawn under the same check by tests/test_committed_results.py; these are the small cases.
@pytest.mark.parametrize("argv", [
    ["report", "--models", "mega-gpt-2", "--tp", "8"],                     # one model: one panel
    ["report", "--models", "palm,gpt-3", "--tp", "32"],                    # T3's traffic well above 1
    ["sweep", "--models", "t-nlg", "--tp", "8", "--workers", "1"],
    ["peers", "--platforms", "h100-sxm,mi300x", "--models", "llama-3-8b", "--tp", "8,16", "--no-validation"],
], ids=lambda a: " ".join(a)[:50])
def test_every_figure_is_sound(argv, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path)]) == 0, capsys.readouterr().err
    pngs = list(tmp_path.glob("*.png"))
    assert pngs and all(p.stat().st_size > 5000 for p in pngs)
    assert all(p.with_suffix(".svg").is_file() for p in pngs)


def test_the_check_catches_what_it_should():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.bar([0], [2.0])
    ax.set_ylim(0, 1)
    fig.suptitle("a title far too long for a three-inch figure, which runs off both of its sides")
    problems = layout_problems(fig)
    plt.close(fig)
    assert any("outside the axis" in p for p in problems) and any("outside the canvas" in p for p in problems)


def test_one_colour_per_scheme_and_none_shared_with_traffic():
    assert set(SCHEMES) <= set(SCHEME_COLOURS) and set(SCHEMES) <= set(SCHEME_LABELS)
    assert len(set(SCHEME_COLOURS.values())) == len(SCHEME_COLOURS)
    assert not set(SCHEME_COLOURS.values()) & set(TRAFFIC_COLOURS.values())


def test_ratio_scales_are_symmetric_around_one():
    norm = ratio_norm([0.8, 1.3])
    assert norm(1.0) == pytest.approx(0.5) and norm.vmin * norm.vmax == pytest.approx(1.0)
    assert norm(1.2) + norm(1 / 1.2) == pytest.approx(1.0)          # 1.2x up as far as 1.2x down
