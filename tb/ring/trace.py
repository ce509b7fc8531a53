"""Trace-driven lock-step run of the whole ring: reduce-scatter after reduce-scatter, 16 tiles per chunk.

Each segment (between mid-run resets) is one T3 reduce-scatter on 4 GPUs (3 and 6 in two of
``make test``'s four runs) with 16 tiles per chunk (64 tiles and 256 words through every
GPU of the 4-GPU ring), planned by
:func:`tb.ring.protocol.plan_reduce_scatter` with fresh data: every GPU programs its
descriptors, arms its tiles, zeroes the words it accumulates into, then writes its stages
(stage 1 as remote updates, the others as tracked local updates), while the trackers,
DMA engines, links and reducers forward and reduce the tiles around the ring. The GEMM also
reads words at random throughout. The segment's source and sink modes (gaps on every
source) and the arbiter settings vary from segment to segment; segments are long enough for
most rounds to finish, and a reset cuts the others.

The protocol's barrier (every bank has executed its zeroing before any update travels) is
written as dependencies: GPU *h*'s first local write waits for its last arm; its second
for GPU *h - 1*'s token, the GEMM write ``compute_queue_depth + 1`` after its zeroing (by
then the zeroing has left the compute queue and reached the bank); every GPU's stage-1
remote writes wait for the last GPU's token. Every dependency points backwards in the plan.

Replay: a composed model, one :class:`~tb.slice.model.SliceModel` and one
:class:`~tb.link.model.LinkGoldenModel` per GPU wired as :class:`rtl.ring.T3Ring` wires them, is
compared on every top-level output of every GPU in every cycle out of reset. Beside it, a
spec-level check: at the end of every round that finished (every GPU notified of all its
tiles), each GPU's chunk in the model's bank, which the lock-step comparison ties to the
RTL's, equals the numpy reduce-scatter of the round's partial outputs.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np

from tb.dma.trace import DescriptorCodec
from tb.link.model import LinkGoldenModel
from tb.nmc.model import lanes_to_beat
from tb.ring.protocol import plan_reduce_scatter
from tb.slice.model import READ, SliceInputs, SliceModel
from tb.slice.trace import same_lanes
from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments

__all__ = ["RingTrace"]

PORTS = ("arm", "gemm", "gemm_read", "gemm_remote", "program")


class RingTrace(TraceBench):
    label = "ring"
    block = "t3_ring"
    cycles = 252_000       # four runs: 10^6 checked cycles beside the resets
    runs = 4
    soak_run_cycles = 252_000
    tiles = 16
    #: GPUs in each of the ``make test`` runs: 4, and the non-powers of two 3 and 6, where a
    #: ring's generalisation breaks (chunk order, the last hop, descriptor reuse).
    RUN_GPUS = (4, 4, 3, 6)
    DEFAULT_PARAMS = {"gpus": 4, "beat_width": 64, "tile_beats_log2": 2, "max_beats": 16, "depth": 256,
                      "entries": 64, "commands": 64, "compute_queue_depth": 8, "power_up_seed": 31}

    def __init__(self, params: dict | None = None):
        super().__init__(params or self.DEFAULT_PARAMS)
        ring = self.component
        self.gpus = ring.gpus
        #: Stage k: the beats GPU g sends of chunk g - k (1: the GEMM's remote updates, the
        #: others the DMA forwarding what arrived).
        self.stage_bins = {k: f"stage {k} beat ({'remote update' if k == 1 else 'DMA forward'})"
                           for k in range(1, self.gpus)}
        self.bins = ("reduce-scatter completed", "reduce-scatter cut by a reset", "tile forwarded", "tile notified",
                     *self.stage_bins.values(), "GEMM read returned", "round robin round", "MCA round",
                     "finished round read back from the RTL", "reset with a beat waiting at a link's output")
        s = self.slice = ring.slices[0]
        self.codec = DescriptorCodec(s.table)
        nmc = s.nmc
        self._lanes_equal = lambda got, expected: same_lanes(nmc.format.name, nmc.lanes, nmc.beat_width, got, expected)
        self.arm_p = FastPacker(s.tracker.arm_layout)
        self.gemm_p = FastPacker(s.gemm_layout)
        self.packet_p = FastPacker(s.packet_layout)
        self.beats = 1 << self.params["tile_beats_log2"]
        self.rounds: list = []
        #: Set to a list to record every write the banks execute, as ``(gpu, cycle, addr, op)``
        #: in grant order (``make characterize`` replays them into a bare reducer).
        self.bank_writes: list | None = None

    @classmethod
    def for_run(cls, run: int) -> RingTrace:
        """The bench of ``make test``'s run ``run``: :attr:`RUN_GPUS` GPUs, the tracker, the
        bank and the command table sized for 16 tiles per chunk (a descriptor for every
        forwarded tile, and the notify command)."""
        gpus = cls.RUN_GPUS[run]
        tiles = gpus * cls.tiles
        beats = 1 << cls.DEFAULT_PARAMS["tile_beats_log2"]
        return cls({**cls.DEFAULT_PARAMS, "gpus": gpus, "entries": 1 << max(6, (tiles - 1).bit_length()),
                    "depth": 1 << max(8, (tiles * beats - 1).bit_length()),
                    "commands": 1 << max(6, ((gpus - 1) * cls.tiles).bit_length())})

    def stimulus(self, rng: random.Random, cycles: int):
        p, s, n = self.params, self.slice, self.gpus
        names = [f"{port}__{g}" for g in range(n) for port in PORTS]
        stim = Stimulus(cycles, names)
        segments = plan_segments(stim, rng, mean_cycles=9_000, first_cycles=7_000, short_every=4, short_cycles=500)
        gen = np.random.default_rng(rng.getrandbits(63))
        mode, thr, lim = stim.control("mode"), stim.control("threshold"), stim.control("starvation_limit")
        margin = p.get("compute_queue_depth", 8) + 1
        self.rounds = []
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            mode[seg.start:seg.end] = seg.index % 2
            thr[seg.start:seg.end] = rng.randint(0, 31)
            lim[seg.start:seg.end] = rng.choice((0, 8, 64))
            plan = plan_reduce_scatter(gen, gpus=n, tiles=self.tiles, beats=self.beats, lanes=s.nmc.lanes,
                                       fmt=s.nmc.format.name, notify_cmd=s.notify_cmd, entries=p["entries"],
                                       depth=p["depth"])
            if any(gp.late_programs for gp in plan.plans):
                raise ValueError(f"commands = {p['commands']}: this stimulus programs every descriptor before the "
                                 f"round, so it needs more than (gpus - 1) x tiles = {(n - 1) * self.tiles}")
            self.rounds.append((seg, plan))
            sm = seg.source_mode if seg.source_mode != "idle" else "gaps"   # rounds must fit their segment
            tokens = []
            for g, gp in enumerate(plan.plans):
                src = {port: stim.sources[f"{port}__{g}"] for port in PORTS}
                last_program = None
                for prog in gp.programs:
                    last_program = src["program"].add(self.codec.encode(prog["index"], prog["desc"]),
                                                      gap=gap_draw(rng, sm))
                last_arm = None
                for k, arm in enumerate(gp.arms):
                    first = k == 0 and last_program is not None
                    last_arm = src["arm"].add(self.arm_p.pack(arm), gap=gap_draw(rng, sm),
                                              after=(f"program__{g}", last_program) if first else None)
                # First read back the chunk the last round left here (the banks keep their
                # words across the reset): the replay compares it with numpy.
                readback = None
                if seg.index:
                    for addr in plan.chunk_addresses(g):
                        readback = src["gemm_read"].add(addr, gap=0)
                for k, write in enumerate(gp.zero_writes):
                    after = (f"gemm_read__{g}", readback) if k == 0 and readback is not None else None
                    zeroed = src["gemm"].add(self.gemm_p.pack(write), gap=gap_draw(rng, sm), after=after)
                for k, write in enumerate(gp.local_writes):
                    after = None
                    if k == 0:
                        after = (f"arm__{g}", last_arm)
                    elif k == 1 and g:
                        after = (f"gemm__{g - 1}", tokens[g - 1])
                    src["gemm"].add(self.gemm_p.pack(write), gap=gap_draw(rng, sm), after=after)
                tokens.append(zeroed + margin)
                for _ in range(seg.length // 40):
                    src["gemm_read"].add(rng.randrange(p["depth"]), gap=rng.randint(0, 80))
            for g, gp in enumerate(plan.plans):
                remote = stim.sources[f"gemm_remote__{g}"]
                for k, write in enumerate(gp.remote_writes):
                    remote.add(self.packet_p.pack(write), gap=gap_draw(rng, sm),
                               after=(f"gemm__{n - 1}", tokens[-1]) if k == 0 else None)
        return stim, []

    def replay_fields(self) -> tuple[str, ...]:
        """The fields compared in every checked cycle, beside the payloads compared when valid."""
        n = self.gpus
        return (tuple(f"{port}__{g}.ready" for g in range(n) for port in PORTS)
                + tuple(f"{x}__{g}.valid" for g in range(n) for x in ("gemm_read_data", "notify"))
                + tuple(f"status[{g}]" for g in range(n)))

    def replay(self, trace: Trace) -> dict:
        """The compiled replay (:mod:`tb.fast`) where ``g++`` is, else :meth:`replay_reference`
        (always when :attr:`bank_writes` is asked for)."""
        from tb.fast import use_compiled
        if self.bank_writes is None and use_compiled():
            from tb.fast.replays import replay_ring
            return replay_ring(self, trace)
        return self.replay_reference(trace)

    def replay_reference(self, trace: Trace) -> dict:
        """The replay on the Python golden models (four slices, four links)."""
        p, s, n = self.params, self.slice, self.gpus
        ring = self.component
        status = FastPacker(s.status_layout)
        packet, gemm_p, arm_p = self.packet_p, self.gemm_p, self.arm_p
        col = trace.col
        rst = col("rst")
        v = {(port, g): col(f"{port}__{g}__valid") for port in PORTS for g in range(n)}
        pl = {(port, g): col(f"{port}__{g}__payload") for port in PORTS for g in range(n)}
        rd = {(port, g): col(f"{port}__{g}__ready") for port in PORTS for g in range(n)}
        rd_v = [col(f"gemm_read_data__{g}__valid") for g in range(n)]
        rd_p = [col(f"gemm_read_data__{g}__payload") for g in range(n)]
        nt_v = [col(f"notify__{g}__valid") for g in range(n)]
        nt_p = [col(f"notify__{g}__payload") for g in range(n)]
        st = [col(f"status__{g}") for g in range(n)]
        mode, thr, lim = col("mode"), col("threshold"), col("starvation_limit")
        cover = trace.coverage.counts
        link = ring.links[0]
        slices = [SliceModel(format=s.nmc.format.name, lanes=s.nmc.lanes, depth=p["depth"], entries=p["entries"],
                             trigger_depth=s.tracker.trigger_depth, commands=p["commands"], max_beats=p["max_beats"],
                             queue_depth=s.table.queue_depth, addr_width=s.nmc.addr_width,
                             tile_beats_log2=p["tile_beats_log2"], compute_queue_depth=p.get("compute_queue_depth", 8),
                             wait_width=s.arbiter.wait_width, adder_latency=s.nmc.adder_latency,
                             read_latency=s.read_latency) for _ in range(n)]
        links = [LinkGoldenModel(latency=link.latency, cycles_per_beat=link.cycles_per_beat, depth=link.depth)
                 for _ in range(n)]
        lanes_equal = self._lanes_equal
        chunk_words = self.tiles * self.beats
        stage_bins = self.stage_bins
        rounds = iter(self.rounds)
        pending_reads = [deque() for _ in range(n)]    # addresses of accepted GEMM reads, oldest first
        verify = None     # per GPU {addr: numpy word} of the round that finished before the reset
        readback_left = [0] * n
        current = None
        notified = [0] * n
        in_reset = True
        checked = 0
        names = self.replay_fields()[:-n]
        for c in range(trace.cycles):
            if rst[c]:
                if not in_reset:
                    cover["reset with a beat waiting at a link's output"] += any(lk.outputs().output_valid
                                                                                 for lk in links)
                    verify = self._end_round(current, notified, [m.bank.words for m in slices], cover)
                    readback_left = [len(verify[g]) if verify else 0 for g in range(n)]
                    for reads in pending_reads:
                        reads.clear()
                in_reset = True
                continue
            if in_reset:
                for model in slices:
                    model.reset()
                for model in links:
                    model.reset()
                in_reset = False
                current = next(rounds, None)
                notified = [0] * n
            link_out = [lk.outputs() for lk in links]
            outs = []
            for g in range(n):
                ingress = link_out[(g - 1) % n]
                inp = SliceInputs(
                    gemm=gemm_p.unpack(pl["gemm", g][c]) if v["gemm", g][c] else None,
                    gemm_read=pl["gemm_read", g][c] if v["gemm_read", g][c] else None,
                    gemm_remote=packet.unpack(pl["gemm_remote", g][c]) if v["gemm_remote", g][c] else None,
                    ingress=dict(ingress.output) if ingress.output_valid else None,
                    arm=arm_p.unpack(pl["arm", g][c]) if v["arm", g][c] else None,
                    program=self.codec.decode(pl["program", g][c]) if v["program", g][c] else None,
                    egress_ready=link_out[g].input_ready, threshold=thr[c], starvation_limit=lim[c], mode=mode[c])
                outs.append(slices[g].cycle(inp))
                grant = outs[-1].grant
                if self.bank_writes is not None and grant is not None and grant[1]["kind"] != READ:
                    self.bank_writes.append((g, c, grant[1]["addr"], grant[1]["kind"]))
            got, want = [], []
            for g, out in enumerate(outs):
                got += [rd[port, g][c] for port in PORTS]
                want += [out.arm_ready, out.gemm_ready, out.gemm_read_ready, out.gemm_remote_ready, out.program_ready]
            for g, out in enumerate(outs):
                got += [rd_v[g][c], nt_v[g][c]]
                want += [out.gemm_read_data_valid, out.notify_valid]
            trace.compare(c, names, tuple(got), tuple(want))
            for g, out in enumerate(outs):
                if out.gemm_read_data_valid:
                    cover["GEMM read returned"] += 1
                    addr = pending_reads[g].popleft()
                    if verify is not None and readback_left[g]:
                        readback_left[g] -= 1          # the segment's first reads are the read-back
                        if rd_p[g][c] != verify[g][addr] and not lanes_equal(rd_p[g][c], verify[g][addr]):
                            trace.fail(c, f"gemm_read_data[{g}] of word {addr}", verify[g][addr], rd_p[g][c],
                                       "the last round's reduce-scatter (numpy)")
                        cover["finished round read back from the RTL"] += 1
                    if out.gemm_read_data is not None and rd_p[g][c] != out.gemm_read_data \
                            and not lanes_equal(rd_p[g][c], out.gemm_read_data):
                        trace.fail(c, f"gemm_read_data[{g}].payload", out.gemm_read_data, rd_p[g][c])
                if out.notify_valid:
                    trace.check(c, f"notify[{g}].payload", nt_p[g][c], out.notify_tile)
                    notified[g] += 1
                    cover["tile notified"] += 1
                expected = status.pack_nested(out.status)
                if st[g][c] != expected:
                    trace.fail(c, f"status[{g}]", expected, st[g][c], status.diff(st[g][c], expected))
            for g in range(n):
                if v["gemm_read", g][c] and rd["gemm_read", g][c]:
                    pending_reads[g].append(pl["gemm_read", g][c])
            for g, lk in enumerate(links):
                out = outs[g]
                accepted, _ = lk.step(input_valid=out.egress_valid, payload=out.egress,
                                      output_ready=outs[(g + 1) % n].ingress_ready)
                if outs[(g + 1) % n].ingress_ready and link_out[g].output_valid:
                    beat = link_out[g].output
                    stage = (g - beat["dst_addr"] // chunk_words) % n   # GPU g sent chunk g - stage
                    cover[stage_bins[stage]] += 1
                    if beat["last"]:
                        cover["tile forwarded"] += 1
            checked += 1
        self._end_round(current, notified, [m.bank.words for m in slices], cover)
        trace.checked_cycles = checked
        if pending_reads and any(len(r) > 8 for r in pending_reads):
            raise AssertionError(f"ring: GEMM reads never answered: {[len(r) for r in pending_reads]}")
        trace.stream_fields(self.replay_fields())
        return {"rounds_completed": cover["reduce-scatter completed"]}

    def _end_round(self, current, notified, banks, cover) -> dict | None:
        """Spec-level check of a round that finished: each GPU's chunk in the model's bank
        (``banks[g]``: its words, None where unknown) is the reduce-scatter; return
        {gpu: {addr: word}} for the read-back from the RTL."""
        if current is None:
            return None
        seg, plan = current
        if min(notified) < plan.tiles:
            cover["reduce-scatter cut by a reset"] += 1
            return None
        cover["reduce-scatter completed"] += 1
        cover["round robin round" if seg.index % 2 else "MCA round"] += 1
        for g in range(self.gpus):
            words = banks[g]
            got = [words[a] for a in plan.chunk_addresses(g)]
            want = [lanes_to_beat(row) for row in plan.expected[g]]
            bad = [i for i, (x, y) in enumerate(zip(got, want, strict=True))
                   if x is None or (x != y and not self._lanes_equal(x, y))]
            if bad:
                raise AssertionError(f"ring: round {seg.index}: GPU {g}'s chunk differs from the reduce-scatter at "
                                     f"{len(bad)} words (first: word {bad[0]})")
        return {g: dict(zip(plan.chunk_addresses(g), (lanes_to_beat(row) for row in plan.expected[g]), strict=True))
                for g in range(self.gpus)}
