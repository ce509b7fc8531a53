"""T3 against today's software overlap, one sublayer (GEMM + all-reduce) at a time.

Every scheme runs the sublayer's GEMM through the same wave and L2 model
(:mod:`..gemm`), its DRAM traffic through the same channel model (:mod:`..dram_queue`,
via :class:`..schemes._Channel`), and its collective over the same fabric
(:mod:`..fabric`), so that each pays for what it shares: the GEMM's CUs, the DRAM queue,
the links. The all-gather that completes the all-reduce is NCCL/RCCL's ring AG in every
scheme but NVLS (whose AG is the switch's multicast). The schemes:

* ``sequential``: the GEMM, then NCCL/RCCL's ring RS and AG (the paper's baseline).
* ``ideal``: the physical bound: the whole all-reduce (its reduce-scatter and all-gather
  bytes over the GPU's egress, or the tensor once with a reducing switch) hidden under the
  fastest GEMM any scheme runs. No scheme can do better; T3, like the paper's "ideal
  overlap", still runs its all-gather after the GEMM.
* ``t3_ring``: T3-MCA (the paper's design) on a ring laid over the fabric
  (:func:`..schemes.t3_staged`).
* ``t3_direct``: T3 beyond a ring: each tracked tile goes straight from the GEMM's
  epilogue to its owner as a remote update, which the owner's near-memory reducer adds; no
  forwarding, no DMA reads (fully connected and switch fabrics, inside the domain).
* ``flux``: Flux's fused GEMM + RS as it runs on Hopper (Chang et al. 2024, arXiv
  2406.06858; bytedance/flux): the epilogue stores each tile locally and raises its flag;
  the owner's spare producer warps pull it over the fabric and add it atomically into the
  owner's reduce buffer while the GEMM goes on.
* ``async_tp``: PyTorch async-TP's ``fused_matmul_reduce_scatter`` over SymmetricMemory
  (torch.distributed._symmetric_memory; "Introducing Async Tensor Parallelism in
  PyTorch", 2024): one matmul per rank's chunk, each chunk copied to its owner by the copy
  engine while the next computes, then a reduction of the received chunks.
* ``flashoverlap``: FlashOverlap (Hong et al. 2025, arXiv 2504.19519): one GEMM whose
  tiles are written in group order; a counter per tile group signals a communication
  stream that runs NCCL's RS on the group; the result is put back in row order after.
* ``dma_collective``: copy/DMA-engine collectives (ConCCL: Agrawal et al. 2024,
  arXiv 2412.14335): one staged GEMM on every CU; each stage's slices go to their owners on
  the DMA engines; the owner sums the arrivals on its CUs after the GEMM.
* ``dma_nmc``: the same transfers, the arrivals added by T3's near-memory reducer where
  the GPU has one (T3 without its tracker: a stage's flag, not a tile's count, starts them).
* ``nvls``: NVLink SHARP (NCCL 2.17+): the GEMM, then an all-reduce reduced in the
  NVSwitch (multimem load-reduce, multicast store).

A scheme that cannot run on a platform returns :class:`PeerResult` with ``time_s`` None
and the reason (NVLS without a reducing switch, T3 without its blocks, a direct scheme on a
ring, a single-node mechanism beyond the NVLink/xGMI domain).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..collectives import software_all_gather, software_reduce_scatter
from ..dram_queue import dynamic_threshold
from ..fabric import FabricConfig
from ..gemm import gemm_timing
from ..models import GemmShape
from ..schemes import (
    StudyConfig,
    _advance,
    _Channel,
    _runs,
    _stage_waves,
    _transfer_end,
    gemm_alone_s,
    t3_staged,
)
from ..units import check_int_range, check_range
from .platforms import Platform, library_kernel

__all__ = ["PEER_SCHEMES", "SCHEME_LABELS", "SCHEME_SOURCES", "PeerConfig", "PeerResult", "evaluate_peers"]

PEER_SCHEMES = ("sequential", "ideal", "t3_ring", "t3_direct", "flux", "async_tp", "flashoverlap",
                "dma_collective", "dma_nmc", "nvls")

SCHEME_LABELS = {
    "sequential": "Sequential", "ideal": "Ideal", "t3_ring": "T3-MCA ring", "t3_direct": "T3 direct",
    "flux": "Flux", "async_tp": "async-TP", "flashoverlap": "FlashOverlap", "dma_collective": "DMA coll.",
    "dma_nmc": "DMA + NMC",
    "nvls": "NVLS",
}

SCHEME_SOURCES = {
    "sequential": "NCCL/RCCL ring RS + AG after the GEMM (the T3 paper's baseline)",
    "ideal": "bound: the whole all-reduce under the fastest GEMM, limited only by the fabric's bytes",
    "t3_ring": "Pati et al., ASPLOS 2024 (arXiv 2401.16677): track & trigger, NMC, T3-MCA",
    "t3_direct": "T3's tracker and NMC with direct remote updates (this model's extension)",
    "flux": "Chang et al., arXiv 2406.06858; github.com/bytedance/flux",
    "async_tp": "PyTorch async-TP: torch.distributed._symmetric_memory.fused_matmul_reduce_scatter",
    "flashoverlap": "Hong et al., arXiv 2504.19519 (FlashOverlap)",
    "dma_collective": "Agrawal et al., arXiv 2412.14335 (ConCCL: collectives on GPU DMA engines)",
    "dma_nmc": "ConCCL-style DMA transfers with T3's near-memory reduction (no tracker: stage flags)",
    "nvls": "NCCL 2.17+ NVLink SHARP all-reduce on NVSwitch gen 3",
}


@dataclass(frozen=True)
class PeerConfig:
    """What the peers' published designs leave to the implementation (each in the calibration table).

    Attributes
    ----------
    launch_gap_us : float
        A dependent kernel or copy launched on another stream: the host-side launch and the
        stream-event wait before it starts (async-TP pays one per chunk matmul and copy).
    groups_per_gemm : int
        FlashOverlap's tile groups per GEMM (each signalled and sent on its own).
    nccl_sms : int
        SMs NCCL's kernel holds while it overlaps the GEMM (FlashOverlap).
    reduction_sms_fraction : float
        Share of the CUs a post-GEMM reduction kernel reaches DRAM bandwidth with (Flux,
        async-TP and DMA collectives sum the received chunks on CUs).
    """

    launch_gap_us: float = 5.0
    groups_per_gemm: int = 8
    nccl_sms: int = 16
    reduction_sms_fraction: float = 1.0

    def __post_init__(self):
        check_range("launch_gap_us", self.launch_gap_us, 0.0, 1e4)
        check_int_range("groups_per_gemm", self.groups_per_gemm, 1, 4096)
        check_int_range("nccl_sms", self.nccl_sms, 1, 1024)
        check_range("reduction_sms_fraction", self.reduction_sms_fraction, 0.01, 1.0)


@dataclass(frozen=True)
class PeerResult:
    """One scheme on one sublayer: its time (None when n/a, with the reason) and the GEMM's part."""

    scheme: str
    time_s: float | None
    gemm_s: float = 0.0
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.time_s is not None


def _na(scheme: str, reason: str) -> PeerResult:
    return PeerResult(scheme, None, reason=reason)


class _Sublayer:
    """The shared pieces of one sublayer on one platform at one TP."""

    def __init__(self, platform: Platform, cfg: StudyConfig, peer: PeerConfig, shape: GemmShape, tp: int,
                 all_reduce: bool):
        self.platform, self.peer, self.shape, self.tp = platform, peer, shape, tp
        self.fabric: FabricConfig = platform.fabric
        self.ring = self.fabric.ring_link(tp)
        self.kernel = library_kernel(platform.kernels, shape, cfg.system.gpu)
        self.cfg = replace(cfg, system=replace(cfg.system, link=self.ring), kernel=self.kernel)
        self.gpu, self.coll = self.cfg.system.gpu, self.cfg.collective
        e = self.kernel.bytes_per_element
        self.total = shape.m * shape.n * e
        self.chunk = self.total / tp
        self.tile_bytes = self.kernel.tile_m * self.kernel.tile_n * e
        self.latency = self.fabric.hop_latency_s(tp)
        self.in_domain = self.fabric.in_domain(tp)
        self.gemm_s = gemm_alone_s(self.cfg, gemm_timing(shape, self.gpu, self.kernel, stages=1), nmc=False)
        self.rs = software_reduce_scatter(self.total, tp, self.ring, self.gpu, self.coll)
        self.ag = software_all_gather(self.total, tp, self.ring, self.gpu, self.coll)
        self.ag_traffic = (self.ag.read_bytes, self.ag.write_bytes) if all_reduce else (0.0, 0.0)
        self.all_reduce = all_reduce
        self.ag_s = self.ag.time_s if all_reduce else 0.0
        self.launch_s = peer.launch_gap_us * 1e-6
        self.signal_s = self.gpu.dram_latency_ns * 1e-9 + self.latency   # a flag stored, then seen by a poll

    # -- bounds ---------------------------------------------------------------------------
    def rs_bound_s(self) -> float:
        """Fastest a GPU can send its share of a reduce-scatter: over the ring laid on the
        fabric, directly where the fabric reaches every peer, or reduced inside the node
        first where the group spans nodes."""
        ring = (self.tp - 1) * self.chunk / self.ring.ring_bytes_per_s
        options = [ring, self.fabric.hierarchical_rs_s(self.total, self.tp)]
        if self.fabric.topology != "ring":
            options.append(self.fabric.direct_send_s(self.chunk, self.tp))
        return min(options)

    def all_reduce_bound_s(self) -> float:
        """The all-reduce's bytes over the GPU's egress: the reduce-scatter's, then as many
        again for the all-gather; with a reducing switch inside its domain, every byte of
        the tensor must leave the GPU once (contributions and its own sum) and arrive once,
        in opposite directions."""
        if self.fabric.switch_reduction and self.in_domain:
            return min(2 * self.rs_bound_s(), self.total / self.fabric.group_egress_Bps(self.tp))
        return 2 * self.rs_bound_s()

    def reduce_kernel_s(self, chunks: int) -> float:
        """A kernel that sums ``chunks`` chunk-sized buffers into one: DRAM-bound on the CUs."""
        moved = (chunks + 1) * self.chunk
        return self.launch_s + moved / (self.gpu.dram_bytes_per_s * self.peer.reduction_sms_fraction)

    def t3_rate_Bps(self, fabric_Bps: float) -> float:
        block = self.cfg.block
        return min(fabric_Bps, block.reducer_bytes_per_s(self.gpu.mc_clock_GHz, self.gpu.hbm_channels))


# -- the schemes --------------------------------------------------------------------------

def _sequential(s: _Sublayer) -> PeerResult:
    return PeerResult("sequential", s.gemm_s + s.rs.time_s + s.ag_s, s.gemm_s)


def _ideal(s: _Sublayer, others: dict[str, PeerResult]) -> PeerResult:
    """The physical bound: the whole collective hidden under the fastest GEMM any scheme
    ran (each scheme's GEMM end, contention included, and the GEMM alone), limited only by
    the bytes the fabric must carry and one hop. Every scheme ends after its own GEMM and
    after the collective's bytes and a hop, so none can beat it."""
    g = min([s.gemm_s, *(r.gemm_s for r in others.values() if r.available)])
    comm = s.all_reduce_bound_s() if s.all_reduce else s.rs_bound_s()
    return PeerResult("ideal", max(g, comm + s.latency), g)


def _t3_ring(s: _Sublayer) -> PeerResult:
    if not s.platform.t3_blocks:
        return _na("t3_ring", "no tracker or near-memory reducer on this GPU")
    gemm = gemm_timing(s.shape, s.gpu, s.kernel, stages=s.tp, stores_cached=False)
    r = t3_staged(s.cfg, gemm, s.tp, chunk_bytes=s.chunk, tile_bytes=s.tile_bytes, ag_s=s.ag_s,
                  ag_traffic=s.ag_traffic, policy="mca", record=False, base_alone_s=s.gemm_s)
    return PeerResult("t3_ring", r.time_s, r.gemm_s)


def _direct_na(s: _Sublayer, scheme: str) -> PeerResult | None:
    if s.fabric.topology == "ring":
        return _na(scheme, "a ring reaches only its two neighbours directly")
    if not s.in_domain:
        return _na(scheme, f"TP {s.tp} spans more than the {s.fabric.domain_gpus}-GPU "
                           f"{'switch' if s.fabric.topology == 'switch' else 'fully connected'} domain "
                           f"(remote stores and pulls reach the domain only)")
    return None


def _direct(s: _Sublayer, *, t3: bool) -> tuple[float, float]:
    """A GEMM whose output tiles reach their owners while it runs; by symmetry each GPU
    receives what it sends. The GEMM computes the peers' chunks first, their tiles
    interleaved (each wave holds every peer's rows, so the transfers use every link at
    once), and its own chunk last, while the last transfers drain (T3's staging idea,
    with the ring's forwarding gone). Returns (GEMM end, last byte received).

    ``t3``: the epilogue stores a peer's tile to its owner as tracked remote updates, and
    the owner's near-memory reducer adds them: nothing else touches DRAM. Otherwise
    Flux's Hopper design: the epilogue stores every tile locally and raises a flag per
    tile; at the owner, the thread block's spare producer warps pull the tile over the
    fabric (a read here) and add it atomically into the owner's reduce buffer (a read and
    a write there); no SM is taken from the GEMM."""
    gemm = gemm_timing(s.shape, s.gpu, s.kernel, stages=s.tp, stores_cached=not t3)
    channel = _Channel(s.cfg, gemm)
    remote = s.total * (s.tp - 1) / s.tp
    fabric_Bps = remote / s.fabric.direct_send_s(s.chunk, s.tp)
    rate = s.t3_rate_Bps(fabric_Bps) if t3 else fabric_Bps
    stages = _stage_waves(gemm)
    peers_part = _runs(gemm, range(0, max(w.stop for w in stages[:-1])))
    own_part = _runs(gemm, stages[-1])

    def load(w, offered, sending):
        if t3:
            return channel.load(w, local_stores=not sending, nmc=True, update_Bps=offered)
        return channel.load(w, local_stores=True, nmc=False, update_Bps=offered, update_units=2,
                            dma_Bps=offered if sending else 0.0)
    policy = "mca" if t3 else "round_robin"
    probe = channel.run(load(peers_part[0][0], 0.0, True), "alone", 1)
    threshold = s.cfg.arbiter.threshold or dynamic_threshold(s.gpu.dram_queue_entries, probe.bank_utilisation)

    per_byte = 1 if t3 else 2                  # DRAM requests here per byte received (and sent)

    def alone_s(w, sending):
        return channel.run(load(w, 0.0, sending), "alone", threshold).cycles / channel.hz

    def beside(w, offered, sending):
        result, served = _at_served_rate(
            channel, lambda rate: channel.run(load(w, rate, sending), policy, threshold), offered, per_byte)
        return result.cycles / channel.hz, served

    first_s = alone_s(peers_part[0][0], True)
    solo = sum(n * alone_s(w, True) for w, n in peers_part)
    # Paced by the GEMM: a wave's tiles leave as the next wave computes. A single wave's
    # tiles are all done at its end: they leave while the own chunk computes.
    offered = min(rate, remote / solo) if sum(n for _, n in peers_part) > 1 else 0.0
    t, served = 0.0, []
    for w, n in peers_part:
        if offered:
            seconds, rate_served = beside(w, offered, True)
            served.append(rate_served)
        else:
            seconds = alone_s(w, True)
        t += n * seconds
    peers_end = t
    sustained = min(served) if served else 0.0
    last_wave = gemm.wave_tiles[peers_part[-1][0]] * s.tile_bytes * (s.tp - 1) / s.tp
    # Left to send when the peers' chunks are done: at least the last wave's tiles.
    left = min(remote, max(last_wave, remote - sustained * max(0.0, peers_end - first_s)))
    # The own chunk computes while the rest drains at the rate the channel serves beside it.
    drain = rate
    for i, (w, n) in enumerate(own_part):
        seconds, rate_served = beside(w, rate, False)
        if i == 0:
            drain = max(rate_served, 1e-6 * rate)
        solo_s = alone_s(w, False)
        t = _advance(t, n * solo_s, seconds / solo_s, [(peers_end, peers_end + left / drain)])
    sent = peers_end + left / drain
    return t, max(t, sent + s.latency)


def _t3_direct(s: _Sublayer) -> PeerResult:
    if not s.platform.t3_blocks:
        return _na("t3_direct", "no tracker or near-memory reducer on this GPU")
    if (na := _direct_na(s, "t3_direct")) is not None:
        return na
    gemm_end, received = _direct(s, t3=True)
    done = received + s.cfg.block.reducer_write_s(s.gpu.mc_clock_GHz)
    return PeerResult("t3_direct", done + s.ag_s, gemm_end)


def _flux(s: _Sublayer) -> PeerResult:
    if (na := _direct_na(s, "flux")) is not None:
        return na
    gemm_end, received = _direct(s, t3=False)
    # The last tile's flag seen, its pull and atomic add done; then the AG.
    return PeerResult("flux", received + s.signal_s + s.ag_s, gemm_end)


def _at_served_rate(channel: _Channel, run_at, offered: float, per_byte: float):
    """(wave result, transfer rate served) of a wave beside a transfer offered at
    ``offered`` B/s (``run_at(rate)`` simulates it; ``per_byte``: this channel's requests
    per byte sent). Where the channel serves less than offered, the engines wait on a full
    queue: the transfer runs at what is served, and the wave shares the channel with a
    transfer at that rate (simulated again)."""
    result = run_at(offered)
    served = min(offered, channel.bytes_per_s(result.comm_served_per_cycle) / per_byte)
    if served < 0.99 * offered:
        offered = max(served, 1e-6 * offered)
        result = run_at(offered)
        served = min(offered, channel.bytes_per_s(result.comm_served_per_cycle) / per_byte)
    return result, served


def _chunk_pipeline(s: _Sublayer, segments, *, rate_Bps: float, send_s, comm_load):
    """A GEMM in segments, each segment's output sent while later segments compute.

    ``segments``: ``(gemm, waves, gap_s, sends)`` in order: the waves of a GEMM that make
    one chunk, the launch gap before them, and whether the chunk is sent. ``rate_Bps``: a
    transfer's rate with the DRAM to itself (the fabric's, or the CUs'). ``send_s(rate)``:
    the chunk's transfer at a rate; ``comm_load(rate)`` the (incoming Bps, units, DMA-read
    Bps) a transfer at ``rate`` puts on this GPU's channel. Returns (GEMM end, last send end).
    """
    t, comm_end = 0.0, 0.0
    incoming, _, dma = comm_load(rate_Bps)
    per_byte = (incoming + dma) / rate_Bps          # DRAM bytes here per byte sent (comm_load is linear)
    busy: list[tuple[float, float]] = []
    total_waves = sum(len(w) for _, w, _, _ in segments)
    done_waves = 0
    for gemm, waves, gap_s, sends in segments:
        channel = _Channel(s.cfg, gemm)
        t += gap_s
        rates = []
        for w, n in _runs(gemm, waves):
            alone = channel.run(channel.load(w, local_stores=True, nmc=False), "alone", 1)

            def run_at(rate, channel=channel, w=w):
                incoming, units, dma = comm_load(rate)
                return channel.run(channel.load(w, local_stores=True, nmc=False, update_Bps=incoming,
                                                update_units=units, dma_Bps=dma), "round_robin", 1)
            shared, served = _at_served_rate(channel, run_at, rate_Bps, per_byte)
            alone_s, shared_s = alone.cycles / channel.hz, shared.cycles / channel.hz
            t = _advance(t, n * alone_s, shared_s / alone_s, busy)
            rates.append(served)
        done_waves += len(waves)
        if not sends:
            continue
        start = max(t + s.signal_s, comm_end)
        rate = min(rates) if rates else rate_Bps
        remaining = (total_waves - done_waves) * gemm.tile_compute_s
        comm_end = _transfer_end(start, t + remaining, send_s(rate), send_s(rate_Bps))
        busy.append((start, comm_end))
    return t, comm_end


def _async_tp(s: _Sublayer) -> PeerResult:
    pair = s.fabric.pair_Bps(s.tp) if s.fabric.topology != "ring" and s.in_domain else None
    if s.fabric.topology == "ring":
        return _na("async_tp", "a ring reaches only its two neighbours: SymmetricMemory maps every peer's memory "
                               "over a direct link")
    if pair is None:
        return _na("async_tp", f"SymmetricMemory spans one NVLink/xGMI domain ({s.fabric.domain_gpus} GPUs), "
                               f"not TP {s.tp}")
    rows = math.ceil(s.shape.m / s.tp)
    chunk = GemmShape(rows, s.shape.n, s.shape.k)
    chunk_gemm = gemm_timing(chunk, s.gpu, library_kernel(s.platform.kernels, chunk, s.gpu), stages=1)
    # One matmul per chunk, the owner's chunk last; each peer's chunk pushed by the copy
    # engine to that peer (one peer at a time) as the next matmul runs.
    segments = [(chunk_gemm, range(chunk_gemm.waves), s.launch_s, step < s.tp - 1) for step in range(s.tp)]
    gemm_end, sent = _chunk_pipeline(
        s, segments, rate_Bps=pair, send_s=lambda rate: s.chunk / rate + s.latency + s.launch_s,
        comm_load=lambda rate: (rate, 1, rate))          # the copy reads here; a peer's copy lands here
    done = max(gemm_end, sent) + s.signal_s + s.reduce_kernel_s(s.tp)
    return PeerResult("async_tp", done + s.ag_s, gemm_end)


def _flashoverlap(s: _Sublayer) -> PeerResult:
    k = s.peer.nccl_sms
    if k >= s.gpu.cus:
        return _na("flashoverlap", f"NCCL's {k} SMs leave none for the GEMM")
    groups = min(s.peer.groups_per_gemm, math.ceil(s.shape.m / s.kernel.tile_m))
    gemm = gemm_timing(s.shape, s.gpu, s.kernel, stages=groups, cus=s.gpu.cus - k)
    groups = [w for w in _stage_waves(gemm) if len(w)]
    group_bytes = s.total / len(groups)
    rs = software_reduce_scatter(group_bytes, s.tp, s.ring, s.gpu, s.coll, channels=k)
    segments = [(gemm, waves, 0.0, True) for waves in groups]
    moved = rs.steps * group_bytes / s.tp
    gemm_end, sent = _chunk_pipeline(
        s, segments, rate_Bps=rs.rate_Bps, send_s=lambda rate: rs.steps * rs.overhead_s + moved / rate,
        # Per byte sent: the FIFO and the local partial read (2), one arrival written.
        comm_load=lambda rate: (rate, 1, 2 * rate))
    # The RS result of each group lies in group order: put back in row order (read + write).
    reorder_s = s.launch_s + 2 * s.chunk / s.gpu.dram_bytes_per_s
    return PeerResult("flashoverlap", max(gemm_end, sent) + reorder_s + s.ag_s, gemm_end)


def _dma(s: _Sublayer, scheme: str, *, nmc: bool) -> PeerResult:
    """One GEMM on every CU in ``tp`` stages, each stage holding a slice of every owner's
    chunk (so a stage's sends use every link); when a stage is done (a flag seen by the
    host-side proxy) the DMA engines copy each slice to its owner while the next stage
    computes. The arrivals are plain writes that CUs sum after the GEMM, or near-memory
    updates (``nmc``) that leave nothing to sum."""
    if s.fabric.topology == "ring":
        return _na(scheme, "the DMA engines copy over direct peer links; a ring has two")
    if not s.in_domain:
        return _na(scheme, f"the DMA engines reach peers inside the {s.fabric.domain_gpus}-GPU domain, not TP {s.tp}")
    if nmc and not s.platform.t3_blocks:
        return _na(scheme, "no near-memory reducer on this GPU")
    gemm = gemm_timing(s.shape, s.gpu, s.kernel, stages=s.tp)
    segments = [(gemm, waves, 0.0, True) for waves in _stage_waves(gemm)]
    slice_bytes = s.chunk / s.tp                    # one owner's share of one stage
    egress = s.fabric.group_egress_Bps(s.tp)
    if nmc:                                          # the arrivals go through the near-memory reducers
        egress = s.t3_rate_Bps(egress)
    units = s.gpu.nmc_update_units if nmc else 1
    gemm_end, sent = _chunk_pipeline(
        s, segments, rate_Bps=egress,
        send_s=lambda rate: (s.tp - 1) * slice_bytes / rate + s.latency + s.signal_s,
        comm_load=lambda rate: (rate, units, rate))    # the engines read here; the peers' copies land here
    if nmc:
        done = max(gemm_end, sent) + s.cfg.block.reducer_write_s(s.gpu.mc_clock_GHz)
    else:
        done = max(gemm_end, sent) + s.signal_s + s.reduce_kernel_s(s.tp)
    return PeerResult(scheme, done + s.ag_s, gemm_end)


def _dma_collective(s: _Sublayer) -> PeerResult:
    return _dma(s, "dma_collective", nmc=False)


def _dma_nmc(s: _Sublayer) -> PeerResult:
    return _dma(s, "dma_nmc", nmc=True)


def _nvls(s: _Sublayer) -> PeerResult:
    f = s.fabric
    if not f.switch_reduction:
        return _na("nvls", "no reducing switch (NVLink SHARP needs NVSwitch gen 3)")
    if not s.in_domain:
        return _na("nvls", f"TP {s.tp} spans more than the {f.domain_gpus}-GPU NVSwitch domain")
    egress = f.group_egress_Bps(s.tp)
    # Reduce phase: a GPU's SMs load its chunk from the multicast address; the switch
    # fetches the chunk from every GPU of the group, this one included, adds, and returns
    # the sum: each GPU sends its whole partial tensor. Multicast phase: each GPU stores
    # its sum once to the multicast address and the switch writes it to every GPU, itself
    # included. In the all-reduce the two phases run pipelined in opposite directions, so
    # each direction carries (tp + 1) / tp of the tensor; the SMs only issue loads and
    # stores. The switch's reduction is taken at line rate (the model has no figure for
    # it), which makes NVLS optimistic (README: the validation's NVLS miss).
    sent = s.total * (s.tp + 1) / s.tp if s.all_reduce else s.total
    wire_s = sent / min(egress, s.gpu.dram_bytes_per_s / 2)
    hops = 2 if s.all_reduce else 1
    coll_s = wire_s + hops * (s.latency + f.switch_reduce_latency_ns * 1e-9 + s.signal_s)
    return PeerResult("nvls", s.gemm_s + coll_s, s.gemm_s)


_EVALUATORS = {"sequential": _sequential, "t3_ring": _t3_ring, "t3_direct": _t3_direct,
               "flux": _flux, "async_tp": _async_tp, "flashoverlap": _flashoverlap,
               "dma_collective": _dma_collective, "dma_nmc": _dma_nmc, "nvls": _nvls}


def evaluate_peers(platform: Platform, cfg: StudyConfig, shape: GemmShape, tp: int, *,
                   peer: PeerConfig | None = None, schemes=PEER_SCHEMES,
                   collective: str = "all_reduce") -> dict[str, PeerResult]:
    """Every scheme of ``schemes`` for one sublayer GEMM at tensor parallelism ``tp`` on
    ``platform``. ``collective``: ``all_reduce`` (the sublayer: RS and AG) or
    ``reduce_scatter`` (the GEMM + RS that Flux and async-TP publish)."""
    check_int_range("tp", tp, 2, 1 << 16)
    if collective not in ("all_reduce", "reduce_scatter"):
        raise ValueError(f"collective must be one of all_reduce, reduce_scatter, not {collective!r}")
    for name in schemes:
        if name not in PEER_SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(PEER_SCHEMES)}, not {name!r}")
    s = _Sublayer(platform, cfg, peer or PeerConfig(), shape, tp, collective == "all_reduce")
    results = {name: _EVALUATORS[name](s) for name in schemes if name != "ideal"}
    if "ideal" in schemes:          # last: its GEMM is the fastest any other scheme ran
        results["ideal"] = _ideal(s, results)
    return {name: results[name] for name in schemes}
