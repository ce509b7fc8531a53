# amaranth: UnusedElaboratable=no
"""The ring scoreboard on hand-made event traces (no simulator): a correct reduce-scatter
passes, and each kind of wrong beat, read, trigger or counter fails it."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest

from rtl.dma_engine import packet_layout
from tb.common.scoreboard import Scoreboard
from tb.ring.fastpack import FlatLayout
from tb.ring.protocol import plan_reduce_scatter
from tb.ring.scoreboard import RingError, RingScoreboard, Timing

N, TILES, BEATS, LANES = 3, 2, 4, 4
PACKET = FlatLayout(packet_layout(port_width=2, addr_width=8, data_width=64))
LOOSE = Timing(link_latency=2, link_cycles_per_beat=2, read_latency=1, local_grant=30, dma_start=10**6,
               notify_base=10**6, per_trigger=10**6, comm_wait=9)


def _plan(seed=1):
    return plan_reduce_scatter(np.random.default_rng(seed), gpus=N, tiles=TILES, beats=BEATS, lanes=LANES,
                               fmt="binary16", notify_cmd=63, entries=64, depth=256)


class Trace:
    """Feeds a scoreboard the events of a correct, strictly sequential reduce-scatter.

    ``mutate(kind, event)`` may return a changed event (or None to drop it)."""

    def __init__(self, plan, timing=LOOSE, mutate=None):
        self.plan, self.t = plan, 0
        self.mutate = mutate or (lambda kind, event: event)
        self.sb = RingScoreboard(plan, timing, check=Scoreboard(logging.getLogger("test")).check, fail=self._fail)

    @staticmethod
    def _fail(cycle, message):
        raise RingError(f"cycle {cycle}: {message}")

    def emit(self, kind, *args):
        event = self.mutate(kind, args)
        if event is not None:
            getattr(self.sb, kind)(*event)

    def tick(self, k=3):
        self.t += k

    def beat(self, g, pkt):
        raw = PACKET.pack(pkt)
        self.emit("egress", g, raw, dict(pkt), self.t)
        self.emit("ingress", (g + 1) % N, raw, dict(pkt), self.t + 2)
        self.tick()

    def run(self):
        plan, sb = self.plan, self.sb
        for g, p in enumerate(plan.plans):
            for w in p.zero_writes:
                self.emit("gemm_write", g, w, self.t)
                self.tick()
        for g, p in enumerate(plan.plans):
            for w in p.remote_writes:
                self.emit("remote_accepted", g, w, self.t)
                self.tick(1)
                self.beat(g, w)
        for stage in range(2, N + 1):
            for g, p in enumerate(plan.plans):
                chunk = (g - stage) % N
                for w in p.local_writes:
                    if plan.chunk_of(w["addr"]) == chunk:
                        self.emit("gemm_write", g, w, self.t)
                        self.tick()
                        # A read of the word just written, and one of a word of the next chunk.
                        self.emit("read_accepted", g, w["addr"], self.t)
                        self.tick()
                        self.emit("read_returned", g, self.expected_read(g, w["addr"]), self.t)
                        self.tick()
            for g, p in enumerate(plan.plans):
                chunk = (g - stage) % N
                for t in range(TILES):
                    tile = chunk * TILES + t
                    if tile in p.notify_tiles:
                        self.emit("notify", g, tile, self.t)
                        self.tick()
                        continue
                    for k in range(BEATS):
                        addr = tile * BEATS + k
                        self.beat(g, {"dst_port": 0, "dst_addr": addr, "op": 1, "last": int(k == BEATS - 1),
                                      "data": p.total[addr]})
        readback = []
        for g in range(N):
            words = []
            for a in plan.chunk_addresses(g):
                self.emit("read_accepted", g, a, self.t)
                self.tick()
                self.emit("read_returned", g, plan.plans[g].total[a], self.t)
                self.tick()
                words.append(plan.plans[g].total[a])
            readback.append(words)
        self.readback = readback
        return sb

    def expected_read(self, g, addr):
        gpu, p = self.sb.gpus[g], self.plan.plans[g]
        return p.total[addr] if addr in gpu.incoming_at else p.local_z[addr]

    def status(self):
        plan, sb = self.plan, self.sb
        cb, tiles = plan.tiles * plan.beats, plan.tiles
        out = []
        for g, p in enumerate(plan.plans):
            c = sb.gpus[g].counts
            fwd = (N - 2) * tiles
            out.append({
                "tracker": {"clearing": 0, "err_unarmed_update": 0, "err_rearm": 0, "err_zero_threshold": 0,
                            "armed_entries": 0, "local_updates": len(p.local_writes),
                            "remote_updates": (N - 1) * cb, "triggers": fwd + tiles},
                "table": {"err_unprogrammed": 0, "err_bad_descriptor": 0, "triggers": fwd, "issued": fwd},
                "engine": {"err_overflow": 0, "busy": 0, "commands": fwd, "beats": fwd * BEATS},
                "reducer": {"stores": len(p.zero_writes), "updates": len(p.local_writes) + (N - 1) * cb},
                "arbiter": {"compute_grants": c["zero"] + c["local"] + c["reads"],
                            "comm_grants": (N - 1) * cb + fwd * BEATS, "max_comm_wait": 8},
                "ingress_beats": (N - 1) * cb, "egress_beats": (N - 1) * cb, "notifies": tiles,
            })
        return out


def test_plan_values():
    plan = _plan()
    p = plan.plans[0]
    assert len(p.region) == (N - 1) * TILES * BEATS == len(p.zero_writes)
    assert all(w["op"] == 0 and w["tracked"] == 0 and w["data"] == 0 for w in p.zero_writes)
    assert all(w["tracked"] == 1 for w in p.local_writes)
    assert [p.total[a] for a in plan.chunk_addresses(0)] == [int.from_bytes(r.tobytes(), "little")
                                                               for r in plan.expected[0]]


def test_descriptor_reuse():
    """More forwarded tiles than descriptors: indices are reused, each freed by the tile 'pool' earlier."""
    plan = plan_reduce_scatter(np.random.default_rng(2), gpus=4, tiles=4, beats=4, lanes=4, fmt="binary16",
                               notify_cmd=5, entries=16, depth=64)
    p = plan.plans[0]
    assert len(p.dma_tiles) == 8 and len(p.programs) == 5 and len(p.late_programs) == 3
    for j, tile in enumerate(p.dma_tiles[5:], start=5):
        freer, program = p.late_programs[tile]
        assert freer == p.dma_tiles[j - 5] and program["index"] == j % 5
    assert [a["dma_cmd"] for a in p.arms if a["tile"] in p.dma_tiles] == [j % 5 for j in range(8)]


def test_correct_trace_passes():
    trace = Trace(_plan())
    sb = trace.run()
    assert not sb.outstanding()
    sb.final(trace.t, trace.status(), readback=trace.readback)
    assert sb.reads_checked > 0 and sb.beats_checked == N * (N - 1) * TILES * BEATS


def _flip_data(kind, event, *, target):
    if kind != target[0]:
        return event
    target[1] -= 1
    if target[1] != 0:
        return event
    if kind == "egress":
        g, raw, pkt, t = event
        pkt = {**pkt, "data": pkt["data"] ^ 1}
        return g, PACKET.pack(pkt), pkt, t
    if kind == "read_returned":
        g, data, t = event
        return g, data ^ (1 << 15), t
    raise AssertionError(kind)


@pytest.mark.parametrize(("kind", "nth", "match"), [
    ("egress", 1, "egress"),                          # a stage-1 remote write altered
    ("egress", 3 * TILES * BEATS + 2, "egress"),      # a DMA beat altered
    ("read_returned", 5, "gemm_read_data"),           # a GEMM read returns a wrong word
])
def test_wrong_content_fails(kind, nth, match):
    target = [kind, nth]
    with pytest.raises(AssertionError, match=match):
        Trace(_plan(), mutate=lambda k, e: _flip_data(k, e, target=target)).run()


def test_dropped_link_beat_fails():
    dropped = []

    def drop(kind, event):
        if kind == "ingress" and not dropped:
            dropped.append(event)
            return None
        return event
    with pytest.raises(AssertionError, match="ingress = oldest beat"):
        Trace(_plan(), mutate=drop).run()


def test_reordered_dma_beats_fail():
    seen = []

    def swap(kind, event):
        if kind == "egress" and event[2]["dst_addr"] % BEATS == 1 and event[2]["op"] == 1 and not seen:
            g, raw, pkt, t = event
            if pkt["dst_addr"] // (TILES * BEATS) != (g - 1) % N:   # a DMA beat, not stage 1
                seen.append(1)
                pkt = {**pkt, "dst_addr": pkt["dst_addr"] + 1}
                return g, PACKET.pack(pkt), pkt, t
        return event
    with pytest.raises(AssertionError, match="is due"):
        Trace(_plan(), mutate=swap).run()


def test_stale_read_fails():
    """A read that misses the local write accepted before it (no read-after-write ordering)."""
    trace = Trace(_plan())
    sb = trace.sb
    sb.gemm_write(0, trace.plan.plans[0].zero_writes[0], 0)
    addr = trace.plan.plans[0].zero_writes[0]["addr"]
    w = next(w for w in trace.plan.plans[0].local_writes if w["addr"] == addr)
    sb.gemm_write(0, w, 5)
    sb.read_accepted(0, addr, 6)
    with pytest.raises(AssertionError, match="gemm_read_data"):
        sb.read_returned(0, 0, 9)   # the zeroed word, not 0 + local


def test_early_trigger_fails():
    """A DMA (or notify) before all 2 x beats writes of the tile were accepted."""
    def early(kind, event):
        if kind == "notify":
            g, tile, t = event
            early.sb.gpus[g].tiles[tile].incoming -= 1
        return event
    trace = Trace(_plan(), mutate=early)
    early.sb = trace.sb
    with pytest.raises(AssertionError, match="before it was complete"):
        trace.run()


def test_double_notify_fails():
    def twice(kind, event):
        if kind == "notify":
            twice.sb.notify(*event)
        return event
    trace = Trace(_plan(), mutate=twice)
    twice.sb = trace.sb
    with pytest.raises(AssertionError, match="notified twice"):
        trace.run()


def test_latency_bound_fails():
    tight = replace(LOOSE, dma_start=5)
    with pytest.raises(AssertionError, match="first beat left"):
        Trace(_plan(), timing=tight).run()


def test_link_pacing_and_latency_fail():
    fast = replace(LOOSE, link_latency=5)
    with pytest.raises(AssertionError, match="under the link latency"):
        Trace(_plan(), timing=fast).run()
    paced = replace(LOOSE, link_cycles_per_beat=4)
    with pytest.raises(AssertionError, match="more than one per 4 cycles"):
        Trace(_plan(), timing=paced).run()


@pytest.mark.parametrize(("path", "delta"), [
    (("egress_beats",), 1), (("notifies",), -1), (("tracker", "remote_updates"), 1), (("tracker", "triggers"), 1),
    (("engine", "commands"), -1), (("arbiter", "compute_grants"), 1), (("arbiter", "comm_grants"), -1),
    (("arbiter", "max_comm_wait"), 2), (("tracker", "armed_entries"), 1), (("reducer", "stores"), -1),
])
def test_wrong_counter_fails(path, delta):
    trace = Trace(_plan())
    sb = trace.run()
    status = trace.status()
    where = status[1]
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] += delta
    with pytest.raises(AssertionError):
        sb.final(trace.t, status, readback=trace.readback)


def test_missing_trigger_fails():
    def drop_notify(kind, event):
        return None if kind == "notify" and event[0] == 2 else event
    trace = Trace(_plan(), mutate=drop_notify)
    sb = trace.run()
    with pytest.raises(AssertionError, match="never triggered"):
        sb.final(trace.t, trace.status(), readback=trace.readback)


def test_fastpack_matches_common_packing():
    import random

    from rtl.t3_slice import T3Slice
    from tb.common.packing import pack, unpack
    from tb.ring.fastpack import RawLayout

    s = T3Slice(depth=1024, entries=256, commands=256)
    rng = random.Random(3)
    for layout in (s.packet_layout, s.gemm_layout, s.table.program_layout, s.tracker.arm_layout, s.status_layout):
        flat = FlatLayout(layout)
        for _ in range(20):
            word = rng.getrandbits(flat.width)
            fields = unpack(layout, word)
            assert flat.unpack(word) == fields
            assert flat.pack(fields) == pack(layout, fields) == word
            assert pack(RawLayout(flat.width), flat.raw(fields)) == word
    with pytest.raises(ValueError, match="must fit"):
        FlatLayout(s.packet_layout).pack({"dst_addr": 1 << 20})


def test_plan_refuses_more_arms_than_trigger_slots():
    """Arming every tile before the barrier needs a trigger slot per armed tile (a ring with
    trigger_depth 4 and 12 tiles per chunk deadlocks on its arms)."""
    with pytest.raises(ValueError, match=r"trigger_depth must be at least that, not 35$"):
        plan_reduce_scatter(np.random.default_rng(3), gpus=4, tiles=12, beats=4, lanes=4, fmt="binary16",
                            notify_cmd=63, entries=64, depth=256, trigger_depth=35)
    plan_reduce_scatter(np.random.default_rng(3), gpus=4, tiles=12, beats=4, lanes=4, fmt="binary16",
                        notify_cmd=63, entries=64, depth=256, trigger_depth=36)
