"""End-to-end scoreboard of the ring's reduce-scatter (pure Python; no simulator needed).

The bench feeds it every transfer it sees, with the cycle: the GEMM ports' handshakes
(``gemm``, ``gemm_read``, ``gemm_remote``), the returned read data, ``notify``, and every
beat entering (``egress`` of GPU g) and leaving (``ingress`` of GPU g + 1) each link. It
knows nothing of the slice's internals; it checks the protocol's specification
(:mod:`tb.ring.protocol`) and the public timing of the blocks, and fails at the first
violation.

Per link beat
-------------
* **Egress of GPU g** (link g's input). The beats of chunk g - 1 are GPU g's stage-1
  remote writes: each must equal, field for field, the oldest ``gemm_remote`` item
  accepted and not yet sent (order and content). Every other beat is a DMA beat. The first
  beat of a DMA must be beat 0 of a tile GPU g forwards, not forwarded before (one DMA per
  arm), whose 2 x beats counted writes (its local writes on ``gemm`` and its incoming
  beats on ``ingress``) have all been accepted; the next DMA beats must be that tile's beats
  1 .. beats-1 in address order (a command's beats leave in order, unbroken by other DMA
  beats; remote writes may interleave), ``op=UPDATE``, ``dst_port=0``, ``dst_addr`` = the
  word's address, ``last`` exactly on the final beat, and ``data`` bit-exact the value the
  memory model gives that word once the tile is complete: ``(0 + local partial) +
  incoming beat``, from numpy/ml_dtypes (:mod:`tb.fp_add.golden`). A link accepts one beat
  every ``cycles_per_beat`` cycles at most.
* **Ingress of GPU g + 1** (link g's output). Each beat must equal, bit for bit, the oldest
  beat in flight on link g (FIFO: nothing lost, duplicated, reordered or altered), have
  spent at least ``link_latency`` cycles on it, land in GPU g + 1's output buffer on a word
  that has not yet received its incoming beat, and carry the value the numpy chain expects
  there.

GEMM reads
----------
A read made during the reduce-scatter may see a word before, between or after its two
updates, so the scoreboard determines which of them it must see, from port events only:

* the GEMM's writes and reads share the compute queue, so a read sees exactly the local
  writes (and zeroing stores) *accepted on* ``gemm`` *before the read was accepted on*
  ``gemm_read`` (a memory shows an agent every write that agent made before its read,
  however recent: the read-after-write case);
* an incoming beat is granted to the bank in the cycle the slice accepts it on ``ingress``
  (the communication class has no queue), and a read returns the word as left by every
  request granted before it, ``read_latency`` cycles after its grant
  (:attr:`~rtl.t3_slice.T3Slice.read_latency`), so a read returned in cycle r sees exactly
  the incoming beats accepted before cycle r - read_latency (one grant per cycle: an
  incoming beat of the same word accepted in cycle r - read_latency is a violation).

The word then holds exactly one of ``0``, ``0 + local``, ``0 + incoming`` or the sum, and the
read must return it bit for bit. Reads return in the order they were accepted. Words the
driver has not zeroed are never read (their value is unknown); the probe reads made before
the zeroing are only kept, to show that the bank started with garbage.

Conservation, order and latency (independent of the micro-architecture)
------------------------------------------------------------------------
Every armed tile gives exactly one trigger: one DMA of exactly ``beats`` beats or one
``notify``, and only once complete. Triggers follow completion order: a tile's completion
lies in ``[lower, upper]``, with ``lower`` the last of its 2 x beats acceptances and
``upper`` that plus :attr:`Timing.local_grant` when the last one is a local write (a local
write reaches the bank within that many cycles of its acceptance; an incoming one in the
same cycle); a tile whose ``upper`` is before another's ``lower`` must be forwarded (or
notified) first. Latency: a DMA's first beat leaves within :attr:`Timing.dma_start` cycles
of the later of the tile's last acceptance and the previous DMA's last beat (the engine
never idles while a completed tile waits); a notify comes within
:attr:`Timing.notify_base` cycles of the tile's last acceptance plus
:attr:`Timing.per_trigger` for every DMA trigger that can be queued ahead of it; both
bounds add one cycle per notify trigger possibly queued ahead (the tracker hands triggers
out in completion order, so notifies pile up behind DMA triggers waiting for the table, and
then leave one per cycle).
:func:`derive_timing` explains each bound.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tb.ring.protocol import STORE, UPDATE, RingPlan

__all__ = ["Timing", "derive_timing", "RingScoreboard", "RingError"]

NEVER = -(10**9)


class RingError(AssertionError):
    """The ring broke the reduce-scatter's specification."""


@dataclass(frozen=True)
class Timing:
    link_latency: int
    link_cycles_per_beat: int
    #: Cycles from a read's grant to its ``gemm_read_data``.
    read_latency: int
    #: Most cycles from a local write's acceptance on ``gemm`` to its grant at the bank.
    local_grant: int
    #: Most cycles from max(tile complete as observed, previous DMA's last beat) to the first beat.
    dma_start: int
    #: Most cycles from a notify tile's last acceptance to ``notify``, with no DMA trigger ahead.
    notify_base: int
    #: Added to the notify bound for each DMA trigger that may be queued ahead.
    per_trigger: int
    #: Most cycles a communication request waits for its grant (``status.arbiter.max_comm_wait``).
    comm_wait: int | None


def derive_timing(slice_, *, link_latency: int, link_cycles_per_beat: int, starvation_limit: int,
                  mca: bool, compute_queue_depth: int = 8, margin: int = 8) -> Timing:
    """Latency bounds from the blocks' public timing properties and their queueing rules.

    With ``L = starvation_limit``, ``Q = compute_queue_depth``, ``cpb = link_cycles_per_beat``:

    * *A communication grant* (an incoming beat or a DMA read at the head of its class)
      comes within ``L + 2`` cycles in MCA mode (its wait counts every cycle; at ``L`` it
      is the request offered, and only a read-after-write stall of one cycle can refuse
      it); within 3 in round-robin mode. The two communication sources alternate, so a DMA
      read waits for at most one incoming beat first: ``C_read = 2 (L + 2)``.
    * *A local write* waits behind at most ``Q`` requests of the compute queue; each grant
      can lose a cycle to a communication grant and one to a read-after-write stall:
      ``local_grant = 3 (Q + 2)``.
    * *An egress beat* waits for at most one remote write of the egress mux ahead of it;
      each needs the link: ``cpb`` cycles of its pacing and, when the link is full, one
      beat taken by the next GPU's ingress (a communication grant there, ``C_read``):
      ``C_egress = 2 (cpb + C_read + 1)``.
    * *First DMA beat*: ``dma_start = local_grant + update_to_egress_latency + C_read +
      C_egress + margin``: the tile completes within ``local_grant`` of its last
      acceptance, triggers and starts within ``update_to_egress_latency`` when nothing is
      ahead; when the engine is still sending the previous tile, this tile's command is
      taken when the previous one issues its last read and its first beat follows the
      previous tile's last beat after one read grant and one egress.
    * *Notify*: ``notify_base = local_grant + tracker.trigger_latency + margin`` when
      nothing is ahead in the trigger queue; every DMA trigger ahead of it costs at most
      the tile's beats through the engine, each a read grant and an egress:
      ``per_trigger = beats x (C_read + C_egress)``.
    * ``comm_wait``: in MCA mode ``status.arbiter.max_comm_wait`` stays within
      ``starvation_limit + 1 + hazard_window`` (the arbiter's promise, plus one cycle in
      which the bank may refuse the grant, plus the bank's hazard hold: a refused update
      keeps the grant until its address's previous sum leaves the adder). Every grant
      bound above includes that hold too.
    """
    hazard = slice_.nmc.hazard_window   # a refused update keeps the grant for up to this many cycles
    grant = starvation_limit + 2 + hazard if mca else 3 + hazard
    c_read = 2 * grant
    c_egress = 2 * (link_cycles_per_beat + c_read + 1)
    local_grant = (3 + hazard) * (compute_queue_depth + 2)
    return Timing(
        link_latency=link_latency,
        link_cycles_per_beat=link_cycles_per_beat,
        read_latency=slice_.read_latency,
        local_grant=local_grant,
        dma_start=local_grant + slice_.update_to_egress_latency + c_read + c_egress + margin,
        notify_base=local_grant + slice_.tracker.trigger_latency + margin,
        per_trigger=(1 << slice_.tile_beats_log2) * (c_read + c_egress),
        comm_wait=starvation_limit + 1 + hazard if mca else None,
    )


def _fields_differing(got: dict, expected: dict) -> str:
    def show(v):
        return f"{v:#x}" if isinstance(v, int) and v > 9 else repr(v)
    return ", ".join(f"{k}: got {show(got.get(k))}, expected {show(v)}" for k, v in expected.items() if got.get(k) != v)


@dataclass(eq=False)  # hashed by identity (sets of pending tiles)
class _Tile:
    tile: int
    dma: bool
    local: int = 0
    incoming: int = 0
    local_last: int = NEVER
    incoming_last: int = NEVER
    start: int | None = None      # first egress beat, or the notify
    end: int | None = None        # last egress beat

    def complete(self, beats: int) -> bool:
        return self.local == beats and self.incoming == beats

    @property
    def lower(self) -> int:
        return max(self.local_last, self.incoming_last)

    def upper(self, local_grant: int) -> int:
        return max(self.local_last + local_grant, self.incoming_last)


@dataclass
class _Gpu:
    g: int
    region: set[int]
    tiles: dict[int, _Tile]
    zero_at: dict[int, int] = field(default_factory=dict)
    local_at: dict[int, int] = field(default_factory=dict)
    incoming_at: dict[int, int] = field(default_factory=dict)
    reads: deque = field(default_factory=deque)          # (addr, accepted cycle, probe)
    probe_data: list[int] = field(default_factory=list)
    remote_pending: deque = field(default_factory=deque)  # accepted gemm_remote items not yet on the link
    dma_current: list | None = None                       # [tile, next beat]
    last_dma_end: int = NEVER
    last_dma_lower: int = NEVER                           # for the order check
    last_notify_lower: int = NEVER
    counts: Counter = field(default_factory=Counter)
    pending: set = field(default_factory=set)             # complete tiles not yet triggered (as seen)
    dma_log: list = field(default_factory=list)           # (first beat cycle, lower) of each DMA, in order
    notify_log: list = field(default_factory=list)        # (notify cycle, lower) of each notify, in order
    returned: dict[int, int] = field(default_factory=dict)  # addr -> last data a checked read returned


class RingScoreboard:
    """The reference of one reduce-scatter run (see the module docstring).

    ``check(cycle, what, got, expected)`` compares a value (a :class:`~tb.common.scoreboard.Scoreboard`'s
    ``check``, which fails fast); ``fail(cycle, message)`` raises. ``on_dma_start(g, tile)``
    is called when a DMA's first beat is seen (the driver reuses descriptors on it).
    """

    def __init__(self, plan: RingPlan, timing: Timing, *, check: Callable, fail: Callable,
                 on_dma_start: Callable[[int, int], None] | None = None):
        self.plan, self.timing = plan, timing
        self._check, self._fail = check, fail
        self.on_dma_start = on_dma_start
        self.n, self.beats = plan.gpus, plan.beats
        self.chunk_beats = plan.tiles * plan.beats
        self.gpus = []
        for p in plan.plans:
            tiles = {t: _Tile(t, True) for t in p.dma_tiles}
            tiles.update({t: _Tile(t, False) for t in p.notify_tiles})
            self.gpus.append(_Gpu(p.gpu, set(p.region), tiles))
        self.links = [deque() for _ in range(self.n)]   # (cycle, raw, packet)
        self.link_last_in = [NEVER] * self.n
        self.max_dma_gap = 0
        self.max_notify_slack = None
        self.reads_checked = 0
        self.beats_checked = 0

    # -- helpers ---------------------------------------------------------------------------

    def fail(self, cycle: int, message: str):
        self._fail(cycle, message)
        raise RingError(message)  # in case fail() returned

    def check(self, cycle: int, what: str, got, expected) -> None:
        explain = _fields_differing if isinstance(got, dict) and isinstance(expected, dict) else None
        if not self._check(cycle, what, got, expected, explain=explain):
            raise RingError(f"{what}: got {got!r}, expected {expected!r}")

    def _tile_written(self, gpu: _Gpu, cycle: int, addr: int, *, incoming: bool) -> None:
        tile = gpu.tiles.get(addr // self.beats)
        if tile is None:
            self.fail(cycle, f"GPU {gpu.g}: write to address {addr}, whose tile {addr // self.beats} is not armed")
        if incoming:
            tile.incoming += 1
            tile.incoming_last = cycle
        else:
            tile.local += 1
            tile.local_last = cycle
        if tile.complete(self.beats):
            gpu.pending.add(tile)

    # -- events ----------------------------------------------------------------------------

    def gemm_write(self, g: int, item: dict, cycle: int) -> None:
        """A ``gemm`` handshake: a zeroing store or a tracked local update."""
        gpu = self.gpus[g]
        addr = item["addr"]
        if addr not in gpu.region:
            self.fail(cycle, f"GPU {g}: GEMM write outside the output buffer (address {addr})")
        if item["op"] == STORE and not item["tracked"]:
            gpu.zero_at[addr] = cycle
            gpu.counts["zero"] += 1
            return
        if item["op"] != UPDATE or not item["tracked"]:
            self.fail(cycle, f"GPU {g}: unexpected GEMM write {item}")
        if addr not in gpu.zero_at:
            self.fail(cycle, f"GPU {g}: local update of address {addr} before its zeroing")
        if addr in gpu.local_at:
            self.fail(cycle, f"GPU {g}: second local update of address {addr}")
        gpu.local_at[addr] = cycle
        gpu.counts["local"] += 1
        self._tile_written(gpu, cycle, addr, incoming=False)

    def read_accepted(self, g: int, addr: int, cycle: int, *, probe: bool = False) -> None:
        gpu = self.gpus[g]
        if not probe and gpu.zero_at.get(addr, cycle) >= cycle:
            self.fail(cycle, f"GPU {g}: (bench) read of address {addr}, whose value is not determined yet")
        gpu.reads.append((addr, cycle, probe))
        gpu.counts["reads"] += 1

    def read_returned(self, g: int, data: int, cycle: int) -> None:
        gpu = self.gpus[g]
        if not gpu.reads:
            self.fail(cycle, f"GPU {g}: gemm_read_data valid with no read outstanding")
        addr, accepted, probe = gpu.reads.popleft()
        gpu.counts["returned"] += 1
        if probe:
            gpu.probe_data.append(data)
            return
        p = self.plan.plans[g]
        grant = cycle - self.timing.read_latency
        local = gpu.local_at.get(addr, cycle) < accepted
        arrived = gpu.incoming_at.get(addr, cycle)
        if arrived == grant:
            self.fail(cycle, f"GPU {g}: read of address {addr} returned in cycle {cycle}, so granted in {grant}, "
                             f"the cycle its incoming beat was accepted: two grants in one cycle")
        incoming = arrived < grant
        expected = (p.total if incoming else p.local_z)[addr] if local else (p.incoming_z[addr] if incoming else 0)
        state = {(False, False): "zeroed", (True, False): "0 + local", (False, True): "0 + incoming",
                 (True, True): "0 + local + incoming"}[local, incoming]
        self.check(cycle, f"GPU {g} gemm_read_data (address {addr}, accepted in cycle {accepted}, word {state})",
                   data, expected)
        gpu.returned[addr] = data
        self.reads_checked += 1

    def remote_accepted(self, g: int, item: dict, cycle: int) -> None:
        self.gpus[g].remote_pending.append({k: v for k, v in item.items() if k != "raw"})
        self.gpus[g].counts["remote"] += 1

    def egress(self, g: int, raw: int, pkt: dict, cycle: int) -> None:
        """A beat accepted by link g from GPU g."""
        gpu, t = self.gpus[g], self.timing
        if cycle - self.link_last_in[g] < t.link_cycles_per_beat:
            self.fail(cycle, f"link {g} accepted beats in cycles {self.link_last_in[g]} and {cycle}: more than one "
                             f"per {t.link_cycles_per_beat} cycles")
        self.link_last_in[g] = cycle
        self.links[g].append((cycle, raw, pkt))
        gpu.counts["egress"] += 1
        self.beats_checked += 1
        addr = pkt["dst_addr"]
        if self.plan.chunk_of(addr) == (g - 1) % self.n:
            if not gpu.remote_pending:
                self.fail(cycle, f"GPU {g}: egress beat {pkt} to chunk {(g - 1) % self.n} (stage 1) with no "
                                 f"gemm_remote write pending")
            self.check(cycle, f"GPU {g} egress (stage-1 remote write, in gemm_remote order)", pkt,
                       gpu.remote_pending.popleft())
            return
        tile_id, k = divmod(addr, self.beats)
        if gpu.dma_current is None:
            tile = gpu.tiles.get(tile_id)
            if tile is None or not tile.dma:
                self.fail(cycle, f"GPU {g}: egress DMA beat to address {addr}: tile {tile_id} is not one GPU {g} "
                                 f"forwards")
            if k != 0:
                self.fail(cycle, f"GPU {g}: DMA of tile {tile_id} starts at beat {k}, not 0")
            if tile.start is not None:
                self.fail(cycle, f"GPU {g}: tile {tile_id} forwarded a second time (first DMA started in cycle "
                                 f"{tile.start}): one arm, two triggers")
            if not tile.complete(self.beats):
                self.fail(cycle, f"GPU {g}: tile {tile_id} forwarded before it was complete ({tile.local} local and "
                                 f"{tile.incoming} incoming writes of {self.beats} each accepted)")
            since = max(tile.lower, gpu.last_dma_end)
            gap = cycle - since
            # Notify triggers queued ahead of this one leave one per cycle.
            notifies = self._ahead(gpu.notify_log, since, tile.upper(t.local_grant))
            self.max_dma_gap = max(self.max_dma_gap, gap - notifies)
            if gap > t.dma_start + notifies:
                previous = "none" if gpu.last_dma_end == NEVER else f"cycle {gpu.last_dma_end}"
                self.fail(cycle, f"GPU {g}: tile {tile_id}'s first beat left {gap} cycles after the later of its "
                                 f"last write's acceptance (cycle {tile.lower}) and the previous DMA's last beat "
                                 f"({previous}); the bound is {t.dma_start} + {notifies} notifies possibly ahead")
            self._check_order(gpu, tile, cycle, dma=True)
            tile.start = cycle
            gpu.pending.discard(tile)
            gpu.dma_log.append((cycle, tile.lower))
            gpu.dma_current = [tile_id, 0]
            if self.on_dma_start is not None:
                self.on_dma_start(g, tile_id)
        current, expected_k = gpu.dma_current
        if (tile_id, k) != (current, expected_k):
            self.fail(cycle, f"GPU {g}: egress DMA beat to address {addr} (tile {tile_id} beat {k}) while tile "
                             f"{current}'s beat {expected_k} is due")
        last = int(k == self.beats - 1)
        expected = {"dst_port": 0, "dst_addr": addr, "op": UPDATE, "last": last,
                    "data": self.plan.plans[g].total[addr]}
        self.check(cycle, f"GPU {g} egress (DMA of tile {tile_id}, beat {k})", pkt, expected)
        if last:
            gpu.dma_current = None
            gpu.last_dma_end = cycle
            gpu.tiles[tile_id].end = cycle
            gpu.counts["dma"] += 1
        else:
            gpu.dma_current[1] += 1

    def ingress(self, h: int, raw: int, pkt: dict, cycle: int) -> None:
        """A beat accepted by GPU h from link h - 1."""
        link = (h - 1) % self.n
        gpu = self.gpus[h]
        if not self.links[link]:
            self.fail(cycle, f"GPU {h}: ingress beat {pkt} that link {link} never accepted")
        sent, sent_raw, sent_pkt = self.links[link].popleft()
        self.check(cycle, f"GPU {h} ingress = oldest beat on link {link} (sent in cycle {sent})", raw, sent_raw)
        if cycle - sent < self.timing.link_latency:
            self.fail(cycle, f"link {link}: beat sent in cycle {sent} arrived after {cycle - sent} cycles, under the "
                             f"link latency {self.timing.link_latency}")
        addr = pkt["dst_addr"]
        if addr not in gpu.region:
            self.fail(cycle, f"GPU {h}: ingress beat to address {addr}, outside its output buffer")
        if addr in gpu.incoming_at:
            self.fail(cycle, f"GPU {h}: second incoming beat for address {addr}")
        if addr not in gpu.zero_at:
            self.fail(cycle, f"GPU {h}: incoming beat for address {addr} before its zeroing")
        self.check(cycle, f"GPU {h} ingress data (address {addr})", pkt["data"], self.plan.plans[h].incoming[addr])
        gpu.incoming_at[addr] = cycle
        gpu.counts["ingress"] += 1
        self._tile_written(gpu, cycle, addr, incoming=True)

    def notify(self, g: int, tile_id: int, cycle: int) -> None:
        gpu, t = self.gpus[g], self.timing
        tile = gpu.tiles.get(tile_id)
        if tile is None or tile.dma:
            self.fail(cycle, f"GPU {g}: notify of tile {tile_id}, which is not armed with the notify command")
        if tile.start is not None:
            self.fail(cycle, f"GPU {g}: tile {tile_id} notified twice (first in cycle {tile.start})")
        if not tile.complete(self.beats):
            self.fail(cycle, f"GPU {g}: tile {tile_id} notified before it was complete ({tile.local} local and "
                             f"{tile.incoming} incoming writes of {self.beats} each accepted)")
        upper = tile.upper(t.local_grant)
        # Triggers possibly ahead of this one in the tracker's queue: DMA triggers of tiles that
        # may have completed first and had not left for the table when this tile completed (each
        # waits for the engine), and notify triggers handed out since (one per cycle).
        ahead = sum(1 for y in gpu.pending if y.dma and y.lower < upper)
        ahead += self._ahead(gpu.dma_log, tile.lower, upper)
        notifies = self._ahead(gpu.notify_log, tile.lower, upper)
        bound = t.notify_base + ahead * t.per_trigger + notifies
        slack = bound - (cycle - tile.lower)
        self.max_notify_slack = slack if self.max_notify_slack is None else min(self.max_notify_slack, slack)
        if cycle - tile.lower > bound:
            self.fail(cycle, f"GPU {g}: tile {tile_id} notified {cycle - tile.lower} cycles after its last write was "
                             f"accepted (last local write in cycle {tile.local_last}, last incoming beat in cycle "
                             f"{tile.incoming_last}); the bound with {ahead} DMA and {notifies} notify triggers "
                             f"possibly ahead is {bound}")
        self._check_order(gpu, tile, cycle, dma=False)
        tile.start = cycle
        gpu.pending.discard(tile)
        gpu.notify_log.append((cycle, tile.lower))
        gpu.counts["notify"] += 1

    @staticmethod
    def _ahead(log: list, since: int, upper: int) -> int:
        """Triggers in ``log`` (``(cycle, lower)``, in order) handed out from ``since`` on, of
        tiles that may have completed before ``upper``."""
        count = 0
        for start, lower in reversed(log):
            if start < since:
                break
            count += lower < upper
        return count

    def _check_order(self, gpu: _Gpu, tile: _Tile, cycle: int, *, dma: bool) -> None:
        """Triggers leave in completion order: no tile of the same kind that surely completed
        before this one may still be waiting."""
        lg = self.timing.local_grant
        for other in gpu.pending:
            if other.dma == dma and other is not tile and other.upper(lg) < tile.lower:
                what = "forwarded" if dma else "notified"
                self.fail(cycle, f"GPU {gpu.g}: tile {tile.tile} {what} before tile {other.tile}, which completed "
                                 f"first (by cycle {other.upper(lg)}; tile {tile.tile} not before {tile.lower})")

    # -- end of run ------------------------------------------------------------------------

    def outstanding(self) -> bool:
        """True while some beat, read, DMA or trigger is still owed."""
        return (any(self.links) or any(g.reads or g.remote_pending or g.dma_current for g in self.gpus)
                or any(t.start is None for g in self.gpus for t in g.tiles.values()))

    def final(self, cycle: int, status: list[dict], *, readback: list[list[int]] | None = None) -> None:
        """Conservation and the slices' counters, once the run has drained."""
        n, cb, tiles = self.n, self.chunk_beats, self.plan.tiles
        for g, gpu in enumerate(self.gpus):
            p = self.plan.plans[g]
            for link in self.links:
                if link:
                    self.fail(cycle, f"{len(link)} beats still on a link at the end")
            if gpu.reads or gpu.remote_pending or gpu.dma_current:
                self.fail(cycle, f"GPU {g}: {len(gpu.reads)} reads, {len(gpu.remote_pending)} remote writes or a DMA "
                                 f"still outstanding")
            missing = sorted(t.tile for t in gpu.tiles.values() if t.start is None)
            if missing:
                self.fail(cycle, f"GPU {g}: armed tiles {missing[:16]} never triggered")
            c = gpu.counts
            expect = {"zero": len(p.zero_writes), "local": len(p.local_writes), "remote": len(p.remote_writes),
                      "egress": (n - 1) * cb, "ingress": (n - 1) * cb, "dma": (n - 2) * tiles, "notify": tiles}
            for key, value in expect.items():
                self.check(cycle, f"GPU {g} {key} transfers", c[key], value)
            st = status[g]
            for block, flag in (("tracker", "err_unarmed_update"), ("tracker", "err_rearm"),
                                ("tracker", "err_zero_threshold"), ("table", "err_unprogrammed"),
                                ("table", "err_bad_descriptor"), ("engine", "err_overflow"),
                                ("tracker", "clearing"), ("tracker", "armed_entries"), ("engine", "busy")):
                self.check(cycle, f"GPU {g} status.{block}.{flag}", st[block][flag], 0)
            forwarded = (n - 2) * tiles
            counters = {
                ("ingress_beats",): (n - 1) * cb,
                ("egress_beats",): (n - 1) * cb,
                ("notifies",): tiles,
                ("tracker", "local_updates"): len(p.local_writes),
                ("tracker", "remote_updates"): (n - 1) * cb,
                ("tracker", "triggers"): forwarded + tiles,
                ("table", "triggers"): forwarded,
                ("table", "issued"): forwarded,
                ("engine", "commands"): forwarded,
                ("engine", "beats"): forwarded * self.beats,
                ("reducer", "stores"): len(p.zero_writes),
                ("reducer", "updates"): len(p.local_writes) + (n - 1) * cb,
                ("arbiter", "compute_grants"): c["zero"] + c["local"] + c["reads"],
                ("arbiter", "comm_grants"): (n - 1) * cb + forwarded * self.beats,
            }
            for path, value in counters.items():
                got = st
                for key in path:
                    got = got[key]
                self.check(cycle, f"GPU {g} status.{'.'.join(path)}", got, value)
            if self.timing.comm_wait is not None and st["arbiter"]["max_comm_wait"] > self.timing.comm_wait:
                self.fail(cycle, f"GPU {g}: a communication request waited {st['arbiter']['max_comm_wait']} cycles "
                                 f"in MCA mode, over starvation_limit + 1 + hazard_window = {self.timing.comm_wait}")
        if readback is not None:
            for g, words in enumerate(readback):
                expected = [self.plan.plans[g].total[a] for a in self.plan.chunk_addresses(g)]
                self.check(cycle, f"GPU {g} final chunk {g} (read back)", words, expected)
