"""Near-memory reducer: a memory bank whose writes may be atomic read-add-writes ("updates").

In T3 the reduce-scatter's reduction happens in memory: a write tagged *update* adds its
beat to the stored beat, lane by lane, without any GPU core reading the partial sums.
"""

from __future__ import annotations

import random

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .fp_add import fp_add_datapath
from .fp_format import FloatFormat, float_format
from .params import check_int, check_power_of_two
from .ports import ReadPortSignature, WriteOp

__all__ = ["NearMemoryReducer"]

STATUS_COUNTER_WIDTH = 32


class NearMemoryReducer(wiring.Component):
    """One memory bank behind a store/update request port and a read port.

    A request ``{addr, op, data}`` carries one beat of ``lanes`` floating-point values.
    ``STORE`` writes the beat; ``UPDATE`` reads the stored beat, adds the request's beat lane
    by lane (IEEE-754, round to nearest even, see :class:`~rtl.fp_add.FpAdder`) and writes
    the sum back. Requests take effect in order, as if one at a time.

    The bank makes no promise about its contents after power-up, as DRAM makes none, and a
    reset leaves its words alone except those of requests accepted in the last
    :attr:`write_latency` cycles, whose write-back may or may not happen; a ``read`` issued
    while ``rst`` is high returns nothing promised either. Whoever
    accumulates into it with ``UPDATE`` must first ``STORE`` the words (T3's driver zeroes
    the output buffer before the GEMM, as any accumulate-into-buffer scheme does). For
    simulation, ``power_up_seed`` fills the bank with pseudo-random words, so that a
    protocol that forgets to initialise fails its bench instead of passing on the
    simulator's zeros.

    Pipeline: the bank is read in the request's cycle; one cycle later the operand is taken
    from the bank or, if the previous request wrote the same address and has not yet
    written back, forwarded from that request's result, and added; the next cycle writes
    back. Because the add and the forwarding close in one cycle, back-to-back updates to one
    address never stall: ``request.ready`` is always high.

    Timing
    ------
    * :attr:`requests_per_cycle` = 1, whatever the address pattern.
    * :attr:`write_latency` = 2: a request accepted in cycle *c* is visible to a ``read``
      issued in cycle *c + 2* or later (reads are transparent to the write-back).
    * :attr:`read_latency` = 1: ``read.data`` holds the word one cycle after ``read.en``.

    Parameters
    ----------
    format : str
        ``"binary16"``, ``"bfloat16"`` or ``"binary32"``.
    beat_width : int
        Bits of a beat, a multiple of the format's width, 16..1024; 256 bits hold 16
        binary16 / bfloat16 lanes or 8 binary32 lanes.
    depth : int
        Beats in the bank, a power of two in 2..65536; addresses have ``log2(depth)`` bits.
    power_up_seed : int or None
        Simulation only: seed of the pseudo-random words the bank holds at power-up
        (``None``: zeros, which is what synthesis gets).
    int_lane_width : int or None
        Formal proofs only: lanes of this many bits (1..64) added by a wrapping unsigned
        integer adder in place of the floating-point one (same place in the pipeline, same
        latency), so that a solver can check "memory = the sum of the updates, in order"
        exactly, which it cannot through an IEEE adder. ``format`` is then unused and
        ``beat_width`` must be a multiple of it between it and 1024. ``None`` (the default):
        the floating-point lanes above.

    Members
    -------
    request : ``In(stream.Signature({addr, op, data}))``
    read : ``In(ReadPortSignature(addr_width, beat_width))``
        Read port for the DMA engine and for tests.
    status : ``Out({stores, updates})``
        Wrapping counters of accepted requests.
    """

    def __init__(self, *, format: str = "binary16", beat_width: int = 256, depth: int = 1024,  # noqa: A002
                 power_up_seed: int | None = None, int_lane_width: int | None = None):
        self._fmt: FloatFormat = float_format(format)
        if int_lane_width is not None:
            check_int("int_lane_width", int_lane_width, 1, 64)
        self._int_lane_width = int_lane_width
        width = self.lane_width
        lowest = 16 if int_lane_width is None else width
        if (not isinstance(beat_width, int) or isinstance(beat_width, bool)):
            raise TypeError(f"beat_width must be an integer, not {beat_width!r}")
        if not (lowest <= beat_width <= 1024 and beat_width % width == 0):
            raise ValueError(f"beat_width must be a multiple of {width} between {lowest} and 1024, not {beat_width}")
        self._beat_width = beat_width
        self._depth = check_power_of_two("depth", depth, 2, 65536)
        self._addr_width = (depth - 1).bit_length()
        if power_up_seed is not None:
            check_int("power_up_seed", power_up_seed, 0, 2**32 - 1)
        self._power_up_seed = power_up_seed

        self.request_layout = data.StructLayout({
            "addr": unsigned(self._addr_width),
            "op": WriteOp,
            "data": unsigned(beat_width),
        })
        self.status_layout = data.StructLayout({
            "stores": unsigned(STATUS_COUNTER_WIDTH),
            "updates": unsigned(STATUS_COUNTER_WIDTH),
        })
        super().__init__({
            "request": In(stream.Signature(self.request_layout)),
            "read": In(ReadPortSignature(addr_width=self._addr_width, data_width=beat_width)),
            "status": Out(self.status_layout),
        })

    format = property(lambda self: self._fmt, doc="The lanes' floating-point format.")
    beat_width = property(lambda self: self._beat_width, doc="Bits of a beat.")
    depth = property(lambda self: self._depth, doc="Beats in the bank.")
    addr_width = property(lambda self: self._addr_width, doc="Bits of a beat address.")

    int_lane_width = property(lambda self: self._int_lane_width,
                              doc="Bits of an integer lane (formal proofs), or None for floating-point lanes.")

    @property
    def lane_width(self) -> int:
        """Bits of one lane: the format's width, or ``int_lane_width``."""
        return self._fmt.width if self._int_lane_width is None else self._int_lane_width

    @property
    def lanes(self) -> int:
        """Values per beat."""
        return self._beat_width // self.lane_width

    @property
    def requests_per_cycle(self) -> int:
        """Requests accepted per cycle, for any mix and any address pattern."""
        return 1

    @property
    def write_latency(self) -> int:
        """Cycles from a request's acceptance to the first read that sees it."""
        return 2

    @property
    def read_latency(self) -> int:
        """Cycles from ``read.en`` to ``read.data``."""
        return 1

    def elaborate(self, platform):
        m = Module()
        fmt, lane_width = self._fmt, self.lane_width
        if self._power_up_seed is None:
            power_up = []
        else:
            words = random.Random(self._power_up_seed)
            power_up = [words.getrandbits(self._beat_width) for _ in range(self._depth)]
        m.submodules.bank = bank = Memory(shape=unsigned(self._beat_width), depth=self._depth, init=power_up)
        write = bank.write_port()
        operand_read = bank.read_port(transparent_for=(write,))
        external_read = bank.read_port(transparent_for=(write,))

        m.d.comb += [
            external_read.addr.eq(self.read.addr),
            external_read.en.eq(self.read.en),
            self.read.data.eq(external_read.data),
        ]

        request = self.request.payload
        accepted = self.request.valid  # always ready
        m.d.comb += [self.request.ready.eq(1), operand_read.addr.eq(request.addr)]

        # Stage 1: operand selection and add.
        s1_valid = Signal()
        s1_addr = Signal(self._addr_width)
        s1_op = Signal(WriteOp)
        s1_data = Signal(self._beat_width)
        m.d.sync += [s1_valid.eq(accepted), s1_addr.eq(request.addr), s1_op.eq(request.op),
                     s1_data.eq(request.data)]

        # Stage 2: write-back.
        s2_valid = Signal()
        s2_addr = Signal(self._addr_width)
        s2_result = Signal(self._beat_width)

        # The bank read in stage 0 already saw the write-back of two requests ago
        # (transparent port); only the previous request can be in flight.
        forward = s2_valid & (s2_addr == s1_addr)
        stored = Signal(self._beat_width)
        m.d.comb += stored.eq(Mux(forward, s2_result, operand_read.data))

        lane_sums = []
        for lane in range(self.lanes):
            bits = slice(lane * lane_width, (lane + 1) * lane_width)
            if self._int_lane_width is None:
                total, _ = fp_add_datapath(m, fmt, stored[bits], s1_data[bits], s1_valid,
                                           registers_after=(False, False))
            else:  # wrapping: the carry out is dropped
                total = (stored[bits] + s1_data[bits])[:lane_width]
            lane_sums.append(total)
        result = Mux(s1_op == WriteOp.UPDATE, Cat(*lane_sums), s1_data)
        m.d.sync += [s2_valid.eq(s1_valid), s2_addr.eq(s1_addr), s2_result.eq(result)]
        m.d.comb += [write.addr.eq(s2_addr), write.data.eq(s2_result), write.en.eq(s2_valid)]

        status = self.status
        with m.If(accepted & (request.op == WriteOp.STORE)):
            m.d.sync += status.stores.eq(status.stores + 1)
        with m.If(accepted & (request.op == WriteOp.UPDATE)):
            m.d.sync += status.updates.eq(status.updates + 1)
        return m
