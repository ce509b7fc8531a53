"""Cycle-accurate golden model of the memory arbiter's ports (pure Python).

Written from the policy in ``rtl/arbiter.py``'s docstring, never from its code. It lives in
the model's package because the model's cycle-level DRAM channel (:mod:`.dram_cycle`) grants
by it, and a model-only install has no ``tb/``; the arbiter's bench imports it from here
(``tb/arbiter/model.py``). The arbiter is combinational from its inputs to its grant, so
:meth:`MemoryArbiterModel.decide` takes the cycle's inputs.
"""

from __future__ import annotations

__all__ = ["MemoryArbiterModel", "MCA", "ROUND_ROBIN", "COMPUTE", "COMM"]

MCA, ROUND_ROBIN = 0, 1
COMPUTE, COMM = 0, 1
COUNTER_MASK = (1 << 32) - 1


class MemoryArbiterModel:
    def __init__(self, *, wait_width: int):
        self.wait_max = (1 << wait_width) - 1
        self.wait = 0
        self.last_compute = False
        self.status = {"compute_grants": 0, "comm_grants": 0, "comm_wait": 0, "max_comm_wait": 0}

    def decide(self, *, compute_valid: int, comm_valid: int, queue_level: int, threshold: int,
               starvation_limit: int, mode: int) -> int | None:
        """The class granted in this cycle if ``grant.ready`` is high (None: no grant)."""
        if mode == MCA:
            starving = comm_valid and self.wait >= starvation_limit
            if comm_valid and (starving or (not compute_valid and queue_level < threshold)):
                return COMM
        elif comm_valid and (not compute_valid or self.last_compute):
            return COMM
        return COMPUTE if compute_valid else None

    def step(self, *, winner: int | None, comm_valid: int, grant_ready: int) -> None:
        st = self.status
        if winner == COMM and grant_ready:
            st["max_comm_wait"] = max(st["max_comm_wait"], self.wait)
            self.wait = 0
            st["comm_grants"] = (st["comm_grants"] + 1) & COUNTER_MASK
            self.last_compute = False
        elif comm_valid and self.wait != self.wait_max:
            self.wait += 1
        if winner == COMPUTE and grant_ready:
            st["compute_grants"] = (st["compute_grants"] + 1) & COUNTER_MASK
            self.last_compute = True
        st["comm_wait"] = self.wait
