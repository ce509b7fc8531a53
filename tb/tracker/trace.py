"""Trace-driven lock-step run of the tracker table: a million cycles checked in every ``make test``.

Stimulus (written before the run, :class:`~tb.trace.stimulus.Stimulus`): segments between
mid-run resets, each one cell of the idle / back-pressure matrix. In each segment a legal
driver arms free tiles and sends exactly ``threshold`` updates to each (local or remote,
interleaved across tiles). Dependencies keep it legal whatever the DUT's back-pressure: an
update waits for its tile's arm (some in the *same* cycle as the arm, which the tracker
orders first), and a re-arm waits for the tile's last update (at gap 0 it comes in the
very next cycle). The plan keeps at most ``trigger_depth`` tiles open, which is what makes
the dependencies deadlock-free. Every third segment also carries the three driver errors:
an update of a tile that was never armed, an arm with threshold 0 (the second time with an
update of its unarmed tile in the same cycle: both errors at once) and a re-arm of a tile
still armed; half of those segments open with an arm, its re-arm and an update of a
never-armed tile in the re-arm's cycle (the update stream empty before it, so that the two
sticky errors rise in one cycle whatever the seed); and a tenth of
their completed tiles get one update too many, 1-4 cycles after the completing one (it
meets the completion in the pipeline and must count as unarmed).

Every tenth segment is cut by a reset in the middle of the table's reset sweep.

Replay: :class:`~tb.tracker.model.TrackerTableModel` steps through the recorded inputs and
every output is compared in every cycle out of reset: ``arm.ready``, ``update.ready``,
``trigger.valid``, the trigger payload when valid and the whole ``status`` word.
"""

from __future__ import annotations

import random

from tb.trace.bench import FastPacker, TraceBench
from tb.trace.check import Trace
from tb.trace.ranges import FieldRange, cover_ranges, range_bins
from tb.trace.stimulus import Stimulus, gap_draw, plan_segments, sink_ready
from tb.tracker.model import TrackerTableModel

__all__ = ["TrackerTrace", "track_segment", "ERRORS"]

ERRORS = ("err_unarmed_update", "err_rearm", "err_zero_threshold")


class TrackerTrace(TraceBench):
    label = "tracker"
    block = "tracker_table"
    bins = (
        "arm accepted", "update accepted", "trigger handed out",
        "arm and update of one tile in one cycle", "update in the cycle of a zero-threshold arm of its tile",
        "re-arm the cycle after the last update",
        "back-to-back updates to one tile", "threshold 1", "maximum threshold",
        "arm held back: every trigger slot reserved", "trigger queue full", "trigger back-pressured",
        "trigger taken the cycle it is valid", "update offered in the reset sweep",
        "err_unarmed_update", "err_rearm", "err_zero_threshold",
        "err_unarmed_update again (first tile kept)", "err_rearm again (first tile kept)",
        "err_zero_threshold again (first tile kept)", "two sticky errors raised in one cycle",
        "unarmed update 1-4 cycles after its tile's completion",
        "reset with tiles armed", "reset with triggers queued", "reset during the reset sweep",
    )

    def __init__(self, params: dict | None = None):
        super().__init__(params or {"entries": 16, "count_width": 4, "dma_cmd_width": 3, "trigger_depth": 4,
                                    "power_up_seed": 3})
        spec = self.component
        self.tile_bits = (spec.entries - 1).bit_length()
        self.max_threshold = 2 ** spec.count_width - 1
        self.bins = self.bins + range_bins(self.ranges)

    @property
    def ranges(self) -> tuple[FieldRange, ...]:
        """The arm's and the update's fields: any tile of the table, thresholds 1 to the
        counter's largest (0 is the zero-threshold error, a bin of its own), any DMA command,
        either source."""
        spec = self.component
        return (FieldRange("arm.tile", 0, spec.entries - 1), FieldRange("arm.threshold", 1, self.max_threshold),
                FieldRange("arm.dma_cmd", 0, 2 ** spec.dma_cmd_width - 1),
                FieldRange("update.tile", 0, spec.entries - 1), FieldRange("update.source", 0, 1))

    # -- stimulus ---------------------------------------------------------------------------

    def _arm(self, tile: int, threshold: int, dma_cmd: int) -> int:
        layout = self.component.arm_layout
        return tile << layout["tile"].offset | threshold << layout["threshold"].offset \
            | dma_cmd << layout["dma_cmd"].offset

    def _update(self, tile: int, source: int) -> int:
        layout = self.component.update_layout
        return tile << layout["tile"].offset | source << layout["source"].offset

    def stimulus(self, rng: random.Random, cycles: int):
        spec = self.component
        stim = Stimulus(cycles, ["arm", "update"])
        # Every tenth segment is cut by a reset during the table's reset sweep (ten: coprime
        # with the nine matrix cells and the three-segment error cycle, so that the short
        # segments take a different cell and error slot each time).
        segments = plan_segments(stim, rng, mean_cycles=12_000, first_cycles=3_000, short_every=10,
                                 short_cycles=max(2, spec.reset_cycles // 2))
        self.segments = segments
        sink_ready(stim, "trigger", segments, rng)
        for seg in segments:
            if seg.index:
                stim.begin_segment()
            track_segment(rng, seg, stim, self, budget=seg.length + 64, with_errors=seg.index % 3 == 2,
                          dma_cmd=lambda: rng.getrandbits(spec.dma_cmd_width))
        return stim, []

    # -- replay -----------------------------------------------------------------------------

    def replay(self, trace: Trace) -> dict:
        spec = self.component
        model = TrackerTableModel(entries=spec.entries, trigger_depth=spec.trigger_depth)
        status_packer = FastPacker(spec.status_layout)
        a_lay, u_lay, t_lay = spec.arm_layout, spec.update_layout, spec.trigger_layout
        tile_mask = (1 << self.tile_bits) - 1
        thr_off, thr_mask = a_lay["threshold"].offset, (1 << a_lay["threshold"].width) - 1
        cmd_off, cmd_mask = a_lay["dma_cmd"].offset, (1 << a_lay["dma_cmd"].width) - 1
        src_off = u_lay["source"].offset
        t_cmd_off = t_lay["dma_cmd"].offset
        col = trace.col
        rst = col("rst")
        arm_v, arm_p, arm_r = col("arm__valid"), col("arm__payload"), col("arm__ready")
        up_v, up_p, up_r = col("update__valid"), col("update__payload"), col("update__ready")
        tr_v, tr_p, tr_r = col("trigger__valid"), col("trigger__payload"), col("trigger__ready")
        status = col("status")
        names = ("arm.ready", "update.ready", "trigger.valid")
        cover = trace.coverage.counts
        in_reset = True
        checked = 0
        prev_tile_update = -1
        waiting = False
        last_completion: dict[int, int] = {}   # tile -> cycle its last update was accepted
        prev_errors = dict.fromkeys(ERRORS, 0)
        cycles = trace.cycles
        ranges = self.ranges
        for c in range(cycles):
            if rst[c]:
                if not in_reset and c:
                    cover["reset during the reset sweep"] += model.sweep_left > 0
                    cover["reset with tiles armed"] += model.status["armed_entries"] > 0
                    cover["reset with triggers queued"] += len(model.queue) > 0
                in_reset = True
                continue
            if in_reset:
                model.reset()
                in_reset = False
                prev_errors = dict.fromkeys(ERRORS, 0)
                last_completion.clear()
                prev_tile_update = -1
            out = model.outputs()
            trace.compare(c, names, (arm_r[c], up_r[c], tr_v[c]), (out.arm_ready, out.update_ready, out.trigger_valid))
            if out.trigger_valid:
                tile, cmd = out.trigger
                trace.check(c, "trigger.payload", tr_p[c], tile | cmd << t_cmd_off)
            expected_status = status_packer.pack(out.status)
            if status[c] != expected_status:
                trace.fail(c, "status", expected_status, status[c], status_packer.diff(status[c], expected_status))
            checked += 1
            arm = None
            if arm_v[c]:
                p = arm_p[c]
                arm = (p & tile_mask, (p >> thr_off) & thr_mask, (p >> cmd_off) & cmd_mask)
            update = None
            if up_v[c]:
                p = up_p[c]
                update = (p & tile_mask, (p >> src_off) & 1)
            # Coverage, from the ports and the model's spec-level state.
            if arm and out.arm_ready:
                cover_ranges(cover, ranges, {"arm.tile": arm[0], "arm.threshold": arm[1], "arm.dma_cmd": arm[2]})
                if arm[1] == 0 and model.status["err_zero_threshold"]:
                    cover["err_zero_threshold again (first tile kept)"] += 1
                elif arm[1] and arm[0] in model.armed and model.status["err_rearm"]:
                    cover["err_rearm again (first tile kept)"] += 1
                cover["arm accepted"] += 1
                cover["threshold 1"] += arm[1] == 1
                cover["maximum threshold"] += arm[1] == self.max_threshold
                if last_completion.get(arm[0]) == c - 1:
                    cover["re-arm the cycle after the last update"] += 1
                if update and update[0] == arm[0] and out.update_ready:
                    cover["arm and update of one tile in one cycle"] += arm[1] != 0
                    cover["update in the cycle of a zero-threshold arm of its tile"] += arm[1] == 0
            if arm and not out.arm_ready and not out.status["clearing"]:
                cover["arm held back: every trigger slot reserved"] += 1
            if update:
                if out.update_ready:
                    cover["update accepted"] += 1
                    cover_ranges(cover, ranges, {"update.tile": update[0], "update.source": update[1]})
                    armed_now = update[0] in model.armed or (arm and out.arm_ready and arm[0] == update[0] and arm[1])
                    if not armed_now and 1 <= c - last_completion.get(update[0], -100) <= 4:
                        cover["unarmed update 1-4 cycles after its tile's completion"] += 1
                    if not armed_now and model.status["err_unarmed_update"]:
                        cover["err_unarmed_update again (first tile kept)"] += 1
                    if update[0] == prev_tile_update:
                        cover["back-to-back updates to one tile"] += 1
                    prev_tile_update = update[0]
                else:
                    cover["update offered in the reset sweep"] += 1
            else:
                prev_tile_update = -1
            if len(model.queue) == spec.trigger_depth:
                cover["trigger queue full"] += 1
            if out.trigger_valid:
                if tr_r[c]:
                    cover["trigger handed out"] += 1
                    cover["trigger taken the cycle it is valid"] += not waiting
                else:
                    cover["trigger back-pressured"] += 1
            waiting = out.trigger_valid and not tr_r[c]
            model.step(arm=arm, update=update, trigger_ready=tr_r[c])
            if model.completed is not None and update is not None:
                last_completion[update[0]] = c
            rising = 0
            for flag in ERRORS:
                if model.status[flag] and not prev_errors[flag]:
                    cover[flag] += 1
                    prev_errors[flag] = 1
                    rising += 1
            cover["two sticky errors raised in one cycle"] += rising >= 2
        trace.checked_cycles = checked
        trace.stream_fields(names + ("status",))
        return {"arms": cover["arm accepted"], "updates": cover["update accepted"],
                "triggers": cover["trigger handed out"]}


def track_segment(rng: random.Random, seg, stim: Stimulus, bench, *, budget: int, with_errors: bool,
                  dma_cmd, first_after: tuple[str, int] | None = None) -> None:
    """One segment of legal arms and updates (see the module docstring) into ``stim``'s
    ``arm`` and ``update`` sources; ``bench`` encodes payloads (``_arm``, ``_update``) and
    knows the table (``component``, ``max_threshold``). ``dma_cmd()`` picks each arm's
    command; ``first_after`` delays the segment's first arm (e.g. until its descriptors
    are programmed)."""
    spec = bench.component
    arm, update = stim.sources["arm"], stim.sources["update"]
    depth = spec.trigger_depth
    mode = seg.source_mode
    free = list(range(spec.entries))
    rng.shuffle(free)
    never_armed = [free.pop(), free.pop(), free.pop()] if with_errors else []
    open_tiles: dict[int, list] = {}    # tile -> [arm index, updates left]
    last_update: dict[int, int] = {}    # tile -> index of its last update in this segment
    spent = 0
    # Each error twice, on two tiles: the sticky flag must keep the first one's tile.
    errors_left = [*ERRORS, *ERRORS] if with_errors else []
    # The first zero-threshold arm's tile: any but the second's (never_armed[2]), so that
    # the sticky flag's tile tells the two apart.
    zero_tile = rng.choice([t for t in range(spec.entries) if t not in never_armed[2:]])
    pending: list[int] = []             # tiles to arm next (the stray update's, see below)
    # Half the error segments raise their first two errors in one cycle: a re-arm of an
    # armed tile beside an update of a never-armed one (both flags rise together).
    combined = with_errors and rng.random() < 0.5
    if with_errors and not combined:
        # Offered from the segment's first cycle: it meets the reset sweep, then is
        # accepted as an update of an unarmed tile.
        update.add(bench._update(never_armed[0], 1), gap=0)
        errors_left.remove("err_unarmed_update")
    if combined:
        # The segment's first transactions: an arm, its re-arm, and beside the re-arm an
        # update of a never-armed tile. Nothing else is queued on the update stream yet, so
        # the update is offered in the re-arm's cycle rather than behind earlier updates,
        # and both flags rise in one cycle whatever the seed.
        tile = free.pop(rng.randrange(len(free)))
        threshold = rng.randint(1, 6)
        arm.add(bench._arm(tile, threshold, dma_cmd()), gap=0, after=first_after)
        first_after = None
        again = arm.add(bench._arm(tile, threshold, 0), gap=0)
        update.add(bench._update(never_armed[0], 1), gap=0, after=("arm", again), same_cycle=True)
        open_tiles[tile] = [again, threshold]
        errors_left.remove("err_rearm")
        errors_left.remove("err_unarmed_update")
        spent += 2
    while spent < budget:
        can_arm = (free or pending) and len(open_tiles) < depth
        if can_arm and (not open_tiles or pending or rng.random() < 0.3):
            tile = pending.pop() if pending else free.pop(rng.randrange(len(free)))
            r = rng.random()
            threshold = 1 if r < 0.15 else bench.max_threshold if r < 0.25 else rng.randint(1, 6)
            after = ("update", last_update[tile]) if tile in last_update else first_after
            first_after = None
            gap = 0 if after and rng.random() < 0.5 else gap_draw(rng, mode)
            index = arm.add(bench._arm(tile, threshold, dma_cmd()), gap=gap, after=after)
            open_tiles[tile] = [index, threshold]
            spent += gap + 1
            if errors_left and rng.random() < 0.05:
                error = errors_left.pop(rng.randrange(len(errors_left)))
                if error == "err_rearm":
                    # Re-arm the tile just armed, before any of its updates.
                    open_tiles[tile][0] = arm.add(bench._arm(tile, threshold, 0), gap=0)
                elif error == "err_zero_threshold" and error in errors_left:
                    arm.add(bench._arm(zero_tile, 0, 1), gap=0)
                elif error == "err_zero_threshold":
                    # The second: with an update of its (unarmed) tile in the arm's cycle,
                    # which the zero threshold must not arm (two errors at once).
                    zero = arm.add(bench._arm(never_armed[2], 0, 1), gap=0)
                    stray = update.add(bench._update(never_armed[2], rng.getrandbits(1)), gap=0,
                                       after=("arm", zero), same_cycle=True)
                    # Then armed for real: a stray count would fire its trigger an update early.
                    last_update[never_armed[2]] = stray
                    pending.append(never_armed[2])
                else:
                    update.add(bench._update(never_armed[1], 0), gap=gap_draw(rng, mode))
            continue
        if not open_tiles:
            break
        tile = rng.choice(list(open_tiles))
        arm_index, left = open_tiles[tile]
        burst = left if rng.random() < 0.3 else 1      # back-to-back updates to one tile
        for _ in range(burst):
            gap = gap_draw(rng, mode)
            same = rng.random() < 0.25
            last_update[tile] = update.add(bench._update(tile, rng.getrandbits(1)), gap=gap,
                                           after=("arm", arm_index), same_cycle=same)
            spent += gap + 1
            left -= 1
        if left:
            open_tiles[tile][1] = left
        else:
            del open_tiles[tile]
            free.append(tile)
            if with_errors and rng.random() < 0.1:
                # One update too many, 1-4 cycles after the completing one: it meets the
                # completion still in the pipeline and must count as unarmed.
                last_update[tile] = update.add(bench._update(tile, rng.getrandbits(1)), gap=rng.randint(0, 3),
                                               after=("update", last_update[tile]))
