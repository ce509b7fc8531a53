"""How resources are shared between the flows of an interval: progressive filling, with the
DRAM shared as the verified arbiter (``rtl/arbiter.py``) shares its channel.

Every flow's rate rises from zero, each in proportion to its weight, until it reaches its
cap or one of the resources it uses is saturated; then it is frozen and the others go on
(progressive filling: the max-min fair allocation, so every flow ends at its cap or on a
saturated resource, and no resource idles while a flow that uses it could go faster).

The DRAM arbiter's two modes decide the order and the weights (their golden model is
``engine/arbiter_policy.py``; the cycle-level channel :mod:`.dram_cycle` runs it grant by grant):

* **round robin** (``Policy("rr")``): when both classes have a request, the grants
  alternate, so the flows' *request* rates rise together: a flow's weight is the inverse
  of its grant bytes per unit of work (``dram_grants``). A near-memory update is one grant
  that holds its bank for two units of service, so round robin gives an update stream
  more bank time than a read stream at the same grant rate, as the RTL does.
* **compute first** (``Policy("mca", comm_floor_grants_Bps=...)``, T3-MCA): the GEMM's
  flows are filled first and communication gets what they leave, except that a
  communication request that has waited the starvation limit takes the next grant: while
  compute saturates the channel, communication still gets one grant per starvation limit
  of each channel (``comm_floor_grants_Bps``, :func:`mca_floor_grants_Bps`). MCA's queue
  threshold shapes which request waits in the queue, a latency the fluid rule does not
  see (the cycle-level channel does; README, "T3 without MCA").

:func:`allocate` takes flows already compiled by the engine (``terms``: their demands as
``(resource index, coefficient)``, ``weight``, ``klass``, ``cap``, ``floor_terms``) and a
list of capacities, and returns a list of rates (the engine's inner loop: no dicts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Policy", "allocate", "DRAM", "GRANTS", "mca_floor_grants_Bps", "POLICIES", "EPS"]

#: The DRAM's service (byte-equivalents of bank time) and the requests through its arbiter.
DRAM = "dram"
GRANTS = "dram_grants"
POLICIES = ("rr", "mca")
#: Relative slack of "saturated" and "at its cap".
EPS = 1e-9
_INF = math.inf


@dataclass(frozen=True)
class Policy:
    """The DRAM arbiter's mode; ``comm_floor_grants_Bps``: T3-MCA's starvation floor."""

    kind: str = "rr"
    comm_floor_grants_Bps: float = 0.0

    def __post_init__(self):
        if self.kind not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {self.kind!r}")
        if not (self.comm_floor_grants_Bps >= 0 and math.isfinite(self.comm_floor_grants_Bps)):
            raise ValueError(f"comm_floor_grants_Bps must be finite and >= 0, not {self.comm_floor_grants_Bps}")


def mca_floor_grants_Bps(*, channels: int, request_bytes: int, mc_clock_GHz: float, starvation_limit_cycles: int
                         ) -> float:
    """Grant bytes per second the starvation rule guarantees communication: one request per
    ``starvation_limit + 1`` cycles of each channel's controller clock."""
    return channels * request_bytes * mc_clock_GHz * 1e9 / (starvation_limit_cycles + 1)


def _fill(flows, x: list, residual: list, capacity: list, extra: int = -1) -> None:
    """Raise the rates of ``flows`` (``(index into x, flow)``) by progressive filling on ``residual``.

    A flow coupled to a leader (``f.coupled``: the leader's index) cannot outrun the work
    its leader makes: while its leader rises, it rises at most ``ratio`` times as fast; once
    its leader is frozen it stops at ``ratio`` times the leader's rate. ``extra`` >= 0 adds
    the pseudo-resource at that index with each flow's ``floor_terms``.
    """
    n_res = len(residual)
    saturated = [capacity[i] < _INF and residual[i] <= EPS * capacity[i] for i in range(n_res)]
    in_fill = {i for i, _ in flows}

    def limit(i, f) -> float:
        """The coupled cap when the leader is not rising in this fill."""
        if f.coupled >= 0 and f.coupled not in live:
            return min(f.cap, f.ratio * x[f.coupled])
        return f.cap

    def free(i, f, terms) -> bool:
        return x[i] < limit(i, f) * (1 - EPS) - EPS and not any(saturated[r] for r, _ in terms)

    live: set = set()
    active = []
    for i, f in flows:
        terms = f.terms if extra < 0 else f.terms + f.floor_terms
        active.append((i, f, terms))
    live = {i for i, f, terms in active if f.coupled < 0 or f.coupled in in_fill}
    live = {i for i, f, terms in active if free(i, f, terms)}
    active = [a for a in active if a[0] in live]
    while active:
        rise = {}
        for i, f, _ in active:
            if f.coupled < 0:
                rise[i] = f.weight
        for i, f, _ in active:
            if f.coupled >= 0:
                lead = rise.get(f.coupled, 0.0)
                attached = x[i] >= f.ratio * x[f.coupled] * (1 - EPS) - EPS
                rise[i] = min(f.weight, f.ratio * lead) if attached else f.weight
        growth = [0.0] * n_res
        for i, _, terms in active:
            g = rise[i]
            for r, a in terms:
                growth[r] += a * g
        step = _INF
        for r in range(n_res):
            g = growth[r]
            if g > 0:
                s = residual[r] / g
                if s < step:
                    step = s
        for i, f, _ in active:
            g = rise[i]
            if g <= 0:
                continue
            cap = limit(i, f)
            if cap < _INF:
                s = (cap - x[i]) / g
                if s < step:
                    step = s
            if f.coupled >= 0 and f.coupled in live:
                closing = g - f.ratio * rise.get(f.coupled, 0.0)
                gap = f.ratio * x[f.coupled] - x[i]
                if closing > 0 and gap > 0:
                    s = gap / closing
                    if s < step:
                        step = s
        if step == _INF:
            if all(rise[i] <= 0 for i, _, _ in active):
                break
            names = ", ".join(f.name for _, f, _ in active)
            raise ValueError(f"flows {names} are bounded by nothing: give them a cap or a resource")
        step = max(step, 0.0)
        for i, f, _ in active:
            v = x[i] + rise[i] * step
            cap = f.cap
            x[i] = cap if v > cap else v
        for r in range(n_res):
            g = growth[r]
            if g > 0:
                residual[r] -= g * step
                if capacity[r] < _INF and residual[r] <= EPS * capacity[r]:
                    residual[r] = residual[r] if residual[r] > 0 else 0.0
                    saturated[r] = True
        still = [(i, f, terms) for i, f, terms in active if free(i, f, terms)]
        live = {i for i, _, _ in still}
        # A follower whose leader froze keeps rising to its coupled cap; one at it is frozen.
        active = [(i, f, terms) for i, f, terms in still
                  if not (f.coupled >= 0 and f.coupled not in live
                          and x[i] >= f.ratio * x[f.coupled] * (1 - EPS) - EPS)]
        live = {i for i, _, _ in active}


#: Allocations already computed, by everything :func:`_fill` reads: the sharing rule is a
#: pure function of the flows' demands, weights, caps, classes and couplings and of the
#: capacities, and one run of a sweep meets the same few combinations many times (every wave
#: of a run beside a transfer of the same kind). Cleared when it outgrows its bound.
_MEMO: dict = {}
_MEMO_LIMIT = 1 << 16


def allocate(flows: list, capacities: list, policy: Policy, dram_index: int) -> list:
    """Each flow's rate (units of its work per second) for one interval."""
    key = (policy, tuple(capacities),
           tuple((f.klass, f.weight, f.cap, f.coupled, f.ratio, f.dram, f.terms_key) for f in flows))
    rates = _MEMO.get(key)
    if rates is None:
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        rates = _MEMO[key] = _allocate(flows, capacities, policy)
    return list(rates)


def _allocate(flows: list, capacities: list, policy: Policy) -> tuple:
    x = [0.0] * len(flows)
    residual = list(capacities)
    indexed = list(enumerate(flows))
    if policy.kind == "rr" or len(flows) == 1:
        _fill(indexed, x, residual, list(capacities))
        return tuple(x)
    compute = [(i, f) for i, f in indexed if f.klass == "compute"]
    comm = [(i, f) for i, f in indexed if f.klass != "compute"]
    if not compute or not comm:
        _fill(indexed, x, residual, list(capacities))
        return tuple(x)
    capacity = list(capacities)
    floor = policy.comm_floor_grants_Bps
    on_dram = [(i, f) for i, f in comm if f.dram > 0]
    if on_dram and floor > 0 and any(f.dram > 0 for _, f in compute):
        # The starvation floor first: a pseudo-resource of the floor's grant bytes.
        residual.append(floor)
        capacity.append(floor)
        _fill(on_dram, x, residual, capacity, extra=len(residual) - 1)
        residual.pop()
        capacity.pop()
    _fill(compute, x, residual, capacity)
    _fill(comm, x, residual, capacity)
    return tuple(x)
