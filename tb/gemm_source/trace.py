"""Trace-driven lock-step run of the GEMM traffic source.

Stimulus: segments between mid-run resets, one cell of the idle / back-pressure matrix
each (the driver's ``store``, ``remote`` and ``host_read`` streams take the source mode;
the slice's ``gemm``, ``gemm_remote`` and ``gemm_read`` take the sink mode). Each segment
draws a GEMM: mostly a small one that finishes (1-40 tiles, 1-8 per wave, 1-6 k-steps of
1-5 cycles, a buffer of at least a wave, some stage-1 tiles), but in most segments one or
two setup fields are drawn over their whole documented range (:func:`field_ranges`), a
third of those at one of its ends; and each segment puts one field, in turn, at one of its
ends, or runs a k-step of 513 to 2,559 cycles, or a GEMM of just over the highest power of
two below the most reads a GEMM can ask for. One segment in five is invalid (a zero field
or a buffer smaller than a wave). Coverage bins prove both ends of every field were
configured, and the counters' upper bits ran: a tile's 33rd k-step, a k-step of more than
512 cycles to its end, a GEMM of that many reads past its 256th read. ``run`` rises a few
cycles into the segment. The read data comes back as random ``valid`` pulses (the source
only counts them). Store payloads are random, a tenth of them untracked (a zeroing write,
which needs no credit).

Replay: :class:`~tb.gemm_source.model.GemmSourceModel` computes every output of every
cycle out of reset from the recorded inputs: every ``valid`` and ``ready``, the pass-through
payloads, the read address, and ``status``. Beside it, spec-level checks from the ports
alone (a flaw the model and the RTL shared would not pass them): the GEMM's own reads go
to 0, 1, 2, ... and number at most ``tiles x read_beats_per_tile``; a read-back passes only
after as many read-data beats as own reads; tracked local and remote stores passed before
``done`` are at most the credits the GEMM can give (its local and stage-1 tiles' beats); no
store passes before ``run`` first rises, but untracked ones; ``done`` never falls.
"""

from __future__ import annotations

import random

import numpy as np

from tb.gemm_source.model import GemmSourceModel, SourceInputs
from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments, sink_ready

__all__ = ["GemmSourceTrace", "field_ranges"]

SOURCES = ("store", "remote", "host_read")
SINKS = ("gemm", "gemm_remote", "gemm_read")

#: A small GEMM's upper bound per field (one that finishes within a segment).
SMALL = {"tiles": 40, "remote_tiles": 43, "tiles_per_wave": 8, "read_beats_per_tile": 6, "step_cycles": 5,
         "outstanding_reads": 20}


def field_ranges(tiles_width: int) -> dict[str, tuple[int, int]]:
    """Every setup field's documented valid range (:class:`rtl.gemm_source.GemmTrafficSource`):
    the whole width of its field, less the values the docstring calls invalid (zero, and a
    buffer smaller than a wave: ``outstanding_reads``' lower end is the wave's size)."""
    top = (1 << tiles_width) - 1
    return {"tiles": (1, top), "remote_tiles": (0, top), "tiles_per_wave": (1, 127), "read_beats_per_tile": (1, 255),
            "step_cycles": (1, 4095), "outstanding_reads": (1, 1023)}


def _ends(field: str) -> tuple[str, str]:
    return f"{field} at its minimum", f"{field} at its maximum"


class GemmSourceTrace(TraceBench):
    label = "gemm_source"
    block = "gemm_source"
    cycles = 300_000
    bins = ("k-step started", "wave released", "operand wait", "store wait (output buffer full)",
            "read window full (outstanding)", "own read back-pressured", "read-back passed", "untracked store passed",
            "remote store passed on a credit", "local store passed on a credit", "store passed after done",
            "configuration error", "GEMM done", "reset mid-GEMM", "a tile's 33rd or later k-step started",
            "k-step of more than 512 cycles ended", "GEMM of more than the top power of two of reads, 256 read",
            *(end for field in SMALL for end in _ends(field)))

    def __init__(self, params: dict | None = None):
        super().__init__(params)
        self.source = self.component
        self.ranges = field_ranges(self.source.setup_layout["tiles"].shape.width)
        #: The highest power of two below the most reads a GEMM can ask for: a GEMM of more
        #: reads needs the read counters' top bit.
        most = self.ranges["tiles"][1] * self.ranges["read_beats_per_tile"][1]
        self.top_reads = 1 << (most.bit_length() - 1)

    def _draw_setup(self, rng: random.Random, end: tuple[str, int]) -> dict:
        """One segment's GEMM: small fields, but zero to two drawn over their whole range, and
        ``end`` = (field, 0 or 1) at its lower or upper end (``("step_cycles", 2)``: 513 to
        2,559 cycles, a k-step that needs the counter's upper bits and ends within a segment)."""
        wide = set(rng.sample(sorted(SMALL), rng.choice((0, 1, 1, 2, 2))))
        # ("reads", 1): a GEMM of just over top_reads reads in all (tiles x reads per tile).
        beats = rng.randint(self.ranges["read_beats_per_tile"][1] // 2 + 2, self.ranges["read_beats_per_tile"][1])
        reads_pair = {"read_beats_per_tile": beats, "tiles": -(-(self.top_reads + 1) // beats)}

        def draw(field: str, lo: int, hi: int) -> int:
            if field == end[0]:
                # side 2: a k-step that needs the counter's upper bits and still ends in a segment.
                return (lo, hi, rng.randint(hi // 8 + 2, hi * 5 // 8))[end[1]]
            if end[0] == "reads" and field in ("tiles", "read_beats_per_tile"):
                return reads_pair[field]
            if field not in wide:
                return rng.randint(lo, min(hi, lo + SMALL[field]) if field == "outstanding_reads"
                                   else min(hi, SMALL[field]))
            r = rng.random()
            return lo if r < 1 / 6 else hi if r < 1 / 3 else rng.randint(lo, hi)

        cfg = {f: draw(f, *self.ranges[f]) for f in ("tiles", "tiles_per_wave", "read_beats_per_tile", "step_cycles")}
        cfg["outstanding_reads"] = draw("outstanding_reads", cfg["tiles_per_wave"], self.ranges["outstanding_reads"][1])
        if "remote_tiles" in wide or end[0] == "remote_tiles":
            cfg["remote_tiles"] = draw("remote_tiles", *self.ranges["remote_tiles"])
        else:
            cfg["remote_tiles"] = rng.choice((0, rng.randint(0, cfg["tiles"] + 3)))
        return cfg

    def stimulus(self, rng: random.Random, cycles: int):
        stim = Stimulus(cycles, list(SOURCES))
        segments = plan_segments(stim, rng, mean_cycles=3_000, first_cycles=2_000)
        for sink in SINKS:
            sink_ready(stim, sink, segments, rng)
        gen = np.random.default_rng(rng.getrandbits(63))
        setup_p = FastPacker(self.source.setup_layout)
        gemm_p = FastPacker(self.source.gemm_layout)
        run, setup = stim.control("run"), stim.control("setup")
        rd_valid, rd_payload = stim.control("read_data__valid"), stim.control("read_data__payload")
        ends = [(field, side) for field in sorted(SMALL) for side in (0, 1)] + [("step_cycles", 2), ("reads", 1)]
        addr_mask = (1 << self.source.signature.members["host_read"].signature.members["payload"].shape.width) - 1
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            # Every segment puts one field at one end, the ends in turn.
            cfg = self._draw_setup(rng, ends[seg.index % len(ends)])
            w = cfg["tiles_per_wave"]
            if seg.index % 5 == 4:
                bad = rng.choice(("tiles", "tiles_per_wave", "read_beats_per_tile", "step_cycles",
                                  "outstanding_reads"))
                cfg[bad] = 0 if bad != "outstanding_reads" else w - 1
            setup[seg.start:seg.end] = setup_p.pack(cfg)
            run[seg.start + rng.randint(0, 20):seg.end] = 1
            for _ in range(rng.choice((0, 0, 1, 3))):      # pauses: run low for a while, reads in flight
                pause = rng.randint(seg.start + 30, max(seg.start + 31, seg.end - 60))
                run[pause:pause + rng.randint(1, 40)] = 0
            n = seg.length
            rd_valid[seg.start:seg.end] = (gen.random(n) < rng.choice((0.3, 0.7, 1.0))).astype(np.uint64)
            rd_payload[seg.start:seg.end] = gen.integers(0, 1 << 63, n, dtype=np.uint64)
            beats = self.source.tile_beats
            remote_beats = min(cfg["remote_tiles"], cfg["tiles"]) * beats
            local_beats = cfg["tiles"] * beats - remote_beats
            # A segment passes at most one store per cycle: a huge GEMM's stores beyond that are
            # never offered.
            stores = [rng.random() >= 0.1 for _ in range(min(local_beats, n) + rng.randint(0, 12))]
            for tracked in stores:
                word = gemm_p.pack({"tile": rng.getrandbits(6), "addr": rng.getrandbits(8), "op": rng.getrandbits(1),
                                    "tracked": int(tracked), "data": rng.getrandbits(64)})
                stim.sources["store"].add(word, gap=gap_draw(rng, seg.source_mode))
            for _ in range(min(remote_beats, n) + rng.randint(0, 4)):
                stim.sources["remote"].add(rng.getrandbits(self.source.packet_layout.size),
                                           gap=gap_draw(rng, seg.source_mode))
            for _ in range(rng.randint(0, 30)):
                stim.sources["host_read"].add(rng.getrandbits(16) & addr_mask, gap=gap_draw(rng, seg.source_mode))
        return stim, []

    def replay(self, trace: Trace) -> dict:
        src = self.source
        model = GemmSourceModel(addr_width=src.signature.members["gemm_read"].signature.members["payload"].shape.width,
                                tile_beats_log2=src.tile_beats.bit_length() - 1)
        setup_p, gemm_p = FastPacker(src.setup_layout), FastPacker(src.gemm_layout)
        status_p = FastPacker(src.status_layout)
        col = trace.col
        rst, run, setup = col("rst"), col("run"), col("setup")
        v = {s: col(f"{s}__valid") for s in SOURCES + SINKS}
        r = {s: col(f"{s}__ready") for s in SOURCES + SINKS}
        pl = {s: col(f"{s}__payload") for s in SOURCES + SINKS}
        rdv = col("read_data__valid")
        st = col("status")
        cover = trace.coverage.counts
        names = ("gemm.valid", "store.ready", "gemm_remote.valid", "remote.ready", "gemm_read.valid",
                 "host_read.ready")
        in_reset, checked = True, 0
        tracked_shift, tracked_mask = next((off, m) for name, off, m in gemm_p.fields if name == "tracked")
        spec = None
        last_done = 0
        for c in range(trace.cycles):
            if rst[c]:
                if not in_reset and model.wave_base and not last_done:
                    cover["reset mid-GEMM"] += 1
                in_reset = True
                continue
            if in_reset:
                model.reset()
                in_reset = False
                spec = _SpecCheck(trace, src.tile_beats, model.addr_mask)
            cfg = setup_p.unpack(setup[c])
            i = SourceInputs(run=run[c], setup=cfg, store_valid=v["store"][c],
                             store_tracked=(pl["store"][c] >> tracked_shift) & tracked_mask,
                             remote_valid=v["remote"][c], host_read_valid=v["host_read"][c],
                             host_read_addr=pl["host_read"][c], read_data_valid=rdv[c], gemm_ready=r["gemm"][c],
                             gemm_remote_ready=r["gemm_remote"][c], gemm_read_ready=r["gemm_read"][c])
            if i.run and not model.run_prev and not model.error and not model.invalid(cfg):
                self._cover_setup(cover, cfg)
            out = model.outputs(i)
            trace.compare(c, names, (v["gemm"][c], r["store"][c], v["gemm_remote"][c], r["remote"][c],
                                     v["gemm_read"][c], r["host_read"][c]),
                          (out.gemm_valid, out.store_ready, out.gemm_remote_valid, out.remote_ready,
                           out.gemm_read_valid, out.host_read_ready))
            if out.gemm_valid:
                trace.check(c, "gemm.payload", pl["gemm"][c], pl["store"][c])
            if out.gemm_remote_valid:
                trace.check(c, "gemm_remote.payload", pl["gemm_remote"][c], pl["remote"][c])
            if out.gemm_read_valid:
                trace.check(c, "gemm_read.payload", pl["gemm_read"][c], out.gemm_read_addr)
            expected = status_p.pack({"done": out.done, "config_error": model.error, **model.status})
            if st[c] != expected:
                trace.fail(c, "status", expected, st[c], status_p.diff(st[c], expected))
            spec.cycle(c, i, v["gemm_read"][c] and r["gemm_read"][c], pl["gemm_read"][c], v["host_read"][c]
                       and r["host_read"][c], v["gemm"][c] and r["gemm"][c], v["gemm_remote"][c]
                       and r["gemm_remote"][c], st[c] & 1)
            self._cover(cover, model, i, out)
            many = i.setup["tiles"] * i.setup["read_beats_per_tile"] > self.top_reads
            cover["GEMM of more than the top power of two of reads, 256 read"] += (
                out.own_read and model.issued == 255 and many)
            last_done = out.done
            model.step(i)
            checked += 1
        trace.checked_cycles = checked
        trace.stream_fields(names + ("status",))
        return {}

    def _cover_setup(self, cover, cfg: dict) -> None:
        """A valid GEMM starting: which of its fields sit at an end of their range."""
        for field, (lo, hi) in self.ranges.items():
            low_end = cfg["tiles_per_wave"] if field == "outstanding_reads" else lo
            first, last = _ends(field)
            cover[first] += cfg[field] == low_end
            cover[last] += cfg[field] == hi

    @staticmethod
    def _cover(cover, model, i, out) -> None:
        cover["k-step started"] += out.can_start
        cover["a tile's 33rd or later k-step started"] += out.can_start and model.step_index >= 32
        cover["k-step of more than 512 cycles ended"] += model.left == 1 and i.setup["step_cycles"] > 512
        cover["wave released"] += out.release
        if i.run and not model.error and model.wave_base < i.setup["tiles"] and not model.ending \
                and model.left == 0 and not out.can_start:
            cover["operand wait"] += 1
        cover["store wait (output buffer full)"] += out.holding and not out.release
        reads_left = model.issued < i.setup["tiles"] * i.setup["read_beats_per_tile"]
        if not out.own_read and i.run and not model.error and reads_left \
                and (model.issued - model.consumed) >= i.setup["outstanding_reads"] > 0:
            cover["read window full (outstanding)"] += 1
        cover["own read back-pressured"] += out.own_read and not i.gemm_read_ready
        cover["read-back passed"] += out.host_read_ready and i.host_read_valid
        store_moves = i.store_valid and out.store_ready
        cover["untracked store passed"] += store_moves and not i.store_tracked and model.local_credit == 0
        cover["local store passed on a credit"] += store_moves and i.store_tracked and model.local_credit != 0
        cover["store passed after done"] += store_moves and out.done and model.local_credit == 0 and i.store_tracked
        cover["remote store passed on a credit"] += i.remote_valid and out.remote_ready and model.remote_credit != 0
        cover["configuration error"] += model.error
        cover["GEMM done"] += out.done


class _SpecCheck:
    """Spec-level properties of one segment, from the ports alone (no model state)."""

    def __init__(self, trace: Trace, beats: int, addr_mask: int):
        self.trace, self.beats, self.addr_mask = trace, beats, addr_mask
        self.own = self.data = self.local = self.remote = 0
        self.ran = self.done = False

    def cycle(self, c, i, read_moved, read_addr, host_moved, store_moved, remote_moved, done) -> None:
        cfg, trace = i.setup, self.trace
        self.ran |= bool(i.run)
        if self.done and not done:
            trace.fail(c, "status.done (spec)", 1, 0, "done fell")
        self.done |= bool(done)
        if read_moved and not host_moved:
            if read_addr != self.own & self.addr_mask:
                trace.fail(c, "gemm_read.payload (spec)", self.own & self.addr_mask, read_addr, "own reads in order")
            self.own += 1
            if self.own > cfg["tiles"] * cfg["read_beats_per_tile"]:
                trace.fail(c, "gemm_read (spec)", "at most tiles x reads per tile", self.own)
        if host_moved and self.data < self.own:
            trace.fail(c, "host_read (spec)", f"after {self.own} read-data beats", self.data)
        tiles = cfg["tiles"]
        remote_tiles = min(cfg["remote_tiles"], tiles)
        if store_moved and i.store_tracked and not done:
            if not self.ran:
                trace.fail(c, "gemm (spec)", "no tracked store before run", "a tracked store")
            self.local += 1
            if self.local > (tiles - remote_tiles) * self.beats:
                trace.fail(c, "gemm (spec)", "at most the local tiles' beats before done", self.local)
        if remote_moved and not done:
            self.remote += 1
            if self.remote > remote_tiles * self.beats:
                trace.fail(c, "gemm_remote (spec)", "at most the stage-1 tiles' beats before done", self.remote)
        if i.read_data_valid and self.data < self.own:
            self.data += 1
