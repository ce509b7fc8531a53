"""One channel whose memory has rows, behind a controller built as the crosscheck's slice is:
the cycle-level channel of :mod:`.dram_cycle` when ``WaveLoad.rows`` is set.

Why a second structure: behind a fixed-rate memory the order in which requests reach the
banks changes nothing but queueing, and :mod:`.dram_cycle`'s queue after the arbiter is
enough. Behind rows the order *is* the cost: every switch between two rows of one bank
holds the door for a precharge and an activate. Which requests alternate at the door is
decided by the controller's structure, so this channel has the micro-system's:

* **Compute class**: the GEMM's reads and stores merged into one stream (alternating when
  both wait, or reads first with ``WaveLoad.reads_first``), through a FIFO of
  ``queue_entries`` requests whose level T3-MCA's threshold reads. An entry is visible to
  the arbiter from the cycle after it is written.
* **Communication class**: two heads, the incoming updates (the link's receive buffer)
  and the DMA engine's reads, merged alternating when both wait; an offered head is held
  until it is granted.
* **Arbiter**: the verified arbiter's golden model (:class:`.arbiter_policy.MemoryArbiterModel`)
  picks the class offered at the door every cycle; the offer may change while it waits.
* **Door** (the memory's rows, :class:`~system_model.describe.config.CycleRows`): banks with
  an open row each. The offered request goes (is granted) when its bank has its row open
  and is not opening; when the bank is idle with another row open, it starts opening the
  request's row, which takes ``miss_cycles``. A bank opens while the arbiter offers
  something else. A granted request holds the door for its service units at the channel's
  rate (an update of two units, two cycles at one unit per cycle).

The streams' addresses (requests; the micro-system's, stated here so that the model does
not read the harness): the GEMM reads ``0, 1, 2, ...`` modulo ``bank_requests``, from
``WaveLoad.read_start`` (its reads so far). In stage ``s`` a GPU of the ring touches two
chunks (``CycleRows.chunk_base``): its stores fill chunk ``s``, and the previous GPU's
updates fill chunk ``s + 1``, the tiles it will finish in the next stage (the previous GPU
forwards chunk ``s`` of its own order, which is this GPU's ``s + 1``). Each stream walks
its chunk in order. The DMA reads finished tiles in the order they finished (the tracker
triggers them so, and the engine takes its commands in order), from
``WaveLoad.dma_lag_requests`` behind the stores with the stages' chunks laid end to end:
in chunk ``s``, or in the chunk before while it still forwards the stage before's; it
never reads a tile the stores have not finished. A forwarded update lands on the tile its
DMA read had, in the chunk after the one the DMA read; the others (the previous GPU's own
stores) walk the chunk from its first tile as the measured waves start (the previous GPU's
stage starts with this one's), a tile at a time (a tile's beats cross the link back to
back). In a reduce-scatter alone, step ``k`` reads chunk ``k - 1`` and receives chunk ``k``
(``stage = k - 1``). The measured waves are preceded by :data:`WARM_UP_WAVES` waves with the
addresses of the waves before them (the stage before's chunk for their stores).
"""

from __future__ import annotations

import math
from collections import deque

from .arbiter_policy import COMM, COMPUTE, MCA, ROUND_ROBIN, MemoryArbiterModel
from .wave_rules import accrue, own_cycles, reads_needed, seeded_arrivals, starved_rest, sustained_rate

__all__ = ["simulate_door", "DoorRows", "DoorCensus", "KINDS"]

POLICIES = {"alone": MCA, "round_robin": ROUND_ROBIN, "mca": MCA}
#: Waves simulated before the measured ones: the first has no stores of a wave before it to
#: serve, the second has, so the rows and queues the measured waves find are a wave's.
WARM_UP_WAVES = 2
#: Most waves measured (a whole turn of the reads' and stores' banks, when shorter).
MAX_MEASURED_WAVES = 16


#: The kinds of request at the door (:class:`DoorCensus`): the GEMM's operand reads and its
#: stores, the incoming updates and the DMA engine's reads.
KINDS = ("gemm_read", "gemm_store", "update", "dma_read")


class DoorCensus:
    """Who opens rows at the door, and whose rows they close: ``openings[(opener, closed)]``
    counts the row openings by the kind of the request that starts one and the kind of the
    request last granted in that bank (None: no row open yet), ``grants[kind]`` the grants,
    over ``cycles`` cycles (kinds: :data:`KINDS`). Why: behind rows a request costs what it
    closes, and which streams take rows from which is what a model of the channel must get
    right; the same census is taken of the RTL's door
    (:mod:`system_model.studies.crosscheck.door_census`)."""

    def __init__(self, place=None):
        self.openings: dict = {}
        self.grants: dict = {}
        self.places: dict = {}
        self.cycles = 0
        #: Where an address lies among the stages' chunks: the stage whose chunk holds it less
        #: the current stage (0: the chunk the GEMM's stores fill now, 1: the next stage's),
        #: or None; ``places[(kind, step)]`` counts the grants of the stores, updates and DMA
        #: reads by it.
        self.place = place

    def clear(self) -> None:
        self.openings, self.grants, self.places, self.cycles = {}, {}, {}, 0


class DoorRows:
    """The door's row state, cycle by cycle (see the module); with a ``census``, the kinds that
    open and close rows (:class:`DoorCensus`)."""

    def __init__(self, rows, census: DoorCensus | None = None):
        self.rows = rows
        self.open = [None] * rows.banks
        self.count = [0] * rows.banks
        self.misses = 0
        self.census = census
        self.owner = [None] * rows.banks

    def cycle(self, addr: int | None, kind: str | None = None) -> bool:
        """Whether the request at ``addr`` (None: no offer; ``kind``: its kind, for the
        census) may go this cycle; then the edge."""
        ready = False
        start = None
        if addr is not None:
            bank, row = self.rows.bank_row(addr)
            if self.count[bank] == 0:
                if self.open[bank] == row:
                    ready = True
                else:
                    start = (bank, row)
            census = self.census
            if census is not None and start is not None:
                key = (kind, self.owner[bank])
                census.openings[key] = census.openings.get(key, 0) + 1
        count = self.count
        for b in range(len(count)):
            if count[b]:
                count[b] -= 1
        if start is not None:
            self.open[start[0]] = start[1]
            count[start[0]] = self.rows.miss_cycles - 1
            self.misses += 1
        return ready

    def note_grant(self, addr: int, kind: str) -> None:
        """For the census (a door built with one): the request at ``addr`` of ``kind`` was
        granted (its row is now that kind's)."""
        self.owner[self.rows.bank_row(addr)[0]] = kind
        census = self.census
        census.grants[kind] = census.grants.get(kind, 0) + 1
        if census.place is not None and kind != "gemm_read":
            key = (kind, census.place(addr))
            census.places[key] = census.places.get(key, 0) + 1


def simulate_door(load, policy: str, threshold: int, starvation_limit: int, *, waves: int, trace_window: int,
                  starvation_cap: float, census: DoorCensus | None = None):
    """The steady-state wave of ``load`` (a :class:`.dram_cycle.WaveLoad` with ``rows``) under
    ``policy``; returns the fields of :class:`.dram_cycle.WaveResult` as a dict (``census``:
    filled with the measured waves' row openings and grants by kind)."""
    rows = load.rows
    reads, stores, compute = round(load.reads), round(load.stores), load.compute_cycles
    if load.measured_waves:
        waves = WARM_UP_WAVES + load.measured_waves
    else:
        # Every wave's reads and stores start at other columns and banks; measure whole turns
        # of both (the waves after the first), at most MAX_MEASURED_WAVES.
        stripe = rows.row_requests * rows.banks
        turn = math.lcm(stripe // math.gcd(reads or stripe, stripe), stripe // math.gcd(stores or stripe, stripe))
        waves = WARM_UP_WAVES + min(turn, MAX_MEASURED_WAVES)
    mode = POLICIES[policy]
    arbiter = MemoryArbiterModel(wait_width=16)
    decide, step = arbiter.decide, arbiter.step
    door = DoorRows(rows, census)
    if census is not None and rows.chunk_order:
        order, chunk_requests = rows.chunk_order, rows.chunk_requests

        def place(addr: int) -> int | None:
            chunk = addr // chunk_requests
            if chunk not in order:
                return None
            n = len(order)
            return (order.index(chunk) - load.stage + n // 2) % n - n // 2
        census.place = place
    mu, depth, latency, out_cap = load.service_rate, load.queue_entries, load.latency_cycles, load.outstanding
    store_units, update_units = load.store_units, load.update_units
    steps = load.k_steps
    chunk = rows.chunk_requests
    # The stage's chunk (a reduce-scatter alone's DMA reads it); the updates arriving for the
    # next stage's chunk (the previous GPU forwards what it finished).
    dma_base = rows.chunk_base(load.stage)
    update_base = rows.chunk_base(load.stage + 1)

    fifo: deque = deque()            # compute class: (is_store, addr, cycle written)
    updates: deque = deque()         # (addr, arrival cycle)
    dmas: deque = deque()            # (addr, arrival cycle)
    comm_buffer = depth + load.dma_burst
    held = None                      # the communication head offered: "u" or "d"
    last_comm = "d"
    last_was_read = False
    returns: deque = deque()
    in_flight: deque = deque()       # (arrival cycle, addr) of forwarded updates
    door_busy = 0
    # The first (warm-up) wave is the one before: its reads end where the measured ones start.
    read_index = (load.read_start - WARM_UP_WAVES * reads) % rows.bank_requests
    # Its stores are the wave before's: the last tiles of the stage before when the measured
    # waves start a stage (a run of waves alike is a stage, or part of one).
    store_index = -WARM_UP_WAVES * stores

    def place(p: int) -> tuple[int, int]:
        """Place ``p`` of the stores' walk (the stages' chunks end to end, 0 where the
        measured waves' stores start): its address, and the first of the chunk after (where
        the previous GPU's updates for the next stage land). The run's first stage has no
        stage before (``read_start`` 0): its warm-up waves reuse its own chunk."""
        k = p // chunk
        if k < 0 and not load.read_start:
            k = 0
        return rows.chunk_base(load.stage + k) + p % chunk, rows.chunk_base(load.stage + k + 1)
    dma_index = update_index = 0
    update_acc = dma_acc = 0.0
    stores_pending = 0
    comm_wait_sum = comm_wait_n = 0
    latency_sum = latency_n = 0
    gemm_units = refused = stores_served = 0
    forwarded_arrivals = 0
    backlog_at_start = 0
    trace, window = [], [0, 0, 0, 0]
    update_rate, dma_rate, dma_burst = load.update_rate, load.dma_rate, load.dma_burst
    backlogged = load.dma_backlogged
    egress, link_acc = 0, 0.0
    dma_served = 0
    forwarded = min(load.forwarded_share * update_rate, dma_rate) if dma_rate else 0.0
    per_dma = forwarded / dma_rate if dma_rate else 0.0
    update_rate -= forwarded
    hop = load.hop_cycles
    seeded, forward_acc = seeded_arrivals(hop, forwarded)      # the ring ran before this wave
    lag = load.update_lag_requests
    # The DMA's place among the stores' (requests, the chunks end to end; 0 where the measured
    # waves' stores start): ``dma_lag_requests`` behind them then, as far behind in warm-up.
    dma_lag = load.dma_lag_requests
    dma_pos = -dma_lag - WARM_UP_WAVES * stores
    for c in seeded:
        in_flight.append((c, update_base + (update_index - lag) % chunk))
        update_index += 1
    dma_per_cycle = dma_rate / dma_burst if dma_rate else 0.0
    spread_stores = not load.stores_nmc and stores
    store_per_cycle = stores / compute if spread_stores else 0.0
    # A wave starved past this is cut off and extrapolated (every request may open a row).
    own = own_cycles(compute=compute, reads=reads, stores=stores, store_units=store_units, service_rate=mu,
                     outstanding=out_cap, latency=latency)
    cap = starvation_cap * (own + latency + rows.miss_cycles * (reads + stores))
    starved = False
    extra = 0.0
    wave_starts = []
    t = 0
    for wave in range(waves):
        issued = arrived = 0
        progress = 0.0
        wave_start = t
        wave_starts.append(t)
        store_acc = 0.0
        measured = wave >= WARM_UP_WAVES
        if wave == WARM_UP_WAVES:
            if census is not None:
                census.clear()
            backlog_at_start = len(updates) + len(dmas)
            # The previous GPU starts the stage with this one: its stores (the updates not
            # forwarded) start at the chunk's first tile with the measured waves.
            update_index = 0
            dma_pos = -dma_lag
        stores_due = stores_served + stores_pending + sum(1 for e in fifo if e[0])
        while progress < compute or arrived < reads or stores_served < stores_due:
            if t - wave_start > cap:
                starved = True
                if measured:
                    extra += starved_rest(t - wave_start, compute, progress)
                break
            # Communication arrivals, while the buffers have room.
            if update_rate:
                # A sender's tile arrives whole (its beats back to back on the link).
                update_acc, arrivals = accrue(update_acc, update_rate / dma_burst)
                for _ in range(arrivals * dma_burst):
                    if len(updates) + len(dmas) < comm_buffer:
                        updates.append((update_base + update_index % chunk, t))
                        update_index += 1
                    elif measured:
                        refused += 1
            while in_flight and in_flight[0][0] <= t:
                addr = in_flight.popleft()[1]
                if measured:
                    forwarded_arrivals += 1
                if len(updates) + len(dmas) < comm_buffer:
                    updates.append((addr, t))
                elif measured:
                    refused += 1
            if backlogged:
                # The DMA engine always has a tile to read, a tile's beats ahead of the link.
                link_acc = min(link_acc + dma_rate, 1.0) if egress == 0 else link_acc + dma_rate
                while link_acc >= 1.0 and egress:
                    link_acc -= 1.0
                    egress -= 1
                while len(dmas) + egress < dma_burst:
                    dmas.append((dma_base + dma_index % chunk, t, update_base))
                    dma_index += 1
            elif dma_rate:
                dma_acc += dma_per_cycle
                while dma_acc >= 1.0:
                    dma_acc -= 1.0
                    if len(updates) + len(dmas) + dma_burst <= comm_buffer:
                        # The oldest finished tile not yet read (the tracker triggers tiles in
                        # the order they finish), in the chunks laid end to end; never one whose
                        # last store has not been granted (the stores granted: ``stores_served``,
                        # from the warm-up's first, at -WARM_UP_WAVES * stores).
                        stored = stores_served - WARM_UP_WAVES * stores
                        p = min(dma_pos, (stored // dma_burst - 1) * dma_burst) if stores else dma_pos
                        dma_pos = p + dma_burst
                        first, landing = place(p)
                        dmas.extend((first + i, t, landing) for i in range(dma_burst))
                    elif measured:
                        refused += dma_burst
            if spread_stores:
                store_acc += store_per_cycle
                while store_acc >= 1.0:
                    store_acc -= 1.0
                    stores_pending += 1
            # The communication mux: hold the offered head, else alternate.
            if held is None:
                if updates and dmas:
                    held = "u" if last_comm == "d" else "d"
                elif updates:
                    held = "u"
                elif dmas:
                    held = "d"
            room = len(fifo) < depth
            compute_valid = bool(fifo)
            comm_valid = held is not None
            winner = None
            if comm_valid or compute_valid:
                winner = decide(compute_valid=compute_valid, comm_valid=comm_valid, queue_level=len(fifo),
                                threshold=threshold, starvation_limit=starvation_limit, mode=mode)
            if winner == COMPUTE:
                addr = fifo[0][1]
            elif winner == COMM:
                addr = (updates if held == "u" else dmas)[0][0]
            else:
                addr = None
            kind = None
            if census is not None:
                if measured:
                    census.cycles += 1
                if winner == COMPUTE:
                    kind = "gemm_store" if fifo[0][0] else "gemm_read"
                elif winner == COMM:
                    kind = "update" if held == "u" else "dma_read"
            ready = door.cycle(addr, kind) and door_busy == 0
            if door_busy:
                door_busy -= 1
            step(winner=winner, comm_valid=comm_valid, grant_ready=ready)
            if census is not None and ready and winner is not None:
                door.note_grant(addr, kind)
            if ready and winner == COMPUTE:
                is_store, _, written = fifo.popleft()
                units = store_units if is_store else 1
                if is_store:
                    stores_served += 1
                else:
                    returns.append(t + latency)
                    if measured:
                        latency_sum += t + latency - written
                        latency_n += 1
                if measured:
                    gemm_units += units
                    window[1 if is_store else 0] += 1
                door_busy = math.ceil(units / mu) - 1
            elif ready and winner == COMM:
                source = updates if held == "u" else dmas
                addr, arrived_at, *landing = source.popleft()
                if measured:
                    comm_wait_sum += t - arrived_at
                    comm_wait_n += 1
                    window[3 if held == "u" else 2] += 1
                if held == "d":
                    egress += 1
                    if measured:
                        dma_served += 1
                if held == "d" and per_dma:
                    forward_acc += per_dma
                    while forward_acc >= 1.0 - 1e-9:
                        forward_acc -= 1.0
                        in_flight.append((t + hop, landing[0] + (addr - dma_base - lag) % chunk))
                door_busy = math.ceil((update_units if held == "u" else 1) / mu) - 1
                last_comm, held = held, None
            # The GEMM writes the compute FIFO (seen by the arbiter from the next cycle).
            wants_read = (issued < reads and issued - arrived < out_cap
                          and issued < progress / compute * reads + out_cap)
            if room and (wants_read or stores_pending):
                if wants_read and (load.reads_first or stores_pending == 0 or not last_was_read):
                    fifo.append((False, read_index % rows.bank_requests, t))
                    read_index += 1
                    issued += 1
                    last_was_read = True
                else:
                    fifo.append((True, place(store_index)[0], t))
                    store_index += 1
                    stores_pending -= 1
                    last_was_read = False
            while returns and returns[0] <= t:
                returns.popleft()
                arrived += 1
            if progress < compute:
                if arrived >= reads_needed(progress, compute, reads, steps):
                    progress += 1
                    if progress >= compute and load.stores_nmc:
                        stores_pending += stores
            if measured and (t - wave_starts[WARM_UP_WAVES]) % trace_window == trace_window - 1:
                trace.append((t - wave_starts[WARM_UP_WAVES], len(fifo), *window))
                window = [0, 0, 0, 0]
            t += 1
    measured_cycles = max(1, t - wave_starts[WARM_UP_WAVES])
    backlog = len(updates) + len(dmas) - backlog_at_start
    # Backlogged DMA reads are offered as fast as the link takes them: what went is what was.
    dma_offered = dma_served / measured_cycles if backlogged else dma_rate
    sustained = sustained_rate(offered=update_rate + dma_offered + forwarded_arrivals / measured_cycles,
                               refused=refused, backlog=backlog, cycles=measured_cycles)
    return {"cycles": (measured_cycles + extra) / (waves - WARM_UP_WAVES), "comm_served_per_cycle": sustained,
            "starved": starved, "bank_utilisation": min(1.0, gemm_units / (mu * measured_cycles)),
            "mean_read_latency_cycles": latency_sum / latency_n if latency_n else float(latency),
            "trace": tuple(trace), "scale": 1.0,
            "mean_comm_wait_cycles": comm_wait_sum / comm_wait_n if comm_wait_n else 0.0,
            "row_misses": door.misses}
