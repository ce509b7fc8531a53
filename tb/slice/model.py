"""Cycle-accurate golden model of :class:`rtl.t3_slice.T3Slice`'s ports (pure Python and numpy).

Composed from the block models where a block is used as is:

* the tracker: :class:`tb.tracker.model.TrackerTableModel` (reset sweep, reservation at arm);
* the DMA command table: :class:`tb.dma.model.DmaCommandTableModel`;
* the DMA engine in its arbitrated-read mode: :class:`tb.dma_engine.model.ArbitratedEngineModel`;
* the arbiter: :class:`tb.arbiter.model.MemoryArbiterModel`;
* the three stream muxes: :class:`tb.stream_mux.model.StreamMuxModel`;

and, written here from ``rtl/t3_slice.py``'s docstring and the blocks' documented timing:

* the compute request queue (a first-word-fall-through FIFO of ``compute_queue_depth``
  entries: an item written in one cycle can be read from the next; ``level`` counts the
  items before this cycle's edge; ready to write unless full, even in a cycle that reads);
* the bank (:class:`BankModel`), at the slice's level of description: a granted read
  returns the word as left by every request granted before it, ``read_latency`` (the
  bank's write latency) cycles after its grant, on ``gemm_read_data`` or to the DMA engine (whose read latency is
  the slice's); an ``UPDATE`` adds lane by lane (numpy, never the RTL adder). Contents are
  unknown (``None``) until stored: the bank makes no power-up or reset promise, and a reset
  may or may not let the writes in flight (granted in the last ``write_latency`` =
  ``adder_latency + 2`` cycles) land;
* the grant rule: one granted request per cycle, into the issue register, which issues it
  to the bank in the next cycle unless the bank refuses: a tracked write waits while the
  tracker's ``update`` is not ready (its reset sweep); an update waits while a write of its
  address was issued within the last ``adder_latency - 1`` cycles (the bank's hazard);
  nothing is granted while the register's request waits (reads never wait), and while a
  communication update waits there for the hazard the communication class is hidden from
  the arbiter; with a memory beyond the slice (``dram_ready``), the request the arbiter
  offers is shown on ``dram_request`` and granted only while ``dram_ready`` is high;
* counting: a granted write with ``tracked`` (always for ``ingress``) is one tracker update
  of its tile, ``REMOTE`` for the communication class, ``LOCAL`` for compute; an ingress
  beat's tile is ``dst_addr >> tile_beats_log2``;
* the trigger split: a trigger of command ``commands - 1`` pulses ``notify`` and is consumed
  at once; any other goes to the command table;
* the counters: ingress and egress transfers, notify pulses.

Per cycle the bench calls :meth:`SliceModel.cycle` with the inputs offered in that cycle; it
returns every output the ports must show in that cycle and advances the model over the edge.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from tb.arbiter.model import COMM, COMPUTE, MemoryArbiterModel
from tb.dma.model import DmaCommandTableModel
from tb.dma_engine.model import ArbitratedEngineModel
from tb.fp_add.golden import NUMPY_TYPES, golden_add
from tb.stream_mux.model import A, StreamMuxModel
from tb.tracker.model import LOCAL, REMOTE, TrackerTableModel

__all__ = ["SliceModel", "SliceInputs", "SliceOutputs", "BankModel", "ComputeQueueModel", "LaneAdder",
           "READ", "STORE", "UPDATE"]

COUNTER_MASK = (1 << 32) - 1
STORE, UPDATE = 0, 1      # WriteOp
READ = "read"             # a request kind besides the two write ops



class LaneAdder:
    """Lane-by-lane sum of two beats, each lane's sum from numpy (:func:`golden_add`) and
    remembered: the benches add few distinct values, and numpy per beat dominates the time."""

    def __init__(self, format: str, lanes: int):  # noqa: A002
        self.format = format
        self.lanes = lanes
        self.utype = NUMPY_TYPES[format][1]
        self.width = np.dtype(self.utype).itemsize * 8
        self.mask = (1 << self.width) - 1
        self.sums: dict[tuple[int, int], int] = {}

    def __call__(self, x: int, y: int) -> int:
        w, mask, sums = self.width, self.mask, self.sums
        pairs = [((x >> (lane * w)) & mask, (y >> (lane * w)) & mask) for lane in range(self.lanes)]
        missing = [pair for pair in dict.fromkeys(pairs) if pair not in sums]
        new: dict[tuple[int, int], int] = {}
        if missing:     # one numpy call for the lanes not seen before
            totals = golden_add(self.format, np.array([a for a, _ in missing], dtype=self.utype),
                                np.array([b for _, b in missing], dtype=self.utype))
            new = dict(zip(missing, map(int, totals), strict=True))
            if len(sums) < 1 << 16:
                sums.update(new)
        out = 0
        for lane, pair in enumerate(pairs):
            out |= (new[pair] if pair in new else sums[pair]) << (lane * w)
        return out


class BankModel:
    """The near-memory reducer's bank: words of ``lanes`` floats, ``None`` where unknown.

    ``words`` holds every granted write applied in grant order: what an update adds to and
    what a read granted now returns. ``pipeline`` remembers the writes of the last
    ``write_latency`` (= ``adder_latency + 2``, the reducer's documented figure) cycles,
    which a reset may cut off; its first ``adder_latency - 1`` entries are the hazard
    window, in which an update of the same address must wait (:meth:`ready_for`).
    """

    def __init__(self, *, format: str, lanes: int, depth: int, adder_latency: int):  # noqa: A002
        self.adder = LaneAdder(format, lanes)
        self.write_latency = adder_latency + 2
        self.hazard_window = adder_latency - 1
        self.words: list[int | None] = [None] * depth
        self.reset()

    def reset(self) -> None:
        """A reset: the contents stay, but the writes in flight may or may not land, so their
        words become unknown; the counters restart."""
        for addr in getattr(self, "pipeline", []):
            if addr is not None:
                self.words[addr] = None
        self.pipeline: list[int | None] = [None] * self.write_latency
        self.status = {"stores": 0, "updates": 0}

    def ready_for(self, addr: int, op: int) -> bool:
        """Whether the bank takes the write ``(addr, op)`` now: an update waits while a
        write of its address was granted within the hazard window (its sum is not ready)."""
        return op != UPDATE or addr not in self.pipeline[:self.hazard_window]

    def read(self, addr: int) -> int | None:
        """The word a read granted in this cycle returns."""
        return self.words[addr]

    def step(self, write: tuple[int, int, int] | None) -> None:
        """Advance one edge; ``write`` is ``(addr, op, beat)`` granted in this cycle."""
        addr = None
        if write is not None:
            addr, op, beat = write
            if op == UPDATE:
                old = self.words[addr]
                # An unknown word, or an unknown beat (a DMA forwarding a word never stored), sums to unknown.
                self.words[addr] = None if old is None or beat is None else self.adder(old, beat)
                self.status["updates"] = (self.status["updates"] + 1) & COUNTER_MASK
            else:
                self.words[addr] = beat
                self.status["stores"] = (self.status["stores"] + 1) & COUNTER_MASK
        self.pipeline = [addr, *self.pipeline[:-1]]

    def idle(self) -> bool:
        return all(addr is None for addr in self.pipeline)


class ComputeQueueModel:
    """The memory controller's compute request queue: FIFO semantics of amaranth's SyncFIFO
    (``w_rdy`` = not full, ``r_rdy`` = not empty, an item is readable from the cycle after
    its write, ``level`` = items held before this cycle's edge)."""

    def __init__(self, depth: int):
        self.depth = depth
        self.items: deque[dict] = deque()

    @property
    def level(self) -> int:
        return len(self.items)

    @property
    def w_rdy(self) -> int:
        return int(len(self.items) < self.depth)

    @property
    def head(self) -> dict | None:
        return self.items[0] if self.items else None

    def step(self, *, write: dict | None, read: bool) -> None:
        if read:
            assert self.items, "model: read of an empty compute queue"
            self.items.popleft()
        if write is not None:
            assert len(self.items) < self.depth + int(read), "model: compute queue overflow"
            self.items.append(write)


@dataclass(slots=True)
class SliceInputs:
    """What the bench offers in one cycle (``None``: the stream's ``valid`` is low)."""

    gemm: dict | None = None            # {tile, addr, op, tracked, data}
    gemm_read: int | None = None        # address
    gemm_remote: dict | None = None     # packet {dst_port, dst_addr, op, last, data}
    ingress: dict | None = None         # packet
    arm: dict | None = None             # {tile, threshold, dma_cmd}
    program: dict | None = None         # {index, desc}
    egress_ready: int = 0
    threshold: int = 0
    starvation_limit: int = 0
    mode: int = 0
    dram_ready: int = 1                 # a memory beyond the slice lets the offer be granted


@dataclass(slots=True)
class SliceOutputs:
    """Every output of the slice in one cycle, and what happened at its edge."""

    gemm_ready: int
    gemm_read_ready: int
    gemm_read_data_valid: int
    gemm_read_data: int | None          # None: unknown word (or not valid)
    gemm_remote_ready: int
    ingress_ready: int
    egress_valid: int
    egress: dict | None                 # its "data" is None for an unknown word
    arm_ready: int
    program_ready: int
    notify_valid: int
    notify_tile: int | None
    status: dict
    # The offer shown to a memory beyond the slice (``dram_request``; None: none).
    dram_request: dict | None = None    # {addr, write}
    # Events of the edge (for the bench's statistics; not ports).
    grant: tuple[int, dict] | None = None   # (class, request) executed by the bank
    bank_hazard: int | None = None           # class of the held update waiting for a sum in the bank's adder
    issued: tuple[int, dict] | None = None   # (class, request) issued from the register to the bank


class SliceModel:
    """Reference behaviour of :class:`rtl.t3_slice.T3Slice`.

    Parameters
    ----------
    format, lanes, depth
        The bank.
    entries, trigger_depth
        The tracker.
    commands, max_beats, queue_depth, addr_width
        The DMA command table and engine (the engine's read latency is 1).
    tile_beats_log2, compute_queue_depth, wait_width
        As for the slice.
    adder_latency
        The bank's adder latency (``NearMemoryReducer.adder_latency``): sets its write
        latency and hazard window.
    read_latency
        The slice's documented ``read_latency`` (= the bank's write latency).

    A new model (and :meth:`reset`) is in the first cycle after the edge that releases
    reset, like the tracker's model; the bank's contents survive :meth:`reset`.
    """

    def __init__(self, *, format: str, lanes: int, depth: int, entries: int,  # noqa: A002
                 trigger_depth: int | None, commands: int, max_beats: int, queue_depth: int,
                 addr_width: int, tile_beats_log2: int, compute_queue_depth: int, wait_width: int,
                 adder_latency: int, read_latency: int):
        self.params = dict(entries=entries, trigger_depth=trigger_depth, commands=commands, max_beats=max_beats,
                           queue_depth=queue_depth, addr_width=addr_width, compute_queue_depth=compute_queue_depth,
                           wait_width=wait_width, read_latency=read_latency)
        self.tile_beats_log2 = tile_beats_log2
        self.notify_cmd = commands - 1
        self.tile_mask = entries - 1
        self.bank = BankModel(format=format, lanes=lanes, depth=depth, adder_latency=adder_latency)
        self.reset()

    def reset(self) -> None:
        """Every register to its reset value; the bank keeps its words (those in flight
        become unknown)."""
        p = self.params
        self.bank.reset()
        self.tracker = TrackerTableModel(entries=p["entries"], trigger_depth=p["trigger_depth"])
        self.table = DmaCommandTableModel(max_beats=p["max_beats"], queue_depth=p["queue_depth"])
        self.engine = ArbitratedEngineModel(read_latency=p["read_latency"], addr_width=p["addr_width"],
                                            memory=self.bank.read)
        self.arbiter = MemoryArbiterModel(wait_width=p["wait_width"])
        self.compute_mux = StreamMuxModel()
        self.comm_mux = StreamMuxModel()
        self.egress_mux = StreamMuxModel()
        self.compute_queue = ComputeQueueModel(p["compute_queue_depth"])
        # GEMM reads on their way to gemm_read_data, newest first: (word,) or None.
        self.read_returns: list[tuple[int | None] | None] = [None] * p["read_latency"]
        self.counters = {"ingress_beats": 0, "egress_beats": 0, "notifies": 0}
        # The issue register: the (class, request) granted and not yet issued to the bank.
        self.held: tuple[int, dict] | None = None

    # -- helpers --------------------------------------------------------------------------

    def status(self, tracker_status: dict, table_status: dict, engine_status: dict) -> dict:
        return {"tracker": tracker_status, "table": table_status, "engine": engine_status,
                "reducer": dict(self.bank.status), "arbiter": dict(self.arbiter.status), **self.counters}

    def _gemm_request(self, gemm: dict) -> dict:
        return {"kind": UPDATE if gemm["op"] == UPDATE else STORE, "dma": 0, "tracked": gemm["tracked"],
                "tile": gemm["tile"], "addr": gemm["addr"], "data": gemm["data"]}

    def _ingress_request(self, packet: dict) -> dict:
        return {"kind": UPDATE if packet["op"] == UPDATE else STORE, "dma": 0, "tracked": 1,
                "tile": (packet["dst_addr"] >> self.tile_beats_log2) & self.tile_mask,
                "addr": packet["dst_addr"], "data": packet["data"]}

    # -- one cycle ------------------------------------------------------------------------

    def cycle(self, inp: SliceInputs) -> SliceOutputs:
        """Outputs of this cycle for the inputs ``inp``; then advance over the edge."""
        trk = self.tracker.outputs()
        tbl = self.table.outputs()
        eng_idle = self.engine.outputs(mem_ready=0)   # what does not depend on mem_read.ready
        status = self.status(trk.status, tbl.status, eng_idle.status)
        returning = self.read_returns[-1]

        # Compute class: gemm (a) and gemm_read (b) merge into the compute queue.
        cq = self.compute_queue
        cq_w_rdy = cq.w_rdy
        cmux = self.compute_mux.outputs(a_valid=inp.gemm is not None, b_valid=inp.gemm_read is not None,
                                        out_ready=cq_w_rdy)
        compute_in = None
        if cmux.out_valid:
            compute_in = (self._gemm_request(inp.gemm) if cmux.select == A else
                          {"kind": READ, "dma": 0, "tracked": 0, "tile": 0, "addr": inp.gemm_read, "data": 0})

        # Communication class: ingress (a) and the DMA engine's reads (b).
        want = eng_idle.mem_en
        comm_valid = inp.ingress is not None or bool(want)
        comm_sel = self.comm_mux.outputs(a_valid=inp.ingress is not None, b_valid=want, out_ready=0).select
        comm_req = None
        if comm_valid:
            comm_req = (self._ingress_request(inp.ingress) if comm_sel == A else
                        {"kind": READ, "dma": 1, "tracked": 0, "tile": 0, "addr": eng_idle.mem_addr, "data": 0})

        # The issue register: its request goes to the bank unless the bank refuses it (a
        # tracked write in the tracker's sweep; an update in the bank's hazard window).
        held = self.held
        held_write = held is not None and held[1]["kind"] != READ
        counted = held_write and bool(held[1]["tracked"])
        tracker_ok = not counted or bool(trk.update_ready)
        hazard = held_write and not self.bank.ready_for(held[1]["addr"], held[1]["kind"])
        issue = held is not None and tracker_ok and not hazard
        free = held is None or issue       # the register takes a grant this cycle ...
        grant_ready = int(free and bool(inp.dram_ready))   # ... if the memory beyond lets it

        # The arbiter offers one class; it is granted into the register when that is free. A
        # communication request is hidden from it while a communication update waits there
        # for the bank's hazard.
        comm_visible = comm_valid and not (held is not None and held[0] == COMM and hazard)
        winner = self.arbiter.decide(compute_valid=cq.head is not None, comm_valid=comm_visible,
                                     queue_level=cq.level, threshold=inp.threshold,
                                     starvation_limit=inp.starvation_limit, mode=inp.mode)
        request = cq.head if winner == COMPUTE else comm_req if winner == COMM else None
        fire = request is not None and bool(grant_ready)
        compute_taken = fire and winner == COMPUTE
        comm_taken = fire and winner == COMM
        cmux_comm = self.comm_mux.outputs(a_valid=inp.ingress is not None, b_valid=want, out_ready=int(comm_taken))
        ingress_ready = cmux_comm.a_ready
        mem_ready = cmux_comm.b_ready

        # Triggers: notify-only commands pulse notify; the others go to the command table.
        trigger = trk.trigger if trk.trigger_valid else None
        is_notify = trigger is not None and trigger[1] == self.notify_cmd
        table_trigger = {"tile": trigger[0], "dma_cmd": trigger[1]} if trigger is not None and not is_notify else None
        trigger_ready = int(is_notify or bool(tbl.trigger_ready))

        # Egress: the engine's packets (a) and the GEMM's remote stores (b).
        eng = self.engine.outputs(mem_ready=mem_ready)
        emux = self.egress_mux.outputs(a_valid=eng.egress_valid, b_valid=inp.gemm_remote is not None,
                                       out_ready=inp.egress_ready)
        egress = None
        if emux.out_valid:
            egress = dict(eng.egress) if emux.select == A else dict(inp.gemm_remote)

        out = SliceOutputs(
            gemm_ready=cmux.a_ready, gemm_read_ready=cmux.b_ready,
            gemm_read_data_valid=int(returning is not None), gemm_read_data=returning and returning[0],
            gemm_remote_ready=emux.b_ready, ingress_ready=ingress_ready,
            egress_valid=emux.out_valid, egress=egress,
            arm_ready=trk.arm_ready, program_ready=tbl.program_ready,
            notify_valid=int(is_notify), notify_tile=trigger[0] if is_notify else None,
            status=status, grant=(winner, request) if fire else None,
            dram_request=None if request is None else {"addr": request["addr"], "write": int(request["kind"] != READ)},
            bank_hazard=held[0] if held_write and tracker_ok and not issue else None,
            issued=held if issue else None,
        )

        # -- the edge ---------------------------------------------------------------------
        # The register's request reaches the bank and the tracker; then a read granted now,
        # issued next cycle, sees every write issued before it (this cycle's included).
        update = None
        if issue:
            cls, req = held
            self.bank.step((req["addr"], req["kind"], req["data"]) if held_write else None)
            if counted:
                update = (req["tile"], REMOTE if cls == COMM else LOCAL)
        else:
            self.bank.step(None)
        gemm_read = (self.bank.read(request["addr"]),) if compute_taken and request["kind"] == READ else None
        self.read_returns = [gemm_read, *self.read_returns[:-1]]
        arm = inp.arm and (inp.arm["tile"], inp.arm["threshold"], inp.arm["dma_cmd"])
        self.tracker.step(arm=arm, update=update, trigger_ready=trigger_ready)
        self.table.step(program=inp.program, trigger=table_trigger, issue_ready=eng.cmd_ready)
        # The engine reads the bank (through self.bank.read) after the issued write landed.
        self.engine.step(cmd=tbl.issue if tbl.issue_valid else None,
                         egress_ready=int(bool(inp.egress_ready) and emux.select == A), mem_ready=mem_ready)
        if free:
            self.held = (winner, request) if fire else None
        self.arbiter.step(winner=winner, comm_valid=comm_visible, grant_ready=grant_ready)
        self.compute_mux.step(a_valid=inp.gemm is not None, b_valid=inp.gemm_read is not None, out_ready=cq_w_rdy)
        self.comm_mux.step(a_valid=inp.ingress is not None, b_valid=want, out_ready=int(comm_taken))
        self.egress_mux.step(a_valid=eng.egress_valid, b_valid=inp.gemm_remote is not None,
                             out_ready=inp.egress_ready)
        cq.step(write=compute_in if cq_w_rdy else None, read=compute_taken)
        c = self.counters
        if inp.ingress is not None and ingress_ready:
            c["ingress_beats"] = (c["ingress_beats"] + 1) & COUNTER_MASK
        if emux.out_valid and inp.egress_ready:
            c["egress_beats"] = (c["egress_beats"] + 1) & COUNTER_MASK
        if is_notify:
            c["notifies"] = (c["notifies"] + 1) & COUNTER_MASK
        return out

    def idle_edge(self, **config) -> None:
        """The edge between reset release and the first checked cycle: nothing offered."""
        self.cycle(SliceInputs(**config))

    def idle(self) -> bool:
        """Nothing queued or in flight anywhere (armed tiles included)."""
        return (self.tracker.idle() and self.table.in_flight is None and not self.table.queue
                and self.engine.idle() and not self.compute_queue.items and self.bank.idle() and self.held is None
                and all(r is None for r in self.read_returns))
