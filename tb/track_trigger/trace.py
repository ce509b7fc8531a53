"""Trace-driven lock-step run of track & trigger: tracker -> command table -> DMA engine.

Stimulus: each segment (between mid-run resets, one cell of the idle / back-pressure matrix)
first programs a descriptor for every command the tiles use, then runs the tracker's legal
arm / update driver (:func:`tb.tracker.trace.track_segment`) with the segment's first arm
waiting for the last of those programs; meanwhile some descriptors are reprogrammed while
triggers that use them may be queued, which the model resolves exactly. Every third segment
carries the tracker's driver errors.

Replay: :class:`~tb.track_trigger.model.TrackAndTriggerModel` against every output in every
cycle out of reset: the three ``ready`` outputs, ``mem_read``, ``egress``, ``done`` and the
whole ``status`` word (tracker, table and engine).
"""

from __future__ import annotations

import random

from tb.dma.trace import ENGINE_BINS, DescriptorCodec, EgressChecker, memory_responder, random_descriptor
from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments, sink_ready
from tb.track_trigger.model import TrackAndTriggerModel
from tb.tracker.trace import ERRORS, track_segment

__all__ = ["TrackTriggerTrace"]


class TrackTriggerTrace(TraceBench):
    label = "track_trigger"
    block = "track_and_trigger"
    bins = ENGINE_BINS + (
        "arm accepted", "update accepted", "tile triggers its DMA", "trigger held back by the command table",
        "arm and update of one tile in one cycle", "descriptor reprogrammed", "reset with a command in flight",
        *ERRORS,
    )

    def __init__(self, params: dict | None = None):
        super().__init__(params or {"entries": 16, "count_width": 4, "trigger_depth": 4, "commands": 8,
                                    "addr_width": 8, "data_width": 64, "max_beats": 8, "port_width": 2,
                                    "queue_depth": 2, "read_latency": 1})
        spec = self.component
        self.codec = DescriptorCodec(spec.dma.table)
        self.max_threshold = 2 ** self.params["count_width"] - 1
        self.arm_packer = FastPacker(spec.tracker.arm_layout)
        self.update_packer = FastPacker(spec.tracker.update_layout)

    # Payload encoders used by track_segment.
    def _arm(self, tile: int, threshold: int, dma_cmd: int) -> int:
        return self.arm_packer.pack({"tile": tile, "threshold": threshold, "dma_cmd": dma_cmd})

    def _update(self, tile: int, source: int) -> int:
        return self.update_packer.pack({"tile": tile, "source": source})

    @property
    def tracker_component(self):
        return self.component.tracker

    def stimulus(self, rng: random.Random, cycles: int):
        p = self.params
        stim = Stimulus(cycles, ["arm", "update", "program"])
        segments = plan_segments(stim, rng, mean_cycles=15_000, first_cycles=3_000)
        sink_ready(stim, "egress", segments, rng)
        self.memory, responder = memory_responder(rng, addr_width=p["addr_width"], data_width=p["data_width"],
                                                  latency=p["read_latency"])
        program = stim.sources["program"]
        fields = {"max_beats": p["max_beats"], "addr_width": p["addr_width"], "port_width": p["port_width"]}
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            last = None
            for index in range(p["commands"]):
                last = program.add(self.codec.encode(index, random_descriptor(rng, fields)),
                                   gap=gap_draw(rng, seg.source_mode))
            # Reprograms while the tiles run: valid descriptors at random times.
            for _ in range(seg.length // 2000):
                program.add(self.codec.encode(rng.randrange(p["commands"]), random_descriptor(rng, fields)),
                            gap=rng.randint(0, 4000))
            track_segment(rng, seg, stim, _TrackerView(self), budget=seg.length // 3, with_errors=seg.index % 3 == 2,
                          dma_cmd=lambda: rng.randrange(p["commands"]), first_after=("program", last))
        return stim, [responder]

    def replay(self, trace: Trace) -> dict:
        p = self.params
        spec = self.component
        status = FastPacker(spec.status_layout)
        arm_p_, up_p_ = self.arm_packer, self.update_packer
        col = trace.col
        rst = col("rst")
        arm_v, arm_p, arm_r = col("arm__valid"), col("arm__payload"), col("arm__ready")
        up_v, up_p, up_r = col("update__valid"), col("update__payload"), col("update__ready")
        pr_v, pr_p, pr_r = col("program__valid"), col("program__payload"), col("program__ready")
        st = col("status")
        cover = trace.coverage.counts
        egress = EgressChecker(trace, spec.dma.engine, cover)
        names = ("arm.ready", "update.ready", "program.ready")
        model = TrackAndTriggerModel(entries=p["entries"], trigger_depth=p["trigger_depth"], max_beats=p["max_beats"],
                                     queue_depth=p["queue_depth"], read_latency=p["read_latency"],
                                     addr_width=p["addr_width"], memory=self.memory)
        in_reset = True
        checked = 0
        errors = dict.fromkeys(ERRORS, 0)
        programmed: set[int] = set()
        for c in range(trace.cycles):
            if rst[c]:
                if not in_reset and not model.path.idle():
                    cover["reset with a command in flight"] += 1
                in_reset = True
                continue
            if in_reset:
                model.reset()
                egress.reset()
                in_reset = False
                errors = dict.fromkeys(ERRORS, 0)
                programmed.clear()
            tracker_out, table_out, engine_out = model.outputs()
            trace.compare(c, names, (arm_r[c], up_r[c], pr_r[c]),
                          (tracker_out.arm_ready, tracker_out.update_ready, table_out.program_ready))
            flat = {f"tracker.{k}": v for k, v in tracker_out.status.items()}
            flat.update({f"table.{k}": v for k, v in table_out.status.items()})
            flat.update({f"engine.{k}": v for k, v in engine_out.status.items()})
            expected = status.pack(flat)
            if st[c] != expected:
                trace.fail(c, "status", expected, st[c], status.diff(st[c], expected))
            checked += 1
            arm = update = program = None
            if arm_v[c]:
                a = arm_p_.unpack(arm_p[c])
                arm = (a["tile"], a["threshold"], a["dma_cmd"])
                cover["arm accepted"] += tracker_out.arm_ready
            if up_v[c]:
                u = up_p_.unpack(up_p[c])
                update = (u["tile"], u["source"])
                cover["update accepted"] += tracker_out.update_ready
                if arm and tracker_out.arm_ready and arm[0] == update[0]:
                    cover["arm and update of one tile in one cycle"] += 1
            if pr_v[c]:
                program = self.codec.decode(pr_p[c])
                cover["descriptor reprogrammed"] += program["index"] in programmed
                programmed.add(program["index"])
            if tracker_out.trigger_valid:
                if table_out.trigger_ready:
                    cover["tile triggers its DMA"] += 1
                else:
                    cover["trigger held back by the command table"] += 1
            _, done = model.step(arm=arm, update=update, program=program, egress_ready=egress.eg_r[c])
            egress.check(c, engine_out, done)
            for flag in ERRORS:
                if model.tracker.status[flag] and not errors[flag]:
                    errors[flag] = 1
                    cover[flag] += 1
        trace.checked_cycles = checked
        trace.stream_fields(names + ("status", "mem_read.en", "egress.valid", "done.valid"))
        return {"triggers": cover["tile triggers its DMA"], "beats": cover["beat sent"]}


class _TrackerView:
    """What :func:`track_segment` reads of a bench: the tracker's parameters and payload encoders."""

    def __init__(self, bench: TrackTriggerTrace):
        self.component = bench.component.tracker
        self.max_threshold = bench.max_threshold
        self._arm = bench._arm
        self._update = bench._update
