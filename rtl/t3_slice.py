# amaranth: UnusedElaboratable=no
# (Sub-blocks are built in __init__ so that their layouts and timing are readable before
#  elaboration; they are elaborated with the slice.)
"""One GPU memory-controller slice with T3: tracker, DMA, near-memory reducer, arbiter."""

from __future__ import annotations

from amaranth.hdl import Assert, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .arbiter import MemoryArbiter, RequestClass
from .dma_engine import DmaEngine, packet_layout
from .dma_table import DmaCommandTable
from .nmc import NearMemoryReducer
from .params import check_int, check_power_of_two
from .ports import ValidSignature, WriteOp
from .stream_mux import StreamMux
from .tracker import TrackerTable, UpdateSource

__all__ = ["MemKind", "T3Slice"]


class MemKind(enum.Enum, shape=2):
    READ = 0
    STORE = 1
    UPDATE = 2


class T3Slice(wiring.Component):
    """A memory-controller slice: the memory bank, with T3's track & trigger around it.

    Traffic into the bank comes in two classes and passes the :class:`~rtl.arbiter.MemoryArbiter`:

    * **compute**: the GEMM's writes (``gemm``: ``{tile, addr, op, tracked, data}``, ``op``
      STORE or UPDATE) and reads (``gemm_read``), through the compute request queue (the
      memory controller's queue whose occupancy T3-MCA thresholds);
    * **communication**: updates and stores arriving from the previous GPU (``ingress``) and
      the DMA engine's reads of finished tiles.

    The bank (:class:`~rtl.nmc.NearMemoryReducer`) executes one granted request per cycle;
    an update is an atomic read-add-write. Every granted write is counted by the
    :class:`~rtl.tracker.TrackerTable` for its tile (the GEMM's writes carry it; an incoming
    beat's tile is ``addr >> tile_beats_log2``), except a GEMM write with ``tracked = 0``:
    the driver's initialisation of the output buffer, which the tracker does not watch. A
    completed tile triggers its pre-programmed DMA command
    (:class:`~rtl.dma_table.DmaCommandTable` → :class:`~rtl.dma_engine.DmaEngine`), which
    reads the tile and sends it on ``egress``, merged with the GEMM's direct remote stores
    (``gemm_remote``). DMA command index ``commands - 1`` is reserved: a tile armed with it
    only signals ``notify`` when complete (the reduce-scatter's last stage).

    The arbiter grants into an *issue register*; its request is issued to the bank in the
    next cycle unless the bank refuses it: a tracked write waits while the tracker sweeps
    after reset, and an ``UPDATE`` waits while its address had a write issued within
    ``nmc.hazard_window`` cycles before (its sum is still in the bank's adder; see
    :class:`~rtl.nmc.NearMemoryReducer`). While it waits nothing else is granted, so the
    hazard clears by itself and no other write can overtake the refused one; and while a
    communication update waits there for a hazard, the communication class is hidden from
    the arbiter.
    A granted read returns the word as left by every request granted before it, on
    ``gemm_read_data`` :attr:`read_latency` (= ``nmc.write_latency + 1``) cycles after its
    grant: it is issued the cycle after its grant and reads the bank
    ``nmc.write_latency - nmc.read_latency`` cycles later, the first cycle whose read sees
    every earlier write. No read ever stalls on a write.

    Initialisation: after reset the tracker sweeps its counters (``tracker.reset_cycles``
    cycles, ``arm`` not ready, tracked writes held). The bank keeps whatever it held (see
    :class:`~rtl.nmc.NearMemoryReducer`): the driver must ``STORE`` (e.g. zero) every word
    that updates will accumulate into, with ``tracked = 0``, before the reduce-scatter.

    Why it cannot deadlock
    ----------------------
    Write *A → B* for "A can wait for B". The slice's queues form this graph::

        gemm, gemm_read → compute queue → arbiter → issue register
        ingress, DMA read → arbiter → issue register
        issue register (tracked write) → tracker sweep after reset (ends by itself)
        issue register (update) → the bank's adder pipeline (drains by itself in hazard_window cycles)
        arm → trigger queue → command table → engine → DMA read, egress
        egress → link → next GPU's ingress
        (GEMM writes of a tile → that tile's arm: the driver's order)
        (arm → slots held by armed tiles → their writes: the driver's order)

    It has no cycle, so every request is served while the sinks (``egress``' link, the next
    GPU) are fair:

    * The issue register never waits on the tracker's trigger queue. Each armed tile reserves
      its trigger's slot when it is armed, so the tracker counts every write at once; it is
      ``arm`` that waits for slots. In the first version the grant of a write waited for
      room in the trigger queue, which drained only through a DMA read queued behind the
      same grant: a cycle, and a deadlock at 12 tiles per chunk.
    * In MCA mode a communication request waits at most ``starvation_limit`` cycles (plus
      the tracker's sweep after a reset, ``nmc.hazard_window`` cycles for each hazard
      in the issue register, and the cycles a memory beyond holds an offer, ``dram_ready``):
      its wait counts every cycle it is not granted, except those in which the register
      holds a communication update waiting for a hazard (its own class's), which would
      otherwise let one class's hazards buy it starvation priority.
      A compute request waits only while starving communication requests are served,
      one grant each, so it waits at most one cycle in ``starvation_limit + 1`` (a limit
      of 0 gives communication strict priority), plus the hazard waits.
    * A write refused for a hazard holds the issue register until it goes (at most
      ``nmc.hazard_window`` cycles, since nothing else is issued meanwhile). Were the
      arbiter free to issue around it, the other class could write the refused write's
      address in every other cycle and refuse it for ever (the bounded-liveness check
      found this in a version without the queue).
    * Reads never stall: a first version held a read for a cycle after a write to its
      address, and a stream of incoming writes to that address, each granted in the
      held cycle, could refuse it for ever (found by the bounded-liveness check).
    * The muxes hold an offered request until it is granted, and every offered request is
      eventually grantable (no request waits on anything behind it), so holding cannot
      block.
    * Across the ring, a slice's egress waits only on the next slice's ingress, which waits
      only on that slice's arbiter: the ring adds no cycle either.

    The two edges in parentheses belong to the driver, and so does keeping them acyclic: a
    tile's writes (local, and the previous GPU's updates) may start only once it is armed,
    and an arm waits for a trigger slot, which only the completion of an armed tile frees.
    A driver that arms tiles ahead of writes it holds back (T3's arms every tile before
    the stage traffic starts) must arm no more than ``trigger_depth`` of them
    (``tb/ring/protocol.py`` refuses a plan that would).

    ``tests/test_liveness.py`` model-checks the slice's side for every legal environment on
    a small slice (bounded depth), and shows that the first version's coupling deadlocks.

    Parameters
    ----------
    format, beat_width, depth, power_up_seed, adder_latency
        The bank (:class:`~rtl.nmc.NearMemoryReducer`); ``power_up_seed + 1`` also fills the
        tracker's counters at power-up.
    entries, count_width, trigger_depth
        The tracker (``trigger_depth`` ``None``: ``entries``).
    commands, max_beats, port_width, queue_depth
        The DMA command table and engine.
    tile_beats_log2 : int
        log2 of the beats per tile, 0..12.
    compute_queue_depth : int
        Compute requests the controller's queue holds, 2..``2**level_width - 1``.
    level_width, wait_width
        The arbiter.
    dram_ready : bool
        Whether a memory beyond the slice paces its grants: the slice then has the ports
        ``dram_request`` (out: the request the arbiter offers this cycle, ``{addr, write}``,
        valid with the offer) and ``dram_ready`` (in: that request may be granted now). A
        DRAM controller lowers ``dram_ready`` while the request's bank opens its row
        (precharge and activate); with ``False`` (the default) the bank is the block RAM
        and every offer may be granted. The memory gates the *grant*, not the issue, so a
        granted request still reaches its data :attr:`read_latency` cycles later: the DMA
        engine's reads and the GEMM's read port keep their fixed latency, and the memory's
        variable latency is the wait before the grant. ``dram_ready`` may depend on
        ``dram_request`` in the same cycle (the offer does not depend on the grant).
        Liveness then also needs the memory to raise ``dram_ready`` for a request offered
        long enough (a bank opens its row in bounded time).
    """

    def __init__(self, *, format: str = "binary16", beat_width: int = 64, depth: int = 256,  # noqa: A002
                 power_up_seed: int | None = None, adder_latency: int | None = None,
                 entries: int = 64, count_width: int = 8, trigger_depth: int | None = None, commands: int = 64,
                 max_beats: int = 16, port_width: int = 2, queue_depth: int = 4, tile_beats_log2: int = 2,
                 compute_queue_depth: int = 8, level_width: int = 5, wait_width: int = 16, dram_ready: bool = False):
        self.nmc = NearMemoryReducer(format=format, beat_width=beat_width, depth=depth, power_up_seed=power_up_seed,
                                     adder_latency=adder_latency)
        addr_width = self.nmc.addr_width
        self._tile_beats_log2 = check_int("tile_beats_log2", tile_beats_log2, 0, 12)
        check_power_of_two("commands", commands, 2, 1024)
        self.tracker = TrackerTable(entries=entries, count_width=count_width,
                                    power_up_seed=None if power_up_seed is None else power_up_seed + 1,
                                    dma_cmd_width=(commands - 1).bit_length(), trigger_depth=trigger_depth)
        self.table = DmaCommandTable(commands=commands, tile_width=self.tracker.tile_width, addr_width=addr_width,
                                     max_beats=max_beats, port_width=port_width, queue_depth=queue_depth)
        self.engine = DmaEngine(addr_width=addr_width, data_width=beat_width, max_beats=max_beats,
                                port_width=port_width, dma_cmd_width=self.table.dma_cmd_width,
                                read_latency=self.read_latency, arbitrated_reads=True)
        self._compute_queue_depth = check_int("compute_queue_depth", compute_queue_depth, 2,
                                              (1 << level_width) - 1)
        self.request_layout = data.StructLayout({
            "kind": MemKind,
            "dma": 1,  # a read for the DMA engine (else for the GEMM)
            "tracked": 1,  # a write the tracker counts
            "tile": unsigned(self.tracker.tile_width),
            "addr": unsigned(addr_width),
            "data": unsigned(beat_width),
        })
        self.arbiter = MemoryArbiter(payload_shape=self.request_layout, level_width=level_width,
                                     wait_width=wait_width)
        self.packet_layout = packet_layout(port_width=port_width, addr_width=addr_width, data_width=beat_width)
        self.gemm_layout = data.StructLayout({"tile": unsigned(self.tracker.tile_width),
                                              "addr": unsigned(addr_width), "op": WriteOp,
                                              "tracked": 1, "data": unsigned(beat_width)})
        self.notify_cmd = commands - 1
        self.status_layout = data.StructLayout({
            "tracker": self.tracker.status_layout,
            "table": self.table.status_layout,
            "engine": self.engine.status_layout,
            "reducer": self.nmc.status_layout,
            "arbiter": self.arbiter.status_layout,
            "ingress_beats": 32,
            "egress_beats": 32,
            "notifies": 32,
        })
        if not isinstance(dram_ready, bool):
            raise TypeError(f"dram_ready must be a bool, not {dram_ready!r}")
        self._dram_ready = dram_ready
        self.dram_request_layout = data.StructLayout({"addr": unsigned(addr_width), "write": 1})
        dram_ports = {"dram_request": Out(ValidSignature(self.dram_request_layout)),
                      "dram_ready": In(1)} if dram_ready else {}
        super().__init__({
            **dram_ports,
            "gemm": In(stream.Signature(self.gemm_layout)),
            "gemm_read": In(stream.Signature(unsigned(addr_width))),
            "gemm_read_data": Out(ValidSignature(unsigned(beat_width))),
            "gemm_remote": In(stream.Signature(self.packet_layout)),
            "ingress": In(stream.Signature(self.packet_layout)),
            "egress": Out(stream.Signature(self.packet_layout)),
            "arm": In(stream.Signature(self.tracker.arm_layout)),
            "program": In(stream.Signature(self.table.program_layout)),
            "threshold": In(unsigned(level_width)),
            "starvation_limit": In(unsigned(wait_width)),
            "mode": In(self.arbiter.signature.members["mode"].shape),
            "notify": Out(ValidSignature(data.StructLayout({"tile": unsigned(self.tracker.tile_width)}))),
            "status": Out(self.status_layout),
        })

    tile_beats_log2 = property(lambda self: self._tile_beats_log2, doc="log2 of the beats per tile.")
    has_dram_ready = property(lambda self: self._dram_ready,
                              doc="Whether a memory beyond the slice paces the grants (``dram_ready``).")

    issue_latency = property(lambda self: 1, doc="Cycles a granted request spends in the issue register.")
    compute_reads_first = property(
        lambda self: False,
        doc="Whether the GEMM's reads pass its waiting writes into the compute queue: no, a round-robin "
            ":class:`~rtl.stream_mux.StreamMux` alternates them.")

    @property
    def read_latency(self) -> int:
        """Cycles from a read's grant to its data (``gemm_read_data``, the DMA engine's port):
        one in the issue register; the bank is read ``nmc.write_latency - nmc.read_latency``
        cycles later, the first cycle whose read sees every earlier write; then the bank's
        read latency."""
        return self.issue_latency + self.nmc.write_latency

    @property
    def gemm_read_latency(self) -> int:
        """Cycles from the edge accepting a ``gemm_read`` to its data on ``gemm_read_data``, all
        idle: the compute queue shows it to the arbiter a cycle later, then :attr:`read_latency`."""
        return 1 + self.read_latency

    @property
    def update_to_egress_latency(self) -> int:
        """Cycles from the grant of a tile's last write to its first egress beat, all idle
        (one in the issue register, then the tracker counts it)."""
        return self.issue_latency + self.tracker.trigger_latency + self.table.lookup_latency + self.engine.start_latency

    def elaborate(self, platform):
        m = Module()
        for name in ("nmc", "tracker", "table", "engine", "arbiter"):
            m.submodules[name] = getattr(self, name)
        nmc, tracker, table, engine, arbiter = self.nmc, self.tracker, self.table, self.engine, self.arbiter
        req = self.request_layout

        # -- compute class: GEMM writes and reads, through the controller's request queue ----
        m.submodules.compute_mux = compute_mux = StreamMux(req)
        m.submodules.compute_queue = compute_queue = SyncFIFO(width=req.size, depth=self._compute_queue_depth)
        gemm = self.gemm.payload
        m.d.comb += [
            compute_mux.a.valid.eq(self.gemm.valid),
            compute_mux.a.payload.kind.eq(Mux(gemm.op == WriteOp.UPDATE, MemKind.UPDATE, MemKind.STORE)),
            compute_mux.a.payload.tile.eq(gemm.tile),
            compute_mux.a.payload.tracked.eq(gemm.tracked),
            compute_mux.a.payload.addr.eq(gemm.addr),
            compute_mux.a.payload.data.eq(gemm.data),
            self.gemm.ready.eq(compute_mux.a.ready),
            compute_mux.b.valid.eq(self.gemm_read.valid),
            compute_mux.b.payload.kind.eq(MemKind.READ),
            compute_mux.b.payload.addr.eq(self.gemm_read.payload),
            self.gemm_read.ready.eq(compute_mux.b.ready),
            compute_queue.w_en.eq(compute_mux.out.valid),
            compute_queue.w_data.eq(compute_mux.out.payload),
            compute_mux.out.ready.eq(compute_queue.w_rdy),
            arbiter.compute.valid.eq(compute_queue.r_rdy),
            arbiter.compute.payload.eq(compute_queue.r_data),
            compute_queue.r_en.eq(arbiter.compute.ready),
            # The arbiter reads the level only while compute does not request (MCA offers
            # communication below the threshold then), and compute requests exactly while
            # this queue holds a request: the level it can see is always 0. Wiring the
            # level would put its compare with the threshold, a carry chain, at the head of
            # the slice's longest path (through the grant into the DMA engine). The threshold
            # therefore decides, in this slice, only whether communication may take the
            # cycles compute leaves idle (threshold > 0) or waits to starve (threshold 0).
            arbiter.queue_level.eq(0),
        ]
        m.d.sync += Assert(compute_queue.r_rdy | (compute_queue.level == 0),
                           "the compute queue's level is not 0 while it offers nothing")

        # -- communication class: incoming beats and the DMA engine's reads -----------------
        m.submodules.comm_mux = comm_mux = StreamMux(req)
        packet = self.ingress.payload
        m.d.comb += [
            comm_mux.a.valid.eq(self.ingress.valid),
            comm_mux.a.payload.kind.eq(Mux(packet.op == WriteOp.UPDATE, MemKind.UPDATE, MemKind.STORE)),
            comm_mux.a.payload.tile.eq(packet.dst_addr >> self._tile_beats_log2),
            comm_mux.a.payload.tracked.eq(1),
            comm_mux.a.payload.addr.eq(packet.dst_addr),
            comm_mux.a.payload.data.eq(packet.data),
            self.ingress.ready.eq(comm_mux.a.ready),
            comm_mux.b.valid.eq(engine.mem_read.en),
            comm_mux.b.payload.kind.eq(MemKind.READ),
            comm_mux.b.payload.dma.eq(1),
            comm_mux.b.payload.addr.eq(engine.mem_read.addr),
            engine.mem_read.ready.eq(comm_mux.b.ready),
        ]
        comm_hidden = Signal()
        m.d.comb += [
            arbiter.comm.valid.eq(comm_mux.out.valid & ~comm_hidden),
            arbiter.comm.payload.eq(comm_mux.out.payload),
            comm_mux.out.ready.eq(arbiter.comm.ready),
        ]
        m.d.comb += [arbiter.threshold.eq(self.threshold), arbiter.starvation_limit.eq(self.starvation_limit),
                     arbiter.mode.eq(self.mode)]

        # -- the issue register: one granted request, issued to the bank when it can go -------
        # The arbiter grants into a register; its request is issued to the bank in the next
        # cycle unless the bank refuses it: a tracked write waits while the tracker sweeps
        # after reset, and an update while its address's previous sum is still in the bank's
        # adder (a write of its address issued within ``nmc.hazard_window`` cycles, the
        # bank's documented rule). Nothing else is granted meanwhile, so the hazard clears
        # by itself and no other write can overtake the refused one.
        held = Signal(self.request_layout)
        held_valid = Signal()
        held_comm = Signal()
        # The beat's data is registered from both classes and chosen after the register:
        # the arbiter's decision then drives the few bits of a request's control and address,
        # not a multiplexer of every data bit, whose fan-out spread the decision's logic
        # across the chip (the slice's critical paths run through that decision).
        held_data_compute = Signal.like(held.data, reset_less=True)
        held_data_comm = Signal.like(held.data, reset_less=True)
        is_write = held.kind != MemKind.READ
        counted = is_write & held.tracked
        tracker_ok = ~counted | tracker.update.ready
        # The bank's hazard for the held request is known a cycle ahead (a register), from
        # the slice's own record of the writes it issued, so that the bank's address compare
        # is not on the path from the arbiter through the grant to the DMA engine.
        window = nmc.hazard_window
        issued_valid = [Signal(name=f"issued_write_{k}") for k in range(1, window + 1)]
        issued_addr = [Signal.like(held.addr, name=f"issued_addr_{k}", reset_less=True) for k in range(1, window + 1)]
        blocked = Signal()       # the held request is an update the bank will refuse now
        issue = Signal()
        # The memory beyond (a DRAM's bank opening its row) may hold the offer before its grant.
        free = ~held_valid | issue          # the register takes a grant this cycle
        grant_ready = free & self.dram_ready if self._dram_ready else free
        if self._dram_ready:
            m.d.comb += [self.dram_request.valid.eq(arbiter.grant.valid),
                         self.dram_request.payload.addr.eq(arbiter.grant.payload.request.addr),
                         self.dram_request.payload.write.eq(arbiter.grant.payload.request.kind != MemKind.READ)]
        m.d.comb += [
            issue.eq(held_valid & tracker_ok & ~blocked),
            arbiter.grant.ready.eq(grant_ready),
            nmc.request.valid.eq(held_valid & is_write & tracker_ok & ~blocked),
            nmc.request.payload.addr.eq(held.addr),
            nmc.request.payload.op.eq(Mux(held.kind == MemKind.UPDATE, WriteOp.UPDATE, WriteOp.STORE)),
            nmc.request.payload.data.eq(Mux(held_comm, held_data_comm, held_data_compute)),
        ]
        load = arbiter.grant.valid & arbiter.grant.ready
        if window:
            def blocked_next(request):
                """Whether ``request``, held next cycle, is an update the bank refuses then."""
                conflicts = [issue & is_write & (held.addr == request.addr)]
                conflicts += [issued_valid[k] & (issued_addr[k] == request.addr) for k in range(window - 1)]
                return (request.kind == MemKind.UPDATE) & Cat(*conflicts).any()

            # Each candidate is checked beside the arbiter's decision, which picks at the end.
            compute_blocked = blocked_next(arbiter.compute.payload)
            comm_blocked = blocked_next(arbiter.comm.payload)
            granted_blocked = Mux(arbiter.grant.payload.cls == RequestClass.COMM, comm_blocked, compute_blocked)
            m.d.sync += blocked.eq(Mux(load, granted_blocked, held_valid & ~issue & blocked_next(held)))
            m.d.sync += [issued_valid[0].eq(issue & is_write), issued_addr[0].eq(held.addr)]
            for k in range(1, window):
                m.d.sync += [issued_valid[k].eq(issued_valid[k - 1]), issued_addr[k].eq(issued_addr[k - 1])]
        # (Without a memory beyond, ``free`` is ``grant.ready``, so a valid grant is taken.)
        with m.If(free if self._dram_ready else arbiter.grant.ready):
            m.d.sync += [held_valid.eq(load if self._dram_ready else arbiter.grant.valid),
                         held.eq(arbiter.grant.payload.request),
                         held_comm.eq(arbiter.grant.payload.cls == RequestClass.COMM),
                         held_data_compute.eq(arbiter.compute.payload.data),
                         held_data_comm.eq(arbiter.comm.payload.data)]
        # The bank must agree: it takes every write the slice issues (checked in simulation).
        m.d.sync += Assert(~nmc.request.valid | nmc.request.ready, "slice issued a write the bank refuses")
        # While the register holds a communication update that the bank's hazard refuses,
        # the communication class is hidden from the arbiter: waiting behind its own class's
        # hazard must not count towards starvation, or a stream of incoming updates to one
        # word would earn starvation priority from its own hazards and starve the GEMM
        # (found by the bounded-liveness check). Both are registers: no path from the bank.
        m.d.comb += comm_hidden.eq(held_comm & blocked)
        m.d.comb += [
            tracker.update.valid.eq(issue & counted),
            tracker.update.payload.tile.eq(held.tile),
            tracker.update.payload.source.eq(Mux(held_comm, UpdateSource.REMOTE, UpdateSource.LOCAL)),
        ]
        # An issued read reads the bank write_latency - read_latency cycles later, the first
        # cycle whose read sees every write issued before it (the bank's read port is
        # transparent to the write-backs of its cycle and the next): reads never stall. A
        # read that stalled on an earlier write instead could be refused for ever by a
        # stream of writes to its address.
        read_en, read_addr, read_for_gemm = issue & ~is_write, held.addr, issue & ~is_write & ~held.dma
        for stage in range(nmc.write_latency - nmc.read_latency):
            en_next = Signal(name=f"read_en_{stage}")
            addr_next = Signal.like(held.addr, name=f"read_addr_{stage}", reset_less=True)
            gemm_next = Signal(name=f"read_for_gemm_{stage}")
            m.d.sync += [en_next.eq(read_en), addr_next.eq(read_addr), gemm_next.eq(read_for_gemm)]
            read_en, read_addr, read_for_gemm = en_next, addr_next, gemm_next
        m.d.comb += [nmc.read.en.eq(read_en), nmc.read.addr.eq(read_addr), engine.mem_read.data.eq(nmc.read.data)]
        gemm_read_returning = read_for_gemm
        for stage in range(nmc.read_latency):
            returning_next = Signal(name=f"gemm_read_returning_{stage}")
            m.d.sync += returning_next.eq(gemm_read_returning)
            gemm_read_returning = returning_next
        m.d.comb += [self.gemm_read_data.valid.eq(gemm_read_returning), self.gemm_read_data.payload.eq(nmc.read.data)]

        # -- track & trigger -----------------------------------------------------------------
        wiring.connect(m, wiring.flipped(self.arm), tracker.arm)
        wiring.connect(m, wiring.flipped(self.program), table.program)
        notify = tracker.trigger.payload.dma_cmd == self.notify_cmd
        m.d.comb += [
            table.trigger.valid.eq(tracker.trigger.valid & ~notify),
            table.trigger.payload.eq(tracker.trigger.payload),
            tracker.trigger.ready.eq(notify | table.trigger.ready),
            self.notify.valid.eq(tracker.trigger.valid & notify),
            self.notify.payload.tile.eq(tracker.trigger.payload.tile),
        ]
        wiring.connect(m, table.issue, engine.cmd)

        # -- to the link: DMA packets and the GEMM's direct remote stores ---------------------
        m.submodules.egress_mux = egress_mux = StreamMux(self.packet_layout)
        wiring.connect(m, engine.egress, egress_mux.a)
        wiring.connect(m, wiring.flipped(self.gemm_remote), egress_mux.b)
        wiring.connect(m, egress_mux.out, wiring.flipped(self.egress))

        status = self.status
        m.d.comb += [
            status.tracker.eq(tracker.status), status.table.eq(table.status), status.engine.eq(engine.status),
            status.reducer.eq(nmc.status), status.arbiter.eq(arbiter.status),
        ]
        with m.If(self.ingress.valid & self.ingress.ready):
            m.d.sync += status.ingress_beats.eq(status.ingress_beats + 1)
        with m.If(self.egress.valid & self.egress.ready):
            m.d.sync += status.egress_beats.eq(status.egress_beats + 1)
        with m.If(self.notify.valid):
            m.d.sync += status.notifies.eq(status.notifies + 1)
        return m
