# amaranth: UnusedElaboratable=no
"""cocotb end-to-end bench: T3's reduce-scatter on a ring of N simulated GPUs, scoreboarded per beat.

One run (:meth:`RingTB.reduce_scatter`), as :mod:`tb.ring.protocol` specifies it:

1. After reset the bench checks the tracker's sweep: every GPU's ``arm.ready`` rises
   exactly ``tracker.reset_cycles`` cycles after reset (arms are offered from the first
   cycle). At power-up it reads a few words first and checks that the banks hold garbage
   (the ring is built with ``power_up_seed``), so that the run cannot pass on zeros.
2. Configuration: descriptors, arms, and the zeroing of every word each GPU accumulates
   into (``STORE, tracked=0, data=0`` on ``gemm``). Barrier: every bank has executed its
   zeroing (``status.reducer.stores``) before any GPU sends or writes a stage.
3. The GEMMs write stage 1 to the next GPU, then their local stages, with random gaps, and
   read random words of their output buffers meanwhile (uniformly, or the word just
   written locally or just received, to hit the read-after-write cases).
4. When every GPU has been notified of its last stage and everything has drained, each
   GPU reads its final chunk back.

Every transfer on every top-level port and on both ends of every link goes to the
:class:`~tb.ring.scoreboard.RingScoreboard` in the cycle it happens (see there for what each
beat is checked for), every stream has a protocol checker, and at the end the slices'
counters and error flags are checked. A no-progress watchdog fails the test, with every
GPU's state, when no transfer happens anywhere for :attr:`RingTB.stall_limit` cycles.

``reset_mid_run`` scenarios reset the ring halfway through one run (rst high 3 cycles, then
the tracker's sweep) and then make a complete fresh run with new data. The banks keep the
old words (the bench reads some back before the new zeroing and checks they are not zero),
so only the zeroing makes the fresh run right.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

import cocotb
import numpy as np
from amaranth.lib import data

from rtl.ring import T3Ring
from tb.common.lockstep import LockstepTB, bench_params
from tb.common.streams import StreamSource
from tb.fp_add.golden import NUMPY_TYPES
from tb.nmc.model import lanes_to_beat
from tb.ring.fastpack import FlatLayout
from tb.ring.probes import Probe
from tb.ring.protocol import RingPlan, output_region, plan_reduce_scatter
from tb.ring.scenarios import CASES, MCA, SCENARIOS, SOAK_CASES, Scenario
from tb.ring.scoreboard import RingScoreboard, derive_timing

PROBE_READS = 8  # words read before the zeroing, at power-up


@dataclass
class _Driver:
    """One GPU's driver and GEMM: what it still has to offer."""

    zero: deque = field(default_factory=deque)
    local: deque = field(default_factory=deque)
    local_open: bool = False
    gated: set = field(default_factory=set)             # tiles whose descriptor is not programmed yet
    frees: dict = field(default_factory=dict)           # tile started on the link -> (tile, program) it frees
    region: list = field(default_factory=list)
    last_local: int | None = None
    last_incoming: int | None = None
    first_arm: int | None = None


class RingTB(LockstepTB):
    def __init__(self, dut, scenario: Scenario):
        super().__init__(dut)
        self.sc = scenario
        params = bench_params()
        self.ring = T3Ring(**params)
        s = self.s = self.ring.slices[0]
        self.n = self.ring.gpus
        self.fmt = s.nmc.format.name
        self.utype = NUMPY_TYPES[self.fmt][1]
        self.beats = 1 << s.tile_beats_log2
        link = self.ring.links[0]
        self.timing = derive_timing(s, link_latency=link.latency, link_cycles_per_beat=link.cycles_per_beat,
                                    starvation_limit=scenario.starvation_limit, mca=scenario.mode == MCA,
                                    compute_queue_depth=params.get("compute_queue_depth", 8))
        t = self.timing
        #: No transfer anywhere for this many cycles is a deadlock: twice the longest silence
        #: the protocol allows (the tracker's sweep, a DMA start, a notify behind one DMA).
        self.stall_limit = max(2000, 2 * max(s.tracker.reset_cycles, t.dma_start, t.notify_base + t.per_trigger))
        self.np_rng = np.random.default_rng(self.seed)
        self.fl = {name: FlatLayout(layout) for name, layout in (
            ("program", s.table.program_layout), ("arm", s.tracker.arm_layout), ("packet", s.packet_layout),
            ("gemm", s.gemm_layout), ("read", data.StructLayout({"addr": s.nmc.addr_width})),
            ("status", s.status_layout))}
        fl = self.fl
        self.src, self.drv = [], []
        for g in range(self.n):
            self.src.append({
                "program": StreamSource(dut, f"program__{g}", fl["program"].as_raw(), self.rng),
                "arm": StreamSource(dut, f"arm__{g}", fl["arm"].as_raw(), self.rng),
                "remote": StreamSource(dut, f"gemm_remote__{g}", fl["packet"].as_raw(), self.rng, scenario.write_p),
                "local": StreamSource(dut, f"gemm__{g}", fl["gemm"].as_raw(), self.rng, scenario.write_p,
                                      next_item=lambda g=g: self._next_local(g)),
                "read": StreamSource(dut, f"gemm_read__{g}", fl["read"].as_raw(), self.rng,
                                     next_item=lambda g=g: self._next_read(g)),
            })
            self.drv.append(_Driver())
        reg = self.streams
        self.notify = [Probe(dut, f"notify__{g}", name=f"notify__{g}", registry=reg, ready=False)
                       for g in range(self.n)]
        self.read_data = [Probe(dut, f"gemm_read_data__{g}", name=f"gemm_read_data__{g}", registry=reg, ready=False)
                          for g in range(self.n)]
        links = [getattr(dut, f"link{g}") for g in range(self.n)]
        self.egress = [Probe(links[g], "input", name=f"egress of GPU {g} (link{g}.input)", registry=reg)
                       for g in range(self.n)]
        self.ingress = [Probe(links[g], "output", name=f"ingress of GPU {(g + 1) % self.n} (link{g}.output)",
                              registry=reg) for g in range(self.n)]
        self.sb: RingScoreboard | None = None
        self.plan: RingPlan | None = None
        self.reads_on = False
        self.writing = False
        self._quiet = set()
        self.watch = True
        self.last_move = 0
        self.release_cycle = 0
        self.runs = 0
        self.reused = 0  # descriptors programmed again for a later tile
        self.stats = {"rs_cycles": 0, "lanes_bit_exact": 0, "link_beats": 0, "reads_checked": 0}
        self.max_dma_gap = 0

    # -- stimulus -------------------------------------------------------------------------

    def _next_local(self, g: int):
        d = self.drv[g]
        if d.zero:
            return d.zero.popleft()
        if d.local_open and d.local and d.local[0]["tile"] not in d.gated:
            return d.local.popleft()
        return None

    def _next_read(self, g: int):
        if not self.reads_on or self.rng.random() >= self.sc.read_p:
            return None
        d = self.drv[g]
        pick = self.rng.random()
        if pick < 1 / 3 and d.last_local is not None:
            addr = d.last_local
        elif pick < 2 / 3 and d.last_incoming is not None:
            addr = d.last_incoming
        else:
            addr = self.rng.choice(d.region)
        return {"addr": addr, "raw": addr, "_background": True}

    def _on_dma_start(self, g: int, tile: int) -> None:
        """Tile ``tile``'s descriptor has been read: reuse its index for the tile waiting for it."""
        d = self.drv[g]
        if tile in d.frees:
            waiting, program = d.frees.pop(tile)
            self.src[g]["program"].queue.append(self.fl["program"].raw({**program, "_tile": waiting}))
            self.reused += 1

    def reset_inputs(self):
        d = self.dut
        for g in range(self.n):
            for port in ("program", "arm", "gemm_remote", "gemm", "gemm_read"):
                getattr(d, f"{port}__{g}__valid").value = 0
        d.threshold.value = self.sc.threshold
        d.starvation_limit.value = self.sc.starvation_limit
        d.mode.value = self.sc.mode

    def on_reset(self):
        """After a mid-run reset: drop every item the sources hold; the run is abandoned."""
        for src in self.src:
            for s in src.values():
                s.queue.clear()
                s.current = None
        self.drv = [_Driver() for _ in range(self.n)]
        self.reads_on = False
        self._quiet.clear()
        self.sb = None

    def drive(self):
        for g, src in enumerate(self.src):
            d = self.drv[g]
            # The GEMM produces stage 1 (remote) first, then the local stages.
            if self.writing and not d.local_open and src["remote"].idle():
                d.local_open = True
            for s in src.values():
                # An idle source that has driven valid low already has nothing to drive (for speed).
                if s.current is None and not s.queue and s.next_item is None:
                    if s in self._quiet:
                        continue
                    self._quiet.add(s)
                else:
                    self._quiet.discard(s)
                s.drive()

    # -- observation ----------------------------------------------------------------------

    def check(self):
        c, sb = self.cycle, self.sb
        moved = False
        for g, src in enumerate(self.src):
            d = self.drv[g]
            _, item = src["program"].handshake()
            if item is not None:
                moved = True
                d.gated.discard(item.get("_tile"))
            _, item = src["arm"].handshake()
            if item is not None:
                moved = True
                if d.first_arm is None:
                    d.first_arm = c
            _, item = src["remote"].handshake()
            if item is not None:
                moved = True
                sb.remote_accepted(g, item, c)
            _, item = src["local"].handshake()
            if item is not None:
                moved = True
                sb.gemm_write(g, item, c)
                if item["tracked"]:
                    d.last_local = item["addr"]
            _, item = src["read"].handshake()
            if item is not None:
                moved |= "_background" not in item  # (endless background reads are not progress)
                sb.read_accepted(g, item["addr"], c, probe=item.get("_probe", False))
        for g in range(self.n):
            raw = self.ingress[g].sample(c)
            if raw is not None:
                moved = True
                h = (g + 1) % self.n
                pkt = self.fl["packet"].unpack(raw)
                sb.ingress(h, raw, pkt, c)
                self.drv[h].last_incoming = pkt["dst_addr"]
            raw = self.egress[g].sample(c)
            if raw is not None:
                moved = True
                sb.egress(g, raw, self.fl["packet"].unpack(raw), c)
            raw = self.notify[g].sample(c)
            if raw is not None:
                moved = True
                sb.notify(g, raw, c)  # the payload is {tile}
            raw = self.read_data[g].sample(c)
            if raw is not None:
                moved |= not self.reads_on
                sb.read_returned(g, raw, c)
        if moved:
            self.last_move = c
        elif self.watch and c - self.last_move >= self.stall_limit:
            self.explain_stall()
            raise AssertionError(f"deadlock: no transfer on any port or link (background GEMM reads aside) for "
                                 f"{c - self.last_move} cycles (since cycle {self.last_move}; the limit is "
                                 f"{self.stall_limit})\n  {self.context()}")

    def status(self, g) -> dict:
        return self.fl["status"].unpack(int(getattr(self.dut, f"status__{g}").value))

    def explain_stall(self) -> None:
        sb = self.sb
        for g in range(self.n):
            d = self.drv[g]
            self.log.error("GPU %d sources (queued, offering, sent): %s; zeroing left %d, local left %d (open %s), "
                           "tiles waiting for a descriptor %s", g,
                           {k: (len(v.queue), v.current is not None, v.sent) for k, v in self.src[g].items()},
                           len(d.zero), len(d.local), d.local_open, sorted(d.gated)[:8])
            if sb is not None:
                gpu = sb.gpus[g]
                waiting = sorted(t.tile for t in gpu.tiles.values() if t.start is None)
                self.log.error("GPU %d scoreboard: counts %s; DMA in progress %s; reads outstanding %d; link %d holds "
                               "%d beats; %d tiles not triggered %s; complete and waiting %s", g, dict(gpu.counts),
                               gpu.dma_current, len(gpu.reads), g, len(sb.links[g]), len(waiting), waiting[:12],
                               sorted(t.tile for t in gpu.pending)[:12])
            st = self.status(g)
            self.log.error("GPU %d status: %s", g, {k: v for k, v in st.items() if k != "reducer"})

    def fail(self, cycle: int, message: str):
        text = f"cycle {cycle}: {message}\n  {self.context()}"
        self.log.error("%s", text)
        raise AssertionError(text)

    # -- phases ---------------------------------------------------------------------------

    async def wait(self, until, what: str, *, timeout: int = 2_000_000) -> None:
        """Run until ``until()``; the watchdog, not the timeout, catches a deadlock."""
        try:
            await self.run(until=until, timeout=timeout)
        except AssertionError as exc:
            if "no progress after" in str(exc):
                self.explain_stall()
                raise AssertionError(f"{what}: {exc}") from None
            raise

    def _polled(self, cond, every: int = 8):
        """``cond`` evaluated every ``every`` cycles (it reads the wide status words)."""
        return lambda: self.cycle % every == 0 and cond()

    async def reduce_scatter(self, *, probe: list[list[int]] | None = None, stop_after: float | None = None) -> None:
        """One run from reset; with ``stop_after``, return once that share of the link beats has moved.

        ``probe``: per GPU, words to read before the zeroing; each GPU with any must read a
        non-zero one (garbage at power-up, old sums after a reset), or the zeroing is untested.
        """
        n, s = self.n, self.s
        plan = self.plan = plan_reduce_scatter(self.np_rng, gpus=n, tiles=self.sc.tiles, beats=self.beats,
                                               lanes=s.nmc.lanes, fmt=self.fmt, notify_cmd=s.notify_cmd,
                                               entries=s.tracker.entries, depth=s.nmc.depth,
                                               trigger_depth=s.tracker.trigger_depth)
        self.sb = RingScoreboard(plan, self.timing, check=self.scoreboard.check, fail=self.fail,
                                 on_dma_start=self._on_dma_start)
        self.writing = False
        self.reused = 0
        self.last_move = self.cycle
        for g, p in enumerate(plan.plans):
            d, src = self.drv[g], self.src[g]
            d.region = p.region
            src["program"].queue.extend(map(self.fl["program"].raw, p.programs))
            src["arm"].queue.extend(map(self.fl["arm"].raw, p.arms))
            d.gated = set(p.late_programs)
            d.frees = {freer: (tile, program) for tile, (freer, program) in p.late_programs.items()}
            if probe is not None:
                src["read"].queue.extend({"addr": a, "raw": a, "_probe": True} for a in probe[g])
        if probe is not None:
            await self.wait(lambda: all(src["read"].idle() for src in self.src)
                            and not any(gpu.reads for gpu in self.sb.gpus), "probe reads")
            for g, gpu in enumerate(self.sb.gpus):
                assert not probe[g] or any(gpu.probe_data), (
                    f"GPU {g}: words {probe[g]} read all zeros before the zeroing: the bank must start with garbage "
                    f"(power_up_seed) or keep the old sums across a reset, or the zeroing is not tested\n"
                    f"  {self.context()}")
        for g, p in enumerate(plan.plans):
            self.drv[g].zero.extend(map(self.fl["gemm"].raw, p.zero_writes))
            self.src[g]["local"].p_valid = 1.0  # the driver's memset runs at full rate
        await self.wait(self._polled(lambda: self._barrier_reached(plan)), "configuration and zeroing")
        for g in range(n):
            expected = self.release_cycle + s.tracker.reset_cycles - 1
            assert self.drv[g].first_arm == expected, (
                f"GPU {g}: first arm accepted in cycle {self.drv[g].first_arm}, expected {expected}: arm.ready must "
                f"rise tracker.reset_cycles = {s.tracker.reset_cycles} cycles after reset\n  {self.context()}")

        start = self.cycle
        self.writing = True
        for src in self.src:
            src["local"].p_valid = self.sc.write_p
        self.reads_on = self.sc.read_p > 0
        for g, p in enumerate(plan.plans):
            self.drv[g].local.extend(map(self.fl["gemm"].raw, p.local_writes))
            self.src[g]["remote"].queue.extend(map(self.fl["packet"].raw, p.remote_writes))
        if stop_after is not None:
            target = stop_after * n * (n - 1) * plan.tiles * plan.beats
            await self.wait(lambda: self.sb.beats_checked >= target, "the first part of the run")
            return
        sb = self.sb
        notifies = n * plan.tiles
        await self.wait(lambda: sum(gpu.counts["notify"] for gpu in sb.gpus) == notifies,
                        "every GPU notified of its last stage")
        rs_cycles = self.cycle - start
        self.reads_on = False
        await self.wait(self._polled(lambda: not sb.outstanding() and all(s["read"].idle() for s in self.src)),
                        "drain")
        await self.wait(self._polled(lambda: all(self.status(g)["engine"]["busy"] == 0 for g in range(n))),
                        "DMA engines idle")
        # Read every GPU's final chunk back through its GEMM read port.
        for g in range(n):
            self.src[g]["read"].queue.extend({"addr": a, "raw": a} for a in plan.chunk_addresses(g))
        await self.wait(lambda: all(s["read"].idle() for s in self.src) and not any(gpu.reads for gpu in sb.gpus),
                        "read-back")
        self.watch = False
        await self.run(cycles=20)  # nothing may move any more
        self.watch = True
        readback = [[sb.gpus[g].returned[a] for a in plan.chunk_addresses(g)] for g in range(n)]
        sb.final(self.cycle, [self.status(g) for g in range(n)], readback=readback)
        for g in range(n):
            got = np.array(readback[g], dtype=np.uint64)
            exp = np.array([lanes_to_beat(row) for row in plan.expected[g]], dtype=np.uint64)
            assert np.array_equal(got, exp), f"GPU {g}: final chunk differs from the numpy reduce-scatter"
        self.runs += 1
        self.max_dma_gap = max(self.max_dma_gap, sb.max_dma_gap)
        self.stats["rs_cycles"] += rs_cycles
        self.stats["lanes_bit_exact"] += n * plan.tiles * plan.beats * plan.lanes
        self.stats["link_beats"] += sb.beats_checked
        self.stats["reads_checked"] += sb.reads_checked
        self.log.info("N=%d %s, %d tiles per chunk, mode %s: reduce-scatter %d cycles; %d link beats and %d GEMM reads "
                      "checked; worst DMA start gap %d (bound %d); smallest notify slack %s; worst comm wait %d; "
                      "descriptors reused %d", n, self.fmt, plan.tiles, "MCA" if self.sc.mode == MCA else "round-robin",
                      rs_cycles, sb.beats_checked, sb.reads_checked, sb.max_dma_gap, self.timing.dma_start,
                      sb.max_notify_slack, max(self.status(g)["arbiter"]["max_comm_wait"] for g in range(n)),
                      self.reused)
        if sum(len(p.late_programs) for p in plan.plans) != self.reused:
            raise AssertionError(f"{self.reused} descriptors reused, the plan reuses "
                                 f"{sum(len(p.late_programs) for p in plan.plans)}")

    def _barrier_reached(self, plan: RingPlan) -> bool:
        for g, p in enumerate(plan.plans):
            src, d = self.src[g], self.drv[g]
            if d.zero or src["local"].current is not None or not src["arm"].idle() or not src["program"].idle():
                return False
            if self.status(g)["reducer"]["stores"] != len(p.zero_writes):
                return False
        return True

    async def begin(self) -> None:
        await self.start()
        self.release_cycle = self.cycle

    async def reset_ring(self) -> None:
        await self.reset_dut(cycles=3)
        self.release_cycle = self.cycle




def _make_test(name: str, scenario: Scenario):
    async def test(dut):
        tb = RingTB(dut, scenario)
        await tb.begin()
        regions = [output_region(g, gpus=tb.n, tiles=scenario.tiles, beats=tb.beats) for g in range(tb.n)]
        power_up = [r[:: max(1, len(r) // PROBE_READS)][:PROBE_READS] for r in regions]
        if scenario.reset_mid_run:
            await tb.reduce_scatter(probe=power_up, stop_after=1 / 2)
            # Words whose local update has surely reached the bank hold old sums after the reset.
            done = tb.cycle - tb.timing.local_grant
            old = [[a for a, c in gpu.local_at.items() if c < done][:PROBE_READS] for gpu in tb.sb.gpus]
            assert any(old), "no local update reached a bank before the reset"
            tb.log.info("reset at cycle %d, halfway through the reduce-scatter", tb.cycle)
            await tb.reset_ring()
            await tb.reduce_scatter(probe=old)
        else:
            await tb.reduce_scatter(probe=power_up)
        tb.log.info("worst DMA start gap %d cycles (bound %d); process CPU %.1f s", tb.max_dma_gap,
                    tb.timing.dma_start, time.process_time())
        tb.write_stats(**tb.stats)

    test.__name__ = test.__qualname__ = name
    return cocotb.test(test)


for _name, _scenario in SCENARIOS.items():
    globals()[_name] = _make_test(_name, _scenario)

assert {t for _, t in CASES + SOAK_CASES} <= set(SCENARIOS), "scenarios name a missing test"
