# amaranth: UnusedElaboratable=no
"""cocotb end-to-end bench: T3's reduce-scatter on a ring of N simulated GPUs, bit-exact.

Every GPU is programmed (descriptors, tracker arms) as :mod:`tb.ring.protocol` says, then
its GEMM writes its partial output in staggered stages with random gaps, while the DMA
engines forward finished tiles around the ring and the near-memory reducers add them.
When every GPU has been notified that its last stage is complete, the bench reads each
GPU's final chunk back through the GEMM's read port and compares it bit for bit with the
numpy reference. It also checks every sub-block's error flags, the beat counts on every
link (nothing lost or duplicated), and that no tile is left armed.
"""

from __future__ import annotations

import cocotb
import numpy as np
from amaranth.lib import data

from rtl.ring import T3Ring
from tb.common.lockstep import LockstepTB
from tb.common.packing import unpack
from tb.common.runner import bench_params
from tb.common.streams import StreamSource
from tb.fp_add.golden import NUMPY_TYPES, mismatches
from tb.nmc.model import beat_to_lanes
from tb.ring.protocol import plan_reduce_scatter
from tb.ring.scenarios import CASES

MCA, ROUND_ROBIN = 0, 1


class TB(LockstepTB):
    def __init__(self, dut, *, write_p=1.0, mode=MCA, threshold=4, starvation_limit=8, tiles=4,
                 compute_read_p=0.0):
        super().__init__(dut)
        params = bench_params()
        self.ring = T3Ring(**params)
        s = self.ring.slices[0]
        self.gpus, self.s = self.ring.gpus, s
        self.fmt = s.nmc.format.name
        self.utype = NUMPY_TYPES[self.fmt][1]
        self.plan = plan_reduce_scatter(np.random.default_rng(self.seed), gpus=self.gpus, tiles=tiles,
                                        beats=1 << s.tile_beats_log2, lanes=s.nmc.lanes, fmt=self.fmt,
                                        notify_cmd=s.notify_cmd)
        self.mode, self.threshold, self.starvation_limit = mode, threshold, starvation_limit
        addr = data.StructLayout({"addr": s.nmc.addr_width})
        self.src = []
        for g in range(self.gpus):
            self.src.append({
                "program": StreamSource(dut, f"program__{g}", s.table.program_layout, self.rng),
                "arm": StreamSource(dut, f"arm__{g}", s.tracker.arm_layout, self.rng),
                "remote": StreamSource(dut, f"gemm_remote__{g}", s.packet_layout, self.rng, write_p),
                "local": StreamSource(dut, f"gemm__{g}", s.gemm_layout, self.rng, write_p),
                "read": StreamSource(dut, f"gemm_read__{g}", addr, self.rng,
                                     next_item=self._injected_read if g == 0 else None),
            })
        self.compute_read_p = compute_read_p
        self.inject_reads = False
        self.local_released = [False] * self.gpus
        self.notified = [set() for _ in range(self.gpus)]
        self.read_data = [[] for _ in range(self.gpus)]
        self.reads_returned_while_injecting = 0
        self.lanes_checked = 0
        self.injecting_cycles = 0

    def _injected_read(self):
        """GPU 0's GEMM reads, at the compute-read intensity, while the reduce-scatter runs."""
        if not self.inject_reads or self.rng.random() >= self.compute_read_p:
            return None
        return {"addr": self.rng.randrange(self.s.nmc.depth)}

    def reset_inputs(self):
        d = self.dut
        for g in range(self.gpus):
            for port in ("program", "arm", "gemm_remote", "gemm", "gemm_read"):
                getattr(d, f"{port}__{g}__valid").value = 0
        d.threshold.value = self.threshold
        d.starvation_limit.value = self.starvation_limit
        d.mode.value = self.mode

    def drive(self):
        for g, src in enumerate(self.src):
            # The GEMM produces stage 1 (remote) first, then the local stages.
            if not self.local_released[g] and self.writing and src["remote"].idle():
                src["local"].queue.extend(self.plan.plans[g].local_writes)
                self.local_released[g] = True
            for s in src.values():
                s.drive()

    def check(self):
        d = self.dut
        for g, src in enumerate(self.src):
            for s in src.values():
                s.handshake()
            if int(getattr(d, f"notify__{g}__valid").value):
                tile = int(getattr(d, f"notify__{g}__payload").value)
                assert tile in self.plan.plans[g].notify_tiles, f"GPU {g}: unexpected notify of tile {tile}"
                assert tile not in self.notified[g], f"GPU {g}: tile {tile} notified twice"
                self.notified[g].add(tile)
            if int(getattr(d, f"gemm_read_data__{g}__valid").value):
                self.read_data[g].append(int(getattr(d, f"gemm_read_data__{g}__payload").value))
                if self.inject_reads and g == 0:
                    self.reads_returned_while_injecting += 1
        self.injecting_cycles += self.inject_reads

    def status(self, g) -> dict:
        return unpack(self.s.status_layout, int(getattr(self.dut, f"status__{g}").value))

    def all_notified(self) -> bool:
        return all(self.notified[g] == self.plan.plans[g].notify_tiles for g in range(self.gpus))

    async def run_reduce_scatter(self, timeout=200_000):
        self.writing = False
        await self.start()
        for g, src in enumerate(self.src):
            src["program"].queue.extend(self.plan.plans[g].programs)
            src["arm"].queue.extend(self.plan.plans[g].arms)
        await self._run_or_explain(lambda: all(s["program"].idle() and s["arm"].idle() for s in self.src), 10_000,
                                   "configuration")
        start = self.cycle
        self.writing = True
        self.inject_reads = self.compute_read_p > 0
        for g, src in enumerate(self.src):
            src["remote"].queue.extend(self.plan.plans[g].remote_writes)
        await self._run_or_explain(self.all_notified, timeout, "the reduce-scatter did not finish")
        self.inject_reads = False
        self.rs_cycles = self.cycle - start
        # Let the DMA engines and links drain before counting.
        await self._run_or_explain(lambda: all(self.status(g)["engine"]["busy"] == 0 for g in range(self.gpus)),
                                   20_000, "DMA engines still busy")
        await self._run_or_explain(lambda: all(s["read"].idle() for s in self.src), 20_000, "reads pending")
        await self.run(cycles=40)

    async def _run_or_explain(self, until, timeout, what):
        try:
            await self.run(until=until, timeout=timeout)
        except AssertionError:
            for g in range(self.gpus):
                self.log.error("GPU %d sources: %s", g, {k: (len(v.queue), v.current is not None, v.sent)
                                                         for k, v in self.src[g].items()})
                st = self.status(g)
                self.log.error("GPU %d: notified %s of %s; local released %s; status %s", g, sorted(self.notified[g]),
                               sorted(self.plan.plans[g].notify_tiles), self.local_released[g],
                               {k: v for k, v in st.items() if k != "reducer"})
            raise AssertionError(f"{what} within {timeout} cycles") from None

    async def read_back_and_check(self):
        first = [len(r) for r in self.read_data]
        for g, src in enumerate(self.src):
            src["read"].queue.extend({"addr": a} for a in self.plan.chunk_addresses(g))
        await self.run(until=lambda: all(s["read"].idle() for s in self.src))
        await self.run(cycles=4)
        chunk_beats = self.plan.tiles * self.plan.beats
        for g in range(self.gpus):
            beats = self.read_data[g][first[g]:]
            assert len(beats) == chunk_beats, f"GPU {g}: {len(beats)} beats read back, expected {chunk_beats}"
            got = np.stack([beat_to_lanes(b, self.utype, self.plan.lanes) for b in beats])
            bad = mismatches(self.fmt, got.ravel(), self.plan.expected[g].ravel())
            assert len(bad) == 0, f"GPU {g}: {len(bad)} lanes differ from the numpy reduce-scatter"
            self.lanes_checked += got.size

    def final_check(self):
        n, chunk = self.gpus, self.plan.tiles * self.plan.beats
        for g in range(n):
            st = self.status(g)
            for block, flag in (("tracker", "err_unarmed_update"), ("tracker", "err_rearm"),
                                ("tracker", "err_zero_threshold"), ("table", "err_unprogrammed"),
                                ("table", "err_bad_descriptor"), ("engine", "err_overflow")):
                assert st[block][flag] == 0, f"GPU {g}: {block}.{flag} set"
            assert st["tracker"]["armed_entries"] == 0, f"GPU {g}: tiles left armed"
            assert st["egress_beats"] == (n - 1) * chunk, f"GPU {g}: {st['egress_beats']} beats sent"
            assert st["ingress_beats"] == (n - 1) * chunk, f"GPU {g}: {st['ingress_beats']} beats received"
            assert st["engine"]["commands"] == (n - 2) * self.plan.tiles
            assert st["notifies"] == self.plan.tiles
        worst = max(self.status(g)["arbiter"]["max_comm_wait"] for g in range(n))
        share = self.reads_returned_while_injecting / max(1, self.injecting_cycles)
        self.log.info("N=%d %s: reduce-scatter %d cycles; worst comm wait %d; GPU0 compute reads %.3f/cycle",
                      n, self.fmt, self.rs_cycles, worst, share)
        self.write_stats(rs_cycles=self.rs_cycles, lanes_bit_exact=self.lanes_checked,
                         link_beats=(n - 1) * chunk * n)


def _make_test(name, write_p, mode, compute_read_p, tiles):
    async def test(dut):
        tb = TB(dut, write_p=write_p, mode=mode, compute_read_p=compute_read_p, tiles=tiles)
        await tb.run_reduce_scatter()
        await tb.read_back_and_check()
        tb.final_check()
    test.__name__ = test.__qualname__ = name
    return cocotb.test(test)


_SETTINGS = {
    "reduce_scatter_full_rate": (1.0, MCA, 0.0, 4),
    "reduce_scatter_random_gaps": (0.5, MCA, 0.0, 4),
    "reduce_scatter_round_robin": (0.8, ROUND_ROBIN, 0.0, 4),
    "compute_reads_mca": (0.8, MCA, 0.5, 4),
    "compute_reads_round_robin": (0.8, ROUND_ROBIN, 0.5, 4),
}
for _name, _settings in _SETTINGS.items():
    globals()[_name] = _make_test(_name, *_settings)

assert {t for _, t in CASES} <= set(globals()), "scenarios name a missing test"
