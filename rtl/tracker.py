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
from amaranth.lib.fifo import SyncFIFO
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
    bits are flip-flops, like the valid bits of a cache, because both the ``arm`` port and
    the ``update`` pipeline must test them in the cycle a request arrives.

    Semantics
    ---------
    * ``arm`` (``{tile, threshold, dma_cmd}``) arms an entry. Every armed entry *reserves*
      one slot of the trigger queue for the trigger it will emit, so ``arm.ready`` is low
      while ``armed_entries`` plus the queued triggers fill the queue (and during the reset
      sweep); otherwise it is high. In the cycle an arm is accepted it takes effect *before*
      an update accepted in the same cycle, so the driver may arm a tile while the GEMM
      already writes to it. An arm with ``threshold == 0`` or of an entry that is still
      armed sets a sticky error and leaves the table unchanged.
    * ``update`` (``{tile, source}``) is one write seen at the memory controller. It adds
      one to the tile's count. When the count reaches the threshold the entry frees itself
      at once (a later arm of the same tile, even in the next cycle, is legal) and a
      trigger ``{tile, dma_cmd}`` is queued in the slot its arm reserved. An update of an
      unarmed entry sets a sticky error and is otherwise ignored.
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
    * Latency: a trigger becomes valid :attr:`trigger_latency` (= 2) cycles after the
      clock edge that accepts its last update, when the queue ahead of it is empty.
    * Throughput: :attr:`updates_per_cycle` (= 1) update per cycle, including back-to-back
      updates to the same tile (the counter read-modify-write is resolved by a read port
      transparent to the write-back), whatever ``trigger`` does. Arms never cost update
      bandwidth; at most :attr:`trigger_depth` tiles are armed or awaiting their trigger's
      hand-out at once.

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
            "armed_entries": unsigned(tile_width + 1),
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

        Holds when the trigger queue ahead of it is empty: one cycle for the counter read
        and compare (stage 1), one for the trigger queue.
        """
        return 2

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
        entries = self._entries

        # Counts are zero for every unarmed entry: the reset sweep writes zeros and a
        # completing update writes zero back. Arming therefore never writes the counter
        # memory, which keeps it at one write port (shared by the sweep and the write-back).
        if self._power_up_seed is None:
            power_up = []
        else:   # simulation: SRAM holds arbitrary counts at power-up; the sweep must clear them
            words = random.Random(self._power_up_seed)
            power_up = [words.getrandbits(self._count_width) for _ in range(entries)]
        m.submodules.count_mem = count_mem = Memory(
            shape=unsigned(self._count_width), depth=entries, init=power_up)
        count_wr = count_mem.write_port()
        # Transparent to the write-back: an update entering while the previous update of
        # the same tile writes back reads the new count, so back-to-back updates need no
        # stall and no separate forwarding path.
        count_rd = count_mem.read_port(transparent_for=(count_wr,))

        config_layout = data.StructLayout({
            "threshold": unsigned(self._count_width),
            "dma_cmd": unsigned(self._dma_cmd_width),
        })
        m.submodules.config_mem = config_mem = Memory(shape=config_layout, depth=entries, init=[])
        config_wr = config_mem.write_port()
        # Transparent to the arm port: an update accepted in the arm's own cycle sees the
        # threshold it programs ("arm while the GEMM writes").
        config_rd = config_mem.read_port(transparent_for=(config_wr,))

        m.submodules.trigger_fifo = trigger_fifo = SyncFIFO(
            width=self.trigger_layout.size, depth=self._trigger_depth)

        armed = Signal(entries)
        # The reset sweep: starts at reset, clears one counter per cycle.
        clearing = Signal(init=1)
        clear_addr = Signal(self._tile_width)
        with m.If(clearing):
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(clear_addr == entries - 1):
                m.d.sync += clearing.eq(0)

        # Stage 1 registers: an armed update whose counter is being read.
        s1_valid = Signal()
        s1_tile = Signal(self._tile_width)
        s1_count_next = Signal(self._count_width + 1)
        s1_complete = Signal()
        m.d.comb += [
            s1_count_next.eq(count_rd.data + 1),
            s1_complete.eq(s1_valid & (s1_count_next == config_rd.data.threshold)),
        ]

        # -- armed state as seen in stage 0 -----------------------------------------------
        # The update in stage 1 was accepted one cycle earlier, so if it completes its
        # entry, that entry is already free for the requests of this cycle.
        def armed_now(tile):
            freed = s1_complete & (s1_tile == tile)
            return armed.bit_select(tile, 1) & ~freed

        arm = self.arm.payload
        arm_fire = self.arm.valid & self.arm.ready
        arm_zero = arm_fire & (arm.threshold == 0)
        arm_busy = arm_fire & (arm.threshold != 0) & armed_now(arm.tile)
        arm_ok = arm_fire & (arm.threshold != 0) & ~armed_now(arm.tile)

        upd = self.update.payload
        update_fire = self.update.valid & self.update.ready
        update_armed = armed_now(upd.tile) | (arm_ok & (arm.tile == upd.tile))

        # Reserved queue slots: one per armed entry (a completion in stage 1 still counts as
        # armed until the edge that moves it into the queue) and one per queued trigger.
        reserved = self.status.armed_entries + trigger_fifo.level
        m.d.comb += [
            self.arm.ready.eq(~clearing & (reserved < self._trigger_depth)),
            self.update.ready.eq(~clearing),
            config_wr.addr.eq(arm.tile),
            config_wr.data.threshold.eq(arm.threshold),
            config_wr.data.dma_cmd.eq(arm.dma_cmd),
            config_wr.en.eq(arm_ok),
            count_rd.addr.eq(upd.tile),
            config_rd.addr.eq(upd.tile),
        ]

        # -- stage 1: count, write back, complete -----------------------------------------
        m.d.sync += [
            s1_valid.eq(update_fire & update_armed),
            s1_tile.eq(upd.tile),
        ]
        m.d.comb += [
            count_wr.addr.eq(Mux(clearing, clear_addr, s1_tile)),
            count_wr.data.eq(Mux(clearing | s1_complete, 0, s1_count_next)),
            count_wr.en.eq(clearing | s1_valid),
            trigger_fifo.w_en.eq(s1_complete),
        ]
        trigger_in = Signal(self.trigger_layout)
        m.d.comb += [
            trigger_in.tile.eq(s1_tile),
            trigger_in.dma_cmd.eq(config_rd.data.dma_cmd),
            trigger_fifo.w_data.eq(trigger_in),
        ]
        # One-hot decoders rather than two dynamic bit assignments: the same function, but a
        # decoder and one AND-OR per entry instead of a priority mux per entry. The completion
        # is older than an arm of the same cycle, so it clears first.
        cleared = Mux(s1_complete, Const(1, entries) << s1_tile, 0)
        set_ = Mux(arm_ok, Const(1, entries) << arm.tile, 0)
        m.d.sync += armed.eq((armed & ~cleared) | set_)

        # -- trigger output ---------------------------------------------------------------
        m.d.comb += [
            self.trigger.valid.eq(trigger_fifo.r_rdy),
            self.trigger.payload.eq(trigger_fifo.r_data),
            trigger_fifo.r_en.eq(self.trigger.ready),
        ]

        # -- status -----------------------------------------------------------------------
        status = self.status
        m.d.comb += status.clearing.eq(clearing)
        with m.If(arm_zero & ~status.err_zero_threshold):
            m.d.sync += [status.err_zero_threshold.eq(1), status.err_zero_threshold_tile.eq(arm.tile)]
        with m.If(arm_busy & ~status.err_rearm):
            m.d.sync += [status.err_rearm.eq(1), status.err_rearm_tile.eq(arm.tile)]
        with m.If(update_fire & ~update_armed & ~status.err_unarmed_update):
            m.d.sync += [status.err_unarmed_update.eq(1), status.err_unarmed_update_tile.eq(upd.tile)]
        m.d.sync += status.armed_entries.eq(status.armed_entries + arm_ok - s1_complete)
        with m.If(update_fire & (upd.source == UpdateSource.LOCAL)):
            m.d.sync += status.local_updates.eq(status.local_updates + 1)
        with m.If(update_fire & (upd.source == UpdateSource.REMOTE)):
            m.d.sync += status.remote_updates.eq(status.remote_updates + 1)
        with m.If(self.trigger.valid & self.trigger.ready):
            m.d.sync += status.triggers.eq(status.triggers + 1)
        return m
