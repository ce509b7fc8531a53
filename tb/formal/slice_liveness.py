# amaranth: UnusedElaboratable=no
"""Bounded-liveness harness of one T3 slice, for bounded model checking (:mod:`tb.formal.engine`).

Every input of the slice is free, constrained only by what a legal environment does:

* every input stream obeys the stream rules (an offer holds its payload until taken, or
  until a reset);
* the configuration (``threshold``, ``starvation_limit``, ``mode``) is constant, with a
  starvation limit between 1 and ``max_starvation_limit`` (a limit of 0 gives
  communication strict priority: the GEMM then waits for as long as beats keep arriving,
  which is that setting's meaning, not a deadlock);
* reset is asserted in the first cycle and never again; flip-flops start at their reset
  values and memories at zero (the design's initial state), so this check does not
  exercise the tracker's reset sweep on garbage; the tracker bench does, with counters
  that power up with pseudo-random values.

Nothing is assumed of the egress link: it may refuse for ever. Arms, programs, tiles,
thresholds, data, addresses and the interleaving of every stream are the solver's,
including traffic no driver would send (updates to unarmed tiles, triggers of
unprogrammed commands).

The property: no request waits ``bound`` cycles or more at the queues whose progress the
GEMM and the reduce-scatter need: the GEMM's writes and reads, the incoming beats, the
DMA engine's reads and the heads of both arbiter classes, counting every cycle; and the
DMA engine's egress beats and the GEMM's remote stores, counting only the cycles in which
the link was ready. That the incoming beats are served whatever the egress does is what
makes the ring live: slice *g*'s egress waits only on slice *g + 1*'s ingress, which waits
on nothing outside that slice. ``arm`` is exempt: an armed tile that never gets its writes
holds its trigger slot for ever, by design. So is the trigger queue, whose wait grows with
the length of the transfers ahead of it; it drains whenever the engine and egress move.

With ``max_memory_hold`` set, the slice has a memory beyond it (``dram_ready=True``) that may
hold the arbiter's offer, as a DRAM bank opening its row does, for at most that many cycles
in a row (then it must let it go); the solver picks which offers it holds. Every cycle of
the bound below may then be stretched by the holds before a grant: the bound is multiplied
by ``max_memory_hold + 1``. The starvation limit must then exceed the longest hold plus the
hazard window (``min_starvation_limit``): with a shorter one, a communication request starts
to starve while the memory holds a compute offer, takes its place (the arbiter re-decides
every cycle), and the compute request, offered again, is held again: a memory that holds
every compute offer starves the GEMM (the bounded check finds it at a limit of 1 and a hold
of 1). A DRAM's row miss is tens of cycles, a starvation limit hundreds.

A watched request waits at most ``2 * (max_starvation_limit + 1 + hazard_window)`` cycles,
and the assertion fires at one more (``bound``): an incoming beat waits at most one
starvation period for its own grant plus one for the DMA read the comm mux may be holding
ahead of it, and each of those may be stretched by the bank's hazard window (a refused
update keeps the grant until its address's previous sum leaves the adder); a compute
request waits at most one grant per starvation period plus that window.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Elaboratable, Module, Mux, ResetSignal, Signal, Value

__all__ = ["SliceLivenessHarness", "TINY_SLICE"]

#: The smallest slice that still has every mechanism: two tracker entries and trigger
#: slots, one DMA command (index 1 is notify-only), one-deep command queue, two-beat
#: transfers, a 16-word bank (the DMA table's narrowest address) of one binary16 lane, one-beat tiles,
#: and an adder of latency 2: the smallest with a hazard window (an update can wait on the bank).
TINY_SLICE = dict(format="binary16", beat_width=16, depth=16, adder_latency=2, entries=2, count_width=2,
                  trigger_depth=2,
                  commands=2, max_beats=2, port_width=1, queue_depth=1, tile_beats_log2=0,
                  compute_queue_depth=2, level_width=2, wait_width=3)


class SliceLivenessHarness(Elaboratable):
    def __init__(self, slice_class, *, max_starvation_limit: int = 3, slice_params: dict | None = None,
                 false_property: bool = False, max_memory_hold: int | None = None,
                 unconstrained_limit: bool = False):
        self.false_property = false_property
        params = dict(TINY_SLICE if slice_params is None else slice_params)
        if max_memory_hold is not None:
            if not 1 <= max_memory_hold <= 8:
                raise ValueError(f"max_memory_hold must be between 1 and 8, not {max_memory_hold}")
            params["dram_ready"] = True
        self.max_memory_hold = max_memory_hold
        self.slice = slice_class(**params)
        self.max_starvation_limit = max_starvation_limit
        #: The smallest starvation limit the environment may set.
        self.min_starvation_limit = 1
        if max_memory_hold is not None and not unconstrained_limit:
            self.min_starvation_limit = max_memory_hold + self.slice.nmc.hazard_window + 1
            if self.min_starvation_limit > max_starvation_limit:
                raise ValueError(f"max_starvation_limit must be at least {self.min_starvation_limit} with a memory "
                                 f"that holds an offer {max_memory_hold} cycles, not {max_starvation_limit}")

    @property
    def bound(self) -> int:
        """Cycles no watched request may wait (see the module's docstring)."""
        base = 2 * (self.max_starvation_limit + 1 + self.slice.nmc.hazard_window) + 1
        return base * (1 + (self.max_memory_hold or 0))

    def ports(self) -> list[Value]:
        return [Value.cast(v) for _, _, v in self.slice.signature.flatten(self.slice)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.slice = s = self.slice
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        m.d.comb += Assume(ResetSignal() == ~started)

        def stable_offer(name, valid, ready, payload):
            waiting = Signal(name=f"{name}_was_waiting")  # a reset ends every offer
            held = Signal.like(Value.cast(payload), name=f"{name}_held", reset_less=True)
            m.d.sync += [waiting.eq(valid & ~ready), held.eq(payload)]
            with m.If(waiting):
                m.d.comb += Assume(valid & (Value.cast(payload) == held))

        for name in ("gemm", "gemm_read", "gemm_remote", "ingress", "arm", "program"):
            port = getattr(s, name)
            stable_offer(name, port.valid, port.ready, port.payload)

        for name in ("threshold", "starvation_limit", "mode"):
            value = Value.cast(getattr(s, name))
            held = Signal.like(value, name=f"{name}_config", reset_less=True)  # the reset must not clear it
            m.d.sync += held.eq(value)
            with m.If(started):
                m.d.comb += Assume(value == held)
        if self.max_memory_hold is not None:
            # The memory beyond holds an offer for at most max_memory_hold cycles in a row.
            held_for = Signal(range(self.max_memory_hold + 1), name="memory_held_for")
            holding = s.dram_request.valid & ~s.dram_ready
            m.d.sync += held_for.eq(Mux(holding, held_for + 1, 0))
            m.d.comb += Assume(~holding | (held_for < self.max_memory_hold))
        limit = Value.cast(s.starvation_limit)
        m.d.comb += Assume((limit >= self.min_starvation_limit) & (limit <= self.max_starvation_limit))

        if self.false_property:
            # Reachability check of the set-up: a DMA'd beat does reach egress, so this fails.
            m.d.comb += Assert(~s.egress.valid, "deliberately false: egress never valid")
            return m

        # name: (offered, taken, a cycle that counts as waiting)
        link_ready = s.egress.ready
        watched = {name: (port.valid, port.valid & port.ready, port.valid & ~port.ready) for name, port in (
            ("gemm", s.gemm), ("gemm_read", s.gemm_read), ("ingress", s.ingress),
            ("compute_head", s.arbiter.compute), ("comm_head", s.arbiter.comm))}
        read = s.engine.mem_read
        watched["dma_read"] = (read.en, read.en & read.ready, read.en & ~read.ready)
        for name, port in (("dma_egress", s.engine.egress), ("gemm_remote", s.gemm_remote)):
            watched[name] = (port.valid, port.valid & port.ready, port.valid & ~port.ready & link_ready)
        for name, (offered, taken, waiting) in watched.items():
            waited = Signal(range(self.bound + 1), name=f"{name}_waited")
            with m.If(~offered | taken):
                m.d.sync += waited.eq(0)
            with m.Elif(waiting & (waited != self.bound)):
                m.d.sync += waited.eq(waited + 1)
            m.d.comb += Assert(~started | (waited < self.bound), f"{name} waited {self.bound} cycles")
        return m
