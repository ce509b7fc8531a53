"""A GEMM's memory traffic at one memory-controller slice, as a hardware traffic source.

Why hardware: the RTL ring has to run a real staged GEMM beside its reduce-scatter for the
system model to be checked against it (``python -m system_model crosscheck``), and the
GEMM's stream is a closed loop: reads wait for buffer room, compute waits for data, stores
wait for compute, and the next wave waits for the stores. A trace harness cannot react, so
the loop is built here and runs at Verilator speed beside the slices.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .params import check_int
from .ports import ValidSignature

__all__ = ["GemmTrafficSource"]

#: Width of the event counters in ``status``.
COUNTER_WIDTH = 32


class GemmTrafficSource(wiring.Component):
    """The memory stream one GPU's GEMM sends to one memory-controller slice.

    The GEMM computes ``tiles`` output tiles, in the order the T3 protocol needs (stage by
    stage), in *waves* of ``tiles_per_wave`` tiles that compute together (one tile per
    compute unit; the last wave may be smaller). A wave works through
    ``read_beats_per_tile`` *k-steps*; a k-step needs one operand beat per tile of the wave
    and then computes for ``step_cycles`` cycles, so a tile computes for
    ``read_beats_per_tile * step_cycles`` cycles and reads ``read_beats_per_tile`` beats.

    Behaviour, every cycle, once ``run`` has risen with a valid configuration (while ``run``
    is low again the compute units pause: no k-step starts and no wave releases its stores;
    reads, read-backs and the stores already released go on, so an offer is never withdrawn):

    * **Reads.** Operand reads are issued on ``gemm_read`` in order, one per cycle at most,
      to addresses ``0, 1, 2, ...`` (modulo the bank), for the current wave only (a wave's
      tiles are new workgroups: their loads start when the compute units take them, after
      the previous wave has released its stores), while fewer than ``outstanding_reads``
      beats are *buffered* (issued and not yet consumed by a started k-step: in flight or
      arrived). Data comes back on ``read_data`` (the slice's ``gemm_read_data``); the
      GEMM only counts it, and only while it has reads outstanding (a beat without one is
      a read-back's), so it never counts more beats than it asked for.
    * **Compute.** A k-step may start in a cycle when no k-step is computing, the wave's
      results are not waiting for the output buffer, and the beats arrived but not yet
      consumed are at least the wave's tile count; it then consumes them and computes in
      that cycle and the next ``step_cycles - 1``. After the wave's last k-step its results
      wait for the *output buffer* (one wave): in the first cycle in which no beat of the
      previous wave waits to be stored, the wave *releases* its stores (``tiles_in_wave *
      tile_beats`` beats) and the next wave may start its first k-step in the next cycle.
    * **Stores.** The stores' contents (addresses, data, ops) come from outside, on
      ``store`` (local writes) and ``remote`` (stage 1's writes to the next GPU), in order;
      this block only decides *when* they go. A released beat of tile *i* (counted from 0
      in the stream's order) is a credit on ``remote`` if *i* < ``remote_tiles``, else on
      ``store``. A beat passes (``gemm``/``gemm_remote``) while its port has a credit, and
      uses it. Untracked local writes (``tracked == 0``: the driver's zeroing of the output
      buffer) pass without a credit, and once the GEMM is ``done`` both ports pass freely
      (what the driver writes after the GEMM: the sequential schedule's reduce-scatter).
    * ``host_read``: once every operand read has returned, the driver's reads pass through
      to ``gemm_read`` (a read-back of the result).

    ``done`` is high once every wave has released its stores and every released beat has
    passed, and stays high (a pause included) until reset. A configuration with ``tiles``,
    ``tiles_per_wave``, ``read_beats_per_tile`` or ``step_cycles`` zero, or
    ``outstanding_reads < tiles_per_wave`` (a wave could never gather its beats), sets the
    sticky ``status.config_error`` when ``run`` rises and the GEMM does nothing. The
    ``setup`` inputs must not change once the GEMM has started (until reset).

    Timing: combinational from the stores' and reads' inputs to the slice's ports
    (:attr:`latency` = 0); one read, one local store and one remote store per cycle.

    Parameters
    ----------
    gemm_layout, packet_layout
        The slice's ``gemm`` and ``gemm_remote`` payloads (:class:`~rtl.t3_slice.T3Slice`).
    addr_width, data_width : int
        The bank's word address and beat widths.
    tile_beats_log2 : int
        log2 of the beats per output tile, 0..12 (the slice's).
    tiles_width : int
        Width of ``tiles`` and ``remote_tiles``, 1..16.
    """

    def __init__(self, *, gemm_layout, packet_layout, addr_width: int, data_width: int, tile_beats_log2: int = 2,
                 tiles_width: int = 12):
        self._addr_width = check_int("addr_width", addr_width, 1, 32)
        self._data_width = check_int("data_width", data_width, 1, 4096)
        self._tile_beats_log2 = check_int("tile_beats_log2", tile_beats_log2, 0, 12)
        self._tiles_width = check_int("tiles_width", tiles_width, 1, 16)
        self.gemm_layout, self.packet_layout = gemm_layout, packet_layout
        self.setup_layout = data.StructLayout({
            "tiles": unsigned(tiles_width),
            "remote_tiles": unsigned(tiles_width),
            "tiles_per_wave": unsigned(7),
            "read_beats_per_tile": unsigned(8),
            "step_cycles": unsigned(12),
            "outstanding_reads": unsigned(10),
        })
        self.status_layout = data.StructLayout({
            "done": 1,
            "config_error": 1,
            "waves": unsigned(COUNTER_WIDTH),
            #: Cycles the compute units waited for operands (no k-step computing, none able to start).
            "operand_wait_cycles": unsigned(COUNTER_WIDTH),
            #: Cycles a finished wave waited for the output buffer.
            "store_wait_cycles": unsigned(COUNTER_WIDTH),
        })
        super().__init__({
            "run": In(1),
            "setup": In(self.setup_layout),
            "store": In(stream.Signature(gemm_layout)),
            "remote": In(stream.Signature(packet_layout)),
            "host_read": In(stream.Signature(unsigned(addr_width))),
            "gemm": Out(stream.Signature(gemm_layout)),
            "gemm_remote": Out(stream.Signature(packet_layout)),
            "gemm_read": Out(stream.Signature(unsigned(addr_width))),
            "read_data": In(ValidSignature(unsigned(data_width))),
            "status": Out(self.status_layout),
        })

    tile_beats = property(lambda self: 1 << self._tile_beats_log2, doc="Store beats per output tile.")
    latency = property(lambda self: 0, doc="Cycles from a store, remote or host read offer to the slice's port: 0.")
    operand_latency = property(lambda self: 1, doc="Cycles from a beat on ``read_data`` to the first cycle a k-step "
                                                   "may use it: 1 (the arrival is counted at the clock edge).")

    def elaborate(self, platform):
        m = Module()
        cfg = self.setup
        tw = self._tiles_width
        reads_width = tw + 8
        # -- configuration check --------------------------------------------------------------
        invalid = ((cfg.tiles == 0) | (cfg.tiles_per_wave == 0) | (cfg.read_beats_per_tile == 0)
                   | (cfg.step_cycles == 0) | (cfg.outstanding_reads < cfg.tiles_per_wave))
        error = Signal()
        run_prev = Signal()
        m.d.sync += run_prev.eq(self.run)
        with m.If(self.run & ~run_prev & invalid):
            m.d.sync += error.eq(1)
        active = self.run & ~error & ~(~run_prev & invalid)
        launched = Signal()             # the GEMM has started: reads and ``done`` go on through a pause
        with m.If(active):
            m.d.sync += launched.eq(1)
        going = active | (launched & ~error)

        # -- reads ---------------------------------------------------------------------------
        total_reads = Signal(reads_width)
        m.d.comb += total_reads.eq(cfg.tiles * cfg.read_beats_per_tile)
        issued, consumed, arrived = Signal(reads_width), Signal(reads_width), Signal(reads_width)
        wave_reads_end = Signal(reads_width)      # reads of the waves started so far
        own_valid = (going & (issued < total_reads) & (issued < wave_reads_end)
                     & ((issued - consumed)[:reads_width] < cfg.outstanding_reads))
        all_arrived = going & (arrived == total_reads)
        host_pass = all_arrived & (issued == total_reads)
        m.d.comb += [
            self.gemm_read.valid.eq(own_valid | (host_pass & self.host_read.valid)),
            self.gemm_read.payload.eq(Mux(own_valid, issued[:self._addr_width], self.host_read.payload)),
            self.host_read.ready.eq(host_pass & self.gemm_read.ready),
        ]
        with m.If(own_valid & self.gemm_read.ready):
            m.d.sync += issued.eq(issued + 1)
        with m.If(self.read_data.valid & (arrived < issued)):
            m.d.sync += arrived.eq(arrived + 1)

        # -- compute -------------------------------------------------------------------------
        wave_base = Signal(tw)          # first tile of the current wave
        step = Signal(8)                # next k-step of the wave to start
        left = Signal(12)               # cycles the current k-step computes after this one
        ending = Signal()               # the wave's last k-step has started
        remaining = Signal(tw)
        m.d.comb += remaining.eq(cfg.tiles - wave_base)
        wave_tiles = Signal(tw)
        m.d.comb += wave_tiles.eq(Mux(remaining < cfg.tiles_per_wave, remaining, cfg.tiles_per_wave))
        remote_left = Signal(tw)
        m.d.comb += remote_left.eq(Mux(cfg.remote_tiles > wave_base, cfg.remote_tiles - wave_base, 0))
        wave_remote = Signal(tw)
        m.d.comb += wave_remote.eq(Mux(remote_left < wave_tiles, remote_left, wave_tiles))
        m.d.comb += wave_reads_end.eq((wave_base + wave_tiles) * cfg.read_beats_per_tile)
        waves_left = active & (wave_base < cfg.tiles)
        buffered = Signal(reads_width)
        m.d.comb += buffered.eq(arrived - consumed)
        can_start = waves_left & ~ending & (left == 0) & (buffered >= wave_tiles)
        holding = active & ending & (left == 0)

        credit_width = tw + self._tile_beats_log2 + 1
        local_credit, remote_credit = Signal(credit_width), Signal(credit_width)
        drained = (local_credit == 0) & (remote_credit == 0)
        release = holding & drained
        done = launched & ~error & (wave_base == cfg.tiles) & drained

        with m.If(left != 0):
            m.d.sync += left.eq(left - 1)
        with m.If(can_start):
            m.d.sync += [consumed.eq(consumed + wave_tiles), left.eq(cfg.step_cycles - 1)]
            with m.If(step + 1 == cfg.read_beats_per_tile):
                m.d.sync += [step.eq(0), ending.eq(1)]
            with m.Else():
                m.d.sync += step.eq(step + 1)
        with m.If(release):
            m.d.sync += [wave_base.eq(wave_base + wave_tiles), ending.eq(0),
                         self.status.waves.eq(self.status.waves + 1)]

        # -- stores --------------------------------------------------------------------------
        store_free = self.store.payload.tracked == 0
        local_ok = (local_credit != 0) | store_free | done
        remote_ok = (remote_credit != 0) | done
        m.d.comb += [
            self.gemm.valid.eq(self.store.valid & local_ok),
            self.gemm.payload.eq(self.store.payload),
            self.store.ready.eq(self.gemm.ready & local_ok),
            self.gemm_remote.valid.eq(self.remote.valid & remote_ok),
            self.gemm_remote.payload.eq(self.remote.payload),
            self.remote.ready.eq(self.gemm_remote.ready & remote_ok),
        ]
        local_used = self.store.valid & self.store.ready & (local_credit != 0) & ~store_free
        remote_used = self.remote.valid & self.remote.ready & (remote_credit != 0)
        beats = self._tile_beats_log2
        m.d.sync += [
            local_credit.eq(local_credit - local_used + Mux(release, (wave_tiles - wave_remote) << beats, 0)),
            remote_credit.eq(remote_credit - remote_used + Mux(release, wave_remote << beats, 0)),
        ]

        # -- status --------------------------------------------------------------------------
        m.d.comb += [self.status.done.eq(done), self.status.config_error.eq(error)]
        with m.If(waves_left & ~ending & (left == 0) & ~can_start):
            m.d.sync += self.status.operand_wait_cycles.eq(self.status.operand_wait_cycles + 1)
        with m.If(holding & ~drained):
            m.d.sync += self.status.store_wait_cycles.eq(self.status.store_wait_cycles + 1)
        return m
