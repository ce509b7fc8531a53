"""One HBM pseudo-channel with its banks, rows, refresh and read/write turnarounds, behind
the verified arbiter: the row-aware DRAM channel.

Why: T3's updates and DMA reads cost the GEMM more than their bytes only through DRAM
state. An update is a read and a write to one row (a read/write turnaround of the data
bus), and a tile's chunk lands on other rows of the banks the GEMM streams from, so the
GEMM's open rows are closed under it. A queue served at a fixed rate
(:mod:`.dram_cycle`) cannot see either; this channel can.

Where T3-MCA sits: between the GPU's two request classes and the controller's transaction
queue, as the verified ``rtl.arbiter.MemoryArbiter`` does (its golden model,
:class:`.arbiter_policy.MemoryArbiterModel`, decides every grant). A real controller
cannot put it in the command scheduler: that one sees only DRAM commands and picks by row
state (FR-FCFS); which class gets into the queue at all is the arbiter's choice, and it is
the only place where the class of a request is known. So the two compose: the arbiter
decides who enters, FR-FCFS decides the order of what entered.

The channel (time unit: one memory clock cycle, :class:`~system_model.describe.dram_timing.DramTiming`):

* **Address mapping** (stated, per pseudo-channel after the GPU's channel interleave of
  256 bytes): ``row | bank | bank group | column``. A sequential stream fills a row's
  columns, then moves to the next bank group, then the next bank, then the next row. A
  tile's data (a GEMM output tile, a reduce-scatter chunk: rows of ``tile_n`` elements, a
  row pitch apart) is runs of ``run_requests`` requests in one row (one 256-byte
  interleave unit: four 64-byte requests), each run in a bank and row that the pitch
  scatters: uniformly random here. A random access is a run of one.
* **Requests**: 64 bytes, two 32-byte bursts to consecutive columns of one row. A read;
  a write; or a near-memory update (``rmw``): a read, and when its data has returned
  (CL + burst) and been added, a write to the same columns. Its read leaves the read queue
  when issued; its sum waits in the reducer until the write queue has room (counted in the
  queue level the arbiter sees).
* **Transaction queue**: ``queue_entries`` entries, half for reads and half for writes
  (Ramulator 2's HBM controller has 32 + 32); the arbiter's ``grant.ready`` is "the buffer the
  request needs has room".
* **Scheduler**: FR-FCFS over the queue: the oldest column command that hits an open row
  and meets its timing; otherwise the oldest request's ACT (or its bank's PRE, open page,
  once no queued request hits the open row). One row and one column command per cycle
  (HBM's separate row and column command buses). Writes are drained in batches: write mode
  starts when the writes reach the high watermark (80% of their buffer) or no read waits,
  and ends at the low watermark (20%) when a read waits (Ramulator 2's defaults).
* **Timing**: tRCD (tRCDRD; tRCDWR for writes), tRP, tRAS, tRC, tRRD_S/L, tFAW (four ACTs per window), tCCD_S/L,
  tRTP, tWR, tWTR_S/L, tRTW, CL, CWL, bursts on the data bus, and all-bank refresh: every
  tREFI the banks are precharged and blocked for tRFC.
* **Page policy**: ``open`` keeps a row open until a conflicting request needs the bank;
  ``closed`` precharges a bank once no queued request hits its row.

:func:`run_channel` offers a set of :class:`Stream`\\ s (each at a rate in requests per
cycle, or backlogged) for a number of cycles and returns what was served, with latency,
row-hit and turnaround counts (:class:`ChannelStats`). It is deterministic for a seed.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

from ..describe.dram_timing import DramTiming
from .arbiter_policy import COMM, COMPUTE, MCA, ROUND_ROBIN, MemoryArbiterModel

__all__ = ["Stream", "ChannelStats", "run_channel", "PAGE_POLICIES", "KINDS", "PATTERNS",
           "WRITE_HIGH_WATERMARK", "WRITE_LOW_WATERMARK", "RUN_REQUESTS_TILE"]

PAGE_POLICIES = ("open", "closed")
KINDS = ("read", "write", "rmw")
PATTERNS = ("sequential", "tile", "random")
#: Write-drain watermarks, fractions of the write buffer (Ramulator 2 HBM controller defaults).
WRITE_HIGH_WATERMARK = 0.8
WRITE_LOW_WATERMARK = 0.2
#: Requests of a tile's data in one row: one 256-byte channel-interleave unit.
RUN_REQUESTS_TILE = 4
#: Requests a stream holds ready at the arbiter (an offered stream beyond this is refused:
#: flow control, counted as not served). Each starts half full, so that a stream the channel
#: cannot keep up with is at its steady state (a full buffer) soon after the warm-up, and one
#: it can drains it during the warm-up.
SOURCE_BUFFER = 16


@dataclass(frozen=True)
class Stream:
    """One source of requests into the channel.

    ``klass``: ``compute`` (the GEMM) or ``comm`` (T3's DMA reads and updates), the
    arbiter's two classes. ``kind``: ``read``, ``write`` or ``rmw`` (a near-memory update).
    ``pattern``: ``sequential`` (rows filled in order), ``tile`` (runs of
    :data:`RUN_REQUESTS_TILE` in scattered rows) or ``random`` (runs of one).
    ``rate``: requests offered per cycle; ``math.inf``: always one ready (backlogged).
    ``lanes``: independent copies interleaved (a GEMM's many panels in flight at once;
    a sequential stream's lanes start in distinct banks and bank groups, random rows).
    """

    name: str
    klass: str
    kind: str
    pattern: str
    rate: float = math.inf
    lanes: int = 1
    #: Bank groups the stream's addresses fall in (None: all); synthetic streams only.
    bank_groups: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.klass not in ("compute", "comm"):
            raise ValueError(f"klass must be compute or comm, not {self.klass!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.pattern not in PATTERNS:
            raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {self.pattern!r}")
        if not self.rate > 0:
            raise ValueError(f"rate must be > 0 requests per cycle, not {self.rate}")
        if not 1 <= self.lanes <= 64:
            raise ValueError(f"lanes must be in [1, 64], not {self.lanes}")
        if self.bank_groups is not None and (not self.bank_groups or min(self.bank_groups) < 0):
            raise ValueError(f"bank_groups must name bank groups (>= 0), not {self.bank_groups!r}")


@dataclass
class ChannelStats:
    """What :func:`run_channel` measured over its measured cycles (after the warm-up)."""

    cycles: int
    #: Per stream name: requests completed (a read's data returned, a write or an update's
    #: write issued) per cycle.
    served_per_cycle: dict[str, float]
    #: Per stream name: requests refused at a full source buffer, per cycle.
    refused_per_cycle: dict[str, float]
    #: Per stream name: the rate the channel kept up with: requests completed between the
    #: ends of the first and the last write drain of the window, where writes were drained
    #: (the queues are alike at both); else offered less refused, less what piled up.
    sustained_per_cycle: dict[str, float]
    #: Per stream name: the requests that arrived per cycle over the same span (a backlogged
    #: stream: its sustained rate), the denominator of a served fraction.
    offered_per_cycle: dict[str, float]
    #: Cycles the sustained and offered rates were measured over.
    span_cycles: int
    #: Data-bus busy fraction (bursts x burst cycles / cycles).
    bus_utilisation: float
    #: Column accesses that found their row open / all column accesses (per request).
    row_hit_rate: float
    #: Per stream name: row-hit rate of its requests.
    row_hit_rate_by_stream: dict[str, float]
    #: Read-to-write and write-to-read switches of the data bus.
    turnarounds: int
    #: Cycles the data bus idled across those switches (from the end of the last burst of
    #: one direction to the first of the other).
    turnaround_idle_cycles: int
    activates: int
    refreshes: int
    #: Per stream name: mean and 99th-percentile latency of reads (an update's read
    #: included), from entering the transaction queue to the data, in cycles.
    mean_read_latency_cycles: dict[str, float] = field(default_factory=dict)
    p99_read_latency_cycles: dict[str, float] = field(default_factory=dict)
    #: Per stream name: mean cycles from the request's arrival at the arbiter to its grant.
    mean_arbiter_wait_cycles: dict[str, float] = field(default_factory=dict)


class _Source:
    """A stream's address generator and ready requests (deque of arrival cycles)."""

    def __init__(self, stream: Stream, timing: DramTiming, rng: random.Random):
        self.stream, self.rng = stream, rng
        self.banks, self.rows = timing.banks, 1 << 14
        self.row_requests = timing.row_requests
        self.bank_groups = timing.bank_groups
        self.ready: deque = deque()
        self.acc = 0.0
        self.lanes = [self._fresh_lane() for _ in range(stream.lanes)]
        if stream.pattern == "sequential" and stream.bank_groups is None:
            # A GEMM's panels in flight are spread over the banks (the address hash's job):
            # lane j starts j/lanes of the way through the bank order, one bank group on, so
            # that lanes moving in step never share a bank or, up to the bank groups, a group.
            # Random starts let two lanes meet in one bank for the whole run, each closing the
            # other's row: a partition camp that a seed, not the mix, decided.
            for j, lane in enumerate(self.lanes):
                lane[0] = (j * self.banks // stream.lanes + j) % self.banks
        self.lane = 0
        self.granted = 0

    def _bank(self) -> int:
        groups = self.stream.bank_groups
        if groups is None:
            return self.rng.randrange(self.banks)
        return self.rng.choice(groups) + self.bank_groups * self.rng.randrange(self.banks // self.bank_groups)

    def _fresh_lane(self) -> list:
        """[bank, row, requests left in this run, started]"""
        return [self._bank(), self.rng.randrange(self.rows), 0, False]

    def next_address(self) -> tuple[int, int]:
        lane = self.lanes[self.lane]
        self.lane = (self.lane + 1) % len(self.lanes)
        pattern = self.stream.pattern
        if lane[2] == 0:
            if pattern == "sequential":
                if lane[3]:
                    # Next row-sized chunk: the next bank group, then bank, then row (the
                    # mapping), skipping bank groups the stream does not use.
                    bank = lane[0]
                    while True:
                        bank += 1
                        if bank % self.banks == 0:
                            lane[1] = (lane[1] + 1) % self.rows
                        bank %= self.banks
                        groups = self.stream.bank_groups
                        if groups is None or _bank_of(bank, self.bank_groups) in groups:
                            break
                    lane[0] = bank
                lane[3] = True
                lane[2] = self.row_requests
            else:
                lane[0], lane[1] = self._bank(), self.rng.randrange(self.rows)
                lane[2] = RUN_REQUESTS_TILE if pattern == "tile" else 1
        lane[2] -= 1
        return lane[0], lane[1]


def _bank_of(bank: int, bank_groups: int) -> int:
    """Bank group of a bank index: consecutive indices alternate bank groups (the mapping's
    bank-group bits sit below its bank bits)."""
    return bank % bank_groups


def run_channel(timing: DramTiming, streams: list[Stream], *, cycles: int, warmup_cycles: int = 500,
                policy: str = "round_robin", queue_entries: int = 64, threshold: int = 8,
                starvation_limit: int = 64, page_policy: str = "open", refresh: bool = True,
                seed: int = 1, skip_idle: bool = True) -> ChannelStats:
    """Offer ``streams`` to one pseudo-channel for ``warmup_cycles + cycles`` cycles.

    ``policy``: ``round_robin`` or ``mca``, the verified arbiter's two modes (``threshold``
    and ``starvation_limit`` are MCA's). ``refresh=False`` leaves refresh out (to measure
    its cost). ``skip_idle`` jumps over the cycles of an empty channel (an optimisation that
    changes nothing; a test runs both ways).
    """
    if policy not in ("round_robin", "mca"):
        raise ValueError(f"policy must be round_robin or mca, not {policy!r}")
    if page_policy not in PAGE_POLICIES:
        raise ValueError(f"page_policy must be open or closed, not {page_policy!r}")
    if not streams:
        raise ValueError("streams must name at least one stream")
    if len({s.name for s in streams}) != len(streams):
        raise ValueError("streams must have distinct names")
    if not 2 <= queue_entries <= 4096:
        raise ValueError(f"queue_entries must be in [2, 4096], not {queue_entries}")
    if cycles < 1 or warmup_cycles < 0:
        raise ValueError(f"cycles must be >= 1 and warmup_cycles >= 0, not {cycles} and {warmup_cycles}")
    T = timing
    rng = random.Random(seed)
    sources = [_Source(s, T, random.Random(rng.random())) for s in streams]
    for src in sources:
        if src.stream.rate != math.inf:
            src.ready.extend([0] * (SOURCE_BUFFER // 2))
    mode = MCA if policy == "mca" else ROUND_ROBIN
    arbiter = MemoryArbiterModel(wait_width=16)
    n_banks, n_bg = T.banks, T.bank_groups
    burst = T.burst_cycles
    read_cap = max(1, queue_entries // 2)
    write_cap = max(1, queue_entries - read_cap)
    hi = max(1, math.ceil(WRITE_HIGH_WATERMARK * write_cap))
    lo = math.floor(WRITE_LOW_WATERMARK * write_cap)
    closed_page = page_policy == "closed"

    # Bank state.
    open_row = [-1] * n_banks
    pre_ready = [0] * n_banks             # earliest PRE (tRAS, tRTP, tWR)
    act_ready = [0] * n_banks             # earliest ACT (tRP, tRC, refresh)
    col_ready = [0] * n_banks             # earliest read (tRCD)
    col_ready_w = [0] * n_banks           # earliest write (tRCDWR)
    # Channel and bank-group state.
    rd_ready_bg = [0] * n_bg
    wr_ready_bg = [0] * n_bg
    rd_ready = wr_ready = 0
    act_ready_bg = [0] * n_bg
    act_ready_any = 0
    faw: deque = deque(maxlen=4)
    last_dir = None                       # "r" / "w" of the last column command
    last_col = 0                          # ... and its cycle
    turnaround_idle = 0

    # Entries: [stream index, kind ("r"/"w"), bank, row, bursts left, granted at, rmw,
    # row hit (None until decided)]
    reads: list = []
    writes: list = []
    pending_rmw: deque = deque()          # (cycle the write may enter, entry)
    write_mode = False

    next_refresh = T.tREFI if refresh else math.inf
    refreshing = False

    total = warmup_cycles + cycles
    n = len(streams)
    served = [0] * n
    refused = [0] * n
    hits = [0] * n
    accesses = [0] * n
    lat: list[list[int]] = [[] for _ in range(n)]
    waits = [0] * n
    waits_n = [0] * n
    bursts_measured = 0
    turnarounds = activates = refreshes = 0
    klass = [COMPUTE if s.klass == "compute" else COMM for s in streams]
    rates = [s.rate for s in streams]
    kinds = [s.kind for s in streams]
    by_class = {COMPUTE: [i for i in range(n) if klass[i] == COMPUTE], COMM: [i for i in range(n) if klass[i] == COMM]}
    decide, step = arbiter.decide, arbiter.step

    arrivals = [0] * n
    backlog_start = [0] * n
    drain_ends: list = []                 # (cycle, requests served so far) at each write drain's end

    def backlog() -> list[int]:
        """Per stream: requests offered and not yet done (at the arbiter or in the queue)."""
        out = [len(src.ready) for src in sources]
        for entry in reads + writes:
            out[entry[0]] += 1
        for _, entry in pending_rmw:
            out[entry[0]] += 1
        return out

    # Within a class, the stream furthest behind its share of the class's grants goes next.
    share = [r if r != math.inf else 1.0 for r in rates]

    def head(k):
        best = None
        for i in by_class[k]:
            src = sources[i]
            if src.ready and (best is None or src.granted / share[i] < sources[best].granted / share[best]):
                best = i
        return best

    def room(i):
        """``grant.ready``: the buffer the stream's next request needs has room."""
        return (len(writes) < write_cap) if kinds[i] == "write" else (len(reads) < read_cap)

    # Timing as locals: the loop below runs once a cycle.
    tRCD, tRCDWR, tRP, tRAS, tRC, tRTP, tWR, tFAW = T.tRCD, T.tRCDWR, T.tRP, T.tRAS, T.tRC, T.tRTP, T.tWR, T.tFAW
    tRRD_S, tRRD_L, tCCD_S, tCCD_L, tRTW = T.tRRD_S, T.tRRD_L, T.tCCD_S, T.tCCD_L, T.tRTW
    rd_after_wr_s, rd_after_wr_l = T.CWL + burst + T.tWTR_S, T.CWL + burst + T.tWTR_L
    wr_to_pre, read_done = T.CWL + burst + tWR, T.CL + burst
    bg_of = [_bank_of(b, n_bg) for b in range(n_banks)]

    finite = [i for i in range(n) if rates[i] != math.inf]
    t = -1
    while t + 1 < total:
        t += 1
        measured = t >= warmup_cycles
        if t == warmup_cycles:
            backlog_start = backlog()
        # -- arrivals -----------------------------------------------------------------
        for i, src in enumerate(sources):
            r = rates[i]
            if r == math.inf:
                if not src.ready:
                    src.ready.append(t)
                continue
            src.acc += r
            while src.acc >= 1.0:
                src.acc -= 1.0
                if measured:
                    arrivals[i] += 1
                if len(src.ready) < SOURCE_BUFFER:
                    src.ready.append(t)
                elif measured:
                    refused[i] += 1
        # -- updates whose read data has returned become writes --------------------------
        while pending_rmw and pending_rmw[0][0] <= t and len(writes) < write_cap:
            entry = pending_rmw.popleft()[1]
            entry[1], entry[4] = "w", 2
            writes.append(entry)

        # -- the arbiter grants one request into the transaction queue -------------------
        ci, mi = head(COMPUTE), head(COMM)
        if ci is not None or mi is not None:
            level = len(reads) + len(writes) + len(pending_rmw)
            if mi is not None:
                winner = decide(compute_valid=ci is not None, comm_valid=True, queue_level=level,
                                threshold=threshold, starvation_limit=starvation_limit, mode=mode)
                chosen = ci if winner == COMPUTE else mi if winner == COMM else None
                ready = chosen is not None and room(chosen)
                step(winner=winner, comm_valid=True, grant_ready=ready)
            else:
                winner, chosen = COMPUTE, ci
                ready = room(chosen)
                step(winner=COMPUTE, comm_valid=False, grant_ready=ready)
            if ready:
                src = sources[chosen]
                arrival = src.ready.popleft()
                src.granted += 1
                if measured:
                    waits[chosen] += t - arrival
                    waits_n[chosen] += 1
                bank, row = src.next_address()
                kind = kinds[chosen]
                entry = [chosen, "w" if kind == "write" else "r", bank, row, 2, t, kind == "rmw", None]
                (writes if kind == "write" else reads).append(entry)

        # -- refresh ------------------------------------------------------------------
        if t >= next_refresh:
            refreshing = True
        if refreshing:
            for b in range(n_banks):
                if open_row[b] >= 0 and t >= pre_ready[b]:
                    open_row[b] = -1
                    act_ready[b] = max(act_ready[b], t + tRP)
                    break                       # one row command a cycle
            else:
                if all(r < 0 for r in open_row) and all(t >= a for a in act_ready):
                    refreshing = False
                    next_refresh += T.tREFI
                    refreshes += measured
                    for b in range(n_banks):
                        act_ready[b] = t + T.tRFC

        # -- write mode (drain between the watermarks) --------------------------------
        if not write_mode and writes and (len(writes) >= hi or not reads):
            write_mode = True
        elif write_mode and (not writes or (len(writes) <= lo and reads)):
            write_mode = False
            if measured:
                drain_ends.append((t, list(served), list(arrivals)))

        # -- column command: FR-FCFS, the oldest that hits an open row and is legal -----
        queue = writes if write_mode else reads
        issued_col = None
        # (No column command of the mode's direction can go before the channel-wide ready.)
        if t >= (wr_ready if write_mode else rd_ready):
            for entry in queue:
                b = entry[2]
                if open_row[b] != entry[3] or t < (col_ready[b] if entry[1] == "r" else col_ready_w[b]):
                    continue
                g = bg_of[b]
                if entry[1] == "r":
                    if t < rd_ready or t < rd_ready_bg[g]:
                        continue
                elif t < wr_ready or t < wr_ready_bg[g]:
                    continue
                issued_col = entry
                break
        if issued_col is not None:
            entry = issued_col
            i, b = entry[0], entry[2]
            g = bg_of[b]
            if entry[7] is None:
                entry[7] = True                 # no activation was issued for it: a row hit
            direction = entry[1]
            if last_dir is not None and direction != last_dir and measured:
                turnarounds += 1
                turnaround_idle += t - last_col - burst
            last_dir, last_col = direction, t
            if direction == "r":
                rd_ready = max(rd_ready, t + tCCD_S, t + burst)
                rd_ready_bg[g] = max(rd_ready_bg[g], t + tCCD_L)
                wr_ready = max(wr_ready, t + tRTW)
                for gg in range(n_bg):
                    wr_ready_bg[gg] = max(wr_ready_bg[gg], t + tRTW)
                pre_ready[b] = max(pre_ready[b], t + tRTP)
            else:
                wr_ready = max(wr_ready, t + tCCD_S, t + burst)
                wr_ready_bg[g] = max(wr_ready_bg[g], t + tCCD_L)
                rd_ready = max(rd_ready, t + rd_after_wr_s)
                rd_ready_bg[g] = max(rd_ready_bg[g], t + rd_after_wr_l)
                pre_ready[b] = max(pre_ready[b], t + wr_to_pre)
            if measured:
                bursts_measured += 1
            entry[4] -= 1
            if entry[4] == 0:
                queue.remove(entry)
                if direction == "r":
                    done = t + read_done
                    if measured:
                        lat[i].append(done - entry[5])
                        accesses[i] += 1
                        hits[i] += bool(entry[7])
                    if entry[6]:
                        pending_rmw.append((done, entry))
                    elif measured:
                        served[i] += 1
                else:
                    if measured:
                        served[i] += 1
                        if not entry[6]:
                            accesses[i] += 1
                            hits[i] += bool(entry[7])

        # -- row command: ACT for the oldest request whose bank is closed, or PRE --------
        if not refreshing:
            issued_row = False
            # Banks whose open row the direction being served still hits: not precharged
            # under them (hits in the other direction wait their turn, and must not block it).
            # Found when first needed.
            wanted = None
            act_ok = t >= act_ready_any and (len(faw) < 4 or t >= faw[0] + tFAW)
            for q in ((writes, reads) if write_mode else (reads, writes)):
                if issued_row:
                    break
                for entry in q:
                    b, row = entry[2], entry[3]
                    if open_row[b] == row:
                        continue
                    if open_row[b] < 0:
                        g = bg_of[b]
                        if act_ok and t >= act_ready[b] and t >= act_ready_bg[g]:
                            open_row[b] = row
                            col_ready[b] = t + tRCD
                            col_ready_w[b] = t + tRCDWR
                            pre_ready[b] = t + tRAS
                            act_ready[b] = t + tRC
                            act_ready_any = t + tRRD_S
                            act_ready_bg[g] = t + tRRD_L
                            faw.append(t)
                            activates += measured
                            if entry[7] is None:
                                entry[7] = False    # opened for it: a row miss
                            issued_row = True
                            break
                    elif t >= pre_ready[b]:
                        if wanted is None:
                            wanted = {e[2] for e in queue if open_row[e[2]] == e[3]}
                        if b not in wanted:
                            open_row[b] = -1
                            act_ready[b] = max(act_ready[b], t + tRP)
                            issued_row = True
                            break
            if closed_page and not issued_row:
                if wanted is None:
                    wanted = {e[2] for e in queue if open_row[e[2]] == e[3]}
                for b in range(n_banks):
                    if open_row[b] >= 0 and b not in wanted and t >= pre_ready[b]:
                        open_row[b] = -1
                        act_ready[b] = max(act_ready[b], t + tRP)
                        break

        # -- skip the cycles in which nothing can happen ---------------------------------
        # While the channel is empty (nothing at the arbiter, in the queue or in an update's
        # adder, and the write drain's end recorded) and no refresh is due or under way,
        # nothing happens until the next arrival;
        # a closed-page channel may still precharge, so it is not skipped while a row is open.
        if (not skip_idle or reads or writes or pending_rmw or refreshing or write_mode or len(finite) < n
                or any(src.ready for src in sources) or (closed_page and max(open_row) >= 0)):
            continue
        nxt = min(total, next_refresh)
        if t < warmup_cycles:
            nxt = min(nxt, warmup_cycles)
        # Skip only cycles without an arrival: each accumulator adds its rate once a cycle,
        # exactly as the cycles skipped would have, and stops before it reaches one.
        steps = nxt - t - 1
        for i in finite:
            acc, r, k = sources[i].acc, rates[i], 0
            while k < steps and acc + r < 1.0:
                acc += r
                k += 1
            steps = k
        if steps <= 0:
            continue
        for i in finite:
            src, r = sources[i], rates[i]
            for _ in range(steps):
                src.acc += r
        t += steps

    def per(values):
        return {streams[i].name: values[i] / cycles for i in range(n)}

    def p99(xs):
        if not xs:
            return 0.0
        xs = sorted(xs)
        return float(xs[min(len(xs) - 1, math.ceil(0.99 * len(xs)) - 1)])

    all_access = sum(accesses)
    end = backlog()
    # What the channel kept up with, per stream. Counting completions over the window would
    # count the write drain's batches at its two ends (a drain moves up to 80% of the write
    # buffer at once), so where writes are drained it is counted from the end of one drain to
    # the end of the last: the queues are alike at both. Otherwise: what was offered, less what
    # was refused and what piled up.
    if len(drain_ends) >= 2 and drain_ends[-1][0] - drain_ends[0][0] >= cycles // 2:
        (t0, s0, a0), (t1, s1, a1) = drain_ends[0], drain_ends[-1]
        span = t1 - t0
        sustained = [(s1[i] - s0[i]) / span for i in range(n)]
        offered = [(a1[i] - a0[i]) / span if rates[i] != math.inf else sustained[i] for i in range(n)]
    else:
        sustained = [max(0.0, arrivals[i] - refused[i] - max(0, end[i] - backlog_start[i])) / cycles
                     if rates[i] != math.inf else served[i] / cycles for i in range(n)]
        offered = [arrivals[i] / cycles if rates[i] != math.inf else sustained[i] for i in range(n)]
        span = cycles
    return ChannelStats(
        cycles=cycles, served_per_cycle=per(served), refused_per_cycle=per(refused),
        sustained_per_cycle={streams[i].name: sustained[i] for i in range(n)},
        offered_per_cycle={streams[i].name: offered[i] for i in range(n)}, span_cycles=span,
        bus_utilisation=bursts_measured * burst / cycles,
        row_hit_rate=sum(hits) / all_access if all_access else 0.0,
        row_hit_rate_by_stream={streams[i].name: hits[i] / accesses[i] if accesses[i] else 0.0 for i in range(n)},
        turnarounds=turnarounds, turnaround_idle_cycles=turnaround_idle, activates=activates, refreshes=refreshes,
        mean_read_latency_cycles={streams[i].name: sum(lat[i]) / len(lat[i]) if lat[i] else 0.0 for i in range(n)},
        p99_read_latency_cycles={streams[i].name: p99(lat[i]) for i in range(n)},
        mean_arbiter_wait_cycles={streams[i].name: waits[i] / waits_n[i] if waits_n[i] else 0.0 for i in range(n)})
