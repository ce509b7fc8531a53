"""The compiled slice model stepped against :class:`tb.slice.model.SliceModel` on random inputs.

Why: the recorded traces are legal, well-behaved runs, so corners of the model they rarely
reach (a zero threshold, a re-arm, an update of an unarmed tile, arm and update of one tile
in one cycle, tracked writes during the reset sweep, a saturated starvation counter, DMA
addresses wrapping, bad and unprogrammed descriptors, unknown words forwarded and added,
resets anywhere) would let a translation error through. Here both models take the same
random inputs, the sources keeping the stream rule (an offer not taken is offered again),
and every output is compared in every cycle. ``tests/test_fast_replay.py`` runs it.
"""

from __future__ import annotations

import random

import numpy as np

from tb.fp_add.golden import random_bits
from tb.slice.model import SliceInputs, SliceModel
from tb.trace.ranges import draw as draw_in_range

from . import FORMATS, STATUS_FIELDS, check_lane_sums, library, pointer

__all__ = ["SMALL", "differential_run"]

#: Small sizes, so that queues fill, tables run out, counters saturate and addresses wrap.
SMALL = {"format": "binary16", "lanes": 4, "depth": 32, "entries": 8, "trigger_depth": 4, "commands": 4,
         "max_beats": 4, "queue_depth": 2, "addr_width": 5, "tile_beats_log2": 1, "compute_queue_depth": 2,
         "wait_width": 4, "adder_latency": 5, "read_latency": 7}

OUTPUTS = ("gemm_ready", "gemm_read_ready", "read_valid", "read_known", "read_data", "remote_ready", "ingress_ready",
           "egress_valid", "egress.port", "egress.addr", "egress.op", "egress.last", "egress.known", "egress.data",
           "arm_ready", "program_ready", "notify_valid", "notify_tile", "request_valid", "request_addr",
           "request_write", *STATUS_FIELDS)


def _params(p: dict) -> np.ndarray:
    width = 64 // p["lanes"]
    return np.array([FORMATS[p["format"]], p["lanes"], width, p["depth"], p["entries"], p["entries"],
                     p["trigger_depth"], p["commands"], p["commands"], p["max_beats"], p["queue_depth"],
                     p["addr_width"], p["tile_beats_log2"], p["compute_queue_depth"], p["wait_width"],
                     p["adder_latency"], p["read_latency"]], dtype=np.int32)


def _expected(out, status: dict) -> list[int]:
    """The Python model's outputs in OUTPUTS order (unknown data as 0, with its known flag)."""
    eg = out.egress or {}
    known = eg.get("data") is not None
    request = out.dram_request or {}
    flat = {**{f"{k}.{f}": v for k, fields in status.items() if isinstance(fields, dict) for f, v in fields.items()},
            **{k: v for k, v in status.items() if not isinstance(v, dict)}}
    valid = out.egress_valid
    return [out.gemm_ready, out.gemm_read_ready, out.gemm_read_data_valid, int(out.gemm_read_data is not None),
            out.gemm_read_data, out.gemm_remote_ready, out.ingress_ready, valid,
            eg.get("dst_port") if valid else None, eg.get("dst_addr") if valid else None,
            eg.get("op") if valid else None, eg.get("last") if valid else None, int(known) if valid else None,
            eg["data"] if valid and known else None, out.arm_ready, out.program_ready, out.notify_valid,
            out.notify_tile if out.notify_valid else None, int(out.dram_request is not None),
            request.get("addr") if request else None, request.get("write") if request else None,
            *(flat[name] for name in STATUS_FIELDS)]


class _Source:
    """One input stream: an offer not taken is offered again, unchanged."""

    def __init__(self, rate: float):
        self.rate, self.offer = rate, None

    def next(self, rng: random.Random, draw):
        if self.offer is None and rng.random() < self.rate:
            self.offer = draw()
        return self.offer

    def taken(self, ready: int) -> None:
        if ready:
            self.offer = None


def differential_run(seed: int, cycles: int, params: dict | None = None) -> dict:
    """Step both models ``cycles`` cycles; raise AssertionError at the first difference.
    Returns counts of the corners met (so a test can see they were)."""
    p = dict(SMALL if params is None else params)
    lib = library()
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    lanes, width = p["lanes"], 64 // p["lanes"]
    python = SliceModel(**p)
    handle = lib.fr_slice_new(pointer(_params(p)))
    words = (1 << p["addr_width"]) - 1
    tiles = p["entries"] - 1

    def beat() -> int:
        bits = random_bits(gen, p["format"], lanes) if rng.random() < 0.3 else gen.integers(0, 1 << 10, lanes)
        return sum(int(b) << (width * k) for k, b in enumerate(bits))

    def packet(unknown: float = 0.0) -> dict:
        return {"dst_port": rng.randrange(4), "dst_addr": rng.randint(0, words), "op": rng.randrange(2),
                "last": rng.randrange(2), "data": None if rng.random() < unknown else beat()}

    sources = {name: _Source(rate) for name, rate in
               (("gemm", 0.5), ("gemm_read", 0.3), ("gemm_remote", 0.1), ("ingress", 0.3), ("arm", 0.2),
                ("program", 0.1))}
    draws = {
        "gemm": lambda: {"tile": rng.randint(0, tiles), "addr": rng.randint(0, words), "op": rng.randrange(2),
                         "tracked": int(rng.random() < 0.7), "data": beat()},
        "gemm_read": lambda: rng.randint(0, words),
        "gemm_remote": lambda: packet(),
        "ingress": lambda: packet(unknown=0.05),
        "arm": lambda: {"tile": rng.randint(0, tiles), "threshold": rng.choice((0, 1, 2, 3, 5, 255)),
                        "dma_cmd": rng.randrange(p["commands"])},
        "program": lambda: {"index": rng.randrange(p["commands"]),
                            "desc": {"src_addr": draw_in_range(rng, 0, words), "dst_addr": rng.randint(0, words),
                                     "beats": rng.randint(0, p["max_beats"] + 1), "dst_port": rng.randrange(4),
                                     "op": rng.randrange(2)}},
    }
    met = dict.fromkeys(("notify", "forwarded unknown", "zero threshold flagged", "rearm flagged",
                         "unarmed update flagged", "bad descriptor flagged", "unprogrammed flagged", "wait saturated",
                         "tracked write held by the sweep", "DMA addresses wrap", "reset"), 0)
    inp = np.zeros(37, dtype=np.int64)
    got = np.zeros(len(OUTPUTS), dtype=np.int64)
    mode, threshold, limit = 0, 0, 0
    try:
        for c in range(cycles):
            if rng.random() < 1 / 3000 or c == cycles // 2:     # a reset anywhere, and at least one
                python.reset()
                lib.fr_slice_reset(handle)
                met["reset"] += 1
                for s in sources.values():
                    s.offer = None
            if c % 500 == 0:
                mode, threshold, limit = rng.randrange(2), rng.randint(0, 31), rng.choice((0, 1, 3, 15))
            offers = {name: s.next(rng, draws[name]) for name, s in sources.items()}
            x = SliceInputs(gemm=offers["gemm"], gemm_read=offers["gemm_read"], gemm_remote=offers["gemm_remote"],
                            ingress=offers["ingress"], arm=offers["arm"], program=offers["program"],
                            egress_ready=int(rng.random() < 0.7), threshold=threshold, starvation_limit=limit,
                            mode=mode, dram_ready=int(rng.random() < 0.8))
            _pack(inp, x)
            out = python.cycle(x)
            lib.fr_slice_cycle(handle, pointer(inp), pointer(got))
            want = _expected(out, out.status)
            if out.egress_valid:
                assert None not in want[8:12], f"an egress field of the Python model went missing: {out.egress}"
            for k, (name, w) in enumerate(zip(OUTPUTS, want, strict=True)):
                if w is None:       # not meaningful in this cycle (or a word the model does not know)
                    continue
                g = int(got[k]) & ((1 << 64) - 1)
                if g != w and not (name in ("read_data", "egress.data") and _same_lanes(p, g, w)):
                    raise AssertionError(f"compiled slice model, seed {seed}, cycle {c}: {name}: Python {w}, "
                                         f"C++ {g}")
            for name, s in sources.items():
                s.taken({"gemm": out.gemm_ready, "gemm_read": out.gemm_read_ready,
                         "gemm_remote": out.gemm_remote_ready, "ingress": out.ingress_ready, "arm": out.arm_ready,
                         "program": out.program_ready}[name])
            st = out.status
            met["notify"] += out.notify_valid
            met["forwarded unknown"] += bool(out.egress_valid and out.egress["data"] is None)
            met["zero threshold flagged"] = max(met["zero threshold flagged"], st["tracker"]["err_zero_threshold"])
            met["rearm flagged"] = max(met["rearm flagged"], st["tracker"]["err_rearm"])
            met["unarmed update flagged"] = max(met["unarmed update flagged"], st["tracker"]["err_unarmed_update"])
            met["bad descriptor flagged"] = max(met["bad descriptor flagged"], st["table"]["err_bad_descriptor"])
            met["unprogrammed flagged"] = max(met["unprogrammed flagged"], st["table"]["err_unprogrammed"])
            held = python.held
            met["tracked write held by the sweep"] += bool(
                held is not None and held[1]["kind"] != "read" and held[1]["tracked"] and st["tracker"]["clearing"])
            active = python.engine.active
            met["DMA addresses wrap"] += bool(active and active["src"] + active["left"] > words + 1)
            met["wait saturated"] += st["arbiter"]["comm_wait"] == (1 << p["wait_width"]) - 1
        sums = np.zeros(3 * lib.fr_slice_sums(handle, None), dtype=np.uint64)
        lib.fr_slice_sums(handle, pointer(sums))
        met["lane sums held to numpy"] = check_lane_sums(p["format"], _Fail(seed), sums)
    finally:
        lib.fr_slice_free(handle)
    return met


def _same_lanes(p: dict, got: int, want: int) -> bool:
    from tb.slice.trace import same_lanes
    return same_lanes(p["format"], p["lanes"], 64, got, want)


class _Fail:
    def __init__(self, seed: int):
        self.seed = seed

    def fail(self, cycle, field, expected, got, explain=""):
        raise AssertionError(f"seed {self.seed}: {field}: numpy {expected:#x}, C++ {got:#x} ({explain})")


def _pack(a: np.ndarray, x: SliceInputs) -> None:
    a[:] = 0
    if x.gemm is not None:
        g = x.gemm
        a[0:6] = (1, g["op"], g["tracked"], g["tile"], g["addr"], _signed(g["data"]))
    if x.gemm_read is not None:
        a[6:8] = (1, x.gemm_read)
    if x.gemm_remote is not None:
        r = x.gemm_remote
        a[8:14] = (1, r["dst_port"], r["dst_addr"], r["op"], r["last"], _signed(r["data"]))
    if x.ingress is not None:
        i = x.ingress
        known = i["data"] is not None
        a[14:21] = (1, i["dst_port"], i["dst_addr"], i["op"], i["last"], _signed(i["data"] or 0), int(known))
    if x.arm is not None:
        a[21:25] = (1, x.arm["tile"], x.arm["threshold"], x.arm["dma_cmd"])
    if x.program is not None:
        d = x.program["desc"]
        a[25:32] = (1, x.program["index"], d["src_addr"], d["dst_addr"], d["beats"], d["dst_port"], d["op"])
    a[32:37] = (x.egress_ready, x.threshold, x.starvation_limit, x.mode, x.dram_ready)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value
