"""Memory-controller arbitration between compute and communication traffic (T3-MCA).

T3 overlaps a GEMM with its reduce-scatter, so the memory controller serves two classes
at once: *compute* (the GEMM's reads and local writes) and *communication* (DMA reads of
finished tiles, remote updates from the link). T3-MCA serves compute first: a
communication request issues only while the DRAM command queue is below a threshold, and a
starvation limit guarantees that it is served eventually. Round-robin is the baseline.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from .params import check_int

__all__ = ["ArbiterMode", "RequestClass", "MemoryArbiter"]

STATUS_COUNTER_WIDTH = 32


class ArbiterMode(enum.Enum, shape=1):
    #: T3-MCA: compute first; communication below the queue threshold or when starving.
    MCA = 0
    #: Alternate between the classes when both request (the no-MCA baseline).
    ROUND_ROBIN = 1


class RequestClass(enum.Enum, shape=1):
    COMPUTE = 0
    COMM = 1


class MemoryArbiter(wiring.Component):
    """Grants one request per cycle from ``compute`` or ``comm`` into the DRAM command queue.

    Policy: in each cycle the arbiter offers one class's request on ``grant``; the request
    is granted when ``grant.ready`` is high.

    * ``MCA``: a communication request that has waited ``starvation_limit`` cycles is
      offered; otherwise compute is offered if it requests; otherwise communication is
      offered if ``queue_level < threshold``.
    * ``ROUND_ROBIN``: the class not granted last, when both request.

    The wait of the communication request at the head (``status.comm_wait``) counts *every*
    cycle in which it requests and is not granted, whether or not the queue could accept
    (``grant.ready``). A wait counted only while ``grant.ready`` is high freezes when the
    bank back-pressures the compute request that is offered instead, and the starvation
    rule then never fires: that was one link of the deadlock the T3 slice had. In ``MCA``
    mode a communication request that has waited ``starvation_limit`` cycles is the one
    offered, and while ``grant.ready`` stays high it never waits more than the limit:
    ``tests/test_arbiter_formal.py`` proves this by induction with yosys, counting the
    wait with its own counter rather than ``status.comm_wait``.

    ``grant`` is a decision, not a buffered stream: it is re-made every cycle from the
    current requests, so an offer the consumer refused may be replaced in the next cycle
    (a communication request that has just started to starve takes the place of a compute
    request the bank could not take). Its consumer must therefore act in the same cycle,
    as the slice's bank does, and not latch an offer across cycles. The request streams
    themselves keep the stream rules: a request leaves its class only when granted.

    Timing: combinational grant, no added latency; :attr:`grants_per_cycle` = 1.

    Parameters
    ----------
    payload_shape : shape
        What a request carries (the same for both classes).
    level_width : int
        Bits of ``queue_level`` and ``threshold``, 1..16.
    wait_width : int
        Bits of ``starvation_limit`` and of the wait counters, 2..32.

    Members
    -------
    compute, comm : ``In(stream.Signature(payload_shape))``
    grant : ``Out(stream.Signature({cls, request}))``
    queue_level, threshold : ``In(level_width)``
    starvation_limit : ``In(wait_width)``
    mode : ``In(ArbiterMode)``
    status : ``Out({compute_grants, comm_grants, comm_wait, max_comm_wait})``
    """

    def __init__(self, *, payload_shape, level_width: int = 5, wait_width: int = 16):
        self._level_width = check_int("level_width", level_width, 1, 16)
        self._wait_width = check_int("wait_width", wait_width, 2, 32)
        self.payload_shape = payload_shape
        self.grant_layout = data.StructLayout({"cls": RequestClass, "request": payload_shape})
        self.status_layout = data.StructLayout({
            "compute_grants": unsigned(STATUS_COUNTER_WIDTH),
            "comm_grants": unsigned(STATUS_COUNTER_WIDTH),
            "comm_wait": unsigned(wait_width),
            "max_comm_wait": unsigned(wait_width),
        })
        super().__init__({
            "compute": In(stream.Signature(payload_shape)),
            "comm": In(stream.Signature(payload_shape)),
            "grant": Out(stream.Signature(self.grant_layout)),
            "queue_level": In(unsigned(level_width)),
            "threshold": In(unsigned(level_width)),
            "starvation_limit": In(unsigned(wait_width)),
            "mode": In(ArbiterMode),
            "status": Out(self.status_layout),
        })

    level_width = property(lambda self: self._level_width, doc="Bits of the queue level.")
    wait_width = property(lambda self: self._wait_width, doc="Bits of the wait counters.")

    @property
    def grants_per_cycle(self) -> int:
        return 1

    @property
    def grant_latency(self) -> int:
        """Cycles from a request to its grant when it wins: 0 (combinational)."""
        return 0

    def elaborate(self, platform):
        m = Module()
        status = self.status
        wait = status.comm_wait
        last_compute = Signal()  # round-robin state: compute was granted last

        starving = self.comm.valid & (wait >= self.starvation_limit)
        below = self.queue_level < self.threshold
        pick_comm = Signal()
        with m.If(self.mode == ArbiterMode.MCA):
            m.d.comb += pick_comm.eq(self.comm.valid & (starving | (~self.compute.valid & below)))
        with m.Else():
            m.d.comb += pick_comm.eq(self.comm.valid & (~self.compute.valid | last_compute))
        pick_compute = self.compute.valid & ~pick_comm

        m.d.comb += [
            self.grant.valid.eq(pick_comm | pick_compute),
            self.grant.payload.cls.eq(Mux(pick_comm, RequestClass.COMM, RequestClass.COMPUTE)),
            self.grant.payload.request.eq(Mux(pick_comm, self.comm.payload, self.compute.payload)),
            self.compute.ready.eq(self.grant.ready & pick_compute),
            self.comm.ready.eq(self.grant.ready & pick_comm),
        ]

        with m.If(self.comm.ready):
            m.d.sync += wait.eq(0)
            with m.If(wait > status.max_comm_wait):
                m.d.sync += status.max_comm_wait.eq(wait)
            m.d.sync += status.comm_grants.eq(status.comm_grants + 1)
        with m.Elif(self.comm.valid & (wait != (1 << self._wait_width) - 1)):
            m.d.sync += wait.eq(wait + 1)
        with m.If(self.compute.ready):
            m.d.sync += [status.compute_grants.eq(status.compute_grants + 1), last_compute.eq(1)]
        with m.Elif(self.comm.ready):
            m.d.sync += last_compute.eq(0)

        # Properties (checked in simulation and proven with yosys): one grant per cycle, only
        # from a requesting class, and in MCA mode the starvation bound. They are sampled at the
        # clock edge (sync domain), on settled values: a combinational check would also see the
        # transient values a simulator passes through while it settles.
        fire = self.grant.valid & self.grant.ready
        granted = self.grant.payload
        m.d.sync += [
            Assert(~(self.compute.ready & self.comm.ready), "two grants in one cycle"),
            Assert(~self.compute.ready | self.compute.valid, "compute granted without a request"),
            Assert(~self.comm.ready | self.comm.valid, "comm granted without a request"),
            # Conservation: a grant consumes exactly one request, and carries it unchanged.
            Assert(fire == (self.compute.ready | self.comm.ready), "grant without consuming a request"),
            Assert(~self.comm.ready | ((granted.cls == RequestClass.COMM)
                                       & (Value.cast(granted.request) == Value.cast(self.comm.payload))),
                   "comm request altered"),
            Assert(~self.compute.ready | ((granted.cls == RequestClass.COMPUTE)
                                          & (Value.cast(granted.request) == Value.cast(self.compute.payload))),
                   "compute request altered"),
        ]
        return m
