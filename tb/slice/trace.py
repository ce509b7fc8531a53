"""Trace-driven lock-step run of a whole T3 slice under a GEMM-like stream of many tiles.

Stimulus, per segment (between mid-run resets; one cell of the idle / back-pressure matrix):
the driver programs a descriptor per command (forward a tile: read its beats from the bank,
send them as updates), then works through tiles in turn as a producer GEMM and the previous
GPU would. For each tile it arms the tracker (threshold = the GEMM's tracked stores to the
tile plus the ingress updates it will receive; the command forwards the tile, or is the
notify-only one), the GEMM stores every beat of the tile (tracked, after the arm), and the
ingress delivers 1-3 update packets to the tile. Meanwhile the GEMM reads words (some just
written), sends remote stores through the egress, and makes a few untracked stores. The
ingress updates are counted when the bank takes them; the GEMM's stores when they leave the
compute queue, so the tile's last ingress update waits until the GEMM has issued
``compute_queue_depth + 1`` further stores (by then its stores have left the queue), and a
re-arm of the tile waits for that last update: every dependency points backwards, which is
what keeps the plan deadlock-free whatever the back-pressure.

The slice is built with a memory beyond it (``dram_ready=True``): per segment, ``dram_ready``
is always high (a block RAM: the slice as synthesised), high at random in 70% of cycles, or
high with runs of 1-16 low cycles (a bank opening rows); a third matrix beside the sources'
and the sink's.

Replay: :class:`~tb.slice.model.SliceModel` (tracker, table, engine, arbiter, muxes, compute
queue and bank composed) against every output in every cycle out of reset: every ``ready``,
``gemm_read_data``, ``egress`` (data masked where the bank makes no promise), ``notify``,
``dram_request`` and the whole ``status`` word.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np

from tb.arbiter.model import COMPUTE
from tb.dma.trace import DescriptorCodec
from tb.fp_add.golden import NUMPY_TYPES, mismatches
from tb.nmc.model import beat_to_lanes
from tb.nmc.trace import lane_values
from tb.slice.model import READ, STORE, SliceInputs, SliceModel
from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.ranges import FieldRange, cover_ranges, range_bins
from tb.trace.ranges import draw as draw_in_range
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments, sink_ready

__all__ = ["SliceTrace", "same_lanes"]

STREAMS = ["arm", "gemm", "gemm_read", "gemm_remote", "ingress", "program"]


class SliceTrace(TraceBench):
    label = "slice"
    block = "t3_slice"
    cycles = 1_000_000
    bins = (
        "tile forwarded by its DMA", "tile notified", "ingress update counted", "GEMM store counted",
        "arm held back: every trigger slot reserved", "egress back-pressured", "remote store sent",
        "GEMM read returned", "read after write", "MCA: comm granted", "round robin mode", "reset with tiles armed",
        "egress beat of an unknown word", "ingress store counted", "DMA forwards as stores",
        "update held by the bank's adder hazard", "GEMM update held by the bank's adder hazard",
        "offer held by the memory beyond", "read held by the memory beyond",
    )

    def __init__(self, params: dict | None = None):
        super().__init__(params or {"format": "binary16", "beat_width": 64, "depth": 256, "entries": 64,
                                    "count_width": 8, "commands": 16, "max_beats": 16, "port_width": 2,
                                    "queue_depth": 4, "tile_beats_log2": 2, "compute_queue_depth": 4,
                                    "level_width": 5, "wait_width": 16, "trigger_depth": 8, "power_up_seed": 21,
                                    "dram_ready": True})
        s = self.component
        self.codec = DescriptorCodec(s.table)
        self.bins = self.bins + range_bins(self.ranges)
        self.arm_p = FastPacker(s.tracker.arm_layout)
        self.gemm_p = FastPacker(s.gemm_layout)
        self.packet_p = FastPacker(s.packet_layout)
        self.tile_beats = 1 << self.params["tile_beats_log2"]
        self.tiles = self.params["depth"] // self.tile_beats

    @property
    def ranges(self) -> tuple[FieldRange, ...]:
        """The slice's configuration inputs over their whole widths, counted at grants (the
        threshold and the limit at T3-MCA's communication grants, which they decide); its port
        fields are its blocks', whose own trace runs cover their ranges."""
        p = self.params
        return (FieldRange("mode", 0, 1), FieldRange("threshold", 0, (1 << p["level_width"]) - 1),
                FieldRange("starvation_limit", 0, (1 << p["wait_width"]) - 1))

    def stimulus(self, rng: random.Random, cycles: int):
        p, s = self.params, self.component
        stim = Stimulus(cycles, STREAMS)
        segments = plan_segments(stim, rng, mean_cycles=12_000, first_cycles=3_000)
        sink_ready(stim, "egress", segments, rng)
        gen = np.random.default_rng(rng.getrandbits(63))
        lanes = s.nmc.lanes
        beat_values = lane_values(gen, p["format"], 4 * cycles * lanes).reshape(-1, lanes).astype(np.uint64)
        beats = (beat_values << (np.arange(lanes, dtype=np.uint64) * np.uint64(16))).sum(axis=1).tolist()
        draw = iter(beats).__next__
        src = stim.sources
        mode, thr, lim = stim.control("mode"), stim.control("threshold"), stim.control("starvation_limit")
        memory = stim.control("dram_ready")
        depth = s.tracker.trigger_depth
        queue_margin = p["compute_queue_depth"] + 1
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            mode[seg.start:seg.end] = seg.index % 2
            thr[seg.start:seg.end] = draw_in_range(rng, 0, 2 ** p["level_width"] - 1)
            lim[seg.start:seg.end] = rng.choice((0, 4, 64, 2 ** p["wait_width"] - 1))
            memory[seg.start:seg.end] = self._memory_ready(gen, seg.end - seg.start, seg.index % 3)
            sm = seg.source_mode
            last_program = None
            for cmd in range(p["commands"] - 1):
                desc = {"src_addr": 0, "dst_addr": rng.getrandbits(s.nmc.addr_width), "beats": self.tile_beats,
                        "dst_port": rng.getrandbits(p["port_width"]), "op": int(rng.random() < 0.7)}
                last_program = src["program"].add(self.codec.encode(cmd, desc), gap=gap_draw(rng, sm))
            free = list(range(self.tiles))
            rng.shuffle(free)
            open_tiles: deque = deque()          # tiles armed in the plan, oldest first
            waiting: list = []                   # (gemm index to wait for, tile, packet) last ingress updates
            last_update: dict[int, int] = {}     # tile -> its last ingress update's index
            gemm = src["gemm"]
            spent = 0
            while spent < seg.length:
                # Arm a new tile when the plan has room.
                if free and len(open_tiles) < depth:
                    tile = free.pop(0)
                    updates = rng.randint(1, 3)
                    notify = rng.random() < 0.2
                    cmd = p["commands"] - 1 if notify else rng.randrange(p["commands"] - 1)
                    if not notify and rng.random() < 0.1:      # reprogram: forward this tile's words
                        desc = {"src_addr": tile * self.tile_beats, "dst_addr": rng.getrandbits(s.nmc.addr_width),
                                "beats": self.tile_beats, "dst_port": rng.getrandbits(p["port_width"]),
                                "op": int(rng.random() < 0.7)}
                        src["program"].add(self.codec.encode(cmd, desc), gap=0)
                    after = ("ingress", last_update[tile]) if tile in last_update else ("program", last_program)
                    # The GEMM also accumulates into some of the tile's words right after
                    # storing them (tracked updates): the bank's adder hazard, from compute.
                    gemm_updates = rng.choice((0, 0, 1, 2, 3))
                    arm = src["arm"].add(self.arm_p.pack({"tile": tile,
                                                          "threshold": self.tile_beats + updates + gemm_updates,
                                                          "dma_cmd": cmd}), gap=gap_draw(rng, sm), after=after)
                    for k in range(self.tile_beats + gemm_updates):
                        op = 0 if k < self.tile_beats else 1
                        addr = tile * self.tile_beats + (k if op == 0 else rng.randrange(self.tile_beats))
                        last_store = gemm.add(self.gemm_p.pack({"tile": tile, "addr": addr, "op": op, "tracked": 1,
                                                                "data": draw()}),
                                              gap=gap_draw(rng, sm) if op == 0 else rng.choice((0, 0, 1, 3)),
                                              after=("arm", arm), same_cycle=k == 0)
                        spent += 1
                    for k in range(updates - 1):
                        src["ingress"].add(self._packet(tile, k, draw(), op=self._ingress_op(rng)),
                                           gap=gap_draw(rng, sm), after=("arm", arm), same_cycle=True)
                    waiting.append((last_store + queue_margin, tile,
                                    self._packet(tile, updates - 1, draw(), op=self._ingress_op(rng))))
                    open_tiles.append(tile)
                # Side traffic: reads, remote stores, untracked stores.
                for _ in range(rng.randint(0, 3)):
                    src["gemm_read"].add(rng.randrange(p["depth"]), gap=gap_draw(rng, sm))
                if rng.random() < 0.3:
                    src["gemm_remote"].add(self._packet(rng.randrange(self.tiles), 0, draw()), gap=gap_draw(rng, sm))
                if rng.random() < 0.1:
                    gemm.add(self.gemm_p.pack({"tile": 0, "addr": rng.randrange(p["depth"]), "op": 0, "tracked": 0,
                                               "data": draw()}), gap=gap_draw(rng, sm))
                spent += 2
                # Last ingress updates whose GEMM stores have left the compute queue.
                still = []
                for wait_index, tile, packet in waiting:
                    if wait_index < len(gemm):
                        last_update[tile] = src["ingress"].add(packet, gap=gap_draw(rng, sm),
                                                               after=("gemm", wait_index))
                        open_tiles.remove(tile)
                        free.append(tile)
                    else:
                        still.append((wait_index, tile, packet))
                waiting = still
        return stim, []

    @staticmethod
    def _memory_ready(gen: np.random.Generator, cycles: int, kind: int) -> np.ndarray:
        """A segment's ``dram_ready``: always high (0), high in 70% of cycles (1), or runs of
        1-16 low cycles starting in 5% of cycles (2)."""
        if kind == 0:
            return np.ones(cycles, dtype=np.uint64)
        if kind == 1:
            return (gen.random(cycles) < 0.7).astype(np.uint64)
        ready = np.ones(cycles, dtype=np.uint64)
        for start in np.flatnonzero(gen.random(cycles) < 0.05):
            ready[start:start + int(gen.integers(1, 17))] = 0
        return ready

    def _packet(self, tile: int, k: int, data: int, *, op: int = 1) -> int:
        return self.packet_p.pack({"dst_port": 0, "dst_addr": tile * self.tile_beats + k % self.tile_beats,
                                   "op": op, "last": 0, "data": data})

    @staticmethod
    def _ingress_op(rng: random.Random) -> int:
        """Mostly updates, as a reduce-scatter sends; some stores (also tracked, also counted)."""
        return 0 if rng.random() < 0.2 else 1

    #: The fields compared in every checked cycle, beside the payloads compared when valid.
    REPLAY_FIELDS = ("gemm.ready", "gemm_read.ready", "gemm_remote.ready", "ingress.ready", "arm.ready",
                     "program.ready", "gemm_read_data.valid", "egress.valid", "notify.valid", "status",
                     "dram_request.valid", "dram_request.payload")

    def replay(self, trace: Trace) -> dict:
        """The compiled replay (:mod:`tb.fast`) where ``g++`` is, else :meth:`replay_reference`."""
        from tb.fast import use_compiled
        if use_compiled():
            from tb.fast.replays import replay_slice
            return replay_slice(self, trace)
        return self.replay_reference(trace)

    def replay_reference(self, trace: Trace) -> dict:
        """The replay on the Python golden model (:class:`~tb.slice.model.SliceModel`)."""
        p, s = self.params, self.component
        status = FastPacker(s.status_layout)
        packet = self.packet_p
        col = trace.col
        rst = col("rst")
        valid = {n: col(f"{n}__valid") for n in STREAMS}
        payload = {n: col(f"{n}__payload") for n in STREAMS}
        ready = {n: col(f"{n}__ready") for n in STREAMS}
        eg_v, eg_p, eg_r = col("egress__valid"), col("egress__payload"), col("egress__ready")
        rd_v, rd_p = col("gemm_read_data__valid"), col("gemm_read_data__payload")
        nt_v, nt_p = col("notify__valid"), col("notify__payload")
        mode, thr, lim, st = col("mode"), col("threshold"), col("starvation_limit"), col("status")
        memory, dr_v, dr_p = col("dram_ready"), col("dram_request__valid"), col("dram_request__payload")
        request_p = FastPacker(s.dram_request_layout)
        cover = trace.coverage.counts
        gemm_p, arm_p = self.gemm_p, self.arm_p
        data_off = dict((n, o) for n, o, _ in packet.fields)["data"]
        data_mask = ((1 << s.nmc.beat_width) - 1) << data_off
        model = SliceModel(format=p["format"], lanes=s.nmc.lanes, depth=p["depth"], entries=p["entries"],
                           trigger_depth=p["trigger_depth"], commands=p["commands"], max_beats=p["max_beats"],
                           queue_depth=p["queue_depth"], addr_width=s.nmc.addr_width,
                           tile_beats_log2=p["tile_beats_log2"], compute_queue_depth=p["compute_queue_depth"],
                           wait_width=p["wait_width"], adder_latency=s.nmc.adder_latency, read_latency=s.read_latency)
        in_reset = True
        checked = 0
        commands_done = 0
        last_write = None
        names = self.REPLAY_FIELDS[:9]
        ranges = self.ranges
        for c in range(trace.cycles):
            if rst[c]:
                if not in_reset and model.tracker.status["armed_entries"]:
                    cover["reset with tiles armed"] += 1
                in_reset = True
                continue
            if in_reset:
                model.reset()      # the registers; the bank keeps its words
                in_reset = False
                commands_done = 0
                last_write = None
            inp = SliceInputs(
                gemm=gemm_p.unpack(payload["gemm"][c]) if valid["gemm"][c] else None,
                gemm_read=payload["gemm_read"][c] if valid["gemm_read"][c] else None,
                gemm_remote=packet.unpack(payload["gemm_remote"][c]) if valid["gemm_remote"][c] else None,
                ingress=packet.unpack(payload["ingress"][c]) if valid["ingress"][c] else None,
                arm=arm_p.unpack(payload["arm"][c]) if valid["arm"][c] else None,
                program=self.codec.decode(payload["program"][c]) if valid["program"][c] else None,
                egress_ready=eg_r[c], threshold=thr[c], starvation_limit=lim[c], mode=mode[c],
                dram_ready=memory[c])
            held_before = model.held
            out = model.cycle(inp)
            trace.check(c, "dram_request.valid", dr_v[c], int(out.dram_request is not None))
            if out.dram_request is not None:
                trace.check(c, "dram_request.payload", dr_p[c], request_p.pack(out.dram_request))
                if not memory[c] and (held_before is None or out.issued is not None):
                    cover["offer held by the memory beyond"] += 1
                    cover["read held by the memory beyond"] += out.dram_request["write"] == 0
            trace.compare(c, names,
                          (ready["gemm"][c], ready["gemm_read"][c], ready["gemm_remote"][c], ready["ingress"][c],
                           ready["arm"][c], ready["program"][c], rd_v[c], eg_v[c], nt_v[c]),
                          (out.gemm_ready, out.gemm_read_ready, out.gemm_remote_ready, out.ingress_ready,
                           out.arm_ready, out.program_ready, out.gemm_read_data_valid, out.egress_valid,
                           out.notify_valid))
            if out.gemm_read_data_valid:
                cover["GEMM read returned"] += 1
                if out.gemm_read_data is not None:
                    trace.checks += 1
                    if rd_p[c] != out.gemm_read_data and not self._same_lanes(rd_p[c], out.gemm_read_data):
                        trace.fail(c, "gemm_read_data.payload", out.gemm_read_data, rd_p[c])
            if out.egress_valid:
                want = dict(out.egress)
                mask = ~0
                if want["data"] is None:
                    want["data"], mask = 0, ~data_mask
                    cover["egress beat of an unknown word"] += 1
                expected = packet.pack(want)
                if eg_p[c] & mask != expected & mask and not (
                        mask == ~0 and packet.unpack(eg_p[c] & ~data_mask) == packet.unpack(expected & ~data_mask)
                        and self._same_lanes(eg_p[c] >> data_off, want["data"])):
                    trace.fail(c, "egress.payload", expected, eg_p[c], packet.diff(eg_p[c] & mask, expected & mask))
                trace.checks += 1
                if not eg_r[c]:
                    cover["egress back-pressured"] += 1
                elif out.egress["op"] == STORE and out.egress["last"]:
                    cover["DMA forwards as stores"] += 1
            if out.notify_valid:
                trace.check(c, "notify.payload", nt_p[c], out.notify_tile)
                cover["tile notified"] += 1
            expected = status.pack_nested(out.status)
            if st[c] != expected:
                trace.fail(c, "status", expected, st[c], status.diff(st[c], expected))
            checked += 1
            # Coverage.
            if inp.arm is not None and not out.arm_ready and not out.status["tracker"]["clearing"]:
                cover["arm held back: every trigger slot reserved"] += 1
            if inp.gemm_remote is not None and out.gemm_remote_ready:
                cover["remote store sent"] += 1
            cover["update held by the bank's adder hazard"] += out.bank_hazard is not None
            cover["GEMM update held by the bank's adder hazard"] += out.bank_hazard == COMPUTE
            grant = out.grant
            if grant is not None:
                cls, request = grant
                if request["kind"] != READ and request["tracked"]:
                    cover["ingress update counted" if cls == 1 else "GEMM store counted"] += 1
                    cover["ingress store counted"] += cls == 1 and request["kind"] == STORE
                if request["kind"] == READ and request["addr"] == last_write and not request["dma"]:
                    cover["read after write"] += 1
                last_write = request["addr"] if request["kind"] != READ else None
                cover_ranges(cover, ranges, {"mode": mode[c]})
                if cls == 1 and mode[c] == 0 and request["kind"] != READ:
                    cover["MCA: comm granted"] += 1
                    cover_ranges(cover, ranges, {"threshold": thr[c], "starvation_limit": lim[c]})
                if mode[c] == 1:
                    cover["round robin mode"] += 1
            if model.engine.status["commands"] != commands_done:
                cover["tile forwarded by its DMA"] += 1
                commands_done = model.engine.status["commands"]
        trace.checked_cycles = checked
        trace.stream_fields(self.REPLAY_FIELDS)
        return {"notifies": cover["tile notified"], "forwarded": cover["tile forwarded by its DMA"]}

    def _same_lanes(self, got: int, expected: int) -> bool:
        nmc = self.component.nmc
        return same_lanes(nmc.format.name, nmc.lanes, nmc.beat_width, got, expected)


def same_lanes(fmt: str, lanes: int, beat_width: int, got: int, expected: int) -> bool:
    """Beats equal lane by lane, any NaN matching any NaN (the adder's specification)."""
    utype = NUMPY_TYPES[fmt][1]
    mask = (1 << beat_width) - 1
    g = beat_to_lanes(got & mask, utype, lanes)
    return len(mismatches(fmt, g, beat_to_lanes(expected & mask, utype, lanes))) == 0
