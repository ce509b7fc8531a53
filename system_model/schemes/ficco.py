"""FiCCO (Pal, Aga, Pati, Islam, John; arXiv 2512.10236): DMA-engine overlap one level finer
than the shard, on fully connected GPUs (MI300X), with a heuristic that picks the schedule.

What its authors describe (abstract and introduction; the body's tables were not readable
here): shard-level peer-to-peer overlap sends one shard to one peer at a time and leaves
most links of a fully connected node idle; FiCCO decomposes the GEMM one level deeper, so
that each transfer is ``1/n`` of a shard and every step sends to every peer at once, and
offloads the transfers to the GPU's DMA engines to avoid contending for the CUs. Its two
losses are decomposition (smaller GEMMs use the CUs and the cache worse) and contention
(the transfers' memory traffic beside the GEMM's). A heuristic on the operators' static
sizes picks among the schedules; its authors report the optimal one in 81% of unseen cases.

The model (``ficco``, GEMM + reduce-scatter): the GEMM decomposed into ``rounds`` GEMMs of
``M / rounds`` rows, one after another, each a kernel launch after the last
(``peer.launch_gap_us``); as a round ends, the DMA engines copy its rows' slices to their
owners, every peer at once, at the copy engines' payload rate on the links (the copies of
consecutive rounds queue on the engines); after the last copy lands, a reduction kernel
sums the ``n`` received pieces. The schedule is the fastest of ``rounds`` in 2, 4, ...,
``n`` (the optimum its heuristic aims at); one round is the sequential scheme, which the
study keeps anyway.
"""

from __future__ import annotations

import math

from ..describe.models import GemmShape
from ..engine.sharing import DRAM, GRANTS
from ..engine.timeline import Engine, Flow
from .context import GemmRun, SchemeResult, Sublayer, direct_na, traffic
from .peers import _reduce_kernel

__all__ = ["ficco", "ficco_rounds"]


def ficco_rounds(tp: int) -> list[int]:
    """The schedules tried: 2, 4, ... rounds up to ``tp`` (and ``tp`` itself)."""
    out, r = [], 2
    while r < tp:
        out.append(r)
        r *= 2
    return out + [tp]


def ficco(sub: Sublayer, *, record: bool = False) -> SchemeResult:
    if (n := direct_na(sub, "ficco", "the DMA engines' copies to every peer")) is not None:
        return n
    best = None
    for rounds in ficco_rounds(sub.tp):
        r = _ficco(sub, rounds, record=record)
        if best is None or r.time_s < best.time_s:
            best = r
    return best


def _ficco(sub: Sublayer, rounds: int, *, record: bool) -> SchemeResult:
    tp = sub.tp
    rows = math.ceil(sub.shape.m / rounds)
    part = sub.gemm(shape=GemmShape(rows, sub.shape.n, sub.shape.k))
    send = part.output_bytes * (tp - 1) / tp             # every owner's slice of the round but this GPU's own
    demand = dict(sub.direct_demand(sub.transport.ce_link_efficiency))
    demand.update({DRAM: 2.0, GRANTS: 2.0})              # read here; a peer's copy lands here
    engine = sub.engine("rr", record=record)
    state = {"copies": 0, "queue": 0, "busy": False, "gemm": None}

    def pump(e: Engine) -> None:
        if state["busy"] or not state["queue"]:
            return
        state["queue"] -= 1
        state["busy"] = True

        def done(e2: Engine, f: Flow) -> None:
            state["busy"] = False
            state["copies"] += 1
            pump(e2)
            finish(e2)
        e.start(Flow(f"copies {state['copies'] + 1}", send, demand, lane="link"), done)

    def signalled(e: Engine) -> None:
        # A round's copy may start only once its end has been signalled, even when the
        # engines are still busy with the round before and would otherwise take it at once.
        state["queue"] += 1
        pump(e)

    def matmul(e: Engine, j: int) -> None:
        def ended(e2: Engine) -> None:
            e2.after(sub.signal_s, signalled)
            if j < rounds - 1:
                e2.after(sub.launch_s, lambda e3: matmul(e3, j + 1))
            else:
                state["gemm"] = e2.now
                finish(e2)
        GemmRun(sub, part, name=f"matmul {j + 1}", on_end=ended).start(e)

    def finish(e: Engine) -> None:
        if state["gemm"] is not None and state["copies"] == rounds and "reduce" not in state:
            state["reduce"] = True
            e.after(sub.latency_s, lambda e2: _reduce_kernel(e2, sub, tp, lambda e3: state.__setitem__("end", e3.now)))
    matmul(engine, 0)
    engine.run()
    sent = send * rounds
    return SchemeResult("ficco", state["end"] + sub.after_rs_s, state["gemm"],
                        traffic(part.dram_read_bytes * rounds, part.output_bytes * rounds,
                                (sent + tp * sub.chunk, sent + sub.chunk), sub.ag_traffic),
                        slowdowns={"gemm": state["gemm"] / sub.gemm_alone_s, "rounds": float(rounds)},
                        bound="ideal_rs", intervals=engine.intervals, events=engine.events)
