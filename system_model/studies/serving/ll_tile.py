"""What the low-latency tile's assumed speed moves: ``python -m system_model.studies.serving.ll_tile``.

Triton-distributed's fused GEMM + all-reduce runs a 32 x 64 tile at M <= 256 on NVIDIA
(:mod:`system_model.kernels.triton_gemm`). How fast that tile computes is not published, and
on Hopper and Blackwell the warpgroup matrix instructions take 64 rows or more, so it may run
well below the library kernels' efficiency that the model assumes
(``PeerConfig.ll_tile_compute_efficiency``, 0.8). This what-if re-judges the serving study
with that value moved (by default to 0.6 and 1.0, the sensitivity study's -/+25%) against the
same validated errors, and lists every verdict that moves. Nothing is written to
``sim_results/``; ``docs/peers.md`` quotes the figures with this command (about 20 s).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ...describe.config import PeerConfig
from ...describe.presets import DEFAULT_PLATFORMS, PLATFORMS
from ..validation import transport_error, validate
from . import compare_verdicts, run_serving, serving_verdicts, verdict_summary

__all__ = ["EFFICIENCIES", "verdict_changes", "ll_tile_markdown", "main"]

#: The values tried: the assumed 0.8 moved by -/+25% (the upper end is the peak's fraction 1.0).
EFFICIENCIES = (0.6, 1.0)


def _nvidia():
    return [PLATFORMS[n] for n in DEFAULT_PLATFORMS if PLATFORMS[n].transport.library != "rccl"]


def verdict_changes(efficiency: float, errors: dict[str, float], platforms=None) -> dict:
    """The serving verdicts on ``platforms`` (default: the NVIDIA ones, the only ones that run
    the tile) at the assumed efficiency and at ``efficiency``, judged against ``errors``."""
    platforms = _nvidia() if platforms is None else list(platforms)
    base = serving_verdicts(run_serving(platforms), errors)
    moved = serving_verdicts(run_serving(platforms, peer=replace(PeerConfig(), ll_tile_compute_efficiency=efficiency)),
                             errors)
    return compare_verdicts(base, moved)


def ll_tile_markdown(efficiencies=EFFICIENCIES) -> str:
    errors = transport_error(validate())
    assumed = PeerConfig().ll_tile_compute_efficiency
    lines = [f"# The low-latency tile's efficiency, {assumed:g} assumed, moved", ""]
    for eff in efficiencies:
        v = verdict_changes(eff, errors)
        lines += [f"## {eff:g} of the matrix-core peak", "",
                  *verdict_summary(v, points="NVIDIA points", software=True), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m system_model.studies.serving.ll_tile",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--efficiency", type=float, action="append",
                        help="a fraction of the matrix-core peak to try (repeatable; default 0.6 and 1.0)")
    args = parser.parse_args(argv)
    efficiencies = tuple(args.efficiency or EFFICIENCIES)
    for e in efficiencies:
        if not 0.01 <= e <= 1.0:
            parser.error(f"--efficiency must be 0.01..1.0, not {e:g}")
    print(ll_tile_markdown(efficiencies), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
