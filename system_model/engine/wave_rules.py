"""Rules the two cycle-level channels share (:mod:`.dram_cycle`'s queue and :mod:`.dram_door`'s
door): how a GEMM wave's matrix work waits for its reads, how long a wave may run before it
counts as starved, how steady arrivals accrue, and the communication rate a wave sustained.
One statement of each, so that the two channels differ only where their structures do."""

from __future__ import annotations

import math

__all__ = ["reads_needed", "own_cycles", "starved_rest", "accrue", "seeded_arrivals", "sustained_rate"]


def reads_needed(progress: float, compute: float, reads: int, steps: int) -> int:
    """Reads that must have arrived before the wave's next cycle of matrix work: a k-step's
    share at a time (``steps`` k-steps), or continuously (``steps == 0``); never more than
    the wave's reads."""
    if steps:
        need = math.ceil((math.floor(progress * steps / compute) + 1) * reads / steps)
    else:
        need = math.ceil((progress + 1) / compute * reads)
    return min(reads, need)


def own_cycles(*, compute: float, reads: int, stores: int, store_units: int, service_rate: float,
               outstanding: int, latency: int) -> float:
    """A wave's own length, before anything else shares the channel: the longest of its
    matrix work, its service time and its reads at the outstanding limit (Little's law)."""
    return max(compute, (reads + stores * store_units) / service_rate,
               math.ceil(max(reads, 1) / outstanding) * (latency + 1 / service_rate))


def starved_rest(elapsed: float, compute: float, progress: float) -> float:
    """The cycles a starved wave, cut off after ``elapsed`` cycles with ``progress`` of its
    ``compute`` cycles of matrix work done, would still have taken at the pace it had (at
    least a cycle's progress)."""
    return elapsed * (compute / max(progress, 1.0) - 1.0)


def accrue(accumulated: float, rate: float) -> tuple[float, int]:
    """One cycle of a steady arrival process of ``rate`` per cycle: (what is left over, how
    many arrive now)."""
    accumulated += rate
    arrivals = int(accumulated)
    return accumulated - arrivals, arrivals


def seeded_arrivals(hop_cycles: int, rate: float) -> tuple[list[int], float]:
    """The cycles of the forwarded updates already on their way when a wave starts (the
    ring ran before it): one hop's worth at ``rate`` per cycle; and the fraction of an
    arrival left over."""
    out, acc = [], 0.0
    for c in range(hop_cycles):
        acc += rate
        while acc >= 1.0 - 1e-9:
            acc -= 1.0
            out.append(c)
    return out, acc


def sustained_rate(*, offered: float, refused: int, backlog: int, cycles: int) -> float:
    """Communication sustained per cycle: what was offered, less what the buffers refused and
    what piled up over the measured ``cycles`` (counting the requests served instead would
    count a burst's boundaries)."""
    if not offered:
        return 0.0
    return max(0.0, offered - (refused + max(backlog, 0)) / cycles)
