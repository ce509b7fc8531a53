"""Reactive generator of legal tracker traffic (pure Python), shared by the benches."""

from __future__ import annotations

from collections.abc import Callable

from tb.tracker.model import LOCAL, REMOTE

__all__ = ["LegalTraffic"]


class LegalTraffic:
    """Reactive generator of error-free arm/update traffic.

    A tile is armed with a random threshold and then receives exactly that many updates;
    it returns to the free pool when its last update is accepted, so it may be re-armed in
    the very next cycle.

    ``arm`` can be back-pressured (the tracker reserves a trigger-queue slot per armed
    entry), so a tile's updates are offered only once its arm is accepted: in a later
    cycle, or in the arm's own cycle when ``arm_accepting()`` says that the arm offered
    now is taken now (an arm is ordered before an update of the same cycle). The bench
    calls :meth:`on_arm_accepted` and :meth:`on_update_accepted` for every handshake.

    After a DUT reset the tracker has forgotten every arm: :meth:`on_reset` returns the
    armed and offered tiles to the free pool, and the bench drops whatever its sources
    held (an update offered before the reset would now be an update of an unarmed tile).
    The arms lost to the reset are not reissued; the remaining budget goes on.

    Parameters
    ----------
    tiles : list of int
        Tile ids this generator may use.
    arms : int
        Arms to issue before the generator stops.
    max_threshold : int
        Largest threshold drawn.
    max_in_flight : int
        Most tiles armed (or offered for arming) at once.
    repeat_tile : float
        Probability that an update goes to the same tile as the previous one.
    arm_accepting : callable, optional
        ``arm_accepting()`` is the tile of the arm that is offered in this cycle and will
        be accepted in it, or None. Without it, updates wait for the arm's handshake.
    """

    def __init__(self, rng, *, tiles, arms, max_threshold, dma_cmd_limit, max_in_flight,
                 repeat_tile=0.3, arm_accepting: Callable[[], int | None] | None = None):
        self.rng = rng
        self.free = list(tiles)
        self.arms_left = arms
        self.max_threshold = max_threshold
        self.dma_cmd_limit = dma_cmd_limit
        self.max_in_flight = max_in_flight
        self.repeat_tile = repeat_tile
        self.arm_accepting = arm_accepting
        self.offered: dict[int, int] = {}    # tile -> threshold, arm offered, not yet accepted
        self.remaining: dict[int, int] = {}  # armed tile -> updates still to offer
        self.last_tile: int | None = None
        self.arms_issued: list[tuple[int, int]] = []
        self.arms_lost = 0

    def _threshold(self) -> int:
        r = self.rng.random()
        if r < 0.6:
            hi = 8
        elif r < 0.9:
            hi = 64
        else:
            hi = 300
        return self.rng.randint(1, min(hi, self.max_threshold))

    def next_arm(self) -> dict | None:
        if (self.arms_left == 0 or not self.free
                or len(self.remaining) + len(self.offered) >= self.max_in_flight):
            return None
        tile = self.free.pop(self.rng.randrange(len(self.free)))
        threshold = self._threshold()
        dma_cmd = self.rng.randrange(self.dma_cmd_limit)
        self.arms_left -= 1
        self.offered[tile] = threshold
        self.arms_issued.append((tile, dma_cmd))
        return {"tile": tile, "threshold": threshold, "dma_cmd": dma_cmd}

    def _armed(self, tile: int) -> None:
        if tile in self.offered:
            self.remaining[tile] = self.offered.pop(tile)

    def on_arm_accepted(self, item: dict) -> None:
        self._armed(item["tile"])

    def next_update(self) -> dict | None:
        arming = self.arm_accepting() if self.arm_accepting is not None else None
        if arming is not None:
            self._armed(arming)  # its arm is taken in this cycle, before this update
        if not self.remaining:
            return None
        if self.last_tile in self.remaining and self.rng.random() < self.repeat_tile:
            tile = self.last_tile
        else:
            tile = self.rng.choice(list(self.remaining))
        self.remaining[tile] -= 1
        last = self.remaining[tile] == 0
        if last:
            del self.remaining[tile]
        self.last_tile = tile
        return {"tile": tile, "source": self.rng.choice((LOCAL, REMOTE)), "_last": last}

    def on_update_accepted(self, item: dict) -> None:
        if item.get("_last"):
            self.free.append(item["tile"])

    def on_reset(self, offered_update: dict | None = None) -> None:
        """The DUT was reset: every armed or offered tile is free again.

        ``offered_update`` is the update the bench's source held (offered, not accepted):
        its tile, if that was its last update, is no longer in :attr:`remaining`.
        """
        lost = set(self.offered) | set(self.remaining)
        if offered_update is not None:
            lost.add(offered_update["tile"])
        self.arms_lost += len(lost)
        self.free.extend(sorted(lost))
        self.offered.clear()
        self.remaining.clear()
        self.last_tile = None

    def done(self) -> bool:
        return self.arms_left == 0 and not self.remaining and not self.offered
