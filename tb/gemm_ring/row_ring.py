# amaranth: UnusedElaboratable=no
"""The GEMM ring with a DRAM-like memory behind every slice (the crosscheck's harness with
rows; not synthesised).

:class:`RowGemmRing` is :class:`rtl.gemm_ring.GemmRing` built with ``dram_ready=True``, each
GPU's ``dram_request``/``dram_ready`` door closed by a :class:`~.row_bank.RowBank`. Its ports
are the ring's, less the doors, plus ``row_status[g]`` (the memory's misses and held
cycles) and, to be watched only, each door: ``door[g]`` (the request offered, ``{addr,
write}``), ``door_valid[g]`` and ``door_ready[g]`` (the memory's answer), so that the trace
shows every request at every door (:mod:`system_model.studies.crosscheck.door_census`). The harness
drives it exactly as it drives the ring.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from rtl.flow.compose import ring_verilog
from rtl.flow.generate import component_verilog, simulation_asserts
from rtl.gemm_ring import GemmRing

from .row_bank import RowBank, RowTiming

__all__ = ["RowGemmRing", "row_ring_verilog", "main"]

#: The name of the top module in the Verilog.
TOP = "row_gemm_ring"


class RowGemmRing(wiring.Component):
    """:class:`~rtl.gemm_ring.GemmRing` with a :class:`~.row_bank.RowBank` of ``timing`` behind
    every slice (``ring_params``: the ring's parameters)."""

    def __init__(self, *, timing: RowTiming, **ring_params):
        if not isinstance(timing, RowTiming):
            raise TypeError(f"timing must be a RowTiming, not {timing!r}")
        self.timing = timing
        self.ring = GemmRing(dram_ready=True, **ring_params)
        s = self.ring.ring.slices[0]
        self.memories = [RowBank(addr_width=s.nmc.addr_width, timing=timing) for _ in range(self.ring.gpus)]
        ports = {name: member for name, member in self.ring.signature.members.items()
                 if name not in ("dram_request", "dram_ready")}
        ports["row_status"] = Out(self.memories[0].status_layout).array(self.ring.gpus)
        ports["door"] = Out(s.dram_request_layout).array(self.ring.gpus)
        ports["door_valid"] = Out(1).array(self.ring.gpus)
        ports["door_ready"] = Out(1).array(self.ring.gpus)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        m.submodules.ring = ring = self.ring
        for name, member in self.signature.members.items():
            if name in ("row_status", "door", "door_valid", "door_ready"):
                continue
            outer, inner = getattr(self, name), getattr(ring, name)
            pairs = list(zip(outer, inner, strict=True)) if member.dimensions else [(outer, inner)]
            for o, i in pairs:
                if not member.is_port:
                    wiring.connect(m, wiring.flipped(o), i)
                elif member.flow == wiring.In:
                    m.d.comb += i.eq(o)
                else:
                    m.d.comb += o.eq(i)
        for g, memory in enumerate(self.memories):
            m.submodules[f"memory{g}"] = memory
            m.d.comb += [memory.request.valid.eq(ring.dram_request[g].valid),
                         memory.request.payload.eq(ring.dram_request[g].payload),
                         ring.dram_ready[g].eq(memory.ready),
                         self.row_status[g].eq(memory.status),
                         self.door[g].eq(ring.dram_request[g].payload),
                         self.door_valid[g].eq(ring.dram_request[g].valid),
                         self.door_ready[g].eq(memory.ready)]
        return m


def row_ring_verilog(*, timing: RowTiming, **ring_params) -> str:
    """The harness's Verilog (module :data:`TOP`), with the RTL's assertions live."""
    return simulation_asserts(ring_verilog(RowGemmRing(timing=timing, **ring_params), TOP, convert=component_verilog))


def main(argv: list[str] | None = None) -> int:
    """Run crosscheck scenarios on the ring behind DRAM-like memories; print each run's figures
    as a JSON line (the replay line of a failed run is such a command)."""
    from .run import run_scenario
    from .scenarios import SCHEDULES, scenarios

    parser = argparse.ArgumentParser(prog="python -m tb.gemm_ring.row_ring", description=main.__doc__)
    parser.add_argument("--size", choices=("quick", "full"), default="quick")
    parser.add_argument("--only", help="one scenario (default: all of the size)")
    parser.add_argument("--gpus", type=int, help="only the scenarios of this many GPUs")
    parser.add_argument("--schedule", choices=SCHEDULES, help="one schedule (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    defaults = RowTiming()
    parser.add_argument("--banks", type=int, default=defaults.banks)
    parser.add_argument("--row-beats", type=int, default=defaults.row_beats)
    parser.add_argument("--miss-cycles", type=int, default=defaults.miss_cycles)
    parser.add_argument("--no-bank-hash", action="store_true", help="banks from the address bits alone (no XOR "
                                                                     "with the row)")
    args = parser.parse_args(argv)
    try:
        timing = RowTiming(banks=args.banks, row_beats=args.row_beats, miss_cycles=args.miss_cycles,
                           bank_hash=not args.no_bank_hash)
        chosen = [s for s in scenarios(args.size) if (args.only is None or s.name == args.only)
                  and (args.gpus is None or s.system.gpus == args.gpus)]
        if not chosen:
            raise ValueError(f"no {args.size} scenario is named {args.only!r} with {args.gpus} GPUs")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for scenario in chosen:
        scenario = replace(scenario, system=replace(scenario.system, rows=timing))
        for schedule in [args.schedule] if args.schedule else SCHEDULES:
            figures = run_scenario(scenario, schedule, seed=args.seed)
            print(json.dumps({k: v for k, v in figures.items() if k not in ("system", "gemm")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
