"""What every column of the tables the commands write means, with its unit.

The docs' output reference is generated from here, and ``tests/test_columns.py`` holds it
to the committed tables: a column written but not described here fails the test.
"""

from __future__ import annotations

__all__ = ["COLUMNS", "PATTERNS", "describe"]

_POINT = {
    "model": "the Transformer model (`t3-model report --help` lists them; `--model-file` adds one)",
    "tp": "tensor-parallel degree: GPUs sharing the layer, and the ring's length",
    "phase": "training (the forward and backward sublayers) or prefill (the forward ones)",
    "sublayer": "OP and FC-2 (forward: their GEMM's output is all-reduced), FC-1 and IP (backward: the "
                "gradient's)",
}

COLUMNS: dict[str, dict[str, str]] = {
    "report_<preset>.csv": {
        **_POINT,
        "gemm_m": "M of the GEMM each GPU runs (C is M x N, the all-reduced tensor)",
        "gemm_n": "N of the GEMM each GPU runs",
        "gemm_k": "K of the GEMM each GPU runs (the reduced dimension, split across the TP group)",
        "scheme": "the schedule: sequential, the two ideals, ideal RS+NMC, T3, T3-MCA, CU sharing",
        "time_us": "the sublayer's time, GEMM and all-reduce, microseconds",
        "gemm_us": "when the scheme's GEMM ended, microseconds",
        "speedup": "the sequential scheme's time over this one's (x; > 1 is faster)",
        "dram_MB": "the GPU's DRAM bytes in the sublayer, all streams, megabytes (1e6 bytes)",
        "dram_cut": "1 - dram_MB / the sequential scheme's dram_MB (a fraction; negative: more traffic)",
        "gemm_reads_MB": "DRAM reads of the GEMM's operands (after the L2), megabytes",
        "gemm_writes_MB": "DRAM writes of the GEMM's output, megabytes",
        "rs_reads_MB": "DRAM reads of the reduce-scatter (or of the whole all-reduce where it is not split), "
                       "megabytes",
        "rs_writes_MB": "DRAM writes of the reduce-scatter (a near-memory update counts its bytes once), megabytes",
        "ag_reads_MB": "DRAM reads of the all-gather, megabytes",
        "ag_writes_MB": "DRAM writes of the all-gather, megabytes",
        "ag_MB": "ag_reads_MB + ag_writes_MB",
        "slowdown_gemm": "overlapped schemes: the GEMM's time in the scheme over the GEMM alone (x)",
        "slowdown_collective": "overlapped schemes: the collective's time in the scheme over the collective alone "
                               "(x)",
    },
    "peers.csv": {
        "platform": "the GPU platform (a preset, or a --hardware-file's name)",
        **{k: v for k, v in _POINT.items() if k != "model"},
        "model": "the Transformer model",
        "scheme": "the schedule: the paper's schemes and the peers (Flux, async-TP, FlashOverlap, DMA "
                  "collectives, DMA + NMC, NVLS)",
        "time_us": "the sublayer's time, microseconds (empty where the scheme cannot run here)",
        "gemm_us": "when the scheme's GEMM ended, microseconds",
        "speedup": "the sequential scheme's time over this one's (x)",
        "na_reason": "why the scheme cannot run here (empty where it can)",
    },
    "sweep_<hardware>.csv": {
        "task": "the hardware point's index in the product of the axes (a resumed sweep keeps finished tasks)",
        **_POINT,
        "dram_cut_t3_mca": "T3-MCA's DRAM cut over sequential (a fraction, as the report's dram_cut)",
    },
    "sensitivity_<preset>.csv": {
        "path": "the calibrated value moved (its path in the study configuration)",
        "base_value": "its value in the preset",
        "step": "the move, as a fraction of the base value (-0.25, +0.25)",
        "value": "the value the variant ran with",
        "skipped": "why a move was not run (a value its checks refuse), else empty",
    },
}

#: Columns named after something the run chose (an axis, a scheme, a set and a figure).
PATTERNS: dict[str, dict[str, str]] = {
    "sweep_<hardware>.csv": {
        "<axis>": "one column per hardware axis swept (`--axis NAME=...`): the field's value at this point, in "
                  "the unit its name carries (the hardware-file reference)",
        "speedup_<scheme>": "that scheme's speedup over sequential at this point (x)",
    },
    "sensitivity_<preset>.csv": {
        "<set>_<figure>": "a headline figure of a set (headline, palm_mtnlg) with the moved value: "
                          "speedup_geomean, speedup_max (x), dram_cut_geomean, dram_cut_max (fractions)",
    },
}


def describe(table: str, column: str, *, axes: tuple[str, ...] = (), schemes: tuple[str, ...] = (),
             sets: tuple[str, ...] = ()) -> str | None:
    """The meaning of ``column`` in ``table`` (None: not described)."""
    if column in COLUMNS[table]:
        return COLUMNS[table][column]
    patterns = PATTERNS.get(table, {})
    if column in axes and "<axis>" in patterns:
        return patterns["<axis>"]
    if column.startswith("speedup_") and column[len("speedup_"):] in schemes and "speedup_<scheme>" in patterns:
        return patterns["speedup_<scheme>"]
    for s in sets:
        if column.startswith(f"{s}_") and "<set>_<figure>" in patterns:
            return patterns["<set>_<figure>"]
    return None
