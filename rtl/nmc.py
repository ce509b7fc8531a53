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

from .fp_add import MAX_LATENCY, fp_add_datapath, registers_for_latency
from .fp_format import FloatFormat, float_format
from .params import check_int, check_power_of_two
from .ports import ReadPortSignature, WriteOp

__all__ = ["NearMemoryReducer", "DEFAULT_ADDER_LATENCY"]

#: The adder latency the reducer uses by default, per format: the lowest that closes
#: 100 MHz on ECP5 with the forwarding in front of the adder (``make synth``).
DEFAULT_ADDER_LATENCY = {"binary16": 5, "bfloat16": 5, "binary32": 7}

STATUS_COUNTER_WIDTH = 32

#: Copies of each forwarding select, at most: one per lane (8 or 16 at 256 bits). A single
#: register driving the operand multiplexers of a whole beat put several nanoseconds of
#: routing into the adder's first stage on ECP5; a copy per lane sits beside its lane.
SELECT_COPIES = 16


def _matches(m: Module, name: str, copies: int, valid, addr, other) -> list[Signal]:
    """``copies`` registers, each ``valid & (addr == other)`` of the cycle before.

    Yosys merges identical cells (``opt_merge``), registers included, and ignores ``keep``
    on their wires; so each copy compares the address bits in a different order, which is
    the same comparison but not the same cells. (ABC may share the compare logic again; the
    registers stay apart, which is what the fanout needs.)
    """
    order = list(range(len(addr)))
    shuffle = random.Random(0).shuffle
    out = []
    for i in range(copies):
        copy = Signal(name=f"{name}_{i}")
        m.d.sync += copy.eq(valid & (Cat(addr[j] for j in order) == Cat(other[j] for j in order)))
        out.append(copy)
        shuffle(order)
    return out


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

    Pipeline (cycles counted from the acceptance of a request, cycle 0)
    ----------------------------------------------------------------------
    0. the bank is read at the request's address, and the address is compared with those
       of the requests in flight (the hazard below, and which results to forward);
    1. the bank's word is registered (block-RAM clock-to-out stays off the adder's path),
       and so is the result of an earlier request to the same address that the bank read
       missed (the write-back of this cycle or of the cycle before);
    2. the operand is chosen, the newest first: the result entering the write-back
       register in this cycle if it is of the same address, else a missed result, else
       the bank's word; it enters a pipelined :class:`~rtl.fp_add.FpAdder` datapath of
       :attr:`adder_latency` cycles;
    2 + :attr:`adder_latency`. the result (the sum, or a store's beat) is written back.

    Updates of one address carry a true dependency, ((m + a) + b) needs m + a, and the
    result must equal sequential IEEE addition in arrival order, so the bank never combines
    two updates before they reach memory. A request accepted *d* cycles after an earlier
    one to the same address finds that one's result written back if *d* ≥
    ``adder_latency + 3``, or takes it forwarded (from the write-back, or from the
    write-back one or two cycles before) if *d* is ``adder_latency`` to ``adder_latency + 2``. An
    ``UPDATE`` with *d* < ``adder_latency`` would need a result that does not exist yet: it
    is the only request that waits (``request.ready`` low while it is offered). Stores
    never wait (they read nothing), and requests to other addresses flow at one per cycle.

    Timing
    ------
    * :attr:`requests_per_cycle` = 1 for any pattern in which no ``UPDATE`` follows a
      request to its address within :attr:`adder_latency` - 1 cycles (distinct addresses,
      stores, the ring's interleaved tile streams; measured by ``make characterize``).
    * :attr:`same_address_interval` = ``adder_latency``: a chain of updates to one address
      runs at one per adder latency, by the dependency.
    * :attr:`write_latency` = ``adder_latency + 2``: a request accepted in cycle *c* is
      written back in cycle *c + write_latency*.
    * :attr:`read_latency` = 2: ``read.data`` holds, two cycles after ``read.en`` in cycle
      *t*, the word as left by every write-back up to cycle *t + 1* (the port is
      transparent to the write-backs of its cycle and the next). A request accepted in
      cycle *c* is therefore visible to a read issued in cycle
      *c + write_latency - read_latency + 1* or later.
    * ``request.ready`` depends on ``request.valid`` and the payload within the cycle (it
      is high whenever ``valid`` is low); nothing else is combinational from input to output.

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
    adder_latency : int or None
        Cycles of the lanes' adder, 1..7 (:class:`~rtl.fp_add.FpAdder`'s ``latency``).
        ``None``: :data:`DEFAULT_ADDER_LATENCY` of the format, the lowest at which the
        reducer closes 100 MHz on ECP5 (``make synth``): 5 for the 16-bit formats, 7 for
        binary32, whose wider compare, shifts and rounding carry need every stage boundary.
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
                 power_up_seed: int | None = None, adder_latency: int | None = None,
                 int_lane_width: int | None = None):
        self._fmt: FloatFormat = float_format(format)
        if adder_latency is None:
            adder_latency = DEFAULT_ADDER_LATENCY[self._fmt.name]
        self._adder_latency = check_int("adder_latency", adder_latency, 1, MAX_LATENCY)
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
    def adder_latency(self) -> int:
        """Cycles of the lanes' pipelined adder."""
        return self._adder_latency

    @property
    def requests_per_cycle(self) -> int:
        """Requests accepted per cycle when no update depends on a result still in the adder."""
        return 1

    @property
    def same_address_interval(self) -> int:
        """Cycles between accepted updates of one address in a back-to-back chain."""
        return self._adder_latency

    @property
    def hazard_window(self) -> int:
        """An ``UPDATE`` waits while a request to its address was accepted within this many
        cycles before (``adder_latency - 1``)."""
        return self._adder_latency - 1

    @property
    def write_latency(self) -> int:
        """Cycles from a request's acceptance to the first read that sees it."""
        return self._adder_latency + 2

    @property
    def read_latency(self) -> int:
        """Cycles from ``read.en`` to ``read.data``: the bank's word is registered before the
        write-backs it missed are chosen, so that block-RAM clock-to-out meets no logic."""
        return 2

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
        # Not transparent: a transparent port is a registered address and an asynchronous
        # read, into which yosys folds the word's register, putting block-RAM clock-to-out
        # back on the adder's path. The write-back it misses is forwarded instead.
        operand_read = bank.read_port()
        # The read port too: its word is registered as the block RAM gives it (clock-to-out,
        # 5.8 ns on ECP5, then only routing into flip-flops), and the two write-backs it
        # missed, of the read's cycle and the next, are chosen after that register.
        external_read = bank.read_port()
        m.d.comb += [external_read.addr.eq(self.read.addr), external_read.en.eq(self.read.en)]

        request = self.request.payload
        L = self._adder_latency
        last = L + 2  # the write-back's position (cycles since acceptance)

        # Address and validity of the request at every position 1 .. L + 2 (the write-back).
        valid_at = [None] + [Signal(name=f"valid_{k}") for k in range(1, last + 1)]
        addr_at = [None] + [Signal(self._addr_width, name=f"addr_{k}", reset_less=True) for k in range(1, last + 1)]

        # Cycle 0: a hazard holds an UPDATE whose address is in positions 1 .. L - 1.
        hazard = Signal()
        m.d.comb += hazard.eq(request.op == WriteOp.UPDATE)
        conflicts = [valid_at[k] & (addr_at[k] == request.addr) for k in range(1, L)]
        blocked = hazard & (Cat(*conflicts).any() if conflicts else 0)
        m.d.comb += self.request.ready.eq(~(self.request.valid & blocked))
        accepted = self.request.valid & self.request.ready
        m.d.comb += operand_read.addr.eq(request.addr)
        m.d.sync += [valid_at[1].eq(accepted), addr_at[1].eq(request.addr)]
        for k in range(2, last + 1):
            m.d.sync += [valid_at[k].eq(valid_at[k - 1]), addr_at[k].eq(addr_at[k - 1])]

        # Cycle 0, beside the hazard compares: which earlier results this request will take
        # forwarded, registered in cycle 1 (the compare of the request with the one at
        # position k now is that of positions 1 and k + 1 a cycle later). The request at
        # position L + 1 now writes back in cycle 1 (d = L + 1), the one at L + 2 in cycle 0
        # (d = L + 2, kept in ``previous``), the one at L in cycle 2 (d = L). Compared a cycle
        # early, the selects leave their registers with nothing but fanout before the
        # multiplexers; one copy per group of lanes keeps that fanout local (see
        # :func:`_matches`).
        copies = min(self.lanes, SELECT_COPIES)
        same_as_writeback = _matches(m, "same_as_writeback", copies, valid_at[L + 1], addr_at[L + 1], request.addr)
        same_as_previous = _matches(m, "same_as_previous", 1, valid_at[L + 2], addr_at[L + 2], request.addr)[0]
        writeback_next = _matches(m, "writeback_next", copies, valid_at[L], addr_at[L], request.addr)

        # Cycle 1: the bank's word is registered as it is (block-RAM clock-to-out and the
        # read-during-write logic yosys adds stay off the adder's path); beside it, the
        # results this request's bank read missed are chosen now: the write-back of this
        # cycle (d = L + 1) or of the cycle before (d = L + 2), the newest first.
        p1_op = Signal(WriteOp, reset_less=True)
        p1_data = Signal(self._beat_width, reset_less=True)
        m.d.sync += [p1_op.eq(request.op), p1_data.eq(request.data)]
        writeback = Signal(self._beat_width, reset_less=True)
        previous = Signal(self._beat_width, reset_less=True)
        m.d.sync += previous.eq(writeback)
        p2_op = Signal(WriteOp, reset_less=True)
        p2_data = Signal(self._beat_width, reset_less=True)
        p2_bank = Signal(self._beat_width, reset_less=True)
        p2_missed = Signal(self._beat_width, reset_less=True)
        m.d.sync += [p2_op.eq(p1_op), p2_data.eq(p1_data), p2_bank.eq(operand_read.data)]
        # Cycle 2, per copy: take p2_missed rather than the bank's word; take the result in
        # the write-back register (d = L).
        from_missed = [Signal(name=f"from_missed_{c}") for c in range(copies)]
        from_writeback = [Signal(name=f"from_writeback_{c}") for c in range(copies)]
        for c in range(copies):
            m.d.sync += [from_missed[c].eq(same_as_writeback[c] | same_as_previous),
                         from_writeback[c].eq(writeback_next[c])]

        # Cycle 2: operand choice (the newest result wins), then the adder; the result lands
        # in the write-back register. Each lane takes its selects from its own copy.
        stored = Signal(self._beat_width)
        lane_bits = [slice(lane * lane_width, (lane + 1) * lane_width) for lane in range(self.lanes)]
        for lane, bits in enumerate(lane_bits):
            c = lane * copies // self.lanes
            m.d.sync += p2_missed[bits].eq(Mux(same_as_writeback[c], writeback[bits], previous[bits]))
            missed_or_bank = Mux(from_missed[c], p2_missed[bits], p2_bank[bits])
            m.d.comb += stored[bits].eq(Mux(from_writeback[c], writeback[bits], missed_or_bank))

        registers = registers_for_latency(L)
        lane_sums = []
        for lane, bits in enumerate(lane_bits):
            if self._int_lane_width is None:
                total, _ = fp_add_datapath(m, fmt, stored[bits], p2_data[bits], valid_at[2],
                                           registers_after=registers)
            else:  # wrapping (the carry out is dropped), with the adder's latency
                total = (stored[bits] + p2_data[bits])[:lane_width]
                for stage in range(L - 1):
                    delayed = Signal(lane_width, name=f"int_lane{lane}_s{stage}", reset_less=True)
                    m.d.sync += delayed.eq(total)
                    total = delayed
            lane_sums.append(total)
        # The op and a store's beat travel beside the adder's internal registers.
        op_at, data_at = p2_op, p2_data
        for stage in range(L - 1):
            op_next = Signal(WriteOp, name=f"op_s{stage}", reset_less=True)
            data_next = Signal(self._beat_width, name=f"data_s{stage}", reset_less=True)
            m.d.sync += [op_next.eq(op_at), data_next.eq(data_at)]
            op_at, data_at = op_next, data_next
        m.d.sync += writeback.eq(Mux(op_at == WriteOp.UPDATE, Cat(*lane_sums), data_at))
        m.d.comb += [write.addr.eq(addr_at[last]), write.data.eq(writeback), write.en.eq(valid_at[last])]

        # The read port (read_latency = 2). Cycle t: the bank is read, and the address is
        # compared with this cycle's write-back; t + 1: the bank's word is registered, and
        # the address compared with that cycle's write-back; t + 2: the word, unless one of
        # the two write-backs was to its address (the newer first). Their data are still in
        # ``previous`` (the write-back of t + 1) and ``earlier`` (of t).
        read_addr = Signal(self._addr_width, reset_less=True)
        read_word = Signal(self._beat_width, reset_less=True)
        earlier = Signal(self._beat_width, reset_less=True)
        missed_now = Signal(reset_less=True)     # t + 1: the write-back of cycle t was to the read's word
        missed_then = Signal(reset_less=True)    # t + 2: ... of cycle t
        missed_next = Signal(reset_less=True)    # t + 2: ... of cycle t + 1
        m.d.sync += [
            read_addr.eq(self.read.addr),
            missed_now.eq(valid_at[last] & (addr_at[last] == self.read.addr)),
            read_word.eq(external_read.data),
            missed_then.eq(missed_now),
            missed_next.eq(valid_at[last] & (addr_at[last] == read_addr)),
            earlier.eq(previous),
        ]
        m.d.comb += self.read.data.eq(Mux(missed_next, previous, Mux(missed_then, earlier, read_word)))

        status = self.status
        with m.If(accepted & (request.op == WriteOp.STORE)):
            m.d.sync += status.stores.eq(status.stores + 1)
        with m.If(accepted & (request.op == WriteOp.UPDATE)):
            m.d.sync += status.updates.eq(status.updates + 1)
        return m
