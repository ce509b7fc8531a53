"""Trace-driven lock-step run of the DMA path (command table -> engine), and the pieces that the
track & trigger trace shares with it.

Stimulus: segments between mid-run resets, one cell of the idle / back-pressure matrix
each. A driver programs descriptors (1 beat, ``max_beats`` beats, or in between; some
reprogrammed while triggers that use them are queued) and fires triggers at programmed
commands, each trigger waiting for its descriptor's program (some in the *same* cycle,
which the table orders first). Every third segment also fires a trigger at a command never
programmed and programs a descriptor of 0 and one of too many beats (in half of them the
first bad program and the unprogrammed trigger come in one cycle: both sticky errors rise
together; in the other half a trigger of the bad program's own command comes in its cycle
and must take the descriptor programmed before). The memory behind the
read port is a :class:`~tb.common.memory.BenchMemory`, answered by the harness with the
block's read latency.

Replay: :class:`~tb.dma.model.DmaPathModel` against every output in every cycle out of
reset: ``program.ready``, ``trigger.ready``, ``mem_read.en`` (and the address when high),
``egress.valid`` (and the whole beat when high), ``done.valid`` (and its command), ``status``.
"""

from __future__ import annotations

import random

from tb.common.memory import BenchMemory
from tb.dma.model import DmaPathModel
from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.harness import ReadPortResponder
from tb.trace.ranges import FieldRange, cover_ranges, draw, range_bins
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments, sink_ready

__all__ = ["DmaPathTrace", "DescriptorCodec", "EgressChecker", "memory_responder"]


class DescriptorCodec:
    """Encodes program payloads and decodes them for the model, from the table's public layouts."""

    def __init__(self, table):
        self.program = FastPacker(table.program_layout)

    def encode(self, index: int, desc: dict) -> int:
        return self.program.pack({"index": index, **{f"desc.{k}": v for k, v in desc.items()}})

    def decode(self, word: int) -> dict:
        flat = self.program.unpack(word)
        return {"index": flat["index"], "desc": {k[5:]: v for k, v in flat.items() if k.startswith("desc.")}}


def random_descriptor(rng: random.Random, codec_fields: dict) -> dict:
    """A valid descriptor: 1 beat, the most beats, or in between; any address (they wrap),
    either end of the address range and of the port field a quarter of the time each."""
    max_beats = codec_fields["max_beats"]
    r = rng.random()
    beats = 1 if r < 0.15 else max_beats if r < 0.3 else rng.randint(1, max_beats)
    addr_max, port_max = (1 << codec_fields["addr_width"]) - 1, (1 << codec_fields["port_width"]) - 1
    return {"src_addr": draw(rng, 0, addr_max), "dst_addr": draw(rng, 0, addr_max),
            "beats": beats, "dst_port": draw(rng, 0, port_max), "op": rng.getrandbits(1)}


def memory_responder(rng: random.Random, *, addr_width: int, data_width: int,
                     latency: int) -> tuple[BenchMemory, ReadPortResponder]:
    memory = BenchMemory(rng, addr_width=addr_width, data_width=data_width)
    return memory, ReadPortResponder("mem_read", memory.words, data_width=data_width, latency=latency)


class EgressChecker:
    """Compares ``mem_read``, ``egress`` and ``done`` with the engine model, and counts beat coverage."""

    def __init__(self, trace: Trace, engine, cover: dict, *, max_beats: int | None = None):
        self.packet = FastPacker(engine.packet_layout)
        self.max_beats = max_beats
        self.cover = cover
        col = trace.col
        self.mem_en, self.mem_addr = col("mem_read__en"), col("mem_read__addr")
        self.eg_v, self.eg_p, self.eg_r = col("egress__valid"), col("egress__payload"), col("egress__ready")
        self.done_v, self.done_p = col("done__valid"), col("done__payload")
        self.trace = trace
        self.beat_index = 0      # of the command at the head of egress
        self.stalled = False

    def reset(self) -> None:
        self.beat_index = 0
        self.stalled = False

    def check(self, c: int, engine_out, done) -> None:
        """Cycle ``c``: ``engine_out`` from ``outputs()``, ``done`` from the model's step."""
        trace, cover = self.trace, self.cover
        trace.compare(c, ("mem_read.en", "egress.valid", "done.valid"),
                      (self.mem_en[c], self.eg_v[c], self.done_v[c]),
                      (engine_out.mem_en, engine_out.egress_valid, int(done is not None)))
        if engine_out.mem_en:
            trace.check(c, "mem_read.addr", self.mem_addr[c], engine_out.mem_addr)
        if done is not None:
            trace.check(c, "done.payload", self.done_p[c], done)
            cover["done"] += 1
        if engine_out.egress_valid:
            p = engine_out.egress
            expected = self.packet.pack({"dst_port": p["dst_port"], "dst_addr": p["dst_addr"], "op": p["op"],
                                         "last": p["last"], "data": p["data"]})
            if self.eg_p[c] != expected:
                trace.fail(c, "egress.payload", expected, self.eg_p[c], self.packet.diff(self.eg_p[c], expected))
            trace.checks += 1
            where = "last" if p["last"] else "first" if self.beat_index == 0 else "middle"
            if self.eg_r[c]:
                cover["beat sent"] += 1
                if where == "last" and self.beat_index == 0:
                    cover["command of one beat"] += 1
                if p["last"] and self.max_beats and self.beat_index + 1 == self.max_beats:
                    cover["command of max_beats"] += 1
                self.beat_index = 0 if p["last"] else self.beat_index + 1
                if not self.stalled and where != "first" and not p["last"]:
                    cover["beats back to back"] += 1
                self.stalled = False
            else:
                cover[f"egress back-pressured on the {where} beat"] += 1
                self.stalled = True


ENGINE_BINS = ("beat sent", "done", "command of one beat", "beats back to back",
               "egress back-pressured on the first beat", "egress back-pressured on the middle beat",
               "egress back-pressured on the last beat")


class DmaPathTrace(TraceBench):
    label = "dma_path"
    block = "dma_path"
    bins = ENGINE_BINS + (
        "program accepted", "trigger accepted", "trigger held back: issue queue full",
        "program and trigger of one command in one cycle", "command of max_beats", "source address wraps",
        "err_unprogrammed", "err_bad_descriptor", "both sticky errors raised in one cycle",
        "trigger in the cycle of a refused program of its command",
        "reset with a command in flight",
    )

    def __init__(self, params: dict | None = None):
        super().__init__(params or {"commands": 16, "tile_width": 4, "addr_width": 8, "data_width": 64,
                                    "max_beats": 16, "port_width": 2, "queue_depth": 2, "read_latency": 2})
        self.codec = DescriptorCodec(self.component.table)
        self.bins = self.bins + range_bins(self.ranges)

    @property
    def ranges(self) -> tuple[FieldRange, ...]:
        """The program's and the trigger's fields (a descriptor's valid beats: 1 .. max_beats;
        0 and more are the bad-descriptor error, a bin of their own)."""
        p = self.params
        addr_max = (1 << p["addr_width"]) - 1
        return (FieldRange("program.index", 0, p["commands"] - 1), FieldRange("desc.src_addr", 0, addr_max),
                FieldRange("desc.dst_addr", 0, addr_max), FieldRange("desc.beats", 1, p["max_beats"]),
                FieldRange("desc.dst_port", 0, (1 << p["port_width"]) - 1), FieldRange("desc.op", 0, 1),
                FieldRange("trigger.dma_cmd", 0, p["commands"] - 1),
                FieldRange("trigger.tile", 0, (1 << p["tile_width"]) - 1))

    def stimulus(self, rng: random.Random, cycles: int):
        p = self.params
        stim = Stimulus(cycles, ["program", "trigger"])
        segments = plan_segments(stim, rng, mean_cycles=15_000, first_cycles=3_000)
        sink_ready(stim, "egress", segments, rng)
        self.memory, responder = memory_responder(rng, addr_width=p["addr_width"], data_width=p["data_width"],
                                                  latency=p["read_latency"])
        program, trigger = stim.sources["program"], stim.sources["trigger"]
        fields = {"max_beats": p["max_beats"], "addr_width": p["addr_width"], "port_width": p["port_width"]}
        trigger_payload = FastPacker(self.component.table.trigger_layout)
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            with_errors = seg.index % 3 == 2
            indices = list(range(p["commands"]))
            rng.shuffle(indices)
            never = indices.pop() if with_errors else None
            programmed: dict[int, int] = {}     # index -> program transaction
            mean_beats = (p["max_beats"] + 1) / 2
            spent, budget = 0, seg.length + 64
            bad_left = unprogrammed_left = with_errors
            # Half the error segments raise both errors in one cycle: the unprogrammed
            # trigger waits for the bad descriptor's program and comes in its cycle.
            combined = with_errors and rng.random() < 0.5
            while spent < budget:
                if not programmed or rng.random() < 0.15:
                    index = rng.choice(indices)
                    desc = random_descriptor(rng, fields)
                    gap = gap_draw(rng, seg.source_mode)
                    programmed.setdefault(index, program.add(self.codec.encode(index, desc), gap=gap))
                    if with_errors and (bad_left or rng.random() < 0.02):
                        bad_left = False
                        bad = dict(desc, beats=rng.choice((0, p["max_beats"] + 1)) % (1 << 16))
                        if bad["beats"] < 2 ** self.component.table.descriptor_layout["beats"].width:
                            bad_index = program.add(self.codec.encode(index, bad), gap=0)
                            if combined and unprogrammed_left:
                                unprogrammed_left = False
                                trigger.add(trigger_payload.pack({"tile": rng.getrandbits(p["tile_width"]),
                                                                  "dma_cmd": never}),
                                            gap=0, after=("program", bad_index), same_cycle=True)
                            else:
                                # A trigger of the index in the refused program's cycle: it
                                # takes the descriptor programmed before, not the refused one.
                                trigger.add(trigger_payload.pack({"tile": rng.getrandbits(p["tile_width"]),
                                                                  "dma_cmd": index}),
                                            gap=0, after=("program", bad_index), same_cycle=True)
                    continue
                index = rng.choice(list(programmed))
                gap = gap_draw(rng, seg.source_mode)
                if with_errors and ((unprogrammed_left and not combined) or rng.random() < 0.01):
                    unprogrammed_left = False
                    trigger.add(trigger_payload.pack({"tile": rng.getrandbits(p["tile_width"]), "dma_cmd": never}),
                                gap=gap)
                trigger.add(trigger_payload.pack({"tile": rng.getrandbits(p["tile_width"]), "dma_cmd": index}),
                            gap=gap, after=("program", programmed[index]), same_cycle=rng.random() < 0.3)
                spent += gap + int(mean_beats)
        return stim, [responder]

    def replay(self, trace: Trace) -> dict:
        p = self.params
        spec = self.component
        status = FastPacker(spec.status_layout)
        trig = FastPacker(spec.table.trigger_layout)
        col = trace.col
        rst = col("rst")
        pr_v, pr_p, pr_r = col("program__valid"), col("program__payload"), col("program__ready")
        tr_v, tr_p, tr_r = col("trigger__valid"), col("trigger__payload"), col("trigger__ready")
        st = col("status")
        cover = trace.coverage.counts
        egress = EgressChecker(trace, spec.engine, cover, max_beats=p["max_beats"])
        names = ("program.ready", "trigger.ready")
        last_read = None    # (the engine's command, the address it read last)
        model = None
        checked = 0
        errors = {"err_unprogrammed": 0, "err_bad_descriptor": 0}
        addr_mask = (1 << p["addr_width"]) - 1
        ranges = self.ranges
        for c in range(trace.cycles):
            if rst[c]:
                if model is not None and not model.idle():
                    cover["reset with a command in flight"] += 1
                model = None
                continue
            if model is None:
                model = DmaPathModel(max_beats=p["max_beats"], queue_depth=p["queue_depth"],
                                     read_latency=p["read_latency"], addr_width=p["addr_width"], memory=self.memory)
                egress.reset()
                errors = dict.fromkeys(errors, 0)
            table_out, engine_out = model.outputs()
            trace.compare(c, names, (pr_r[c], tr_r[c]), (table_out.program_ready, table_out.trigger_ready))
            flat = {f"table.{k}": v for k, v in table_out.status.items()}
            flat.update({f"engine.{k}": v for k, v in engine_out.status.items()})
            expected = status.pack(flat)
            if st[c] != expected:
                trace.fail(c, "status", expected, st[c], status.diff(st[c], expected))
            checked += 1
            program = self.codec.decode(pr_p[c]) if pr_v[c] else None
            trigger = None
            if tr_v[c]:
                t = trig.unpack(tr_p[c])
                trigger = {"tile": t["tile"], "dma_cmd": t["dma_cmd"]}
                if table_out.trigger_ready:
                    cover["trigger accepted"] += 1
                    cover_ranges(cover, ranges, {"trigger.dma_cmd": t["dma_cmd"], "trigger.tile": t["tile"]})
                    if program and program["index"] == trigger["dma_cmd"]:
                        cover["program and trigger of one command in one cycle"] += 1
                        if not 1 <= program["desc"]["beats"] <= p["max_beats"]:
                            cover["trigger in the cycle of a refused program of its command"] += 1
                else:
                    cover["trigger held back: issue queue full"] += 1
            if program and pr_r[c]:
                cover["program accepted"] += 1
                if program["desc"]["beats"] <= p["max_beats"]:
                    cover_ranges(cover, ranges, {"program.index": program["index"],
                                                 **{f"desc.{k}": v for k, v in program["desc"].items()}})
            if engine_out.mem_en:
                command = model.engine.current
                if last_read is not None and last_read[0] is command and last_read[1] == addr_mask \
                        and engine_out.mem_addr == 0:
                    cover["source address wraps"] += 1     # within one command, as executed
                last_read = (command, engine_out.mem_addr)
            _, done = model.step(program=program, trigger=trigger, egress_ready=egress.eg_r[c])
            egress.check(c, engine_out, done)
            rising = 0
            for flag in errors:
                if model.table.status[flag] and not errors[flag]:
                    errors[flag] = 1
                    cover[flag] += 1
                    rising += 1
            cover["both sticky errors raised in one cycle"] += rising == 2
        trace.checked_cycles = checked
        trace.stream_fields(names + ("status", "mem_read.en", "egress.valid", "done.valid"))
        return {"beats": cover["beat sent"], "commands": cover["done"]}
