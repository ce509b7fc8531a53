"""Trace-driven lock-step run of the near-memory reducer: read-add-write under every hazard.

Stimulus: segments between mid-run resets, one source mode of the matrix each (the reducer
has no output stream to back-pressure; its read port is driven every cycle in ``always``
segments, at random in ``random`` ones, and rarely in ``heavy`` ones). Each segment first
stores (zeroes or sets) a small hot set of words, then sends updates mostly to that hot set,
so that a word is updated again at every distance from the previous request to it: refused
while the sum is still in the adder, then forwarded from the write-back or from one of the
two write-backs before it, or read from the bank the cycle after it landed. The lanes carry ordinary values and, now
and then, infinities, NaNs, zeros, subnormals and the largest finite value. The read port
reads hot words just written (read-after-write at each depth) and sometimes any word.

Replay: :class:`~tb.nmc.model.NearMemoryReducerModel` against ``request.ready``, ``status``
and every read's data (lane by lane; any NaN matches any NaN; a word the bank makes no
promise about, one never stored since power-up or whose write a reset cut, is not compared).
"""

from __future__ import annotations

import random

import numpy as np

from tb.fp_add.golden import NUMPY_TYPES, mismatches
from tb.nmc.model import SPEC_READ_LATENCY, UPDATE, NearMemoryReducerModel, beat_to_lanes
from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.ranges import FieldRange, cover_ranges, range_bins
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments

__all__ = ["ReducerTrace"]

READ_P = {"always": 1.0, "random": 0.5, "heavy": 0.08}


def lane_values(rng: np.random.Generator, fmt: str, n: int) -> np.ndarray:
    """``n`` lane bit patterns: mostly ordinary values, rarely specials or random patterns (an
    infinity or a NaN sticks in a word's sum until the next store, and NaN matches NaN, so
    they are kept rare enough that most compared lanes are finite)."""
    ftype, utype = NUMPY_TYPES[fmt]
    values = rng.normal(0, 4, size=n).astype(ftype).view(utype)
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, np.finfo(ftype).max, np.finfo(ftype).smallest_subnormal],
                        dtype=ftype).view(utype)
    pick = rng.random(n)
    values = np.where(pick < 0.001, specials[rng.integers(0, len(specials), n)], values)
    random_bits = rng.integers(0, np.iinfo(utype).max, size=n, dtype=np.uint64).astype(utype)
    return np.where((pick >= 0.001) & (pick < 0.005), random_bits, values)


class ReducerTrace(TraceBench):
    label = "reducer"
    block = "near_memory_reducer"
    bins = (
        "store", "update", "update refused by a hazard", "update forwarded from the write-back",
        "update forwarded from the previous write-back", "update forwarded from two write-backs before",
        "update reading the word just written",
        "read two cycles before the write-back lands", "read the cycle before the write-back lands",
        "read as the write-back lands",
        "read of a word with no promise", "read and request of one word in one cycle", "NaN lane read",
        "infinity lane read", "reset with a request in flight",
    )

    def __init__(self, params: dict | None = None):
        super().__init__(params or {"format": "binary16", "beat_width": 64, "depth": 64, "power_up_seed": 5})
        spec = self.component
        self.fmt = spec.format.name
        self.lanes = spec.lanes
        self.bins = self.bins + range_bins(self.ranges)

    @property
    def ranges(self) -> tuple[FieldRange, ...]:
        """A request's and a read's word address (any word of the bank) and the request's op."""
        top = self.component.depth - 1
        return (FieldRange("request.addr", 0, top), FieldRange("request.op", 0, 1), FieldRange("read.addr", 0, top))

    def stimulus(self, rng: random.Random, cycles: int):
        spec = self.component
        stim = Stimulus(cycles, ["request"])
        segments = plan_segments(stim, rng, mean_cycles=20_000, first_cycles=3_000)
        request = stim.sources["request"]
        packer = FastPacker(spec.request_layout)
        gen = np.random.default_rng(rng.getrandbits(63))
        read_en, read_addr = stim.control("read__en"), stim.control("read__addr")
        lanes = lane_values(gen, self.fmt, 2 * cycles * self.lanes + 64).reshape(-1, self.lanes)
        width = np.dtype(NUMPY_TYPES[self.fmt][1]).itemsize * 8
        beats = np.zeros(len(lanes), dtype=object)
        for k in range(self.lanes):
            beats = beats + (lanes[:, k].astype(np.uint64).astype(object) << (k * width))
        beats = beats.tolist()
        used = 0
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            hot = rng.sample(range(spec.depth), rng.randint(1, 6))
            for addr in hot:        # the driver sets its region first
                request.add(packer.pack({"addr": addr, "op": 0, "data": beats[used] if rng.random() < 0.5 else 0}),
                            gap=gap_draw(rng, seg.source_mode))
                used += 1
            spent = 0
            while spent < seg.length and used < len(beats):
                r = rng.random()
                addr = rng.choice(hot) if r < 0.9 else rng.randrange(spec.depth)
                op = UPDATE if r < 0.95 else 0      # a store restarts a word's sum (NaNs stick)
                gap = gap_draw(rng, seg.source_mode)
                request.add(packer.pack({"addr": addr, "op": op, "data": beats[used]}), gap=gap)
                used += 1
                spent += gap + 1
            p = READ_P[("always", "random", "heavy")[seg.index % 3]]
            n = seg.length
            read_en[seg.start:seg.end] = gen.random(n) < p
            hot_addr = np.array(hot, dtype=np.uint64)[gen.integers(0, len(hot), n)]
            any_addr = gen.integers(0, spec.depth, n).astype(np.uint64)
            read_addr[seg.start:seg.end] = np.where(gen.random(n) < 0.85, hot_addr, any_addr)
        return stim, []

    def replay(self, trace: Trace) -> dict:
        spec = self.component
        fmt, lanes = self.fmt, self.lanes
        utype = NUMPY_TYPES[fmt][1]
        status = FastPacker(spec.status_layout)
        req = FastPacker(spec.request_layout)
        col = trace.col
        rst = col("rst")
        rq_v, rq_p, rq_r = col("request__valid"), col("request__payload"), col("request__ready")
        rd_en, rd_addr, rd_data = col("read__en"), col("read__addr"), col("read__data")
        st = col("status")
        cover = trace.coverage.counts
        model = NearMemoryReducerModel(format=fmt, lanes=lanes, depth=spec.depth, adder_latency=spec.adder_latency)
        L, write_latency = spec.adder_latency, spec.write_latency
        forward_bins = {L: "update forwarded from the write-back",
                        L + 1: "update forwarded from the previous write-back",
                        L + 2: "update forwarded from two write-backs before",
                        L + 3: "update reading the word just written"}
        in_reset = True
        reads_in_flight: list[int | None] = [None] * SPEC_READ_LATENCY   # newest first
        checked = reads = 0
        last_request = {}  # addr -> cycle of its latest accepted request
        compared: list[int] = []
        ranges = self.ranges
        for c in range(trace.cycles):
            if rst[c]:
                if not in_reset and any(slot is not None for slot in model.pipeline):
                    cover["reset with a request in flight"] += 1
                in_reset = True
                continue
            if in_reset:
                model.reset()
                in_reset = False
                last_request.clear()
                reads_in_flight = [None] * SPEC_READ_LATENCY
            out = model.outputs()
            request = None
            ready = out.request_ready
            if rq_v[c]:
                r = req.unpack(rq_p[c])
                request = (r["addr"], r["op"], r["data"])
                ready = int(model.ready_for(r["addr"], r["op"]))
            trace.check(c, "request.ready", rq_r[c], ready)
            expected = status.pack(out.status)
            if st[c] != expected:
                trace.fail(c, "status", expected, st[c], status.diff(st[c], expected))
            checked += 1
            if out.read_issued:
                if out.read_data is None:
                    cover["read of a word with no promise"] += 1
                else:
                    got = rd_data[c]
                    reads += 1
                    compared.append(c)
                    if got != out.read_data:
                        g = beat_to_lanes(got, utype, lanes)
                        e = beat_to_lanes(out.read_data, utype, lanes)
                        bad = mismatches(fmt, g, e)
                        if len(bad):
                            trace.fail(c, f"read.data[{reads_in_flight[-1]}] lane {int(bad[0])}", int(e[bad[0]]),
                                       int(g[bad[0]]))
            if request is not None:
                addr = r["addr"]
                if not ready:
                    cover["update refused by a hazard"] += 1
                elif r["op"] == UPDATE:
                    cover["update"] += 1
                    bin_ = forward_bins.get(c - last_request.get(addr, -100))
                    if bin_:
                        cover[bin_] += 1
                else:
                    cover["store"] += 1
                if ready:
                    last_request[addr] = c
                    cover_ranges(cover, ranges, {"request.addr": addr, "request.op": r["op"]})
            read = rd_addr[c] if rd_en[c] else None
            if read is not None:
                cover_ranges(cover, ranges, {"read.addr": read})
                distance = c - last_request.get(read, -100)
                if distance == 0:
                    cover["read and request of one word in one cycle"] += 1
                elif distance == write_latency - 2:    # misses it (its data shows as it lands)
                    cover["read two cycles before the write-back lands"] += 1
                elif distance == write_latency - 1:    # sees it: the port's word came before it
                    cover["read the cycle before the write-back lands"] += 1
                elif distance == write_latency:
                    cover["read as the write-back lands"] += 1
            model.step(request=request, read_addr=read)
            reads_in_flight = [read, *reads_in_flight[:-1]]
        ftype = NUMPY_TYPES[fmt][0]
        size = spec.beat_width // 8
        words = b"".join(rd_data[c].to_bytes(size, "little") for c in compared)
        values = np.frombuffer(words, dtype=utype).view(ftype).astype(np.float64)
        cover["NaN lane read"] += int(np.count_nonzero(np.isnan(values)))
        cover["infinity lane read"] += int(np.count_nonzero(np.isinf(values)))
        finite = int(np.count_nonzero(np.isfinite(values)))
        if finite < 0.8 * len(values):
            raise AssertionError(f"reducer: only {finite} of {len(values)} compared lanes are finite; "
                                 f"the check is too weak\n  {trace.replay}")
        trace.checked_cycles = checked
        trace.stream_fields(("request.ready", "status"))
        trace.checks += reads
        return {"reads": reads, "updates": cover["update"]}
