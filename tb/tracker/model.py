"""Cycle-accurate golden model of the tracker table's ports (pure Python, no cocotb).

The model is written from the port-level specification in ``rtl/tracker.py``'s docstring,
not from its implementation: entries are a dict, the pipeline is a delay line of
``SPEC_TRIGGER_LATENCY - 1`` slots and the trigger queue is a deque. Per cycle the bench
calls :meth:`outputs` (what the ports must show in this cycle) and then :meth:`step` with
the inputs offered in the same cycle.

The specification it follows:

* after reset a sweep of ``reset_cycles`` (= ``entries``) cycles holds ``arm.ready`` and
  ``update.ready`` low with ``status.clearing`` high; then every entry is unarmed, count 0;
* every armed entry reserves a trigger-queue slot: ``arm.ready`` is low while the armed
  entries plus the queued triggers reach ``trigger_depth`` (default ``entries``);
* ``update.ready`` is high in every cycle after the sweep;
* an arm is ordered before an update of the same cycle; an entry frees itself in the cycle
  its last update is accepted (a re-arm in the next cycle is legal); its trigger enters the
  queue ``trigger_latency - 1`` edges after the edge accepting that update, and stays in
  ``armed_entries`` until then, so it is valid ``trigger_latency`` (= 3) cycles after that
  edge when the queue ahead of it is empty;
* the status fields reflect the events accepted up to the previous clock edge.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

__all__ = ["TrackerOutputs", "TrackerTableModel", "LOCAL", "REMOTE", "SPEC_TRIGGER_LATENCY"]

LOCAL = 0
REMOTE = 1
COUNTER_MASK = (1 << 32) - 1

#: Specified latency from the edge accepting a tile's last update to ``trigger.valid``.
SPEC_TRIGGER_LATENCY = 3


class TrackerOutputs(NamedTuple):
    """Every output port of the tracker in one cycle."""

    arm_ready: int
    update_ready: int
    trigger_valid: int
    trigger: tuple[int, int] | None  # (tile, dma_cmd), meaningful only when valid
    status: dict


class TrackerTableModel:
    """Reference behaviour of :class:`rtl.tracker.TrackerTable`.

    A new model (and :meth:`reset`) is in the first cycle after the edge that releases
    reset: the sweep has ``reset_cycles`` cycles to go, this one included.

    Parameters
    ----------
    entries : int
        As for the RTL block.
    trigger_depth : int or None
        As for the RTL block (``None``: ``entries``).
    """

    def __init__(self, *, entries: int, trigger_depth: int | None = None):
        self.entries = entries
        self.trigger_depth = entries if trigger_depth is None else trigger_depth
        self.reset()

    @property
    def reset_cycles(self) -> int:
        """Cycles of the reset sweep (the docstring's ``reset_cycles`` = ``entries``)."""
        return self.entries

    def reset(self) -> None:
        """The state in the first cycle after reset: everything forgotten, the sweep starting."""
        self._outputs: TrackerOutputs | None = None
        self.sweep_left = self.reset_cycles
        # tile -> [count, threshold, dma_cmd] for armed tiles only.
        self.armed: dict[int, list[int]] = {}
        # Completions on their way into the queue, oldest first, one slot per edge (None: no
        # completion accepted at that edge); the newest is the one accepted at the last edge.
        self.in_flight: deque[tuple[int, int] | None] = deque([None] * (SPEC_TRIGGER_LATENCY - 1))
        self.queue: deque[tuple[int, int]] = deque()
        self.status = {
            "err_unarmed_update": 0, "err_unarmed_update_tile": 0,
            "err_rearm": 0, "err_rearm_tile": 0,
            "err_zero_threshold": 0, "err_zero_threshold_tile": 0,
            "armed_entries": 0,
            "local_updates": 0, "remote_updates": 0, "triggers": 0,
        }

    @property
    def reserved(self) -> int:
        """Trigger-queue slots held: one per armed entry (the completions on their way into the
        queue included, as ``status.armed_entries`` shows them) and one per queued trigger."""
        return self.status["armed_entries"] + len(self.queue)

    def outputs(self) -> TrackerOutputs:
        """This cycle's outputs, memoised until the next :meth:`step` (the bench and ``step`` both read them)."""
        if self._outputs is None:
            self._outputs = self._compute_outputs()
        return self._outputs

    def _compute_outputs(self) -> TrackerOutputs:
        clearing = self.sweep_left > 0
        return TrackerOutputs(
            arm_ready=int(not clearing and self.reserved < self.trigger_depth),
            update_ready=int(not clearing),
            trigger_valid=int(bool(self.queue)),
            trigger=self.queue[0] if self.queue else None,
            status=dict(self.status, clearing=int(clearing)),
        )

    def idle(self) -> bool:
        """No armed entry, no completion in flight, no queued trigger."""
        return not self.armed and all(c is None for c in self.in_flight) and not self.queue

    @property
    def completed(self) -> tuple[int, int] | None:
        """The completion (tile, dma_cmd) accepted at the last edge, or None."""
        return self.in_flight[-1]

    def _flag(self, name: str, tile: int) -> None:
        if not self.status[name]:
            self.status[name] = 1
            self.status[name + "_tile"] = tile

    def step(self, *, arm: tuple[int, int, int] | None, update: tuple[int, int] | None,
             trigger_ready: int) -> tuple[int, int] | None:
        """Advance one clock edge.

        Parameters
        ----------
        arm : (tile, threshold, dma_cmd) or None
            The arm offered in this cycle (``arm.valid``), or None. It is accepted only if
            this cycle's ``arm_ready`` is high.
        update : (tile, source) or None
            The update offered in this cycle, or None. It is accepted only if this cycle's
            ``update_ready`` is high.
        trigger_ready : int
            The sink's ``trigger.ready`` in this cycle.

        Returns
        -------
        The trigger handed out in this cycle, or None.
        """
        out = self.outputs()
        self._outputs = None
        st = self.status
        if self.sweep_left:
            self.sweep_left -= 1
        handed_out = None
        if out.trigger_valid and trigger_ready:
            handed_out = self.queue.popleft()
            st["triggers"] = (st["triggers"] + 1) & COUNTER_MASK
        oldest = self.in_flight.popleft()
        if oldest is not None:
            # A completed entry leaves ``armed_entries`` when its trigger enters the queue,
            # into the slot its arm reserved.
            self.queue.append(oldest)
            st["armed_entries"] -= 1
        assert len(self.queue) <= self.trigger_depth, "model: trigger queue overflow"

        # An arm is ordered before an update of the same cycle.
        if arm is not None and out.arm_ready:
            tile, threshold, dma_cmd = arm
            if threshold == 0:
                self._flag("err_zero_threshold", tile)
            elif tile in self.armed:
                self._flag("err_rearm", tile)
            else:
                self.armed[tile] = [0, threshold, dma_cmd]
                st["armed_entries"] += 1

        completion = None
        if update is not None and out.update_ready:
            tile, source = update
            key = "remote_updates" if source == REMOTE else "local_updates"
            st[key] = (st[key] + 1) & COUNTER_MASK
            entry = self.armed.get(tile)
            if entry is None:
                self._flag("err_unarmed_update", tile)
            else:
                entry[0] += 1
                if entry[0] == entry[1]:
                    del self.armed[tile]
                    completion = (tile, entry[2])
        self.in_flight.append(completion)
        assert self.reserved <= self.trigger_depth, "model: more reservations than queue slots"
        return handed_out
