"""Names and parameter sets of the near-memory reducer bench (pure Python)."""

from __future__ import annotations

from tb.common.patterns import SOURCE_PATTERNS

# Narrow beats carry the bulk of the request count: Icarus time grows with the number of
# lane adders, and a lane is a lane. The paper's 256-bit beat (16 x binary16) runs too.
PARAM_SETS = {
    "fp16x4": {"format": "binary16", "beat_width": 64, "depth": 256},
    "bf16x4": {"format": "bfloat16", "beat_width": 64, "depth": 256},
    "fp32x2": {"format": "binary32", "beat_width": 64, "depth": 256},
    "fp16x16": {"format": "binary16", "beat_width": 256, "depth": 64},
}

#: Requests per random test, by source pattern (the idle ones would otherwise be slow).
REQUESTS = {"full": 30_000, "gaps": 15_000, "idle": 3_000}

#: Address set (hot: 4 addresses, so read-after-write hazards at distance 1 and 2 are
#: frequent; wide: the whole bank) x request source pattern. The reducer never
#: back-pressures (request.ready is constant 1), so the matrix varies the sources only;
#: reads arrive at random on the read port throughout.
RANDOM_TESTS = [f"random__{addresses}__{src}" for addresses in ("hot", "wide") for src in SOURCE_PATTERNS]

DIRECTED_TESTS = [
    "back_to_back_updates_one_address",
    "write_visible_after_write_latency",
]

CASES = (
    [("fp16x4", t) for t in RANDOM_TESTS + DIRECTED_TESTS]
    + [(p, t) for p in ("bf16x4", "fp32x2") for t in ["random__hot__full", "random__wide__gaps", *DIRECTED_TESTS]]
    + [("fp16x16", t) for t in ["random__hot__full", "random__wide__gaps", "write_visible_after_write_latency"]]
)
