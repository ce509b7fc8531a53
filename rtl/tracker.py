"""T3 tracker table: counts the writes to each in-flight output tile and triggers its DMA.

In T3 the tracker sits at a memory controller. Every write that enters the controller for
the producer GEMM's output carries the id of the tile it belongs to. The tracker counts the
local stores of the GEMM and the remote "update" writes arriving from the previous GPU of
the ring; when a tile's count reaches the threshold programmed when it was armed, the
tracker emits a trigger naming the pre-programmed DMA command that forwards the tile.
"""

from __future__ import annotations

import random

from amaranth.hdl import Const, Elaboratable, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .params import check_int, check_power_of_two

__all__ = ["UpdateSource", "TrackerTable"]

#: Width of the event counters in :attr:`TrackerTable.status`; they wrap modulo 2**32.
STATUS_COUNTER_WIDTH = 32


class UpdateSource(enum.Enum, shape=1):
    """Origin of a write seen by the tracker."""

    #: A store of the producer GEMM on this GPU.
    LOCAL = 0
    #: An "update" write arriving from the previous GPU of the ring.
    REMOTE = 1


class TrackerTable(wiring.Component):
    """Direct-mapped table of write counters, one entry per in-flight output tile.

    Each entry holds *armed*, the *count* of writes seen, the *threshold* and the index of
    the DMA command (*dma_cmd*) to fire. Counts, thresholds and command indices live in
    :class:`amaranth.lib.memory.Memory` so that they map to block RAM. The per-entry armed
    bits are flip-flops, like the valid bits of a cache: each request's bit is looked up at
    the edge that accepts it, and corrected in the next cycle by the arms and completions
    the vector does not show yet (see :meth:`elaborate`).

    Semantics
    ---------
    * ``arm`` (``{tile, threshold, dma_cmd}``) arms an entry. Every armed entry *reserves*
      one slot of the trigger queue for the trigger it will emit, so ``arm.ready`` is low
      while ``armed_entries`` plus the queued triggers fill the queue (and during the reset
      sweep); otherwise it is high. An arm accepted at a clock edge counts in
      ``armed_entries`` from the next cycle on, so it holds its slot from that cycle's
      ``arm.ready`` on. In the cycle an arm is accepted it takes effect *before* an update
      accepted in the same cycle, so the driver may arm a tile while the GEMM already
      writes to it. An arm with ``threshold == 0`` or of an entry that is still armed sets a
      sticky error and leaves the table unchanged.
    * ``update`` (``{tile, source}``) is one write seen at the memory controller. It adds
      one to the tile's count. When the count reaches the threshold the entry frees itself
      at once (a later arm of the same tile, even in the next cycle, is legal) and a
      trigger ``{tile, dma_cmd}`` is queued in the slot its arm reserved. The completed
      entry stays in ``armed_entries`` (its reservation) until its trigger enters the queue,
      ``trigger_latency - 1`` clock edges after the edge that accepted its last update. An
      update of an unarmed entry sets a sticky error and is otherwise ignored.
    * ``update.ready`` is high in every cycle after the reset sweep. Because triggers only
      ever fill reserved slots, counting a write never waits for the trigger queue to
      drain. This is what keeps a T3 slice live: the writes the tracker counts share the
      DRAM grant with the DMA reads that drain the trigger queue (see
      :class:`~rtl.t3_slice.T3Slice`), so a tracker that back-pressured its updates on a
      full queue could block the very read that would empty it.
    * ``trigger`` is emitted exactly once per completed entry, in completion order.

    Reset
    -----
    The counters live in block RAM, which a reset does not clear (nor does an ASIC's SRAM
    power up at zero). After reset the table sweeps every entry's counter to zero, one
    entry per cycle, holding ``arm.ready`` and ``update.ready`` low for
    :attr:`reset_cycles` (= ``entries``) cycles; every entry is then unarmed with a zero
    count. ``status.clearing`` is high during the sweep.

    Timing
    ------
    * Latency: a trigger becomes valid :attr:`trigger_latency` (= 3) cycles after the
      clock edge that accepts its last update, when the queue ahead of it is empty.
      ``trigger.valid`` and ``trigger.payload`` come from flip-flops (the queue's head
      register, written directly when the queue is empty), so a consumer may decode the
      payload combinationally (the slice's notify split does) within its own clock period.
    * Throughput: :attr:`updates_per_cycle` (= 1) update per cycle, including back-to-back
      updates to the same tile, whatever ``trigger`` does: the counter read-modify-write
      is pipelined over the two cycles after an update's acceptance (read, then compare
      and write back), and the new count of an update still in flight is forwarded to the
      next update of its tile (no stall). Arms never cost update bandwidth; at most
      :attr:`trigger_depth` tiles are armed or awaiting their trigger's hand-out at once.

    Parameters
    ----------
    entries : int
        Number of table entries, a power of two in 2..4096 (the paper uses 256). Tile ids
        are table indices: the driver allocates in-flight tiles modulo ``entries``.
    count_width : int
        Bits of the per-entry counter and threshold, 1..32. The largest threshold is
        ``2**count_width - 1``.
    dma_cmd_width : int
        Bits of the DMA command index, 1..16.
    power_up_seed : int or None
        Simulation only: seed of the pseudo-random counts the counter memory holds at
        power-up, so that a bench shows the reset sweep clearing them (``None``: zeros).
    trigger_depth : int or None
        Entries of the trigger queue, 1..4096; also the most tiles armed or awaiting their
        trigger's hand-out at once. By default ``entries``: every entry can be armed while
        the queue still holds the triggers of as many completed tiles.

    Members
    -------
    arm : ``In(stream.Signature({tile, threshold, dma_cmd}))``
    update : ``In(stream.Signature({tile, source}))``
    trigger : ``Out(stream.Signature({tile, dma_cmd}))``
    status : ``Out(status_layout)``
        ``clearing`` (the reset sweep is running); sticky error flags, each with the first
        offending tile; the number of armed
        entries; wrapping counters of local updates, remote updates and triggers handed
        out. Each reflects the events accepted up to the previous clock edge.
    """

    def __init__(self, *, entries: int = 256, count_width: int = 16, dma_cmd_width: int = 8,
                 trigger_depth: int | None = None, power_up_seed: int | None = None):
        self._entries = check_power_of_two("entries", entries, 2, 4096)
        self._count_width = check_int("count_width", count_width, 1, 32)
        self._dma_cmd_width = check_int("dma_cmd_width", dma_cmd_width, 1, 16)
        self._trigger_depth = check_int("trigger_depth", entries if trigger_depth is None else trigger_depth,
                                        1, 4096)
        tile_width = (entries - 1).bit_length()
        self._tile_width = tile_width
        if power_up_seed is not None:
            check_int("power_up_seed", power_up_seed, 0, 2**32 - 1)
        self._power_up_seed = power_up_seed

        self.arm_layout = data.StructLayout({
            "tile": unsigned(tile_width),
            "threshold": unsigned(count_width),
            "dma_cmd": unsigned(dma_cmd_width),
        })
        self.update_layout = data.StructLayout({
            "tile": unsigned(tile_width),
            "source": UpdateSource,
        })
        self.trigger_layout = data.StructLayout({
            "tile": unsigned(tile_width),
            "dma_cmd": unsigned(dma_cmd_width),
        })
        self.status_layout = data.StructLayout({
            "clearing": 1,
            "err_unarmed_update": 1,
            "err_unarmed_update_tile": unsigned(tile_width),
            "err_rearm": 1,
            "err_rearm_tile": unsigned(tile_width),
            "err_zero_threshold": 1,
            "err_zero_threshold_tile": unsigned(tile_width),
            # Armed entries plus the completions on their way into the trigger queue.
            "armed_entries": unsigned(max(tile_width + 1, (entries + 2).bit_length())),
            "local_updates": unsigned(STATUS_COUNTER_WIDTH),
            "remote_updates": unsigned(STATUS_COUNTER_WIDTH),
            "triggers": unsigned(STATUS_COUNTER_WIDTH),
        })
        super().__init__({
            "arm": In(stream.Signature(self.arm_layout)),
            "update": In(stream.Signature(self.update_layout)),
            "trigger": Out(stream.Signature(self.trigger_layout)),
            "status": Out(self.status_layout),
        })

    # -- read-only parameters -------------------------------------------------------------

    @property
    def entries(self) -> int:
        """Number of table entries."""
        return self._entries

    @property
    def tile_width(self) -> int:
        """Bits of a tile id (``log2(entries)``)."""
        return self._tile_width

    @property
    def count_width(self) -> int:
        """Bits of a counter; thresholds range over ``1 .. 2**count_width - 1``."""
        return self._count_width

    @property
    def dma_cmd_width(self) -> int:
        """Bits of a DMA command index."""
        return self._dma_cmd_width

    @property
    def trigger_depth(self) -> int:
        """Entries of the trigger queue."""
        return self._trigger_depth

    # -- timing contract ------------------------------------------------------------------

    @property
    def trigger_latency(self) -> int:
        """Cycles from the edge accepting a tile's last update to its ``trigger.valid``.

        Holds when the trigger queue ahead of it is empty: one cycle for the memory reads
        (count, threshold and command; stage S1), one for the compare and the write-back
        (stage S2, at whose end the trigger enters the queue), one for the trigger queue.
        """
        return 3

    @property
    def reset_cycles(self) -> int:
        """Cycles after reset before ``arm`` and ``update`` are ready (the counter sweep)."""
        return self._entries

    @property
    def updates_per_cycle(self) -> int:
        """Sustained updates accepted per cycle, whatever ``trigger`` does (after the reset sweep)."""
        return 1

    # -- hardware -------------------------------------------------------------------------

    def elaborate(self, platform) -> Elaboratable:
        m = Module()
        entries, tile_width, count_width = self._entries, self._tile_width, self._count_width
        depth = self._trigger_depth

        # -- storage --------------------------------------------------------------------------
        # Counts are zero for every unarmed entry: the reset sweep writes zeros and a
        # completing update writes zero back. Arming therefore never writes the counter
        # memory, which keeps it at one write port (shared by the sweep and the write-back).
        if self._power_up_seed is None:
            power_up = []
        else:   # simulation: SRAM holds arbitrary counts at power-up; the sweep must clear them
            words = random.Random(self._power_up_seed)
            power_up = [words.getrandbits(count_width) for _ in range(entries)]
        m.submodules.count_mem = count_mem = Memory(shape=unsigned(count_width), depth=entries, init=power_up)
        count_wr = count_mem.write_port()
        # Transparent to the write-back at the reading edge (the update two ahead of the
        # reader); the update one ahead writes back one edge later and is forwarded.
        count_rd = count_mem.read_port(transparent_for=(count_wr,))

        # Thresholds are kept minus one: an update completes its entry when the count before
        # it has reached ``threshold_m1``.
        config_layout = data.StructLayout({
            "threshold_m1": unsigned(count_width),
            "dma_cmd": unsigned(self._dma_cmd_width),
        })
        m.submodules.config_mem = config_mem = Memory(shape=config_layout, depth=entries, init=[])
        config_wr = config_mem.write_port()
        # Transparent to the write of an arm resolved at the reading edge; an arm resolved
        # one edge later (the one accepted with the reading update) is forwarded.
        config_rd = config_mem.read_port(transparent_for=(config_wr,))

        # The trigger queue: its head word in a register, so that ``trigger.valid`` and
        # ``trigger.payload`` leave flip-flops and the consumer's decode of the payload (the
        # slice's notify compare, the command table's ready) starts a clock period rather than
        # ending a memory read. The other ``depth - 1`` words wait in a memory read
        # asynchronously at its head. A trigger that enters with the memory empty and the head
        # register free (empty, or handing its word out at that edge) goes straight into the
        # register: the queue behaves cycle for cycle as a first-word-fall-through queue of
        # ``depth`` words, and adds no latency.
        mem_depth = max(depth - 1, 1)
        m.submodules.trigger_queue = trigger_queue = Memory(shape=self.trigger_layout, depth=mem_depth, init=[])
        queue_wr = trigger_queue.write_port()
        queue_rd = trigger_queue.read_port(domain="comb")
        queue_head = Signal(range(mem_depth))
        queue_tail = Signal(range(mem_depth))
        queue_level = Signal(range(mem_depth + 1))      # words in the memory
        head_valid = Signal()                           # the head register holds a trigger
        head = Signal(self.trigger_layout)

        # The reset sweep: starts at reset, clears one counter per cycle.
        clearing = Signal(init=1)
        clear_addr = Signal(tile_width)
        with m.If(clearing):
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(clear_addr == entries - 1):
                m.d.sync += clearing.eq(0)

        # -- pipeline -------------------------------------------------------------------------
        # Edge E accepts an arm and an update. In the cycle after E the arm is resolved (legal,
        # or a re-arm of an armed entry) in stage P, and the update (armed or not) in stage S1
        # while its count and its entry's configuration are read. In the cycle after that the
        # update, if armed, is counted in stage S2: ``complete`` when its count reaches the
        # threshold, with the count written back and the trigger queued at the end of that
        # cycle. Both resolutions need the completion of the update accepted at E - 1, which
        # S2 computes in that very cycle; everything else they need is in registers.
        #
        # The armed bits are flip-flops. The vector takes a resolution made in cycle k at the
        # edge that ends cycle k + 1 (``commit_*`` hold it in between), so that the two late
        # resolution signals drive a few loads rather than every entry. Each lookup is
        # therefore registered at E together with the resolutions the vector does not show
        # yet (those of E's cycle and of the cycle before), to be applied oldest first.
        armed = Signal(entries)
        commit_clear = Signal()             # a completion resolved in the previous cycle
        commit_clear_tile = Signal(tile_width)
        commit_set = Signal()               # a legal arm resolved in the previous cycle
        commit_set_tile = Signal(tile_width)

        def lookup(name):
            return {
                "was_armed": Signal(name=f"{name}_was_armed"),        # the armed vector's bit
                "freed_late": Signal(name=f"{name}_freed_late"),      # completion resolved the cycle before
                "rearmed_late": Signal(name=f"{name}_rearmed_late"),  # legal arm resolved the cycle before
                "freed": Signal(name=f"{name}_freed"),                # completion resolved in E's cycle
                "rearmed": Signal(name=f"{name}_rearmed"),            # legal arm resolved in E's cycle
                "same_s2": Signal(name=f"{name}_same_s2"),            # the tile of the update now in S2
            }

        # P: the arm accepted at the previous edge.
        p_valid = Signal()          # with a threshold other than 0
        p_zero = Signal()           # with threshold 0
        p_tile = Signal(tile_width)
        p_config = Signal(config_layout)
        p = lookup("p")
        # S1: the update accepted at the previous edge.
        s1_valid = Signal()
        s1_tile = Signal(tile_width)
        s1 = lookup("s1")
        s1_same_arm = Signal()      # accepted with an arm (threshold other than 0) of its tile
        # S2: a counted update, the count of its entry before it and the entry's configuration.
        s2_valid = Signal()
        s2_tile = Signal(tile_width)
        s2_count = Signal(count_width)
        s2_config = Signal(config_layout)

        # -- S2: count ------------------------------------------------------------------------
        complete = Signal()
        count_next = Signal(count_width)
        # The count of an armed entry never passes its threshold - 1, so "reached" is a
        # magnitude compare: the borrow of one subtraction (a carry chain), faster than the
        # tree of LUTs of an equality.
        below_threshold = Signal(count_width + 1)      # top bit: count < threshold - 1
        m.d.comb += [
            below_threshold.eq(s2_count - s2_config.threshold_m1),
            complete.eq(s2_valid & ~below_threshold[count_width]),
            count_next.eq(Mux(complete, 0, s2_count + 1)),
        ]

        def armed_then(r, *, assume_complete=True):
            # Armed as of the edge that accepted the request (before an arm of that edge);
            # ``assume_complete=False``: not counting S2's completion in this cycle.
            seen = (((r["was_armed"] & ~r["freed_late"]) | r["rearmed_late"]) & ~r["freed"]) | r["rearmed"]
            return seen & ~(complete & r["same_s2"]) if assume_complete else seen

        # -- P: resolve the arm ---------------------------------------------------------------
        p_armed = armed_then(p)
        arm_ok = Signal()
        arm_busy = Signal()
        m.d.comb += [arm_ok.eq(p_valid & ~p_armed), arm_busy.eq(p_valid & p_armed)]

        # -- S1: resolve the update -----------------------------------------------------------
        s1_armed = Signal()
        s1_counted = Signal()
        s1_unarmed = Signal()
        # An update accepted with an arm of its tile is armed whatever the arm's fate: the arm
        # either arms the entry or is refused because the entry is armed already (both
        # lookups are of one tile at one edge), so ``arm_ok`` need not be waited for.
        m.d.comb += [
            s1_armed.eq(armed_then(s1) | s1_same_arm),
            s1_counted.eq(s1_valid & s1_armed),
            s1_unarmed.eq(s1_valid & ~s1_armed),
        ]

        # -- ports ----------------------------------------------------------------------------
        arm = self.arm.payload
        arm_fire = self.arm.valid & self.arm.ready
        arm_take = arm_fire & (arm.threshold != 0)
        upd = self.update.payload
        update_fire = self.update.valid & self.update.ready
        trigger_pop = self.trigger.valid & self.trigger.ready

        # Reserved queue slots: one per armed entry (a completion still counts until the edge
        # that moves it into the queue) and one per queued trigger. ``reserved`` holds them
        # without the arm resolved in this cycle (``arm_ok``, late), and ``room_1`` and
        # ``room_2`` whether one and two more fit, so that ``arm.ready`` is one LUT after it.
        reserved = Signal(range(depth + 1))
        room_1 = Signal(init=1)                 # reserved < depth
        room_2 = Signal(init=int(depth >= 2))   # reserved + 1 < depth
        m.d.comb += [
            self.arm.ready.eq(~clearing & Mux(arm_ok, room_2, room_1)),
            self.update.ready.eq(~clearing),
        ]

        def below(k):   # reserved + k < depth (k = -1 only with a trigger popped: reserved >= 1)
            return Const(1) if k < 0 else (reserved + k < depth)

        # Next: reserved + arm_ok - trigger_pop; each case's compare is formed from registers.
        m.d.sync += [
            reserved.eq(reserved + arm_ok - trigger_pop),
            room_1.eq(Mux(arm_ok, Mux(trigger_pop, below(0), below(1)), Mux(trigger_pop, below(-1), below(0)))),
            room_2.eq(Mux(arm_ok, Mux(trigger_pop, below(1), below(2)), Mux(trigger_pop, below(0), below(1)))),
        ]

        # -- accept: register the requests and their lookups ----------------------------------
        def register_lookup(r, tile):
            m.d.sync += [
                r["was_armed"].eq(armed.bit_select(tile, 1)),
                r["freed_late"].eq(commit_clear & (commit_clear_tile == tile)),
                r["rearmed_late"].eq(commit_set & (commit_set_tile == tile)),
                r["freed"].eq(complete & (s2_tile == tile)),
                r["rearmed"].eq(arm_ok & (p_tile == tile)),
                r["same_s2"].eq(s1_tile == tile),
            ]

        m.d.sync += [
            p_valid.eq(arm_take),
            p_zero.eq(arm_fire & (arm.threshold == 0)),
            p_tile.eq(arm.tile),
            p_config.threshold_m1.eq(arm.threshold - 1),
            p_config.dma_cmd.eq(arm.dma_cmd),
            s1_valid.eq(update_fire),
            s1_tile.eq(upd.tile),
            s1_same_arm.eq(arm_take & (arm.tile == upd.tile)),
        ]
        register_lookup(p, arm.tile)
        register_lookup(s1, upd.tile)
        m.d.comb += [
            count_rd.addr.eq(upd.tile),
            config_rd.addr.eq(upd.tile),
            # A legal arm writes its configuration when it is resolved.
            config_wr.addr.eq(p_tile),
            config_wr.data.eq(p_config),
            config_wr.en.eq(arm_ok),
        ]

        # -- S1 -> S2: forward what the memories do not show yet ------------------------------
        # The update in S2 writes back at this edge: if it is of S1's tile, its new count
        # (0 if it completes; S1's update then belongs to a new arm) is S1's count. An arm
        # resolved legal in this cycle writes its configuration at this edge: S1's update
        # belongs to it if it was accepted with it.
        forward = s2_valid & s1["same_s2"]
        m.d.sync += [
            s2_valid.eq(s1_counted),
            s2_tile.eq(s1_tile),
        ]
        # S1's update takes the configuration of the arm accepted with it if that arm is
        # legal (``arm_ok``). ``arm_ok`` waits for S2's ``complete`` (a completion of the tile
        # frees it for the arm), a carry chain late, and the configuration memory's output
        # is late too (a block RAM's clock-to-output): the choice is made for both outcomes
        # from registers, ``complete`` picks one, and the memory's word passes one LUT.
        seen_p = armed_then(p, assume_complete=False)
        takes_arm_early = s1_same_arm & p_valid & ~seen_p                   # legal whatever S2 does
        takes_arm_freed = s1_same_arm & p_valid & (~seen_p | p["same_s2"])  # ... or freed by S2's completion
        takes_arm = Signal()
        m.d.comb += takes_arm.eq(Mux(complete, takes_arm_freed, takes_arm_early))
        m.d.sync += s2_config.eq(Mux(takes_arm, p_config, config_rd.data))
        # The memory's output (late) passes one LUT: a forwarded completion is a synchronous
        # reset of the register rather than a term of its data.
        with m.If(forward & complete):
            m.d.sync += s2_count.eq(0)
        with m.Else():
            m.d.sync += s2_count.eq(Mux(forward, s2_count + 1, count_rd.data))

        # -- S2: write back, queue the trigger ------------------------------------------------
        m.d.comb += [
            count_wr.addr.eq(Mux(clearing, clear_addr, s2_tile)),
            count_wr.data.eq(Mux(clearing, 0, count_next)),
            count_wr.en.eq(clearing | s2_valid),
        ]
        trigger_in = Signal(self.trigger_layout)
        m.d.comb += [
            trigger_in.tile.eq(s2_tile),
            trigger_in.dma_cmd.eq(s2_config.dma_cmd),
            # The memory's slot at the tail is written whenever S2 holds a counted update, and
            # the tail moves on only if it completes and does not go to the head register: the
            # slot is free then (the update's entry holds a reservation, so at most depth - 1
            # triggers wait, the head's included), and the late ``complete`` drives no write
            # enable and no data.
            queue_wr.addr.eq(queue_tail),
            queue_wr.data.eq(trigger_in),
            queue_wr.en.eq(s2_valid),
        ]

        def advance(pointer):
            return Mux(pointer == mem_depth - 1, 0, pointer + 1)

        load_head = ~head_valid | trigger_pop           # the head register takes a word at this edge
        from_memory = queue_level != 0                  # ... the memory's oldest (else S2's trigger)
        to_memory = complete & ~(load_head & ~from_memory)
        with m.If(to_memory):
            m.d.sync += queue_tail.eq(advance(queue_tail))
        with m.If(load_head & from_memory):
            m.d.sync += queue_head.eq(advance(queue_head))
        m.d.sync += queue_level.eq(queue_level + to_memory - (load_head & from_memory))
        with m.If(load_head):
            m.d.sync += [
                head_valid.eq(from_memory | complete),
                head.eq(Mux(from_memory, queue_rd.data, trigger_in)),
            ]

        # -- armed vector ---------------------------------------------------------------------
        # This cycle's resolutions reach the vector one edge later, from registers.
        m.d.sync += [
            commit_clear.eq(complete),
            commit_clear_tile.eq(s2_tile),
            commit_set.eq(arm_ok),
            commit_set_tile.eq(p_tile),
        ]
        # One-hot decoders rather than two dynamic bit assignments: the same function, but a
        # decoder and one AND-OR per entry instead of a priority mux per entry. The completion
        # (of an update accepted two edges before the arm) is older, so it clears first.
        cleared = Mux(commit_clear, Const(1, entries) << commit_clear_tile, 0)
        set_ = Mux(commit_set, Const(1, entries) << commit_set_tile, 0)
        m.d.sync += armed.eq((armed & ~cleared) | set_)

        # -- trigger output -------------------------------------------------------------------
        m.d.comb += [
            queue_rd.addr.eq(queue_head),
            self.trigger.valid.eq(head_valid),
            self.trigger.payload.eq(head),
        ]

        # -- status ---------------------------------------------------------------------------
        # The arm and the update accepted at the previous edge are resolved in this cycle: the
        # fields they affect show the registers with this cycle's resolution applied.
        status = self.status
        m.d.comb += status.clearing.eq(clearing)

        armed_base = Signal(len(status.armed_entries))     # without this cycle's arm
        armed_inc = Signal.like(armed_base)
        armed_dec = Signal.like(armed_base)
        m.d.comb += [armed_inc.eq(armed_base + 1), armed_dec.eq(armed_base - 1)]
        m.d.sync += armed_base.eq(Mux(arm_ok, Mux(complete, armed_base, armed_inc),
                                      Mux(complete, armed_dec, armed_base)))
        m.d.comb += status.armed_entries.eq(Mux(arm_ok, armed_inc, armed_base))

        # Sticky error flags with the first offending tile: a register holds the flag from
        # the cycle after the one that resolves it; in that cycle the resolution shows.
        err_rearm = Signal()
        err_rearm_tile = Signal(tile_width)
        with m.If(arm_busy & ~err_rearm):
            m.d.sync += [err_rearm.eq(1), err_rearm_tile.eq(p_tile)]
        m.d.comb += [
            status.err_rearm.eq(err_rearm | arm_busy),
            status.err_rearm_tile.eq(Mux(err_rearm, err_rearm_tile, Mux(arm_busy, p_tile, 0))),
        ]
        err_unarmed = Signal()
        err_unarmed_tile = Signal(tile_width)
        with m.If(s1_unarmed & ~err_unarmed):
            m.d.sync += [err_unarmed.eq(1), err_unarmed_tile.eq(s1_tile)]
        m.d.comb += [
            status.err_unarmed_update.eq(err_unarmed | s1_unarmed),
            status.err_unarmed_update_tile.eq(Mux(err_unarmed, err_unarmed_tile, Mux(s1_unarmed, s1_tile, 0))),
        ]
        err_zero = Signal()
        err_zero_tile = Signal(tile_width)
        with m.If(p_zero & ~err_zero):
            m.d.sync += [err_zero.eq(1), err_zero_tile.eq(p_tile)]
        m.d.comb += [
            status.err_zero_threshold.eq(err_zero | p_zero),
            status.err_zero_threshold_tile.eq(Mux(err_zero, err_zero_tile, Mux(p_zero, p_tile, 0))),
        ]

        with m.If(update_fire & (upd.source == UpdateSource.LOCAL)):
            m.d.sync += status.local_updates.eq(status.local_updates + 1)
        with m.If(update_fire & (upd.source == UpdateSource.REMOTE)):
            m.d.sync += status.remote_updates.eq(status.remote_updates + 1)
        with m.If(trigger_pop):
            m.d.sync += status.triggers.eq(status.triggers + 1)
        return m
