"""How DRAM bandwidth is shared between compute and communication traffic.

A fluid model of the memory controller's arbitration, per policy of ``rtl.arbiter``'s
``MemoryArbiter`` (T3-MCA) and its round-robin baseline:

* ``round_robin``: max-min fair; when both classes are backlogged each gets half.
* ``mca``: compute first. Communication issues only while the command queue is below the
  threshold, i.e. it gets what compute leaves; the starvation limit ``S`` guarantees it one
  slot in ``S + 1`` when compute saturates the queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from .units import check_int_range

__all__ = ["ArbiterConfig", "served_rates"]


@dataclass(frozen=True)
class ArbiterConfig:
    """Parameters of the memory arbiter.

    Attributes
    ----------
    threshold : int
        Queue occupancy below which communication may issue (affects latency, not the
        fluid shares).
    starvation_limit_cycles : int
        Longest wait of a communication request at the head of its queue.
    """

    threshold: int = 8
    starvation_limit_cycles: int = 64

    def __post_init__(self):
        check_int_range("threshold", self.threshold, 1, 4096)
        check_int_range("starvation_limit_cycles", self.starvation_limit_cycles, 1, 1 << 20)

    @property
    def comm_min_share(self) -> float:
        return 1.0 / (self.starvation_limit_cycles + 1)


def served_rates(policy: str, compute_need: float, comm_need: float, capacity: float,
                 arbiter: ArbiterConfig) -> tuple[float, float]:
    """Bytes/s served to (compute, communication) given what each asks for."""
    if policy not in ("round_robin", "mca"):
        raise ValueError(f"policy must be one of 'round_robin', 'mca', not {policy!r}")
    if compute_need + comm_need <= capacity:
        return compute_need, comm_need
    if policy == "round_robin":
        half = capacity / 2
        if compute_need < half:
            return compute_need, capacity - compute_need
        if comm_need < half:
            return capacity - comm_need, comm_need
        return half, half
    floor = min(comm_need, capacity * arbiter.comm_min_share)
    compute = min(compute_need, capacity - floor)
    return compute, min(comm_need, capacity - compute)
