# amaranth: UnusedElaboratable=no
"""Formal check of the DMA path (command table -> engine) with small parameters.

Every input is free: programs, triggers (of programmed or unprogrammed descriptors,
valid or refused ones), ``egress.ready`` (the link may refuse for ever) and the memory's
data. The one environment obligation assumed is the memory's: ``mem_read.data`` is the
word at the address read one cycle before, and the word at address *a* is *a* itself, so
that each beat's data names the source address it was read from.

The harness keeps, from the ports only, a shadow of the table (descriptor and
programmed bit per index; a program takes effect before a trigger in the same cycle, and
a descriptor of 0 or more than ``max_beats`` beats is refused) and ``owed``: the beats of
accepted triggers of programmed descriptors not yet taken by ``egress``. It asserts:

* no egress beat, and so no ``done``, without a beat owed (no beat invented or
  duplicated, no done without a trigger);
* the watched command's beats: the harness watches one accepted trigger, chosen by a free
  input (so the solver tries every trigger), remembers its descriptor and the beats owed
  ahead of it; its beat *k* (counting only beats taken by ``egress``, so back-pressure
  cannot hide a drop or a duplicate) goes to ``dst_addr + k`` on ``dst_port`` with ``op``,
  carries the word of ``src_addr + k``, has ``last`` exactly when ``k == beats - 1``, and
  ``done`` pulses with the command's index exactly with that last beat; once all its beats
  are out, the next beat belongs to a later trigger (nothing left of it);
* ``done`` pulses only in a cycle where ``egress`` takes a beat with ``last``;
* egress is never left without an offer for ``issue_latency`` cycles while a beat is
  owed: a dropped beat is a beat owed that never comes.

This is bounded: every trace of ``depth`` cycles from power-up. Reset is held low (a
reset drops the commands in flight by design). A path whose engine issues one beat
too few, one whose beat buffer overflows (drops a beat) under back-pressure, and one that
repeats ``done`` while its last beat is back-pressured must be refuted.
"""

from __future__ import annotations

import importlib

import pytest
from amaranth.hdl import Array, Assert, Assume, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.lib.wiring import Flow

from tb.formal.engine import prove
from tb.formal.variants import Patch, load_variant

#: The path under test: two descriptors, transfers of 1..3 beats, 4-bit addresses.
PATH_PARAMS = dict(commands=2, tile_width=1, addr_width=4, data_width=8, max_beats=3, port_width=1,
                   queue_depth=2, read_latency=1)

#: Cycles of every trace the fast test checks (5 s; ``make formal`` goes to 14, 90 s): the
#: path's issue latency (5), a whole 3-beat command, back-pressure and a second command.
BMC_DEPTH = 10

#: Paths that must fail the check.
BROKEN = {
    "one_beat_short": (Patch(
        "dma_engine.py", "issue_last.eq(issue & (left == 1)),", "issue_last.eq(issue & (left == 2)),",
        "the engine stops one beat early on commands of 2+ beats"),),
    "drops_under_back_pressure": (Patch(
        "dma_engine.py", "kept.eq(reserved - (self.egress.valid & self.egress.ready))",
        "kept.eq(buffer.level - (self.egress.valid & self.egress.ready))",
        "reads ignore the read in flight: a full buffer under back-pressure drops a beat"),),
    "done_while_offered": (Patch(
        "dma_engine.py", "self.done.valid.eq(egress_fire & beat_out.packet.last),",
        "self.done.valid.eq(self.egress.valid & beat_out.packet.last),",
        "done pulses while the last beat is offered: one per back-pressured cycle"),),
}

#: Cycles the broken paths are checked over: the overflow needs two commands queued behind
#: a back-pressured egress, and its missing beat is seen issue_latency cycles later.
REFUTE_DEPTH = 14


class Harness(Elaboratable):
    def __init__(self, *, rtl=None, false_property: bool = False):
        dma_path = importlib.import_module(f"{rtl.__name__}.dma_path" if rtl else "rtl.dma_path")
        self.path = dma_path.DmaPath(**PATH_PARAMS)
        self.watch_next = Signal()  # free: watch the trigger accepted in this cycle
        self.false_property = false_property

    def ports(self):
        """The free inputs only: outputs left unused (the status counters) are then pruned
        from the netlist instead of slowing the solver."""
        inputs = (Value.cast(v) for _, flow, v in self.path.signature.flatten(self.path) if flow.flow == Flow.In)
        return [self.watch_next, *inputs]

    def elaborate(self, platform):
        m = Module()
        m.submodules.path = p = self.path
        table = p.table
        m.d.comb += Assume(~ResetSignal())

        # The memory: the word at address a is a, one cycle after the read.
        read_addr = Signal.like(p.mem_read.addr)
        m.d.sync += read_addr.eq(p.mem_read.addr)
        m.d.comb += Assume(p.mem_read.data == read_addr)

        # Shadow of the table.
        desc_layout = table.descriptor_layout
        shadow = Array(Signal(desc_layout, name=f"shadow{i}") for i in range(table.commands))
        programmed = Array(Signal(name=f"programmed{i}") for i in range(table.commands))
        prog, trig = p.program.payload, p.trigger.payload
        beats = prog.desc.beats
        prog_ok = p.program.valid & p.program.ready & (beats != 0) & (beats <= table.max_beats)
        with m.If(prog_ok):
            m.d.sync += [shadow[prog.index].eq(prog.desc), programmed[prog.index].eq(1)]
        same = prog_ok & (prog.index == trig.dma_cmd)
        trig_desc = Signal(desc_layout)
        m.d.comb += trig_desc.eq(Mux(same, prog.desc, shadow[trig.dma_cmd]))
        trig_fire = p.trigger.valid & p.trigger.ready
        accepted = trig_fire & (same | programmed[trig.dma_cmd])

        egress = p.egress
        beat = egress.valid & egress.ready
        owed = Signal(range(4 * table.max_beats * (table.queue_depth + 3)))
        m.d.sync += owed.eq(owed + Mux(accepted, trig_desc.beats, 0) - beat)
        m.d.comb += [Assert(~beat | (owed != 0), "no egress beat without a beat owed"),
                     Assert(~p.done.valid | (beat & egress.payload.last), "done only with a taken final beat")]
        # A dropped beat shows as a beat owed that never comes: egress is never left without
        # an offer for issue_latency cycles while beats are owed (the first beat of a
        # transfer to an idle path takes that long).
        starved = Signal(range(p.issue_latency + 1))
        with m.If((owed != 0) & ~egress.valid):
            m.d.sync += starved.eq(Mux(starved == p.issue_latency, starved, starved + 1))
        with m.Else():
            m.d.sync += starved.eq(0)
        m.d.comb += Assert(starved < p.issue_latency, "egress offered a beat within issue_latency of one owed")

        # The watched command.
        watching = Signal()
        w_desc = Signal(desc_layout)
        w_cmd = Signal.like(trig.dma_cmd)
        ahead = Signal.like(owed)     # beats owed to earlier commands
        sent = Signal(range(table.max_beats + 1))
        start = accepted & self.watch_next & ~watching
        with m.If(start):
            m.d.sync += [watching.eq(1), w_desc.eq(trig_desc), w_cmd.eq(trig.dma_cmd),
                         ahead.eq(owed - beat), sent.eq(0)]
        mine = watching & (ahead == 0) & beat
        with m.If(watching & beat):
            with m.If(ahead != 0):
                m.d.sync += ahead.eq(ahead - 1)
            with m.Else():
                m.d.sync += sent.eq(sent + 1)
                with m.If(sent + 1 == w_desc.beats):
                    m.d.sync += watching.eq(0)
        packet = egress.payload
        last_one = sent + 1 == w_desc.beats
        addr_mask = (1 << table.addr_width) - 1
        m.d.comb += [
            Assert(~mine | (packet.dst_addr == ((w_desc.dst_addr + sent) & addr_mask)), "consecutive destinations"),
            Assert(~mine | (packet.data == ((w_desc.src_addr + sent) & addr_mask)), "consecutive sources"),
            Assert(~mine | ((packet.dst_port == w_desc.dst_port) & (packet.op == w_desc.op)), "port and op kept"),
            Assert(~mine | (packet.last == last_one), "last on the final beat only"),
            Assert(~mine | (p.done.valid == last_one), "done exactly with the final beat"),
            Assert(~mine | ~p.done.valid | (p.done.payload.dma_cmd == w_cmd), "done names the command"),
            Assert(~watching | (sent < w_desc.beats), "no beat of the command after its last"),
            Assert(~watching | (ahead + w_desc.beats <= owed + sent), "the command's unsent beats are still owed"),
        ]
        if self.false_property:
            m.d.comb += Assert(~(mine & last_one & (w_desc.beats == table.max_beats)),
                               "deliberately false: no full-length command completes")
        return m


def check(harness: Harness, tmp_path, depth: int = BMC_DEPTH):
    return prove(harness, harness.ports(), tmp_path, mode="bmc", depth=depth)


def test_dma_path_contract_holds(tmp_path):
    result = check(Harness(), tmp_path)
    assert result.proven, result.log[-4000:]


def test_set_up_completes_a_full_command(tmp_path):
    result = check(Harness(false_property=True), tmp_path)
    assert result.refuted, result.log[-4000:]


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_dma_path_is_refuted(name, tmp_path):
    result = check(Harness(rtl=load_variant(BROKEN[name])), tmp_path, depth=REFUTE_DEPTH)
    assert result.refuted, result.log[-4000:]


def test_broken_patches_still_apply():
    """A patch that no longer matches the RTL raises, instead of testing the unpatched path."""
    for patches in BROKEN.values():
        assert load_variant(patches).__name__.startswith("rtl_variant_")
