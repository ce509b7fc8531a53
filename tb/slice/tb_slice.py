# amaranth: UnusedElaboratable=no
"""cocotb bench of one T3 slice (:class:`rtl.t3_slice.T3Slice`), lock-step with its golden model.

Every cycle the bench compares every output of the slice with
:class:`tb.slice.model.SliceModel`: ``gemm.ready``, ``gemm_read.ready``, ``gemm_read_data``
(valid, payload), ``gemm_remote.ready``, ``ingress.ready``, ``egress`` (valid, payload),
``arm.ready``, ``program.ready``, ``notify`` (valid, payload) and the whole ``status`` word.
The stream checkers of ``tb.common`` watch every stream.

The stimulus is a legal driver (:class:`SliceTraffic`): it powers the bank up with garbage
(``power_up_seed``), zeroes it with untracked ``STORE``s, and then runs *rounds*: a round
programs a DMA descriptor (or uses the notify-only command), arms a tile once the program
is in, and after the arm's handshake sends exactly ``threshold`` tracked writes to the tile,
from the GEMM (``gemm``) and from the previous GPU (``ingress``). Meanwhile the GEMM reads at
random addresses, sends remote stores (``gemm_remote``), and the arbiter's mode, threshold
and starvation limit change between segments of the run.

Beside the model, spec-level checks that a flaw shared by the RTL and the model cannot pass:

* conservation: every round gives exactly one DMA command (``beats`` beats, consecutive
  destination addresses, ``last`` on the final one) or one ``notify``; every remote store
  leaves once, in order; every GEMM read returns once, in order;
* content: a DMA command's data is the tile's content once all its writes are in (the
  bench's reference memory; round data are small multiples of 1/4, so the sums are exact
  and the order of the writes does not matter), and a GEMM read of a quiet tile returns
  the reference memory's word;
* latency: the first beat (or notify) of a round is offered no earlier than the documented
  latency after its last write was accepted, exactly that latency when the slice is idle,
  and, where the egress link never back-pressures, within a bound on the traffic ahead;
* liveness: with egress stalled, the tracked writes of many completing tiles are all
  accepted (the old design deadlocked there), and the GEMM's reads keep returning;
* the status counters agree with the bench's own counts at the end of every run.
"""

from __future__ import annotations

from collections import deque

import cocotb
import numpy as np
from amaranth.lib import data

from rtl.t3_slice import T3Slice
from tb.common.lockstep import LockstepTB, bench_params, register_tests
from tb.common.packing import field_diff, unpack
from tb.common.patterns import SINK_PATTERNS, SOURCE_PATTERNS
from tb.common.protocol import bits
from tb.common.streams import StreamSink, StreamSource
from tb.fp_add.golden import NUMPY_TYPES
from tb.nmc.model import lanes_to_beat
from tb.slice.model import READ, STORE, UPDATE, LaneAdder, SliceInputs, SliceModel
from tb.slice.scenarios import DIRECTED_TESTS, RANDOM_TESTS

MCA, ROUND_ROBIN = 0, 1


class Packer:
    """``pack`` of :mod:`tb.common.packing` for one layout, compiled once (the status word is
    packed every cycle): a missing field or a value that does not fit raises."""

    def __init__(self, layout: data.StructLayout):
        self.fields: list[tuple[tuple[str, ...], int, int]] = []

        def walk(lay, path, base):
            for name, fld in lay:
                if isinstance(fld.shape, data.StructLayout):
                    walk(fld.shape, (*path, name), base + fld.offset)
                else:
                    self.fields.append(((*path, name), base + fld.offset, (1 << fld.width) - 1))

        walk(layout, (), 0)

    def __call__(self, fields: dict) -> int:
        value = 0
        for path, offset, mask in self.fields:
            x = fields
            for key in path:
                x = x[key]
            x = int(x)
            if x & mask != x:
                raise ValueError(f"{'.'.join(path)} = {x} does not fit its field")
            value |= x << offset
        return value


class Source(StreamSource):
    """A :class:`~tb.common.streams.StreamSource` packing with a compiled :class:`Packer`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.packer = Packer(self.layout)


#: Arbiter settings the random runs step through: (mode, threshold, starvation_limit).
ARBITER_CONFIGS = [(MCA, 4, 8), (ROUND_ROBIN, 0, 0), (MCA, 0, 2), (MCA, 31, 40), (MCA, 2, 0), (ROUND_ROBIN, 8, 3)]


class Round:
    """One armed tile: its DMA command (or notify), its writes and what must come out."""

    def __init__(self, *, tile: int, threshold: int, cmd: int, notify: bool, desc: dict | None):
        self.tile, self.threshold, self.cmd, self.notify, self.desc = tile, threshold, cmd, notify, desc
        self.writes: list[tuple[str, dict]] = []   # ("gemm" | "ingress", item)
        self.held: list[tuple[str, dict]] = []     # writes kept back by a directed test
        self.left = threshold                       # writes not yet accepted
        self.expected: list[int] = []               # DMA data, beat by beat
        self.state = "programming" if not notify else "arm"
        self.last_accept: int | None = None
        self.bound: int | None = None               # latest cycle of the first egress offer
        self.armed_cycle: int | None = None
        self.first_offer: int | None = None         # cycle the first DMA beat was offered on egress
        self.notify_cycle: int | None = None


class SliceTraffic:
    """Legal stimulus of one epoch (between resets) and the bench's reference memory."""

    def __init__(self, tb: TB):
        s = tb.top
        self.tb = tb
        self.rng = tb.rng
        self.tile_beats = 1 << s.tile_beats_log2
        self.depth = s.nmc.depth
        self.tiles = min(s.tracker.entries, self.depth // self.tile_beats)
        self.tiles_used = list(range(self.tiles))   # the output buffer: zeroed, then rounds on it
        self.lanes = s.nmc.lanes
        self.fmt = s.nmc.format.name
        self.utype = NUMPY_TYPES[self.fmt][1]
        self.addr_mask = (1 << s.nmc.addr_width) - 1
        self.notify_cmd = s.notify_cmd
        self.remote_port = (1 << s.table.port_width) - 1    # DMA descriptors use the other ports
        self.max_threshold = (1 << s.tracker.count_width) - 1
        values = np.array([k / 4 for k in range(-16, 17)], dtype=NUMPY_TYPES[self.fmt][0])
        self.small = values.view(self.utype)
        self.adder = LaneAdder(self.fmt, self.lanes)
        # Knobs (a test sets them).
        self.p_notify = 0.15
        self.p_ingress = 0.4
        self.p_read = 0.3
        self.p_remote = 0.15
        self.max_in_flight = s.tracker.trigger_depth
        self.thresholds = "mixed"
        self.creating = True        # new rounds may start
        self.remote_left = 10**9
        self.reads_left = 10**9
        self.write_sources = ("gemm", "ingress")
        self.hold_last = False      # keep each round's last write back (completion_burst)
        self.new_epoch()

    # -- epoch --------------------------------------------------------------------------

    def new_epoch(self) -> None:
        """After a reset (or at the start): the bank is unknown, every tile and command free."""
        self.memory: list[int | None] = [None] * self.depth
        self.gen = [0] * self.tiles                   # bumps whenever a tile's round is planned
        self.busy_tiles: set[int] = set()
        self.free_cmds = [c for c in range(self.tb.top.table.commands) if c != self.notify_cmd]
        self.rounds: list[Round] = []
        self.in_flight: list[Round] = []
        self.programs: deque[dict] = deque()
        self.arms: deque[dict] = deque()
        self.gemm_pool: list[dict] = []
        self.ingress_pool: list[dict] = []
        self.init_stores: deque[dict] = deque()
        self.init_total = 0
        self.init_accepted = 0
        self.initialised = False
        self.recent_writes: deque[int] = deque(maxlen=8)
        self.dst_in_use: set[tuple[int, int]] = set()

    def use_tiles(self, count: int) -> None:
        """Run the rounds on ``count`` random tiles (fewer words to zero: shorter runs)."""
        self.tiles_used = sorted(self.rng.sample(range(self.tiles), count))

    def zero_bank(self) -> None:
        """The driver's initialisation: an untracked STORE of zero to every word of the
        tiles in use (the rest of the bank keeps its power-up garbage)."""
        self.init_stores.clear()
        for tile in self.tiles_used:
            for addr in range(tile * self.tile_beats, (tile + 1) * self.tile_beats):
                self.init_stores.append({"tile": tile, "addr": addr, "op": STORE, "tracked": 0, "data": 0,
                                         "_init": True})
        self.init_total = len(self.init_stores)
        self.init_accepted = 0
        self.initialised = False

    # -- rounds ---------------------------------------------------------------------------

    def _threshold(self) -> int:
        if self.thresholds == "small":
            return self.rng.randint(2, 8)
        r = self.rng.random()
        hi = 4 if r < 0.5 else 16 if r < 0.85 else 60
        return self.rng.randint(1, min(hi, self.max_threshold))

    def _beat(self) -> int:
        return lanes_to_beat(self.small[[self.rng.randrange(len(self.small)) for _ in range(self.lanes)]])

    def _add(self, old: int, beat: int) -> int:
        return self.adder(old, beat)

    def can_start(self) -> bool:
        return (self.creating and self.initialised and len(self.in_flight) < self.max_in_flight
                and len(self.busy_tiles) < len(self.tiles_used))

    def start_round(self, *, tile: int | None = None, threshold: int | None = None, notify: bool | None = None,
                    sources: tuple[str, ...] | None = None) -> Round | None:
        rng = self.rng
        if tile is None:
            tile = rng.choice([t for t in self.tiles_used if t not in self.busy_tiles])
        if notify is None:
            notify = rng.random() < self.p_notify
        if not notify and not self.free_cmds:
            return None
        threshold = self._threshold() if threshold is None else threshold
        base = tile * self.tile_beats
        desc = None
        cmd = self.notify_cmd
        if not notify:
            cmd = self.free_cmds.pop(rng.randrange(len(self.free_cmds)))
            beats = self.tile_beats if rng.random() < 0.7 else rng.randint(1, self.tile_beats)
            port = rng.randrange(self.remote_port)
            while True:
                dst = rng.randrange(self.depth)
                if (port, dst) not in self.dst_in_use:
                    break
            self.dst_in_use.add((port, dst))
            desc = {"src_addr": base, "dst_addr": dst, "beats": beats, "dst_port": port,
                    "op": rng.choice((STORE, UPDATE))}
        rnd = Round(tile=tile, threshold=threshold, cmd=cmd, notify=notify, desc=desc)
        # Writes: some words take exactly one STORE, the others any number of UPDATEs, so the
        # tile's final content does not depend on the order in which the writes are granted.
        words = list(range(self.tile_beats))
        rng.shuffle(words)
        n_store = rng.randint(0, min(threshold, self.tile_beats))
        if n_store < threshold and n_store == self.tile_beats:
            n_store -= 1
        stores, updates = words[:n_store], words[n_store:]
        plan = [(w, STORE) for w in stores] + [(rng.choice(updates), UPDATE) for _ in range(threshold - n_store)]
        rng.shuffle(plan)
        sources = sources or self.write_sources
        for word, op in plan:
            addr = base + word
            beat = self._beat()
            src = rng.choice(sources) if len(sources) == 1 else ("ingress" if rng.random() < self.p_ingress
                                                                  and "ingress" in sources else "gemm")
            if src == "gemm":
                item = {"tile": tile, "addr": addr, "op": op, "tracked": 1, "data": beat, "_round": rnd}
            else:
                item = {"dst_port": rng.randrange(1 << self.tb.top.table.port_width), "dst_addr": addr, "op": op,
                        "last": rng.getrandbits(1), "data": beat, "_round": rnd}
            rnd.writes.append((src, item))
            old = self.memory[addr]
            assert old is not None, f"round on tile {tile} before its word {addr} was initialised"
            self.memory[addr] = beat if op == STORE else self._add(old, beat)
        if self.hold_last:
            rnd.held.append(rnd.writes.pop())
        if desc is not None:
            rnd.expected = [self.memory[base + i] for i in range(desc["beats"])]
            self.programs.append({"index": cmd, "desc": desc, "_round": rnd})
        else:
            self.arms.append({"tile": tile, "threshold": threshold, "dma_cmd": cmd, "_round": rnd})
        self.gen[tile] += 1
        self.busy_tiles.add(tile)
        self.rounds.append(rnd)
        self.in_flight.append(rnd)
        return rnd

    def release(self, rnd: Round, writes) -> None:
        for src, item in writes:
            (self.gemm_pool if src == "gemm" else self.ingress_pool).append(item)

    def release_held(self) -> None:
        for rnd in self.in_flight:
            self.release(rnd, rnd.held)
            rnd.held = []

    def finish(self, rnd: Round) -> None:
        rnd.state = "done"
        self.in_flight.remove(rnd)
        self.busy_tiles.discard(rnd.tile)
        if not rnd.notify:
            self.free_cmds.append(rnd.cmd)
            self.dst_in_use.discard((rnd.desc["dst_port"], rnd.desc["dst_addr"]))

    # -- the sources' next_item ------------------------------------------------------------

    def next_program(self):
        return self.programs.popleft() if self.programs else None

    def next_arm(self):
        return self.arms.popleft() if self.arms else None

    def next_gemm(self):
        if self.init_stores:
            return self.init_stores.popleft()
        if self.gemm_pool:
            return self.gemm_pool.pop(self.rng.randrange(len(self.gemm_pool)))
        return None

    def next_ingress(self):
        if self.ingress_pool:
            return self.ingress_pool.pop(self.rng.randrange(len(self.ingress_pool)))
        return None

    def next_read(self):
        if self.reads_left <= 0 or self.rng.random() >= self.p_read:
            return None
        self.reads_left -= 1
        r = self.rng.random()
        if r < 0.35 and self.recent_writes:
            addr = self.rng.choice(self.recent_writes)       # read-after-write hazards
        elif r < 0.7:
            quiet = [t for t in self.tiles_used if t not in self.busy_tiles]
            addr = (self.rng.choice(quiet) * self.tile_beats + self.rng.randrange(self.tile_beats)
                    if quiet else self.rng.randrange(self.depth))
        else:
            addr = self.rng.randrange(self.depth)
        return {"addr": addr}

    def next_remote(self):
        if self.remote_left <= 0 or self.rng.random() >= self.p_remote:
            return None
        self.remote_left -= 1
        return {"dst_port": self.remote_port, "dst_addr": self.rng.randrange(self.depth),
                "op": self.rng.getrandbits(1), "last": self.rng.getrandbits(1),
                "data": self.rng.getrandbits(self.tb.top.nmc.beat_width)}

    # -- per cycle --------------------------------------------------------------------------

    def plan(self) -> None:
        """Before the sources drive: start rounds while allowed."""
        while self.can_start():
            if self.start_round() is None:
                break

    def done(self) -> bool:
        return (not self.in_flight and not self.programs and not self.arms and not self.gemm_pool
                and not self.ingress_pool and not self.init_stores)


class TB(LockstepTB):
    """Slice bench: six sources, the egress sink, the model, the traffic and the spec checks."""

    def __init__(self, dut, *, source_p: float = 1.0, egress_p: float = 1.0, configs=None,
                 segment_cycles: int = 400):
        super().__init__(dut)
        self.params = bench_params()
        self.top = s = T3Slice(**self.params)
        self.model = SliceModel(
            format=s.nmc.format.name, lanes=s.nmc.lanes, depth=s.nmc.depth, entries=s.tracker.entries,
            trigger_depth=s.tracker.trigger_depth, commands=s.table.commands, max_beats=s.table.max_beats,
            queue_depth=s.table.queue_depth, addr_width=s.nmc.addr_width, tile_beats_log2=s.tile_beats_log2,
            compute_queue_depth=self.params.get("compute_queue_depth", 8), wait_width=s.arbiter.wait_width,
            adder_latency=s.nmc.adder_latency, read_latency=s.read_latency)
        self.traffic = SliceTraffic(self)
        self.source_p = source_p
        self.read_layout = data.StructLayout({"addr": s.nmc.addr_width})
        t = self.traffic
        streams = (("program", s.table.program_layout, t.next_program), ("arm", s.tracker.arm_layout, t.next_arm),
                   ("gemm", s.gemm_layout, t.next_gemm), ("gemm_read", self.read_layout, t.next_read),
                   ("ingress", s.packet_layout, t.next_ingress), ("gemm_remote", s.packet_layout, t.next_remote))
        self.src = {name: Source(dut, name, layout, self.rng, source_p, next_item=make)
                    for name, layout, make in streams}
        self.egress = StreamSink(dut, "egress", s.packet_layout, self.rng, egress_p)
        self.egress_p = egress_p
        self.pack_status = Packer(s.status_layout)
        self.pack_packet = Packer(s.packet_layout)
        self.force_egress_ready: int | None = None
        self.configs = list(configs or ARBITER_CONFIGS)
        self.rng.shuffle(self.configs)
        self.segment_cycles = segment_cycles
        self.config = self.configs[0]
        self._driven_config = None
        data_field = dict(s.packet_layout)["data"]
        self.data_mask = ((1 << data_field.width) - 1) << data_field.offset
        self.latency = s.update_to_egress_latency
        self.check_upper_bound = egress_p == 1.0
        self.max_wait = max(lim for _, _, lim in self.configs) + 2
        self.totals: dict[str, int] = {}
        self.stats = {"rounds": 0, "dma_commands": 0, "notifies": 0, "reads_checked": 0, "reads": 0,
                      "remote": 0, "max_latency": 0, "unknown_reads": 0, "raw_reads": 0,
                      "reads_model_checked": 0, "min_bound_slack": 10**9, "arm_stalls": 0}
        self.new_epoch_checks()
        self._checked_layout = False
        self._last_write: int | None = None
        self.write_issues: dict[int, int] = {}   # tile -> cycle its latest tracked write reached the bank
        self.max_trigger_queue = 0

    # -- epoch bookkeeping -------------------------------------------------------------------

    def new_epoch_checks(self) -> None:
        self.pending_reads: deque[tuple[int, int, int | None, int]] = deque()   # (addr, gen, expected, cycle)
        self.read_latencies: list[int] = []
        self.remote_expected: deque[dict] = deque()
        self.dma_current: tuple[Round, int] | None = None   # command being received, next beat index
        self.egress_offer_cycle: int | None = None
        self._egress_prev_valid = 0
        self._egress_prev_taken = False
        self.counts = {"gemm_tracked": 0, "ingress": 0, "egress": 0, "notifies": 0, "stores": 0, "updates": 0}

    def set_source_pattern(self, p: float) -> None:
        self.source_p = p
        for src in self.src.values():
            src.p_valid = p

    def _idle_edge(self) -> None:
        mode, threshold, limit = self.config
        self.model.idle_edge(mode=mode, threshold=threshold, starvation_limit=limit)

    async def start(self, *, reset_cycles: int = 2) -> None:
        await super().start(reset_cycles=reset_cycles)
        self._idle_edge()

    def on_reset(self) -> None:
        # What left before the reset was checked beat by beat; what was in flight is lost.
        for src in self.src.values():
            src.current = None
            src.queue.clear()
        for key, value in self.counts.items():
            self.totals[key] = self.totals.get(key, 0) + value
        t = self.traffic
        knobs = (t.creating, t.hold_last)
        t.new_epoch()
        t.creating, t.hold_last = knobs
        self.new_epoch_checks()
        self.model.reset()
        self._idle_edge()

    def reset_inputs(self) -> None:
        d = self.dut
        for name in ("program", "arm", "gemm", "gemm_read", "ingress", "gemm_remote"):
            getattr(d, f"{name}__valid").value = 0
        d.egress__ready.value = 0
        self._drive_config(force=True)

    # -- the cycle ---------------------------------------------------------------------------

    def _drive_config(self, force: bool = False) -> None:
        if force or self.config != self._driven_config:
            mode, threshold, limit = self.config
            self.dut.mode.value = mode
            self.dut.threshold.value = threshold
            self.dut.starvation_limit.value = limit
            self._driven_config = self.config

    def drive(self) -> None:
        if self.segment_cycles and self.cycle and self.cycle % self.segment_cycles == 0:
            self.config = self.configs[(self.cycle // self.segment_cycles) % len(self.configs)]
        self._drive_config()
        t = self.traffic
        t.plan()
        # The driver zeroes the bank at full rate, whatever the pattern of the run.
        self.src["gemm"].p_valid = 1.0 if t.init_stores else self.source_p
        for src in self.src.values():
            src.drive()
        self.egress.drive(self.force_egress_ready)

    def check(self) -> None:
        dut, sb, cycle, src = self.dut, self.scoreboard, self.cycle, self.src
        mode, threshold, limit = self.config
        offered = {name: s.current for name, s in src.items()}
        read = offered["gemm_read"]
        out = self.model.cycle(SliceInputs(
            gemm=offered["gemm"], gemm_read=read and read["addr"], gemm_remote=offered["gemm_remote"],
            ingress=offered["ingress"], arm=offered["arm"], program=offered["program"],
            egress_ready=self.egress.current_ready, threshold=threshold, starvation_limit=limit, mode=mode))

        # Coverage: reads granted right after a write to their address (read-after-write).
        grant = out.grant
        if out.issued is not None and out.issued[1]["kind"] != READ and out.issued[1]["tracked"]:
            self.write_issues[out.issued[1]["tile"]] = self.cycle
        if grant is not None and grant[1]["kind"] == READ and grant[1]["addr"] == self._last_write:
            self.stats["raw_reads"] += 1
        self._last_write = grant[1]["addr"] if grant is not None and grant[1]["kind"] != READ else None

        # Handshakes, as the DUT saw them: each source samples its ready (and checks the
        # stream rules); the readies must be the model's.
        taken = {}
        for name, want in (("gemm", out.gemm_ready), ("gemm_read", out.gemm_read_ready),
                           ("gemm_remote", out.gemm_remote_ready), ("ingress", out.ingress_ready),
                           ("arm", out.arm_ready), ("program", out.program_ready)):
            taken[name] = src[name].handshake()[1]
            sb.check(cycle, f"{name}.ready", src[name].ready_seen, want)
        read_valid = bits(dut.gemm_read_data__valid.value)
        sb.check(cycle, "gemm_read_data.valid", read_valid, out.gemm_read_data_valid)
        read_data = bits(dut.gemm_read_data__payload.value) if read_valid else None
        if read_valid and out.gemm_read_data is not None:
            sb.check(cycle, "gemm_read_data.payload", read_data, out.gemm_read_data)
            self.stats["reads_model_checked"] += 1
        egress_valid, egress_raw = self.egress.sample()
        sb.check(cycle, "egress.valid", egress_valid, out.egress_valid)
        layout = self.top.packet_layout
        if egress_valid:
            want = dict(out.egress)
            mask = ~0
            if want["data"] is None:
                want["data"], mask = 0, ~self.data_mask
            sb.check(cycle, "egress.payload", egress_raw & mask, self.pack_packet(want) & mask,
                     explain=lambda g, e: field_diff(layout, g, e))
        notify_valid = bits(dut.notify__valid.value)
        sb.check(cycle, "notify.valid", notify_valid, out.notify_valid)
        notify_tile = bits(dut.notify__payload.value) if notify_valid else None
        if notify_valid:
            sb.check(cycle, "notify.payload.tile", notify_tile, out.notify_tile)
        status_layout = self.top.status_layout
        if not self._checked_layout:
            self._check_status_fields(status_layout, out.status)
        sb.check(cycle, "status", bits(dut.status.value), self.pack_status(out.status),
                 explain=lambda g, e: field_diff(status_layout, g, e))

        self._spec_cycle(taken, read_data, egress_valid, egress_raw, notify_tile)
        self.max_trigger_queue = max(self.max_trigger_queue, len(self.model.tracker.queue))
        if offered["arm"] is not None and not out.arm_ready:
            self.stats["arm_stalls"] += 1

    def _check_status_fields(self, layout, status) -> None:
        def names(lay, prefix=""):
            out = set()
            for name, fld in lay:
                out |= names(fld.shape, f"{prefix}{name}.") if isinstance(fld.shape, data.StructLayout) else {
                    prefix + name}
            return out

        def keys(d, prefix=""):
            out = set()
            for k, v in d.items():
                out |= keys(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
            return out

        assert names(layout) == keys(status), (
            f"model status fields differ from the RTL layout: {names(layout) ^ keys(status)}")
        self._checked_layout = True

    # -- spec-level checks, independent of the model ------------------------------------------

    def _accepted_write(self, item: dict, cycle: int, *, addr: int) -> None:
        t = self.traffic
        rnd: Round | None = item.get("_round")
        t.recent_writes.append(addr)
        if rnd is None:
            return
        rnd.left -= 1
        assert rnd.left >= 0
        if rnd.left == 0:
            rnd.state = "written"
            rnd.last_accept = cycle
            if self.check_upper_bound and not rnd.notify:
                ahead = sum(r.desc["beats"] for r in t.in_flight if r.state == "written" and not r.notify)
                per_beat = 2 * (self.max_wait + 2) + 2
                # The commands completed before it, a few that may overtake it from the
                # compute queue, and its own, each beat waiting for the arbiter and the mux.
                slack = 2 * t.tile_beats
                rnd.bound = cycle + self.latency + 2 * self.model.compute_queue.depth + 8 + (ahead + slack) * per_beat

    def _spec_cycle(self, taken: dict, read_data, egress_valid: int, egress_raw, notify_tile) -> None:
        t, cycle = self.traffic, self.cycle
        if taken["program"] is not None:
            rnd = taken["program"]["_round"]
            rnd.state = "arm"
            t.arms.append({"tile": rnd.tile, "threshold": rnd.threshold, "dma_cmd": rnd.cmd, "_round": rnd})
        if taken["arm"] is not None:
            rnd = taken["arm"]["_round"]
            rnd.state = "armed"
            rnd.armed_cycle = cycle
            self.stats["rounds"] += 1
            t.release(rnd, rnd.writes)
        gemm = taken["gemm"]
        if gemm is not None:
            if gemm.get("_init"):
                t.memory[gemm["addr"]] = gemm["data"]
                t.init_accepted += 1
            else:
                self.counts["gemm_tracked"] += 1
            self.counts["stores" if gemm["op"] == STORE else "updates"] += 1
            self._accepted_write(gemm, cycle, addr=gemm["addr"])
        ingress = taken["ingress"]
        if ingress is not None:
            self.counts["ingress"] += 1
            self.counts["stores" if ingress["op"] == STORE else "updates"] += 1
            self._accepted_write(ingress, cycle, addr=ingress["dst_addr"])
        if not t.initialised and t.init_accepted == t.init_total and t.init_total:
            # Reads and rounds may use the bank once every zeroing store has reached it.
            status = unpack(self.top.status_layout, int(self.dut.status.value))
            t.initialised = status["reducer"]["stores"] >= t.init_total
        read = taken["gemm_read"]
        if read is not None:
            addr = read["addr"]
            tile = addr // t.tile_beats
            quiet = tile < t.tiles and tile not in t.busy_tiles
            self.pending_reads.append((addr, t.gen[tile] if tile < t.tiles else -1,
                                       t.memory[addr] if quiet else None, cycle))
            self.stats["reads"] += 1
        if read_data is not None:
            assert self.pending_reads, f"cycle {cycle}: gemm_read_data valid with no read outstanding"
            addr, gen, want, accepted = self.pending_reads.popleft()
            self.read_latencies.append(cycle - accepted)
            tile = addr // t.tile_beats
            if want is not None and t.gen[tile] == gen:
                assert read_data == want, (f"cycle {cycle}: read of quiet word {addr} returned {read_data:#x}, "
                                           f"reference memory holds {want:#x}\n  {self.context()}")
                self.stats["reads_checked"] += 1
            elif want is None:
                self.stats["unknown_reads"] += 1
        if taken["gemm_remote"] is not None:
            self.remote_expected.append(taken["gemm_remote"])
            self.stats["remote"] += 1
        self._spec_egress(egress_valid, egress_raw)
        if notify_tile is not None:
            self.counts["notifies"] += 1
            rnd = next((r for r in t.in_flight if r.notify and r.tile == notify_tile and r.state != "done"), None)
            assert rnd is not None, f"cycle {cycle}: notify of tile {notify_tile}, which no round armed for notify"
            assert rnd.state == "written", (f"cycle {cycle}: notify of tile {notify_tile} before all its "
                                            f"{rnd.threshold} writes were accepted")
            spec = self.top.tracker.trigger_latency
            assert cycle - rnd.last_accept >= spec, (
                f"cycle {cycle}: notify {cycle - rnd.last_accept} cycles after the last write, spec >= {spec}")
            self.stats["notifies"] += 1
            rnd.notify_cycle = cycle
            t.finish(rnd)

    def _spec_egress(self, valid: int, raw) -> None:
        t, cycle = self.traffic, self.cycle
        if valid and (not self._egress_prev_valid or self._egress_prev_taken):
            self.egress_offer_cycle = cycle
        taken = bool(valid and self.egress.current_ready)
        self._egress_prev_valid, self._egress_prev_taken = valid, taken
        if not taken:
            return
        self.counts["egress"] += 1
        beat = self.egress.record(raw)
        if beat["dst_port"] == t.remote_port:
            assert self.remote_expected, f"cycle {cycle}: egress beat on the remote port with no remote store sent"
            want = self.remote_expected.popleft()
            got = {k: beat[k] for k in ("dst_port", "dst_addr", "op", "last", "data")}
            assert got == {k: want[k] for k in got}, f"cycle {cycle}: remote store {got} != sent {want}"
            return
        if self.dma_current is None:
            key = (beat["dst_port"], beat["dst_addr"])
            rnd = next((r for r in t.in_flight if not r.notify and r.state != "done"
                        and (r.desc["dst_port"], r.desc["dst_addr"]) == key), None)
            assert rnd is not None, f"cycle {cycle}: egress DMA beat {beat} starts no command that was triggered"
            assert rnd.state == "written", (f"cycle {cycle}: DMA of tile {rnd.tile} left before its "
                                            f"{rnd.threshold} writes were accepted ({rnd.left} missing)")
            latency = self.egress_offer_cycle - rnd.last_accept
            assert latency >= self.latency, (f"cycle {cycle}: tile {rnd.tile}'s first beat offered {latency} cycles "
                                             f"after its last write, spec >= {self.latency}")
            if rnd.bound is not None:
                assert self.egress_offer_cycle <= rnd.bound, (
                    f"cycle {cycle}: tile {rnd.tile}'s first beat offered {latency} cycles after its last write, "
                    f"bound {rnd.bound - rnd.last_accept}\n  {self.context()}")
            self.stats["max_latency"] = max(self.stats["max_latency"], latency)
            if rnd.bound is not None:
                self.stats["min_bound_slack"] = min(self.stats["min_bound_slack"], rnd.bound - self.egress_offer_cycle)
            rnd.first_offer = self.egress_offer_cycle
            self.dma_current = (rnd, 0)
        rnd, i = self.dma_current
        desc = rnd.desc
        want = {"dst_port": desc["dst_port"], "dst_addr": (desc["dst_addr"] + i) & t.addr_mask, "op": desc["op"],
                "last": int(i == desc["beats"] - 1), "data": rnd.expected[i]}
        assert beat == want, (f"cycle {cycle}: tile {rnd.tile} DMA beat {i}: {beat} != {want}\n  {self.context()}")
        if want["last"]:
            self.dma_current = None
            self.stats["dma_commands"] += 1
            t.finish(rnd)
        else:
            self.dma_current = (rnd, i + 1)

    # -- running -------------------------------------------------------------------------------

    def quiescent(self) -> bool:
        return (self.traffic.done() and all(s.idle() for s in self.src.values()) and self.model.idle()
                and not self.pending_reads and not self.remote_expected)

    @property
    def settle_cycles(self) -> int:
        return self.latency + 4

    async def initialise(self) -> None:
        """Zero the tiles in use (unless under way), run (checked) until the stores are in the
        bank and the tracker's sweep is over."""
        if not self.traffic.init_total:
            self.traffic.zero_bank()
        await self.run(until=lambda: self.traffic.initialised and not self.model.tracker.sweep_left,
                       timeout=20 * self.traffic.depth + 1000)

    async def drain(self, *, timeout: int = 60_000) -> None:
        """Stop the stimulus (no new rounds, reads or remote stores), run until all is out."""
        t = self.traffic
        t.creating = False
        t.reads_left = t.remote_left = 0
        await super().drain(timeout=timeout)
        t.reads_left = t.remote_left = 10**9

    async def traffic_run(self, cycles: int) -> None:
        """Random rounds for ``cycles`` cycles, then drain."""
        self.traffic.creating = True
        await self.run(cycles=cycles)
        await self.drain()

    def final_check(self) -> None:
        t = self.traffic
        assert t.done() and not t.in_flight, "rounds left unfinished"
        assert not self.pending_reads, f"{len(self.pending_reads)} reads never returned"
        assert not self.remote_expected, f"{len(self.remote_expected)} remote stores never left"
        assert self.dma_current is None, "a DMA command stopped half-way"
        status = unpack(self.top.status_layout, int(self.dut.status.value))
        for block, flags in (("tracker", ("err_unarmed_update", "err_rearm", "err_zero_threshold")),
                             ("table", ("err_unprogrammed", "err_bad_descriptor")), ("engine", ("err_overflow",))):
            for flag in flags:
                assert status[block][flag] == 0, f"{block}.{flag} set"
        trk = status["tracker"]
        assert trk["armed_entries"] == 0, "entries left armed"
        c = self.counts
        # The counters since the last reset, against the bench's own counts.
        assert trk["local_updates"] == c["gemm_tracked"], (trk["local_updates"], c["gemm_tracked"])
        assert trk["remote_updates"] == c["ingress"], (trk["remote_updates"], c["ingress"])
        assert status["ingress_beats"] == c["ingress"]
        assert status["egress_beats"] == c["egress"]
        assert status["notifies"] == c["notifies"]
        assert status["reducer"]["stores"] == c["stores"] and status["reducer"]["updates"] == c["updates"]
        self.log.info("stats: %s, resets %d", self.stats, self.resets)
        summed = {k: v for k, v in self.stats.items() if k not in ("max_latency", "min_bound_slack")}
        self.write_stats(**summed, resets=self.resets)
        self.scoreboard.assert_clean()


# -- random traffic crossed with the idle/back-pressure matrix --------------------------------

#: Cycles of each source pattern's phase in a random test.
PHASE_CYCLES = {"full": 450, "gaps": 450, "idle": 350}


async def random_test(dut, sink):
    """Random rounds, reads and remote stores under one egress pattern; every input stream
    runs through the source patterns in phases (full rate, random gaps, mostly idle), and the
    arbiter through its settings in segments."""
    tb = TB(dut, egress_p=SINK_PATTERNS[sink], segment_cycles=300)
    t = tb.traffic
    t.use_tiles(24)
    t.max_in_flight = min(tb.top.tracker.trigger_depth, {"always": 24, "random": 12, "heavy": 5}[sink],
                          tb.rng.choice([4, 24]))
    await tb.start()
    await tb.initialise()
    phases = list(SOURCE_PATTERNS)
    tb.rng.shuffle(phases)
    t.creating = True
    for source in phases:
        tb.set_source_pattern(SOURCE_PATTERNS[source])
        await tb.run(cycles=PHASE_CYCLES[source])
    tb.set_source_pattern(SOURCE_PATTERNS["full"])
    await tb.drain()
    tb.final_check()


register_tests(globals(), RANDOM_TESTS, random_test)


@cocotb.test()
async def long_random(dut):
    """A long run on every tile: random gaps, random back-pressure, every arbiter setting in turn."""
    tb = TB(dut, source_p=SOURCE_PATTERNS["gaps"], egress_p=SINK_PATTERNS["random"], segment_cycles=500)
    tb.traffic.max_in_flight = tb.top.tracker.trigger_depth
    await tb.start()
    await tb.initialise()
    await tb.traffic_run(3000)
    tb.final_check()


@cocotb.test()
async def idle_latency(dut):
    """Idle slice: a tile's first egress beat is offered exactly update_to_egress_latency after
    the grant of its last write, counted from the cycle the write leaves the issue register
    (one cycle after the grant unless the bank's adder holds an update of the same word), a
    notify trigger_latency after that, and a GEMM read returns 1 + read_latency cycles after
    its acceptance (the queue, then read_latency after its grant)."""
    tb = TB(dut, configs=[(MCA, 4, 8)], segment_cycles=0)
    t = tb.traffic
    t.p_read = t.p_remote = 0.0
    t.creating = False
    t.use_tiles(8)
    await tb.start()
    await tb.initialise()
    await tb.drain()
    for n in range(8):
        source = ("gemm", "ingress")[n % 2]
        notify = n % 4 == 3
        rnd = t.start_round(tile=t.tiles_used[n], threshold=tb.rng.randint(1, 8), notify=notify, sources=(source,))
        await tb.run(until=lambda r=rnd: r.state == "done", timeout=500)
        # From the cycle the tile's last write left the issue register for the bank (one
        # after its grant, later if the bank's hazard held it): the latency less that cycle.
        issued = tb.write_issues[rnd.tile]
        assert issued >= rnd.last_accept + 1 + (source == "gemm"), "a write reached the bank before its grant"
        if notify:
            got, want = rnd.notify_cycle - issued, tb.top.tracker.trigger_latency
        else:
            got, want = rnd.first_offer - issued, tb.latency - 1
        assert got == want, (f"round {n} ({source}, notify={notify}): {got} cycles after the last write, "
                             f"documented {want}")
        await tb.drain()
    for _ in range(6):
        addr = tb.rng.choice(t.tiles_used) * t.tile_beats + tb.rng.randrange(t.tile_beats)
        tb.src["gemm_read"].queue.append({"addr": addr})
        await tb.drain()
    want = 1 + tb.top.read_latency
    assert tb.read_latencies[-6:] == [want] * 6, f"read latencies {tb.read_latencies[-6:]}, want {want}"
    tb.final_check()


@cocotb.test()
async def completion_burst(dut):
    """The old deadlock: many tiles complete at once while egress is stalled, so the trigger
    queue fills, the command queue fills and the engine's buffer fills, while DMA reads and
    the tiles' tracked writes compete for the bank. Every tracked write of an armed tile must
    still be accepted, and every GEMM read return, before egress moves again; in MCA and
    round-robin. With few trigger slots, more tiles wait for their arm (reservations) and are
    armed as triggers move on, until the trigger queue itself is full."""
    tb = TB(dut, configs=[(MCA, 4, 8)], segment_cycles=0)
    tb.check_upper_bound = False
    t = tb.traffic
    t.thresholds = "small"
    t.p_notify = 0.1
    t.p_remote = 0.0
    t.creating = False
    depth = tb.top.tracker.trigger_depth
    held = min(40, depth, t.tiles)
    extra = min(2 * depth, t.tiles - held) if depth < 40 else 0
    t.use_tiles(held + extra)
    await tb.start()
    await tb.initialise()
    arm = tb.src["arm"]

    def settled(rounds) -> bool:
        """No armed tile owes a write; a tile still to arm waits for a trigger slot."""
        if any(r.state == "armed" for r in rounds):
            return False
        return all(r.state in ("written", "done") for r in rounds) or (arm.current is not None and not arm.ready_seen)

    for config in ((MCA, 4, 8), (ROUND_ROBIN, 0, 0)):
        tb.config = config
        order = tb.rng.sample(t.tiles_used, held + extra)
        t.hold_last = True
        rounds = [t.start_round(tile=n) for n in order[:held]]
        t.hold_last = False
        rounds += [t.start_round(tile=n) for n in order[held:]]
        # Everything but the last write of each of the first tiles, with egress flowing.
        await tb.run(until=lambda rs=rounds[:held]: all(r.left == 1 and r.state == "armed" for r in rs)
                     and tb.model.compute_queue.level == 0, timeout=20_000)
        await tb.run(cycles=5)
        # Stall egress, then release those last writes at once.
        tb.force_egress_ready = 0
        tb.max_trigger_queue = 0
        t.release_held()
        t.p_read = 0.5
        t.reads_left = 10**9
        await tb.run(until=lambda rs=rounds: settled(rs), timeout=30 * len(rounds) + 200)
        # The engine's buffer (read_latency + 2 beats) may still be filling from reads in
        # flight, which can free a command slot, a trigger slot and an arm: let it fill.
        await tb.run(cycles=4 * tb.top.read_latency)
        await tb.run(until=lambda rs=rounds: settled(rs), timeout=30 * len(rounds) + 200)
        # Reads accepted now must come back although egress is stalled.
        t.reads_left = 0
        await tb.run(until=lambda: not tb.pending_reads and tb.src["gemm_read"].current is None, timeout=200)
        await tb.run(cycles=50)
        assert settled(rounds), "a tracked write or an arm moved after the slice had settled with egress stalled"
        assert tb.egress.current_ready == 0
        m = tb.model   # equal to the DUT at every port by now; its queues say what the stall reached
        dma_rounds = sum(not r.notify and r.state == "written" for r in rounds)
        tb.log.info("egress stalled: %d tiles written, %d waiting for their arm; most triggers queued %d (of %d), "
                    "%d commands queued, engine buffer %d", sum(r.state == "written" for r in rounds),
                    sum(r.state == "arm" for r in rounds), tb.max_trigger_queue, depth, len(m.table.queue),
                    len(m.engine.buffer))
        # Commands past the trigger queue: the command queue, the lookup, and in the engine its
        # active command and every command with beats in its buffer (read_latency + 2 beats,
        # so more commands as the bank's read latency grows).
        # (A command's last beat is buffered or in flight, or the command is still active.)
        beats = list(m.engine.buffer) + [r for r in m.engine.in_flight if r is not None]
        in_engine = sum(packet["last"] for packet, _ in beats) + (m.engine.active is not None)
        absorbed = m.table.queue_depth + 1 + max(2, in_engine)
        assert tb.max_trigger_queue >= min(depth, dma_rounds - absorbed), (
            f"the scenario did not fill the trigger queue: {dma_rounds} DMA tiles written, "
            f"{absorbed} absorbed downstream")
        tb.force_egress_ready = None
        t.p_read = 0.3
        await tb.drain(timeout=20_000)
    tb.final_check()


@cocotb.test()
async def mid_run_reset(dut):
    """Reset during the tracker's sweep, then twice with rounds, reads and DMA in flight; after
    each the driver re-initialises the bank and the run goes on."""
    tb = TB(dut, source_p=SOURCE_PATTERNS["gaps"], egress_p=SINK_PATTERNS["random"], segment_cycles=200)
    t = tb.traffic
    t.use_tiles(16)
    t.zero_bank()      # untracked stores go in during the sweep; the reset cuts them off
    await tb.start()
    await tb.run(cycles=tb.rng.randint(5, tb.top.tracker.reset_cycles // 2))
    await tb.reset_dut(cycles=tb.rng.randint(1, 3))
    for _ in range(2):
        await tb.initialise()
        t.creating = True
        await tb.run(cycles=tb.rng.randint(250, 450))
        assert t.in_flight, "no round in flight at the reset"
        await tb.reset_dut(cycles=tb.rng.randint(1, 3))
    await tb.initialise()
    await tb.traffic_run(450)
    assert tb.resets == 3
    tb.final_check()


assert set(RANDOM_TESTS + DIRECTED_TESTS) <= set(globals()), "scenarios name a missing test"
