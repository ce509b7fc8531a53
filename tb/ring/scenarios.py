"""Parameter sets, scenarios and test cases of the ring bench (pure Python).

A parameter set is a ring (built once per pytest session); a scenario is one cocotb test.
The tracker's ``entries`` must cover ``gpus x tiles`` (tile ids are ``address >>
tile_beats_log2``) and the bank's ``depth`` ``gpus x tiles x beats``; each parameter set is
sized for the largest scenario run on it. ``power_up_seed`` is added by ``test_ring.py``
from the session's ``SEED``, so every run starts from different garbage in the banks.

``make test`` runs :data:`CASES`; ``make soak`` (``T3_SOAK=1``) also runs :data:`SOAK_CASES`.
"""

from __future__ import annotations

from dataclasses import dataclass

MCA, ROUND_ROBIN = 0, 1

_SLICE = {"beat_width": 64, "tile_beats_log2": 2, "max_beats": 16}
_SMALL = {"depth": 256, "entries": 64, "commands": 64}  # up to 4 tiles per chunk at N = 4

PARAM_SETS = {
    "n2": {"gpus": 2, **_SLICE, **_SMALL},
    # up to 64 tiles per chunk: 4 x 64 tile ids, 4 x 64 x 4 words, 2 x 64 descriptors
    "n4": {"gpus": 4, **_SLICE, "depth": 1024, "entries": 256, "commands": 256},
    # 16 descriptors: at 16 tiles per chunk the 32 forwarded tiles reuse them (tb.ring.protocol)
    "n4_bf16": {"gpus": 4, "format": "bfloat16", **_SLICE, "depth": 256, "entries": 64, "commands": 16},
    # up to 16 tiles per chunk: 8 x 16 tile ids, 8 x 16 x 4 words, 6 x 16 descriptors
    "n8": {"gpus": 8, **_SLICE, "depth": 512, "entries": 128, "commands": 128},
    # soak: up to 64 tiles per chunk: 8 x 64 tile ids, 8 x 64 x 4 words, 6 x 64 descriptors
    "n8_t64": {"gpus": 8, **_SLICE, "depth": 2048, "entries": 512, "commands": 512},
    # soak: 256 tiles per chunk
    "n4_t256": {"gpus": 4, **_SLICE, "depth": 4096, "entries": 1024, "commands": 1024},
    # 6 x 256 forwarded tiles > 1023 descriptors: the driver reuses them (tb.ring.protocol)
    "n8_t256": {"gpus": 8, **_SLICE, "depth": 8192, "entries": 2048, "commands": 1024},
    # Rings that are not powers of two, and the largest the ring allows: where a ring's
    # generalisation breaks (chunk order, the last hop, descriptor reuse). Up to 13 tiles
    # per chunk on 3, 5 and 6 GPUs; up to 4 on 16.
    "n3": {"gpus": 3, **_SLICE, **_SMALL},
    "n5": {"gpus": 5, **_SLICE, "depth": 512, "entries": 128, "commands": 64},
    "n6": {"gpus": 6, **_SLICE, "depth": 512, "entries": 128, "commands": 64},
    "n16": {"gpus": 16, **_SLICE, **_SMALL},
}


@dataclass(frozen=True)
class Scenario:
    """One reduce-scatter run (two, with ``reset_mid_run``)."""

    tiles: int = 4
    write_p: float = 1.0        # GEMM write rate (1.0: full rate; else random gaps)
    mode: int = MCA
    read_p: float = 0.0         # GEMM reads per cycle, interleaved with the reduce-scatter
    reset_mid_run: bool = False  # reset the ring halfway through, then a fresh run
    threshold: int = 4
    starvation_limit: int = 8


SCENARIOS = {
    # the original small runs (4 tiles per chunk)
    "reduce_scatter_full_rate": Scenario(),
    "reduce_scatter_random_gaps": Scenario(write_p=0.5),
    "reduce_scatter_round_robin": Scenario(write_p=0.8, mode=ROUND_ROBIN),
    "compute_reads_mca": Scenario(write_p=0.8, read_p=0.5),
    "compute_reads_round_robin": Scenario(write_p=0.8, mode=ROUND_ROBIN, read_p=0.5),
    # the deadlock reproduction of issue 11: 12 tiles per chunk at full rate (it hung in both modes)
    "tiles12_mca": Scenario(tiles=12),
    "tiles12_round_robin": Scenario(tiles=12, mode=ROUND_ROBIN),
    # the ring regressions: 16, 64 and 256 tiles per chunk, random gaps and GEMM reads
    "tiles16_mca": Scenario(tiles=16, write_p=0.7, read_p=0.3),
    "tiles16_round_robin": Scenario(tiles=16, write_p=0.7, mode=ROUND_ROBIN, read_p=0.3),
    "tiles64_mca": Scenario(tiles=64, write_p=0.7, read_p=0.3),
    "tiles64_round_robin": Scenario(tiles=64, write_p=0.7, mode=ROUND_ROBIN, read_p=0.3),
    "tiles256_mca": Scenario(tiles=256, write_p=0.7, read_p=0.3),
    "tiles256_round_robin": Scenario(tiles=256, write_p=0.7, mode=ROUND_ROBIN, read_p=0.3),
    # one tile per chunk, and a prime number of them
    "tiles1_mca": Scenario(tiles=1),
    "tiles1_round_robin": Scenario(tiles=1, write_p=0.7, mode=ROUND_ROBIN, read_p=0.3),
    "tiles13_mca": Scenario(tiles=13, write_p=0.8, read_p=0.3),
    "tiles13_round_robin": Scenario(tiles=13, write_p=0.8, mode=ROUND_ROBIN, read_p=0.3),
    # a reset in the middle of a reduce-scatter, then a complete fresh one
    "reset_mid_run_mca": Scenario(tiles=16, write_p=0.8, read_p=0.3, reset_mid_run=True),
    "reset_mid_run_round_robin": Scenario(tiles=16, write_p=0.8, mode=ROUND_ROBIN, read_p=0.3, reset_mid_run=True),
}

CASES = (
    [("n2", t) for t in ("reduce_scatter_full_rate", "reduce_scatter_random_gaps")]
    + [("n4", t) for t in ("tiles12_mca", "tiles12_round_robin", "tiles16_mca", "tiles16_round_robin",
                           "reset_mid_run_mca")]
    # 16 tiles per chunk on 4 GPUs: every tracker entry (64) and every bank word (256) in use,
    # and the 16 descriptors reused by the 32 forwarded tiles
    + [("n4_bf16", "tiles16_round_robin")]
    + [("n8", "tiles12_mca")]
    # On 16 GPUs one tile per chunk (15 hops, gaps and GEMM reads): Icarus simulates this
    # ring at a few tens of cycles a second, so its 4-tile runs are soak cases.
    + [("n3", "tiles1_mca"), ("n3", "tiles13_round_robin"), ("n5", "tiles1_round_robin"),
       ("n6", "tiles13_round_robin"), ("n16", "tiles1_round_robin")]
)

SOAK_CASES = (
    # the original 4-tile N = 4 runs: the 12-, 16- and 64-tile runs do what they do, and more
    [("n4", t) for t in ("reduce_scatter_full_rate", "reduce_scatter_random_gaps", "reduce_scatter_round_robin",
                         "compute_reads_mca", "compute_reads_round_robin")]
    # out of make test since the GEMM-driven ring runs there (tb/gemm_ring: 64 tiles per
    # GPU under T3, T3-MCA and the sequential schedule) and in make crosscheck (256 per GPU)
    + [("n4", t) for t in ("tiles64_mca", "tiles64_round_robin", "reset_mid_run_round_robin")]
    + [("n4_bf16", "reduce_scatter_random_gaps"), ("n8", "tiles12_round_robin"), ("n8", "reduce_scatter_random_gaps")]
    + [("n8", t) for t in ("tiles16_mca", "tiles16_round_robin")]
    + [("n8_t64", t) for t in ("tiles64_mca", "tiles64_round_robin")]
    + [("n4_t256", t) for t in ("tiles256_mca", "tiles256_round_robin")]
    + [("n8_t256", t) for t in ("tiles256_mca", "tiles256_round_robin")]
    + [("n5", "tiles13_mca"), ("n16", "tiles1_mca"), ("n16", "reduce_scatter_random_gaps")]
)
