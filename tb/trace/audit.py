"""Checks of a trace that do not trust the harness: the model replays whatever inputs were
recorded, so a harness that broke the driver's rules would go unnoticed by the replay.

* :func:`check_plan`: the transactions each source actually handed over (``valid & ready``
  out of reset) are, segment by segment, a prefix of the planned ones, in order, and each
  came no earlier than its dependency (in the same cycle only where ``same_cycle`` allows).
* :func:`check_junk`: while a source's ``valid`` is low (out of reset) its payload changes
  from cycle to cycle, so that a DUT which samples a payload without ``valid`` reads
  garbage. A harness that stopped driving junk would hide that class of bug.
* :func:`check_quiet_reset`: from the second cycle of a reset on (the state is then the
  reset state), no output stream is valid.
"""

from __future__ import annotations

import numpy as np

from .check import Trace
from .harness import Ports
from .stimulus import Stimulus

__all__ = ["check_plan", "check_junk", "check_quiet_reset", "JUNK_MIN_FRACTION"]

#: Fraction of idle-to-idle cycles in which a source's payload must change.
JUNK_MIN_FRACTION = 0.9


def _segments(rst: np.ndarray) -> np.ndarray:
    """Segment index of every cycle: it grows at each rising edge of ``rst`` (-1 before the first)."""
    rises = np.zeros(len(rst), dtype=np.int64)
    rises[0] = rst[0]
    rises[1:] = (rst[1:] & ~rst[:-1]).astype(np.int64)
    return np.cumsum(rises) - 1


def check_plan(trace: Trace, ports: Ports, stimulus: Stimulus) -> int:
    """Check every accepted transaction against the plan; return how many were checked."""
    rst = trace.reset_mask()
    segment = _segments(rst)
    accepted_cycle: dict[str, dict[int, int]] = {}
    checked = 0
    for name in ports.sources:
        source = stimulus.sources[name]
        valid = trace.np_col(f"{name}__valid").astype(bool)
        ready = trace.np_col(f"{name}__ready").astype(bool)
        cycles = np.flatnonzero(valid & ready & ~rst)
        has_payload = f"{name}__payload" in ports.ports
        payloads = trace.col(f"{name}__payload") if has_payload else None
        starts = [*source.segment_starts, len(source)]
        seen: dict[int, int] = {}
        position: dict[int, int] = {}
        for c in cycles.tolist():
            k = int(segment[c])
            index = starts[k] + position.get(k, 0)
            position[k] = position.get(k, 0) + 1
            if index >= starts[k + 1]:
                trace.fail(c, f"{name} (plan)", "no more transactions in this segment", "a transfer")
            if has_payload and payloads[c] != source.payloads[index]:
                trace.fail(c, f"{name}.payload (plan)", source.payloads[index], payloads[c],
                           f"transaction {index} of the plan")
            seen[index] = c
        accepted_cycle[name] = seen
        checked += len(cycles)
    # Output streams named by a dependency: their k-th handshake of each segment.
    for name in {d[0] for s in ports.sources for d in stimulus.sources[s].deps if d is not None} - set(ports.sources):
        fired = trace.np_col(f"{name}__valid").astype(bool) & ~rst
        if name in ports.sinks:
            fired &= trace.np_col(f"{name}__ready").astype(bool)
        seen, position = {}, {}
        for c in np.flatnonzero(fired).tolist():
            k = int(segment[c])
            seen[(k, position.get(k, 0))] = c
            position[k] = position.get(k, 0) + 1
        accepted_cycle[name] = seen
    for name in ports.sources:
        source = stimulus.sources[name]
        for index, c in accepted_cycle[name].items():
            dep = source.deps[index]
            if dep is None:
                continue
            other, other_index, same_cycle = dep
            if other in ports.sources:
                when = accepted_cycle[other].get(other_index)
            else:     # an output stream: counted within the segment
                when = accepted_cycle[other].get((int(segment[c]), other_index))
            if when is None or when > c or (when == c and not same_cycle) or segment[when] != segment[c]:
                trace.fail(c, f"{name} (plan)", f"after {other} transaction {other_index}",
                           f"{other} transaction {other_index} at cycle {when}",
                           f"transaction {index} broke its dependency")
    trace.checks += checked
    return checked


def check_junk(trace: Trace, ports: Ports) -> int:
    """Check that idle sources drive changing payloads; return the idle cycle pairs seen."""
    rst = trace.reset_mask()
    pairs_seen = 0
    for name in ports.sources:
        if f"{name}__payload" not in ports.ports:
            continue
        valid = trace.np_col(f"{name}__valid").astype(bool)
        idle = ~valid & ~rst
        pairs = idle[1:] & idle[:-1]
        if not pairs.any():
            continue
        word, _, width = trace.layout.fields[f"{name}__payload"]
        if width > 32:
            block = trace.record[:, word:word + (width + 31) // 32]
            changed = np.any(block[1:] != block[:-1], axis=1)
        else:
            column = trace.np_col(f"{name}__payload")
            changed = column[1:] != column[:-1]
        fraction = float(np.count_nonzero(changed & pairs)) / float(np.count_nonzero(pairs))
        if fraction < JUNK_MIN_FRACTION:
            first = int(np.flatnonzero(pairs & ~changed)[0]) + 1
            trace.fail(first, f"{name}.payload (harness)", "junk while valid is low", "an unchanged payload",
                       f"it changed in only {fraction:.0%} of idle cycles")
        pairs_seen += int(np.count_nonzero(pairs))
    return pairs_seen


def check_quiet_reset(trace: Trace, ports: Ports, valid_outputs: list[str]) -> int:
    """From the second cycle of each reset on, every output ``valid`` is low; return the cycles checked."""
    rst = trace.reset_mask()
    deep = np.zeros(len(rst), dtype=bool)
    deep[1:] = rst[1:] & rst[:-1]
    for name in valid_outputs:
        bad = np.flatnonzero(deep & trace.np_col(name).astype(bool))
        if bad.size:
            trace.fail(int(bad[0]), name, 0, 1, "an output is valid in reset")
    checked = int(np.count_nonzero(deep))
    trace.checks += checked * len(valid_outputs)
    return checked
