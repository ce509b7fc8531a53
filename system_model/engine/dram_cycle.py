"""One DRAM channel under a GEMM wave and T3's communication, cycle by cycle: the reference
of the fluid sharing rule, and the DRAM service of micro-systems (:class:`CycleDram`).

The timeline engine shares the DRAM as a fluid (:mod:`.sharing`): right at the scale of a
sublayer, where a wave is tens of microseconds and thousands of requests. In a micro-system
whose waves are tens of cycles (the RTL ring the crosscheck runs), the order of individual
requests decides: a burst of reads waits behind stores in the queue, MCA lets communication
in only while compute has nothing to issue and the queue is short. :class:`CycleDram` serves
the engine's DRAM with this channel instead: in every interval in which a GEMM runs, the
GEMM's wave time and what communication is served come from the channel simulated cycle by
cycle under the verified arbiter's golden model.

Why a queue and not shared average bandwidth: T3's communication (DMA reads of finished
tiles, incoming updates) is a fraction of a channel's bandwidth on average, yet it arrives
in bursts, and requests that sit in the DRAM command queue delay the GEMM's requests behind
them even when the channel is not saturated on average. Whether the GEMM notices depends on
how many requests it keeps in flight (Little's law), and that is what T3-MCA's
arbitration changes. A fluid model of average shares cannot see any of this.

The channel (time unit: one memory-controller cycle):

* **Arbiter**: every cycle it grants at most one request into the DRAM command queue,
  decided by :class:`.arbiter_policy.MemoryArbiterModel`, the golden model of the
  verified ``rtl.arbiter.MemoryArbiter`` (round-robin, or T3-MCA: compute first,
  communication only below the queue threshold or when it has waited the starvation
  limit). The rules are not re-written here; ``grant.ready`` is "the queue has room".
* **Queue and banks**: a FIFO of ``dram_queue_entries`` requests, served at the channel's
  achievable rate (``GpuConfig.channel_requests_per_cycle``). A plain request takes one
  unit of service; a near-memory update takes two, its bank's internal read and write.
  A read's data returns ``dram_latency_ns`` after it leaves the queue.
* **GEMM (compute class)**: a closed loop. It needs ``reads`` requests over
  ``compute_cycles`` of matrix work, consumes data in order, and keeps at most
  ``outstanding`` requests in flight (its CUs' prefetch buffers). So a wave starts with a
  burst (the prefetch fill), then streams at the compute pace, and stalls whenever data is
  late. Its stores are either written back from the L2 spread over the wave (baseline:
  write-allocate), or, in T3, issued as the tile's epilogue burst, uncached, as
  near-memory updates.
* **Communication**: incoming updates at the link rate (near-memory updates) and DMA reads
  in bursts of one tile's share of this channel, one burst per tile the link forwards.

:func:`simulate_wave` runs a few identical waves back to back (the stores of one drain
into the next, as they do on the GPU) and reports the steady-state wave. A wave longer
than :data:`MAX_WAVE_CYCLES` is simulated at a reduced length with every rate kept (the
representative wave): the reads, stores, compute cycles and communication per wave scale
together, the queue depth, outstanding limit and latency do not, and the wave's exposed
pipeline fill (at most one latency) is added back unscaled.

The cache key is :meth:`WaveLoad.representative` (the scaled, rounded wave: reads, stores,
compute cycles, outstanding limit, arrival rates, store kind, service rate, latency,
queue depth) with the policy, the threshold and the starvation limit (the last two only
for T3-MCA). Waves of the same rates share a key whatever their length, so a sweep over
links and HBM reuses most simulations. :func:`save_cache` keeps the simulated waves in
the user's cache folder (beside the results' cache), tagged with a hash of this module and of
the golden arbiter model (and of the configuration module, which states the door's address
mapping), so that a changed model never reads stale results.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

from ..describe.units import check_range
from .arbiter_policy import COMM, COMPUTE, MCA, ROUND_ROBIN, MemoryArbiterModel
from .sim_store import SimStore, cache_path
from .wave_rules import accrue, own_cycles, reads_needed, seeded_arrivals, starved_rest, sustained_rate

__all__ = ["WaveLoad", "WaveResult", "simulate_wave", "MAX_WAVE_CYCLES", "POLICIES", "dynamic_threshold",
           "load_cache", "save_cache", "CACHE_FILE", "CycleDram"]

#: Longest wave simulated cycle by cycle; longer ones are scaled down (see the module doc).
MAX_WAVE_CYCLES = 1000
#: Waves simulated back to back; the first warms the queue up and is not measured.
WAVES = 2
#: A wave longer than this many times its own length is cut off as starved.
STARVATION_CAP = 20
#: Cycles per window of the recorded trace.
TRACE_WINDOW = 50

POLICIES = {"alone": None, "round_robin": ROUND_ROBIN, "mca": MCA}


def dynamic_threshold(queue_entries: int, gemm_bank_utilisation: float) -> int:
    """T3-MCA's threshold from the GEMM's memory intensity, measured in its first stage.

    Our reading of the paper's dynamic threshold: the more of the channel the GEMM uses on
    its own, the less queue room communication may take before compute is served, so the
    threshold is the share of the queue the GEMM leaves free (at least one entry).
    """
    check_range("gemm_bank_utilisation", gemm_bank_utilisation, 0.0, 1.0)
    return max(1, math.floor(queue_entries * (1.0 - gemm_bank_utilisation)))


@dataclass(frozen=True)
class WaveLoad:
    """What one channel sees during one GEMM wave, in requests and memory-controller cycles.

    Attributes
    ----------
    reads : float
        GEMM read requests of the wave (after the L2).
    stores : float
        GEMM store requests of the wave that reach this channel.
    stores_nmc : bool
        True: the stores are T3's tracked stores, issued at the end of the wave as
        near-memory updates (two units each); False: write-backs spread over the wave.
    compute_cycles : float
        The wave's matrix work in memory-controller cycles (the wave cannot be shorter).
    outstanding : int
        GEMM requests this channel can have in flight (the CUs' prefetch, per channel).
    update_rate : float
        Incoming writes per cycle (0 when no communication overlaps).
    update_units : int
        Service units of an incoming write: 2 for a near-memory update (its bank's read
        and write), 1 for a plain write (a software collective's FIFO).
    dma_rate : float
        DMA read requests per cycle.
    dma_burst : int
        DMA read requests per tile trigger (a tile's share of this channel); 1 for a
        software collective's loads.
    service_rate : float
        Units of service the channel completes per cycle.
    latency_cycles : int
        Unloaded latency of a read after it leaves the queue.
    queue_entries : int
        Depth of the DRAM command queue.
    nmc_units : int
        Service units of one of the GEMM's near-memory stores (``GpuConfig.nmc_update_units``).
    k_steps : int
        Steps the wave's matrix work comes in, each needing its share of the reads before
        it starts (a k-loop iteration: every tile's operand slice). 0: the data is used
        continuously, the limit of many steps (the sublayer study's GEMMs have K / k_tile
        >= 64 steps per tile); the crosscheck's RTL GEMM has a few.
    reads_first : bool
        The GEMM's reads go before its pending stores (``GpuConfig.mc_reads_first``); else
        they alternate.
    forwarded_share : float
        Share of ``update_rate`` that is a ring's forwarded data: the previous GPU's DMA
        reads, which its channel serves as this one serves its own (the ring is symmetric).
        Those updates arrive one per DMA read served here, ``hop_cycles`` later, instead of
        at a steady rate: when the arbiter holds communication back, the ring's next
        updates are held back with it, and the arbiter finds no communication waiting.
    hop_cycles : int
        Cycles from a DMA read's service to its update's arrival at the next GPU (the
        read's latency, the link's latency and one beat on the link).
    update_lag_requests : int
        Behind rows: how many requests the forwarded updates' offsets in their chunk trail
        this GPU's DMA reads' (0: the previous GPU reads where this one does, in step).
    dma_lag_requests : int
        Behind rows: how far the DMA's reads trail the GEMM's stores where the measured
        waves start, in requests, with the stages' chunks laid end to end (0: it starts where
        the stores do). It reads finished tiles in the order they finished, in the stage's
        chunk or the chunks before, so a DMA slower than the stores reads away from the rows
        they have open; its forwarded updates land in the chunk after the one it reads.
    """

    reads: float
    stores: float
    stores_nmc: bool
    compute_cycles: float
    outstanding: int
    update_rate: float
    update_units: int
    dma_rate: float
    dma_burst: int
    service_rate: float
    latency_cycles: int
    queue_entries: int
    nmc_units: int = 2
    k_steps: int = 0
    reads_first: bool = True
    forwarded_share: float = 0.0
    hop_cycles: int = 0
    rows: object = None
    dma_backlogged: bool = False
    read_start: int = 0
    stage: int = 0
    measured_waves: int = 0
    update_lag_requests: int = 0
    dma_lag_requests: int = 0

    @property
    def store_units(self) -> int:
        """Service units of one GEMM store: a near-memory update holds a DRAM bank twice."""
        return self.nmc_units if self.stores_nmc else 1

    @property
    def service_cycles(self) -> float:
        """Cycles the channel needs for the wave's GEMM reads and stores alone."""
        return (self.reads + self.stores * self.store_units) / self.service_rate

    @property
    def scale(self) -> float:
        """Simulated length / real length of the representative wave (1 behind rows: the
        addresses decide, and a scaled wave would have other ones)."""
        if self.rows is not None:
            return 1.0
        longest = max(self.compute_cycles, self.service_cycles, 1.0)
        return min(1.0, MAX_WAVE_CYCLES / longest)

    def representative(self) -> WaveLoad:
        """The wave simulated, and the cache key.

        Compute cycles are scaled by :attr:`scale` and rounded to whole cycles; reads and
        stores are scaled too and rounded to steps of 1% of what the channel can serve in
        the simulated wave (behind rows, whole requests: there the addresses decide); the
        outstanding limit to two significant digits; the arrival
        rates to 0.5% of the service rate. Waves of the same rates and limits share a key,
        however long they are, so a sweep reuses most of its simulations.
        """
        scale = self.scale
        compute = max(1, round(self.compute_cycles * scale))
        # (Of the wave itself: a floor of half the longest wave rounded the crosscheck's
        # 8-read waves to 10.) Behind rows whole requests: the 1% step made the crosscheck's
        # 16-read waves 15.36, simulated as 15 reads, so every wave's reads and stores
        # started a request earlier in their rows than the RTL's.
        step = 1.0 if self.rows is not None else max(1.0, 0.01 * self.service_rate * max(
            compute, self.service_cycles * scale))
        rate_step = 0.005 * self.service_rate

        def steps(x: float, size: float) -> float:
            return round(round(x / size) * size, 9)
        return WaveLoad(steps(self.reads * scale, step), steps(self.stores * scale, step), self.stores_nmc,
                        compute, max(1, round(float(f"{self.outstanding:.2g}"))),
                        steps(self.update_rate, rate_step), self.update_units, steps(self.dma_rate, rate_step),
                        self.dma_burst, self.service_rate, self.latency_cycles, self.queue_entries, self.nmc_units,
                        min(self.k_steps, compute), self.reads_first, round(self.forwarded_share, 3),
                        self.hop_cycles, self.rows, self.dma_backlogged, self.read_start,
                        self.stage, self.measured_waves, self.update_lag_requests, self.dma_lag_requests)


@dataclass(frozen=True)
class WaveResult:
    """Steady-state wave of :func:`simulate_wave`, scaled back to the real wave.

    Attributes
    ----------
    cycles : float
        Wave duration (from its first request to its last data consumed).
    comm_served_per_cycle : float
        Communication requests (updates and DMA reads) the channel sustained per cycle:
        the rate offered, less what the flow-controlled buffers refused and what piled up
        in the measured wave.
    starved : bool
        The GEMM was starved: it did not finish within :data:`STARVATION_CAP` times its
        own length and its wave was extrapolated from its progress. The verified T3-MCA
        arbiter does this when the channel frees a queue slot less often than every
        ``starvation_limit`` cycles while communication is backlogged: the communication
        request has starved by then, takes the slot, and compute never gets one (the
        starvation limit counts cycles, not grants).
    bank_utilisation : float
        Fraction of the channel's service spent on the GEMM.
    mean_read_latency_cycles : float
        Mean GEMM read latency, queueing included.
    trace : tuple
        Per window of :data:`TRACE_WINDOW` cycles over the measured waves (simulated time):
        ``(cycle, queue_occupancy, gemm_reads, gemm_writes, dma_reads, updates)``, the last
        four in requests served in the window.
    scale : float
        Simulated length / real length of the wave (1 when not scaled).
    """

    cycles: float
    comm_served_per_cycle: float
    starved: bool
    bank_utilisation: float
    mean_read_latency_cycles: float
    trace: tuple
    scale: float
    #: Mean cycles a communication request waited at the arbiter before its grant.
    mean_comm_wait_cycles: float = 0.0
    #: Rows opened over the simulated waves (behind rows only).
    row_misses: int = 0


def simulate_wave(load: WaveLoad, policy: str, *, threshold: int, starvation_limit: int) -> WaveResult:
    """The steady-state wave under ``policy`` ("alone": no communication; "round_robin";
    "mca")."""
    key = (load, policy, threshold, starvation_limit)
    result = _RESULTS.get(key)
    if result is None:
        result = _RESULTS[key] = _simulate_wave(load, policy, threshold, starvation_limit)
    return result


def _simulate_wave(load: WaveLoad, policy: str, threshold: int, starvation_limit: int) -> WaveResult:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    if policy == "alone":
        load = WaveLoad(**{**load.__dict__, "update_rate": 0.0, "dma_rate": 0.0})
    scale = load.scale
    if policy != "mca":        # only T3-MCA reads the threshold and the starvation limit
        threshold = starvation_limit = 1
    key = (load.representative(), policy, threshold, starvation_limit)
    sim = _STORE.get(key)
    if sim is None:
        sim = _STORE[key] = _simulate(*key)
    # A wave's exposed pipeline fill (at most one latency, none when the channel is busy
    # throughout) does not shrink with the representative wave; the rest does.
    rep = key[0]
    busy = max(rep.compute_cycles, rep.service_cycles)
    fill = min(float(load.latency_cycles), max(sim.cycles - busy, 0.0))
    cycles = fill + (sim.cycles - fill) / scale
    return WaveResult(cycles=cycles, comm_served_per_cycle=sim.comm_served_per_cycle, starved=sim.starved,
                      bank_utilisation=sim.bank_utilisation, mean_read_latency_cycles=sim.mean_read_latency_cycles,
                      trace=sim.trace, scale=scale, mean_comm_wait_cycles=sim.mean_comm_wait_cycles,
                      row_misses=sim.row_misses)


#: Results of whole waves as asked for (in-process memo).
_RESULTS: dict = {}
#: Simulated representative waves by their key (:meth:`WaveLoad.representative`, policy,
#: threshold, starvation limit); kept on disk by :func:`save_cache`.
_STORE: dict = {}


#: Where :func:`save_cache` keeps the simulated waves (:mod:`.sim_store`: beside the results'
#: cache file; none when ``T3_MODEL_CACHE`` is set empty).
CACHE_FILE = cache_path("representative_waves.pkl")
_SOURCES = tuple(Path(__file__).with_name(name) for name in ("dram_cycle.py", "arbiter_policy.py", "dram_door.py",
                                                               "wave_rules.py")) + (
    # The door's address mapping (CycleRows.bank_row) is stated with the configuration.
    Path(__file__).parent.parent / "describe" / "config.py",)


def load_cache(path: Path | None = CACHE_FILE) -> int:
    """Load stored representative waves written by the same code; returns how many."""
    store = SimStore("representative_waves.pkl", _SOURCES)
    store.data = _STORE
    return store.load(path) if path is not None else 0


def save_cache(path: Path | None = CACHE_FILE) -> int:
    """Store the representative waves simulated so far (best effort: a read-only checkout
    just runs without a cache)."""
    store = SimStore("representative_waves.pkl", _SOURCES)
    store.data = _STORE
    return store.save(path) if path is not None else 0


def _simulate(load: WaveLoad, policy: str, threshold: int, starvation_limit: int) -> WaveResult:
    if load.rows is not None:
        from .dram_door import simulate_door
        return WaveResult(**simulate_door(load, policy, threshold, starvation_limit, waves=WAVES,
                                          trace_window=TRACE_WINDOW, starvation_cap=STARVATION_CAP))
    reads, stores, compute = max(1, round(load.reads)), round(load.stores), load.compute_cycles
    mode = POLICIES[policy] if policy != "alone" else MCA
    arbiter = MemoryArbiterModel(wait_width=16)
    store_units = load.store_units
    steps = load.k_steps
    last_was_read = False
    mu, depth, latency, out_cap = load.service_rate, load.queue_entries, load.latency_cycles, load.outstanding

    queue: deque = deque()          # (kind, units, granted cycle); kinds: 0 read, 1 store, 2 dma, 3 update
    returns: deque = deque()        # cycles at which GEMM reads' data arrive, in order
    credit = 0.0
    comm_pending: deque = deque()   # kinds 2 / 3 waiting at the arbiter
    comm_arrived: deque = deque()   # ... and the cycles they arrived in
    comm_wait_sum = comm_wait_n = 0
    update_acc = dma_acc = 0.0
    stores_pending = 0
    trace, window = [], [0, 0, 0, 0, 0]
    gemm_units = refused = stores_served = 0
    backlog_at_start = 0
    latency_sum = latency_n = 0
    wave_starts = []
    # Communication is flow-controlled: the link's receive buffer and the DMA engine hold
    # at most a queue's worth of requests; beyond that the sender waits (back-pressure).
    comm_buffer = depth + load.dma_burst
    # A wave the arbiter starves (see WaveResult.starved) is cut off and extrapolated.
    own = own_cycles(compute=compute, reads=reads, stores=stores, store_units=store_units, service_rate=mu,
                     outstanding=out_cap, latency=latency)
    cap = STARVATION_CAP * (own + latency)
    starved = False
    extra = 0.0                      # cycles a starved wave would still have taken
    t = 0
    # Loop invariants as locals: the loop below runs once per simulated cycle.
    update_rate, dma_rate, dma_burst = load.update_rate, load.dma_rate, load.dma_burst
    # Forwarded updates follow the DMA reads served (see WaveLoad.forwarded_share).
    forwarded = min(load.forwarded_share * update_rate, dma_rate) if dma_rate else 0.0
    per_dma = forwarded / dma_rate if dma_rate else 0.0
    update_rate -= forwarded
    hop = load.hop_cycles
    # The ring was running before this wave: the first hop's arrivals are already on the way
    # (the cycles at which forwarded updates arrive).
    seeded, forward_acc = seeded_arrivals(hop, forwarded)
    in_flight: deque = deque(seeded)
    forwarded_arrivals = 0
    dma_per_cycle = dma_rate / dma_burst if dma_rate else 0.0
    spread_stores = not load.stores_nmc and stores
    store_per_cycle = stores / compute if spread_stores else 0.0
    epilogue_stores = load.stores_nmc
    reads_first, update_units = load.reads_first, load.update_units
    decide, step = arbiter.decide, arbiter.step
    for wave in range(WAVES):
        issued = arrived = 0
        progress = 0.0               # matrix work done, in cycles
        wave_start = t
        wave_starts.append(t)
        store_acc = 0.0
        measured = wave > 0
        if wave == 1:
            backlog_at_start = len(comm_pending) + sum(1 for entry in queue if entry[0] >= 2)
        # In steady state a wave also pays for the stores its predecessor left behind.
        stores_due = stores_served + stores_pending + sum(1 for entry in queue if entry[0] == 1)
        while progress < compute or arrived < reads or stores_served < stores_due:
            if t - wave_start > cap:
                starved = True
                if measured:
                    extra += starved_rest(t - wave_start, compute, progress)
                break
            # Communication arrivals, while the buffers have room.
            if update_rate:
                update_acc, arrivals = accrue(update_acc, update_rate)
                for _ in range(arrivals):
                    if len(comm_pending) < comm_buffer:
                        comm_pending.append(3)
                        comm_arrived.append(t)
                    elif measured:
                        refused += 1
            while in_flight and in_flight[0] <= t:
                in_flight.popleft()
                if measured:
                    forwarded_arrivals += 1
                if len(comm_pending) < comm_buffer:
                    comm_pending.append(3)
                    comm_arrived.append(t)
                elif measured:
                    refused += 1
            if dma_rate:
                dma_acc += dma_per_cycle
                while dma_acc >= 1.0:
                    dma_acc -= 1.0
                    if len(comm_pending) + dma_burst <= comm_buffer:
                        comm_pending.extend([2] * dma_burst)
                        comm_arrived.extend([t] * dma_burst)
                    elif measured:
                        refused += dma_burst
            if spread_stores:
                store_acc += store_per_cycle
                while store_acc >= 1.0:
                    store_acc -= 1.0
                    stores_pending += 1
            # The GEMM may issue a read while it keeps under its in-flight cap and its
            # prefetch distance; a store (an epilogue's, or a write-back) otherwise.
            wants_read = (issued < reads and issued - arrived < out_cap
                          and issued < progress / compute * reads + out_cap)
            compute_valid = wants_read or stores_pending > 0
            level = len(queue)
            ready = level < depth
            if comm_pending:
                winner = decide(compute_valid=compute_valid, comm_valid=True, queue_level=level,
                                threshold=threshold, starvation_limit=starvation_limit, mode=mode)
                step(winner=winner, comm_valid=True, grant_ready=ready)
            elif compute_valid:
                # Without communication the golden model grants compute in either mode
                # (its decide() returns COMPUTE; step() then records the grant).
                winner = COMPUTE
                step(winner=COMPUTE, comm_valid=False, grant_ready=ready)
            else:
                winner = None                # nothing valid: no grant, no state change
            if ready and winner == COMPUTE:
                # Reads first: a memory controller buffers writes and drains them in the
                # gaps (the wave still waits for its predecessor's stores, below); or, in a
                # controller that merges them round-robin, a read and a store in turn.
                if wants_read and (reads_first or stores_pending == 0 or not last_was_read):
                    queue.append((0, 1, t))
                    issued += 1
                    last_was_read = True
                else:
                    queue.append((1, store_units, t))
                    stores_pending -= 1
                    last_was_read = False
            elif ready and winner == COMM:
                kind = comm_pending.popleft()
                arrived_at = comm_arrived.popleft()
                if measured:
                    comm_wait_sum += t - arrived_at
                    comm_wait_n += 1
                queue.append((kind, update_units if kind == 3 else 1, t))
            # The banks serve the queue in order.
            credit += mu
            while queue and credit >= queue[0][1]:
                kind, units, granted = queue.popleft()
                credit -= units
                if kind == 1:
                    stores_served += 1
                elif kind == 2 and per_dma:
                    forward_acc += per_dma
                    while forward_acc >= 1.0 - 1e-9:
                        forward_acc -= 1.0
                        in_flight.append(t + hop)
                elif kind == 0:
                    returns.append(t + latency)
                    if measured:
                        latency_sum += t + latency - granted
                        latency_n += 1
                if measured:
                    window[1 + kind] += 1
                    if kind < 2:
                        gemm_units += units
            if not queue and credit > mu:
                credit = mu
            while returns and returns[0] <= t:
                returns.popleft()
                arrived += 1
            # Matrix work proceeds while the data it needs next has arrived: continuously, or
            # a k-step's share at a time.
            if progress < compute:
                if arrived >= reads_needed(progress, compute, reads, steps):
                    progress += 1
                    if progress >= compute and epilogue_stores:
                        stores_pending += stores       # the epilogue: the tile's output, uncached
            if measured:
                if (t - wave_starts[1]) % TRACE_WINDOW == TRACE_WINDOW - 1:
                    trace.append((t - wave_starts[1], len(queue), *window[1:]))
                    window = [0, 0, 0, 0, 0]
            t += 1
    measured_cycles = t - wave_starts[1]
    backlog = len(comm_pending) + sum(1 for entry in queue if entry[0] >= 2) - backlog_at_start
    # (Forwarded updates are offered as they arrive.)
    sustained = sustained_rate(offered=update_rate + dma_rate + forwarded_arrivals / measured_cycles,
                               refused=refused, backlog=backlog, cycles=measured_cycles)
    return WaveResult(cycles=(measured_cycles + extra) / (WAVES - 1), comm_served_per_cycle=sustained,
                      starved=starved,
                      bank_utilisation=min(1.0, gemm_units / (mu * measured_cycles)),
                      mean_read_latency_cycles=latency_sum / latency_n if latency_n else float(latency),
                      trace=tuple(trace), scale=1.0,
                      mean_comm_wait_cycles=comm_wait_sum / comm_wait_n if comm_wait_n else 0.0)


#: Where :func:`recording_waves` collects the waves served (None: not recording).
_RECORDED: list | None = None


@contextlib.contextmanager
def recording_waves():
    """Within the block, every wave a :class:`CycleDram` serves is appended to the list it
    yields as ``(clock_s, load, policy, threshold, starvation_limit)`` (``clock_s``: the
    timeline's time when it was asked, :attr:`CycleDram.clock_s`; the last wave asked at a
    time is the one the timeline runs until the next): what a scheme asked of the channel, to
    be looked at closely (:mod:`system_model.studies.crosscheck.door_census`)."""
    global _RECORDED
    before, _RECORDED = _RECORDED, []
    try:
        yield _RECORDED
    finally:
        _RECORDED = before


class CycleDram:
    """The engine's DRAM served by this channel, for micro-systems (the crosscheck).

    ``channel`` holds what every wave shares: ``service_rate`` (units per cycle),
    ``latency_cycles``, ``queue_entries``, ``nmc_units``, ``reads_first``, ``request_bytes``
    (bytes of one request on the channel) and ``hz`` (the controller clock). ``policy``:
    ``round_robin`` or ``mca``; ``threshold``: MCA's (None: from the GEMM's own bank
    utilisation, :func:`dynamic_threshold`).

    A GEMM flow carries ``cycle`` (per wave: reads and stores in requests, ``stores_nmc``,
    compute cycles, the outstanding limit, k-steps); a communication flow carries
    ``cycle`` (per byte: bytes of DMA reads here, bytes of updates arriving here, and the
    bytes of one tile's burst). :meth:`serve` returns the wave's cycles and the communication
    served, in requests per cycle.
    """

    def __init__(self, *, channel: dict, policy: str, threshold: int | None, starvation_limit: int):
        if policy not in ("round_robin", "mca"):
            raise ValueError(f"policy must be round_robin or mca, not {policy!r}")
        self.channel, self.policy = dict(channel), policy
        self.threshold, self.starvation_limit = threshold, starvation_limit

    def load(self, gemm: dict, update_rate: float, dma_rate: float, dma_burst: int,
             forwarded_share: float = 0.0, dma_lag_requests: int = 0) -> WaveLoad:
        c = self.channel
        return WaveLoad(reads=gemm["reads"], stores=gemm["stores"], stores_nmc=gemm["stores_nmc"],
                        compute_cycles=gemm["compute_cycles"], outstanding=gemm["outstanding"],
                        update_rate=update_rate, update_units=c["nmc_units"], dma_rate=dma_rate,
                        dma_burst=max(1, dma_burst), service_rate=c["service_rate"],
                        latency_cycles=c["latency_cycles"], queue_entries=c["queue_entries"],
                        nmc_units=c["nmc_units"], k_steps=gemm["k_steps"], reads_first=c["reads_first"],
                        forwarded_share=forwarded_share, hop_cycles=c.get("hop_cycles", 0), rows=c.get("rows"),
                        **({"read_start": gemm.get("read_start", 0), "stage": gemm.get("stage", 0),
                            "measured_waves": gemm.get("waves", 0), "dma_lag_requests": dma_lag_requests}
                           if c.get("rows") else {}))

    #: The timeline's time (seconds) when it asks for the waves it then runs (set by the
    #: engine before it asks; read only by :func:`recording_waves`).
    clock_s: float = 0.0

    #: The mean wait of a communication request at the arbiter in the last wave served with
    #: communication beside the GEMM (seconds): an arrival is added in memory that much
    #: after it lands, which a tile whose count waits for it pays (T3's ring steps).
    comm_wait_s: float = 0.0

    def serve(self, gemm: dict, update_Bps: float, dma_Bps: float, burst_bytes: float,
              forwarded_Bps: float = 0.0, dma_lag_bytes: float = 0.0) -> tuple[float, float]:
        """(the wave's seconds, communication requests served per second) with updates and
        DMA reads offered at these rates; ``forwarded_Bps`` of the updates are a ring's
        forwarded data (:attr:`WaveLoad.forwarded_share`), and the DMA reads trail the
        GEMM's stores by ``dma_lag_bytes`` (:attr:`WaveLoad.dma_lag_requests`, rounded down
        to whole tiles)."""
        c = self.channel
        per_cycle = c["request_bytes"] * c["hz"]
        share = min(1.0, forwarded_Bps / update_Bps) if update_Bps > 0 else 0.0
        burst = max(1, round(burst_bytes / c["request_bytes"]))
        lag = burst * math.floor(dma_lag_bytes / c["request_bytes"] / burst) if dma_Bps > 0 else 0
        load = self.load(gemm, update_Bps / per_cycle, dma_Bps / per_cycle, burst, share, max(0, lag))
        threshold = self.threshold
        if threshold is None:
            alone = simulate_wave(load, "alone", threshold=1, starvation_limit=1)
            threshold = dynamic_threshold(c["queue_entries"], alone.bank_utilisation)
        if _RECORDED is not None:
            _RECORDED.append((self.clock_s, load, self.policy, threshold, self.starvation_limit))
        result = simulate_wave(load, self.policy, threshold=threshold, starvation_limit=self.starvation_limit)
        if update_Bps + dma_Bps > 0:
            self.comm_wait_s = result.mean_comm_wait_cycles / c["hz"]
        return result.cycles / c["hz"], result.comm_served_per_cycle * c["hz"]

    def reduce_scatter_requests_per_cycle(self, link_beats_per_cycle: float, steps: int = 1) -> float:
        """Requests per cycle the channel serves of a reduce-scatter on its own (each step's
        DMA reads of one chunk in tile bursts, each forwarded to the next GPU, and the same
        number of updates arriving for the chunk the next step sends), offered at the
        link's rate; over ``steps`` steps of equal size. Behind rows the two streams take
        turns at the door; without rows it is the offered rate, or the channel's."""
        c = self.channel
        rows = c.get("rows")
        offered = 2 * link_beats_per_cycle
        if rows is None:
            return min(offered, c["service_rate"] / (0.5 + 0.5 * c["nmc_units"]))
        length = max(200, 80 * rows.miss_cycles)
        burst = max(1, round(c.get("tile_requests", 1)))
        # Where the previous GPU reads, against this one, is set by when each started (their
        # GEMMs end apart): every tile's place in a stripe of the banks is as likely, and
        # each step takes the mean of their times.
        lags = range(0, rows.row_requests * rows.banks, burst)
        step_load = WaveLoad(reads=0, stores=0, stores_nmc=False, compute_cycles=length, outstanding=1,
                             update_rate=link_beats_per_cycle, update_units=c["nmc_units"],
                             dma_rate=link_beats_per_cycle, dma_burst=burst, service_rate=c["service_rate"],
                             latency_cycles=c["latency_cycles"], queue_entries=c["queue_entries"],
                             nmc_units=c["nmc_units"], reads_first=c["reads_first"], forwarded_share=1.0,
                             hop_cycles=c.get("hop_cycles", 0), rows=rows, dma_backlogged=True)
        cycles = 0.0
        for step in range(1, steps + 1):
            for lag in lags:
                load = replace(step_load, stage=step - 1, update_lag_requests=lag)
                served = simulate_wave(load, "round_robin", threshold=1, starvation_limit=1).comm_served_per_cycle
                cycles += 1.0 / max(served, 1e-9) / len(lags)
        return steps / cycles
