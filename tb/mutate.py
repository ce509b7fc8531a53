"""Mutation check of the test suite (``make mutate``, not in CI): does the suite kill realistic RTL bugs?

Each :class:`Mutant` is one realistic bug, written as a textual patch of one RTL source in the
manner of :mod:`tb.formal.variants`: the exact text it replaces must occur exactly once in the
current source, so a mutant that no longer applies is reported as an error instead of being
skipped or, worse, "surviving" on the unmutated design. For each mutant the tool copies the
working tree (tracked files and untracked files git does not ignore; not ``.venv``,
``sim_build`` or ``build``) to ``/tmp/t3-mutate/<id>``, applies the patch there and runs the
pytest selection that should kill it, with this interpreter and a timeout, one mutant at a
time. A failing selection kills the mutant; a timeout counts as a kill too (a hang is
detected), and is marked as such. The table goes to ``sim_results/mutation.md`` and
``sim_results/mutation.json``.

``--baseline`` first runs every distinct selection on the unmutated copy: a selection that
fails there would "kill" every mutant for the wrong reason, and the tool stops.

Usage: ``python -m tb.mutate [--only REGEX] [--list] [--baseline] [--keep] [--seed N]``.
Environment of the runs: ``SEED`` (default 1, so a table replays), ``TRACE_CYCLES`` per mutant
(the trace tests' length; 200 000 unless the mutant says otherwise).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rtl.flow.generate import TEST_VERILOG_CACHE, VERILOG_CACHE_ENV
from rtl.flow.verilator import DEFAULT_CCACHE_DIR
from tb.formal.variants import Patch

__all__ = ["Mutant", "MUTANTS", "apply_patch", "scratch_copy", "run_mutant", "main"]

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path("/tmp/t3-mutate")
RESULTS = REPO_ROOT / "sim_results"
DEFAULT_TRACE_CYCLES = 200_000
DEFAULT_TIMEOUT_S = 600
EXCLUDED_TOP = {".venv", "sim_build", "build", ".git"}


@dataclass(frozen=True)
class Mutant:
    """One realistic RTL bug and the pytest selection that must kill it."""

    id: str
    block: str
    patch: Patch                    # file relative to rtl/; ``why`` is the one-line bug description
    selection: tuple[str, ...]      # pytest arguments (paths, node ids, -k expressions)
    env: dict = field(default_factory=dict)
    timeout_s: int = DEFAULT_TIMEOUT_S
    note: str = ""                  # what the table's reader should know (e.g. a layer that misses it)

    @property
    def file(self) -> str:
        return f"rtl/{self.patch.file}"

    @property
    def bug(self) -> str:
        return self.patch.why

    @property
    def selection_text(self) -> str:
        return " ".join(shlex.quote(a) for a in self.selection)


# Selections: the fast, strong layer of each block first (trace-driven lock-step tests), then
# the cocotb benches and unit tests for the blocks that have no trace test yet.
TRACE_TRACKER = ("tb/tracker/test_tracker.py::test_trace_tracker",)
TRACE_DMA = ("tb/dma/test_dma.py::test_trace_dma_path",)
TRACE_REDUCER = ("tb/nmc/test_nmc.py::test_trace_reducer",)
TRACE_ARBITER = ("tb/arbiter/test_arbiter.py::test_trace_arbiter",)
FP_VECTORS = ("tests/test_fp_add.py", "-k", "test_directed or test_random_bit_patterns")
MUX = ("tb/stream_mux", "tests/test_slice_ring.py", "-k", "mux and not old_")
LINK = ("tb/link", "tests/test_slice_ring.py", "-k", "link and not old_")
SLICE = ("tb/slice/test_slice.py::test_trace_slice", "tb/slice/test_slice.py::test_t3_slice")
# The ring runs first; its status check cannot tell local from remote updates (see the report).
RING_THEN_SLICE = ("tb/ring/test_ring.py::test_ring[n4-tiles12_mca]",
                   "tb/ring/test_ring.py::test_ring[n4-tiles12_round_robin]", *SLICE)
TRACE_RING = ("tb/ring/test_ring.py::test_trace_ring",)
ENGINE_ARBITRATED = ("tb/dma_engine", "tests/test_slice_ring.py", "-k", "dma_engine or engine_read_request")

GEMM_SOURCE = ("tb/gemm_source/test_gemm_source.py::test_trace_gemm_source",)

MUTANTS: tuple[Mutant, ...] = (
    # -- tracker ----------------------------------------------------------------------------
    Mutant("tracker-fires-early", "tracker", Patch(
        "tracker.py",
        "below_threshold.eq(s2_count - s2_config.threshold_m1),",
        "below_threshold.eq(s2_count + 1 - s2_config.threshold_m1),",
        "off-by-one threshold: the trigger fires at threshold - 1 updates"), TRACE_TRACKER),
    Mutant("tracker-fires-late", "tracker", Patch(
        "tracker.py",
        "below_threshold.eq(s2_count - s2_config.threshold_m1),",
        "below_threshold.eq(s2_count - s2_config.threshold_m1 - 1),",
        "off-by-one threshold: completes one update late, the trigger fires at threshold + 1 updates"),
        TRACE_TRACKER),
    Mutant("tracker-same-cycle-arm", "tracker", Patch(
        "tracker.py",
        "s1_armed.eq(armed_then(s1) | s1_same_arm),",
        "s1_armed.eq(armed_then(s1)),",
        "same-cycle arm and update: the update is ordered before the arm (counted as unarmed)"),
        TRACE_TRACKER),
    Mutant("tracker-config-not-transparent", "tracker", Patch(
        "tracker.py",
        "config_rd = config_mem.read_port(transparent_for=(config_wr,))",
        "config_rd = config_mem.read_port()",
        "an update accepted the cycle after its tile's arm reads the old threshold (config read not transparent)"),
        TRACE_TRACKER),
    Mutant("tracker-rearm-lost", "tracker", Patch(
        "tracker.py",
        "m.d.sync += armed.eq((armed & ~cleared) | set_)",
        "m.d.sync += armed.eq((armed | set_) & ~cleared)",
        "a completion clears the armed bit after a re-arm of the tile the cycle after it, losing the re-arm"),
        TRACE_TRACKER),
    Mutant("tracker-sweep-short", "tracker", Patch(
        "tracker.py",
        "with m.If(clear_addr == entries - 1):",
        "with m.If(clear_addr == entries - 2):",
        "reset sweep skips the last entry (it keeps its power-up count)"), TRACE_TRACKER),
    Mutant("tracker-reservation-off-by-one", "tracker", Patch(
        "tracker.py",
        "return Const(1) if k < 0 else (reserved + k < depth)",
        "return Const(1) if k < 0 else (reserved + k <= depth)",
        "arm accepted with every trigger slot already reserved (< vs <=)"), TRACE_TRACKER),
    # -- DMA path -----------------------------------------------------------------------------
    Mutant("dma-buffer-room-off-by-one", "dma_engine", Patch(
        "dma_engine.py",
        "want.eq(Mux(issue, active_if_read & (kept + 1 < depth), active_if_not & (kept < depth)))]",
        "want.eq(Mux(issue, active_if_read & (kept + 1 <= depth), active_if_not & (kept < depth)))]",
        "read issued with the beat buffer full: a beat is skipped under egress back-pressure"), TRACE_DMA),
    Mutant("dma-done-under-stall", "dma_engine", Patch(
        "dma_engine.py",
        "self.done.valid.eq(egress_fire & beat_out.packet.last),",
        "self.done.valid.eq(self.egress.valid & beat_out.packet.last),",
        "done pulses on an offered last beat, again every cycle egress back-pressures it"), TRACE_DMA),
    Mutant("dma-advance-without-grant", "dma_engine", Patch(
        "dma_engine.py",
        "with m.If(issue):\n            m.d.sync += [src.eq(src + 1), dst.eq(dst + 1), left.eq(left - 1)]",
        "with m.If(want):\n            m.d.sync += [src.eq(src + 1), dst.eq(dst + 1), left.eq(left - 1)]",
        "addresses advance on a read request the arbiter refused: beats skipped"), ENGINE_ARBITRATED),
    Mutant("dma-table-max-beats", "dma_table", Patch(
        "dma_table.py",
        "prog_bad = self.program.valid & ((beats == 0) | (beats > self._max_beats))",
        "prog_bad = self.program.valid & ((beats == 0) | (beats >= self._max_beats))",
        "beats check off by one: a max_beats descriptor is refused"), TRACE_DMA),
    Mutant("dma-table-lookup-not-counted", "dma_table", Patch(
        "dma_table.py",
        "self.trigger.ready.eq(queue.level + s1_valid < self._queue_depth),",
        "self.trigger.ready.eq(queue.level < self._queue_depth),",
        "trigger.ready ignores the lookup in flight: the issue queue overflows, a command is lost"),
        TRACE_DMA),
    # -- near-memory reducer ----------------------------------------------------------------
    Mutant("reducer-no-forward-writeback", "nmc", Patch(
        "nmc.py",
        "m.d.comb += stored[bits].eq(Mux(from_writeback[c], writeback[bits], missed_or_bank))",
        "m.d.comb += stored[bits].eq(missed_or_bank)",
        "no forwarding from the write-back: an update adder_latency cycles after its word's previous "
        "request reads a stale operand"),
        TRACE_REDUCER),
    Mutant("reducer-no-forward-previous", "nmc", Patch(
        "nmc.py",
        "m.d.sync += p2_missed[bits].eq(Mux(same_as_writeback[c], writeback[bits], previous[bits]))",
        "m.d.sync += p2_missed[bits].eq(writeback[bits])",
        "no forwarding of the write-back two cycles before: the (non-transparent) bank read missed it"),
        TRACE_REDUCER),
    Mutant("reducer-hazard-window-short", "nmc", Patch(
        "nmc.py",
        "conflicts = [valid_at[k] & (addr_at[k] == request.addr) for k in range(1, L)]",
        "conflicts = [valid_at[k] & (addr_at[k] == request.addr) for k in range(1, L - 1)]",
        "hazard window one cycle short: an update enters the adder before its operand exists"),
        TRACE_REDUCER),
    Mutant("reducer-hazard-compare", "nmc", Patch(
        "nmc.py",
        "conflicts = [valid_at[k] & (addr_at[k] == request.addr) for k in range(1, L)]",
        "conflicts = [valid_at[k] & (addr_at[k][1:] == request.addr[1:]) for k in range(1, L)]",
        "hazard compare ignores the address LSB: a neighbour word's update waits for nothing"),
        TRACE_REDUCER),
    Mutant("reducer-forward-wrong-valid", "nmc", Patch(
        "nmc.py",
        "writeback_next = _matches(m, \"writeback_next\", copies, valid_at[L], addr_at[L], request.addr)",
        "writeback_next = _matches(m, \"writeback_next\", copies, valid_at[L - 1], addr_at[L], request.addr)",
        "forwarding qualified by the wrong stage's valid: forwards an idle slot's stale result"),
        TRACE_REDUCER),
    # -- arbiter ------------------------------------------------------------------------------
    Mutant("arbiter-wait-never-resets", "arbiter", Patch(
        "arbiter.py",
        "            m.d.sync += wait.eq(0)\n",
        "",
        "starvation counter never resets on a comm grant"), TRACE_ARBITER),
    Mutant("arbiter-starvation-compare", "arbiter", Patch(
        "arbiter.py",
        "starving = self.comm.valid & (wait >= self.starvation_limit)",
        "starving = self.comm.valid & (wait > self.starvation_limit)",
        "starvation limit compare >= vs >: comm waits one cycle more than the limit"), TRACE_ARBITER),
    Mutant("arbiter-threshold-compare", "arbiter", Patch(
        "arbiter.py",
        "below = self.queue_level < self.threshold",
        "below = self.queue_level <= self.threshold",
        "queue threshold compare < vs <=: comm issued with the queue at the threshold"), TRACE_ARBITER),
    Mutant("arbiter-round-robin-inverted", "arbiter", Patch(
        "arbiter.py",
        "m.d.comb += pick_comm.eq(self.comm.valid & (~self.compute.valid | last_compute))",
        "m.d.comb += pick_comm.eq(self.comm.valid & (~self.compute.valid | ~last_compute))",
        "round robin state inverted: the class granted last wins again"), TRACE_ARBITER),
    # -- fp adder -----------------------------------------------------------------------------
    Mutant("fp-ties-truncate", "fp_add", Patch(
        "fp_add.py",
        "round_up = guard & (round_bit | sticky_bit | lsb)",
        "round_up = guard & (round_bit | sticky_bit)",
        "ties truncated instead of rounded to nearest even"), FP_VECTORS),
    Mutant("fp-ties-away", "fp_add", Patch(
        "fp_add.py",
        "round_up = guard & (round_bit | sticky_bit | lsb)",
        "round_up = guard",
        "ties rounded away from zero instead of to even"), FP_VECTORS),
    Mutant("fp-sticky-dropped", "fp_add", Patch(
        "fp_add.py",
        "m.d.comb += small_aligned.eq(shifted | sticky)",
        "m.d.comb += small_aligned.eq(shifted)",
        "alignment drops the sticky bit of the shifted-out bits"), FP_VECTORS),
    Mutant("fp-normalise-past-minimum-exponent", "fp_add", Patch(
        "fp_add.py",
        'left = _leading_zeros(m, total[:SIG] | s["limit"], SIG)',
        "left = _leading_zeros(m, total[:SIG], SIG)",
        "the normalising shift is not stopped at the minimum exponent: subnormal results go wrong"),
        FP_VECTORS),
    # -- stream mux, link, slice --------------------------------------------------------------
    Mutant("mux-changes-offer", "stream_mux", Patch(
        "stream_mux.py",
        "pick_b = Mux(held, held_b, fresh_b)",
        "pick_b = fresh_b",
        "mux re-chooses every cycle: changes its offer under a waiting valid"), MUX),
    Mutant("mux-no-alternation", "stream_mux", Patch(
        "stream_mux.py",
        "fresh_b = self.b.valid & (~self.a.valid | last_a)",
        "fresh_b = self.b.valid & (~self.a.valid | ~last_a)",
        "round robin inverted: the input transferred last wins again (the other starves)"), MUX),
    Mutant("link-valid-drops-under-stall", "link", Patch(
        "link.py",
        "self.output.valid.eq((matured != 0) | maturing),",
        "self.output.valid.eq(maturing),",
        "link drops output.valid after one cycle of stall (only the maturing beat is offered)"), LINK),
    Mutant("link-too-fast", "link", Patch(
        "link.py",
        "m.d.sync += cooldown.eq(self._cycles_per_beat - 1)",
        "m.d.sync += cooldown.eq(self._cycles_per_beat - 2)",
        "bandwidth off by one: the link accepts a beat one cycle early"), LINK),
    Mutant("slice-grant-waits-arm-ready", "t3_slice", Patch(
        "t3_slice.py",
        "tracker_ok = ~counted | tracker.update.ready",
        "tracker_ok = ~counted | tracker.arm.ready",
        "bank grant waits on the tracker's arm.ready (trigger slots) instead of update.ready: deadlock"),
        SLICE),
    Mutant("slice-dma-read-ignores-grant", "t3_slice", Patch(
        "t3_slice.py",
        "engine.mem_read.ready.eq(comm_mux.b.ready),",
        "engine.mem_read.ready.eq(comm_mux.b.valid),",
        "DMA read counted as issued when only requested, not granted: beats skipped"), SLICE),
    Mutant("slice-read-before-writes-land", "t3_slice", Patch(
        "t3_slice.py",
        "for stage in range(nmc.write_latency - nmc.read_latency):",
        "for stage in range(nmc.write_latency - nmc.read_latency - 1):",
        "reads the bank one cycle early: a read granted right after a write misses it"),
        SLICE),
    Mutant("slice-update-source-swapped", "t3_slice", Patch(
        "t3_slice.py",
        "tracker.update.payload.source.eq(Mux(held_comm, UpdateSource.REMOTE, UpdateSource.LOCAL)),",
        "tracker.update.payload.source.eq(Mux(held_comm, UpdateSource.LOCAL, UpdateSource.REMOTE)),",
        "tracker told a remote update is local and vice versa (status counters swapped)"), RING_THEN_SLICE,
        note="the ring tests (n4-tiles12, run first) pass: in a ring reduce-scatter every GPU counts as many "
             "local writes as remote updates, (N-1) chunks of beats each, so the swapped end-of-run counters "
             "still match; the slice's trace run and bench, which compare status every cycle, kill it"),
    # -- found by the review of the trace runs (sticky tiles, ingress stores, ring wiring) --
    Mutant("tracker-err-rearm-tile-not-sticky", "tracker", Patch(
        "tracker.py", "with m.If(arm_busy & ~err_rearm):", "with m.If(arm_busy):",
        "the re-arm error's tile is overwritten by a later re-arm (the first offender is lost)"), TRACE_TRACKER),
    Mutant("tracker-err-unarmed-tile-not-sticky", "tracker", Patch(
        "tracker.py", "with m.If(s1_unarmed & ~err_unarmed):",
        "with m.If(s1_unarmed):",
        "the unarmed-update error's tile is overwritten by a later one"), TRACE_TRACKER),
    Mutant("tracker-update-armed-by-any-arm", "tracker", Patch(
        "tracker.py", "s1_armed.eq(armed_then(s1) | s1_same_arm),",
        "s1_armed.eq(armed_then(s1) | p_valid),",
        "a same-cycle arm of any tile makes an update count as armed"), TRACE_TRACKER),
    # -- rare corners with more than one witness (issue #28: found first by hypothesis runs) --
    Mutant("tracker-zero-threshold-arms-update", "tracker", Patch(
        "tracker.py", "s1_same_arm.eq(arm_take & (arm.tile == upd.tile)),",
        "s1_same_arm.eq(arm_fire & (arm.tile == upd.tile)),",
        "an update in the cycle of a zero-threshold arm of its unarmed tile counts as armed by it"), TRACE_TRACKER),
    Mutant("reducer-forward-previous-unqualified", "nmc", Patch(
        "nmc.py",
        "same_as_previous = _matches(m, \"same_as_previous\", 1, valid_at[L + 2], addr_at[L + 2], request.addr)[0]",
        "same_as_previous = _matches(m, \"same_as_previous\", 1, 1, addr_at[L + 2], request.addr)[0]",
        "forwarding from the write-back two cycles before is not qualified by its valid: an idle slot's "
        "stale result replaces the bank's word"), TRACE_REDUCER),
    Mutant("reducer-forward-compare-drops-msb", "nmc", Patch(
        "nmc.py",
        "writeback_next = _matches(m, \"writeback_next\", copies, valid_at[L], addr_at[L], request.addr)",
        "writeback_next = _matches(m, \"writeback_next\", copies, valid_at[L], addr_at[L][:-1], request.addr[:-1])",
        "the write-back forwarding compare drops the address MSB: a word half the bank away takes "
        "another word's result"), TRACE_REDUCER),
    Mutant("tracker-trigger-fifo-one-short", "tracker", Patch(
        "tracker.py", "return Mux(pointer == mem_depth - 1, 0, pointer + 1)",
        "return Mux(pointer == mem_depth - 2, 0, pointer + 1)",
        "trigger queue one entry shorter than the reservations it backs"), TRACE_TRACKER),
    # -- timing with margin (issue #28 item 7): the trigger queue's head register, the
    # configuration choice made before ``complete``, the slice's data chosen after its register --
    Mutant("tracker-head-skips-memory", "tracker", Patch(
        "tracker.py", "from_memory = queue_level != 0",
        "from_memory = queue_level > 1",
        "a trigger entering the queue overtakes the one word waiting in its memory (out of order)"), TRACE_TRACKER),
    Mutant("tracker-config-ignores-freeing-completion", "tracker", Patch(
        "tracker.py", "m.d.comb += takes_arm.eq(Mux(complete, takes_arm_freed, takes_arm_early))",
        "m.d.comb += takes_arm.eq(takes_arm_early)",
        "an update accepted with a legal arm of its tile, made legal by S2's completion of that tile, counts "
        "against the old threshold"), TRACE_TRACKER),
    Mutant("slice-held-data-other-class", "t3_slice", Patch(
        "t3_slice.py", "nmc.request.payload.data.eq(Mux(held_comm, held_data_comm, held_data_compute)),",
        "nmc.request.payload.data.eq(Mux(held_comm, held_data_compute, held_data_comm)),",
        "the issued write carries the other class's data register"), SLICE),
    Mutant("slice-ingress-store-as-update", "t3_slice", Patch(
        "t3_slice.py", "comm_mux.a.payload.kind.eq(Mux(packet.op == WriteOp.UPDATE, MemKind.UPDATE, MemKind.STORE)),",
        "comm_mux.a.payload.kind.eq(MemKind.UPDATE),",
        "an incoming store is applied as an update (added, not written)"), SLICE),
    Mutant("slice-ingress-store-untracked", "t3_slice", Patch(
        "t3_slice.py", "comm_mux.a.payload.tracked.eq(1),",
        "comm_mux.a.payload.tracked.eq(packet.op == WriteOp.UPDATE),",
        "an incoming store is not counted by the tracker"), SLICE),
    Mutant("slice-notify-dropped-when-table-busy", "t3_slice", Patch(
        "t3_slice.py", "self.notify.valid.eq(tracker.trigger.valid & notify),",
        "self.notify.valid.eq(tracker.trigger.valid & notify & table.trigger.ready),",
        "a notify-only trigger waits for the command table it does not use"), SLICE),
    # -- timing with margin, block-RAM words into flip-flops: the reducer's read port chooses
    # the write-backs it missed after its register; the command table's queue takes the
    # looked-up word in a tail register and chooses a same-cycle program's descriptor after it --
    Mutant("reducer-read-misses-next-writeback", "nmc", Patch(
        "nmc.py", "m.d.comb += self.read.data.eq(Mux(missed_next, previous, Mux(missed_then, earlier, read_word)))",
        "m.d.comb += self.read.data.eq(Mux(missed_then, earlier, read_word))",
        "a read misses the write-back of the cycle after it (its word was registered before it landed)"),
        TRACE_REDUCER),
    Mutant("reducer-read-misses-own-cycle-writeback", "nmc", Patch(
        "nmc.py", "m.d.comb += self.read.data.eq(Mux(missed_next, previous, Mux(missed_then, earlier, read_word)))",
        "m.d.comb += self.read.data.eq(Mux(missed_next, previous, read_word))",
        "a read misses the write-back of its own cycle (the block RAM's read is not transparent)"),
        TRACE_REDUCER),
    Mutant("dma-table-program-after-trigger", "dma_path", Patch(
        "dma_table.py", "s1_take_programmed.eq(prog_ok & (prog.index == trig.dma_cmd)),",
        "s1_take_programmed.eq(0),",
        "a trigger takes its descriptor as it was before a program accepted in the same cycle"), TRACE_DMA),
    Mutant("fifo-tail-read-also-moves", "dma_path", Patch(
        "fifo.py", "move = copy & ~tail_read",
        "move = copy",
        "the newest entry, read straight from its register, also moves into the RAM: read twice"),
        ("tests/test_fifo.py", *TRACE_DMA)),
    # (the two below were proposed by the review of the change, which refuted them with miters)
    Mutant("reducer-read-older-writeback-wins", "nmc", Patch(
        "nmc.py", "m.d.comb += self.read.data.eq(Mux(missed_next, previous, Mux(missed_then, earlier, read_word)))",
        "m.d.comb += self.read.data.eq(Mux(missed_then, earlier, Mux(missed_next, previous, read_word)))",
        "two write-backs to the read's word, in its cycle and the next: the older one wins"), TRACE_REDUCER),
    Mutant("dma-table-takes-refused-program", "dma_path", Patch(
        "dma_table.py", "s1_take_programmed.eq(prog_ok & (prog.index == trig.dma_cmd)),",
        "s1_take_programmed.eq(self.program.valid & (prog.index == trig.dma_cmd)),",
        "a trigger takes the refused (bad) descriptor of a program in its cycle instead of the stored one"),
        TRACE_DMA),
    # -- the memory beyond the slice (issue #27: a DRAM-like memory in the ring's harness) --
    Mutant("slice-grant-ignores-dram-ready", "t3_slice", Patch(
        "t3_slice.py", "grant_ready = free & self.dram_ready if self._dram_ready else free",
        "grant_ready = free",
        "the slice grants while the memory beyond holds the offer (a bank still opening its row)"),
        ("tb/slice/test_slice.py::test_trace_slice",)),
    Mutant("slice-register-kept-when-memory-holds", "t3_slice", Patch(
        "t3_slice.py", "with m.If(free if self._dram_ready else arbiter.grant.ready):",
        "with m.If(arbiter.grant.ready):",
        "an issued request stays in the register while the memory holds the next offer: issued twice"),
        ("tb/slice/test_slice.py::test_trace_slice",)),
    Mutant("link-matured-reset-less", "link", Patch(
        "link.py", "matured = Signal(range(self._depth + 1))",
        "matured = Signal(range(self._depth + 1), reset_less=True)",
        "the link's count of matured beats survives a reset"), (*TRACE_RING, *LINK[:1]),
        env={"TRACE_CYCLES": "60000"}),
    Mutant("ring-threshold-miswired", "t3_ring", Patch(
        "ring.py", "slice_.threshold.eq(self.threshold)", "slice_.threshold.eq(self.starvation_limit)",
        "the ring wires the starvation limit into every slice's queue threshold"), TRACE_RING,
        env={"TRACE_CYCLES": "60000"}),
    Mutant("gemm-source-release-early", "gemm_source", Patch(
        "gemm_source.py",
        "release = holding & drained",
        "release = holding",
        "a wave releases its stores before the previous wave's have passed (no output buffer)"), GEMM_SOURCE),
    Mutant("gemm-source-step-needs-one-beat-less", "gemm_source", Patch(
        "gemm_source.py",
        "(buffered >= wave_tiles)",
        "(buffered + 1 >= wave_tiles)",
        "a k-step starts one operand beat short"), GEMM_SOURCE),
    Mutant("gemm-source-credits-swapped", "gemm_source", Patch(
        "gemm_source.py",
        "remote_credit.eq(remote_credit - remote_used + Mux(release, wave_remote << beats, 0)),",
        "remote_credit.eq(remote_credit - remote_used + Mux(release, (wave_tiles - wave_remote) << beats, 0)),",
        "stage-1 tiles' credits computed as the local tiles'"), GEMM_SOURCE),
    Mutant("gemm-source-step-counter-narrow", "gemm_source", Patch(
        "gemm_source.py", "step = Signal(8)", "step = Signal(5)",
        "the k-step counter is 5 bits for the 8-bit read_beats_per_tile: a tile of 33 k-steps or more never ends"),
        GEMM_SOURCE),
    Mutant("gemm-source-read-counter-narrow", "gemm_source", Patch(
        "gemm_source.py", "reads_width = tw + 8", "reads_width = tw + 7",
        "the read counters are one bit short of tiles x read_beats_per_tile at the fields' tops: a GEMM of "
        "more than 2**19 reads stops reading after the wrapped count (found by the review)"), GEMM_SOURCE),
    Mutant("gemm-source-cycle-counter-narrow", "gemm_source", Patch(
        "gemm_source.py", "left = Signal(12)", "left = Signal(9)",
        "the k-step's cycle counter is 9 bits for the 12-bit step_cycles: a k-step computes step_cycles mod 512 "
        "cycles"), GEMM_SOURCE),
)


# -- applying ---------------------------------------------------------------------------------

def apply_patch(text: str, patch: Patch, *, where: str = "") -> str:
    """``text`` with ``patch.old`` replaced; it must occur exactly once and change something."""
    count = text.count(patch.old)
    if count != 1:
        raise ValueError(f"{where or patch.file}: mutant patch must match exactly once, matched {count} times: "
                         f"{patch.old!r}")
    if patch.old == patch.new:
        raise ValueError(f"{where or patch.file}: mutant patch changes nothing: {patch.old!r}")
    return text.replace(patch.old, patch.new)


def source_files(root: Path = REPO_ROOT) -> list[str]:
    """Tracked files and untracked files git does not ignore, relative to ``root``."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=root, check=True, capture_output=True).stdout.decode()
    files = []
    for name in sorted(set(filter(None, out.split("\0")))):
        if name.split("/", 1)[0] in EXCLUDED_TOP or not (root / name).is_file():
            continue   # excluded, or deleted in the work tree
        files.append(name)
    return files


def scratch_copy(dest: Path, root: Path = REPO_ROOT) -> Path:
    """Copy the work tree's source files to ``dest`` (emptied first)."""
    if dest.exists():
        shutil.rmtree(dest)
    for name in source_files(root):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return dest


def check_mutant(mutant: Mutant, root: Path = REPO_ROOT) -> str:
    """The mutated text of the mutant's file in ``root``; raises if the patch does not apply."""
    path = root / mutant.file
    return apply_patch(path.read_text(), mutant.patch, where=f"{mutant.id}: {mutant.file}")


def collect_selections(selections: list[tuple[str, ...]]) -> dict[str, int]:
    """Tests each selection collects (``pytest --collect-only`` in this process, no simulation)."""
    import pytest

    class Count:
        items = 0

        def pytest_collection_finish(self, session):
            Count.items = len(session.items)

    counts = {}
    for selection in selections:
        Count.items = 0
        with contextlib.redirect_stdout(io.StringIO()):
            rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", str(REPO_ROOT),
                              *selection], plugins=[Count()])
        counts[" ".join(shlex.quote(a) for a in selection)] = Count.items if rc in (0, 5) else -1
    return counts


# -- running ----------------------------------------------------------------------------------

_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$")


def _env(mutant: Mutant | None, folder: Path, seed: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"AMARANTH_USE_YOSYS": "builtin", "SEED": str(seed), "TRACE_CYCLES": str(DEFAULT_TRACE_CYCLES),
                "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1",
                "COLUMNS": "1000"})   # pytest's summary line keeps the whole failure message
    # Every copy shares this checkout's caches: both are keyed by content (a mutated RTL source
    # changes the conversion's key, a mutated design its C++), so a mutant never reads another's.
    env.setdefault(VERILOG_CACHE_ENV, str(TEST_VERILOG_CACHE))
    env.setdefault("CCACHE_DIR", str(DEFAULT_CCACHE_DIR))
    if mutant is not None:
        env.update({k: str(v) for k, v in mutant.env.items()})
    return env


def run_selection(folder: Path, selection: tuple[str, ...], env: dict, timeout_s: int, log: Path) -> dict:
    """Run pytest on ``selection`` in ``folder``; stop at the first failure."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *selection]
    started = time.perf_counter()
    with open(log, "w") as out:
        out.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        out.flush()
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)   # only the group this run started
            rc = proc.wait()
            timed_out = True
    seconds = time.perf_counter() - started
    text = log.read_text(errors="replace")
    failed, reason = "", ""
    for line in text.splitlines():
        hit = _FAILED.match(line)
        if hit:
            failed, reason = hit.group(2), (hit.group(3) or "").strip()
            break
    passed = re.search(r"(\d+) passed", text)
    return {"rc": rc, "timed_out": timed_out, "seconds": round(seconds, 1), "failed": failed,
            "reason": reason[:240], "passed": int(passed.group(1)) if passed else 0,
            "no_tests": rc == 5}


def run_mutant(mutant: Mutant, *, seed: int, keep: bool = False) -> dict:
    folder = SCRATCH / mutant.id
    log = SCRATCH / f"{mutant.id}.log"
    SCRATCH.mkdir(parents=True, exist_ok=True)
    scratch_copy(folder)
    target = folder / mutant.file
    target.write_text(check_mutant(mutant, folder))
    run = run_selection(folder, mutant.selection, _env(mutant, folder, seed), mutant.timeout_s, log)
    if run["no_tests"]:
        result, killed_by = "error", "selection collected no tests"
    elif run["timed_out"]:
        result, killed_by = "killed", f"timeout after {mutant.timeout_s} s"
    elif run["rc"] == 0:
        result, killed_by = "survived", ""
    elif run["failed"]:
        result, killed_by = "killed", run["failed"]
    else:
        result, killed_by = "error", f"pytest exit {run['rc']} with no failed test (see {log})"
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    return {"id": mutant.id, "block": mutant.block, "file": mutant.file, "bug": mutant.bug,
            "old": mutant.patch.old, "new": mutant.patch.new, "selection": mutant.selection_text,
            "env": {"TRACE_CYCLES": str(DEFAULT_TRACE_CYCLES), **{k: str(v) for k, v in mutant.env.items()}},
            "result": result, "killed_by": killed_by, "reason": run["reason"], "seconds": run["seconds"],
            "passed_before_kill": run["passed"], "note": mutant.note, "log": str(log)}


def run_baseline(selections: list[tuple[str, ...]], *, seed: int) -> list[dict]:
    """Run each selection on the unmutated work tree copy; every one must pass."""
    folder = SCRATCH / "baseline"
    SCRATCH.mkdir(parents=True, exist_ok=True)
    scratch_copy(folder)
    rows = []
    for i, selection in enumerate(selections):
        log = SCRATCH / f"baseline-{i}.log"
        run = run_selection(folder, selection, _env(None, folder, seed), DEFAULT_TIMEOUT_S, log)
        ok = run["rc"] == 0
        text = " ".join(shlex.quote(a) for a in selection)
        print(f"baseline {'pass' if ok else 'FAIL'} {run['seconds']:7.1f} s  {text}", flush=True)
        rows.append({"selection": text, "passed": ok, "tests": run["passed"], "seconds": run["seconds"],
                     "failed": run["failed"], "log": str(log)})
    shutil.rmtree(folder, ignore_errors=True)
    return rows


# -- reporting --------------------------------------------------------------------------------

def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def merge_rows(rows: list[dict], out: Path = RESULTS) -> list[dict]:
    """``rows`` merged into the last report's rows by id (for ``--only``), in :data:`MUTANTS` order."""
    path = out / "mutation.json"
    by_id = {}
    if path.exists():
        by_id = {r["id"]: r for r in json.loads(path.read_text()).get("results", [])}
    by_id.update({r["id"]: r for r in rows})
    order = [m.id for m in MUTANTS]
    return [by_id[i] for i in order if i in by_id]


def write_report(rows: list[dict], *, seed: int, total_s: float, baseline: list[dict] | None,
                 out: Path = RESULTS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    killed = sum(r["result"] == "killed" for r in rows)
    payload = {"seed": seed, "trace_cycles": DEFAULT_TRACE_CYCLES, "total_s": round(total_s, 1),
               "killed": killed, "mutants": len(rows), "baseline": baseline, "results": rows}
    (out / "mutation.json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = [
        "# Mutation check of the test suite (`make mutate`)",
        "",
        f"{killed} of {len(rows)} mutants killed; SEED={seed}, TRACE_CYCLES={DEFAULT_TRACE_CYCLES:,} "
        f"(unless a mutant sets its own); {total_s / 60:.1f} min in all, one mutant at a time.",
        "",
        "Each mutant is one realistic bug patched into a scratch copy of the sources (`tb/mutate.py`); the "
        "selection runs with `pytest -x`, so *seconds* is the time to the first failing test (the whole "
        "selection for a survivor). *Killed by* names that test; the reason is its first failure line "
        "(`sim_results/mutation.json` has the patches).",
        "",
        "| id | block | bug | selection | result | killed by | s |",
        "|---|---|---|---|---|---|---:|",
    ]
    for r in rows:
        killer = r["killed_by"]
        if r["reason"]:
            killer = f"{killer}: {r['reason'][:140]}"
        lines.append(f"| {r['id']} | {r['block']} | {_cell(r['bug'])} | `{_cell(r['selection'])}` | "
                     f"**{r['result']}** | {_cell(killer)} | {r['seconds']:.0f} |")
    notes = [r for r in rows if r.get("note")]
    if notes:
        lines += ["", "Notes:", ""] + [f"* **{r['id']}**: {r['note']}." for r in notes]
    if baseline:
        lines += ["", "Baseline (unmutated sources; every selection must pass):", "",
                  "| selection | result | tests | s |", "|---|---|---:|---:|"]
        for b in baseline:
            lines.append(f"| `{_cell(b['selection'])}` | {'pass' if b['passed'] else 'FAIL'} | {b['tests']} | "
                         f"{b['seconds']:.0f} |")
    (out / "mutation.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb.mutate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", metavar="REGEX", help="run the mutants whose id matches (re.search)")
    parser.add_argument("--list", action="store_true", help="list the mutants, check they apply, run nothing")
    parser.add_argument("--baseline", action="store_true",
                        help="first run every distinct selection unmutated (must pass)")
    parser.add_argument("--baseline-only", action="store_true", help="run only the baseline, write nothing")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("SEED") or 1))
    parser.add_argument("--collect", action="store_true",
                        help="print the number of tests each distinct selection collects (JSON), run nothing")
    parser.add_argument("--no-report", action="store_true", help="do not write sim_results/mutation.*")
    args = parser.parse_args(argv)

    mutants = [m for m in MUTANTS if not args.only or re.search(args.only, m.id)]
    if not mutants:
        parser.error(f"no mutant matches {args.only!r}")
    errors = []
    for m in mutants:
        try:
            check_mutant(m)
        except ValueError as exc:
            errors.append(str(exc))
    if args.collect:
        os.chdir(REPO_ROOT)
        print(json.dumps(collect_selections(list(dict.fromkeys(m.selection for m in mutants)))))
        return 0
    if args.list:
        for m in mutants:
            print(f"{m.id:34s} {m.block:11s} {m.file:20s} {m.bug}\n{'':34s} pytest {m.selection_text}")
        for e in errors:
            print(f"error: {e}")
        return 1 if errors else 0
    if errors:   # a mutant that no longer applies is an error, never silently skipped
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        return 2

    started = time.perf_counter()
    baseline = None
    if args.baseline or args.baseline_only:
        selections = list(dict.fromkeys(m.selection for m in mutants))
        baseline = run_baseline(selections, seed=args.seed)
        if not all(b["passed"] for b in baseline):
            print("error: a selection fails on the unmutated sources; mutants would be killed for the wrong "
                  "reason", file=sys.stderr)
            return 2
        if args.baseline_only:
            return 0
    rows = []
    for m in mutants:
        print(f"mutant {m.id} ({m.block}): pytest {m.selection_text}", flush=True)
        row = run_mutant(m, seed=args.seed, keep=args.keep)
        rows.append(row)
        print(f"  -> {row['result']} in {row['seconds']:.1f} s  {row['killed_by']}  {row['reason'][:100]}", flush=True)
    total = time.perf_counter() - started
    if not args.no_report:
        if args.only:   # a partial run updates its rows of the last table
            merged = merge_rows(rows)
            write_report(merged, seed=args.seed, total_s=sum(r["seconds"] for r in merged), baseline=baseline)
        else:
            write_report(rows, seed=args.seed, total_s=total, baseline=baseline)
    killed = sum(r["result"] == "killed" for r in rows)
    print(f"{killed} of {len(rows)} mutants killed in {total:.0f} s")
    for r in rows:
        if r["result"] != "killed":
            print(f"  {r['result'].upper()}: {r['id']}: {r['bug']}  (log {r['log']})")
    return 0 if killed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
