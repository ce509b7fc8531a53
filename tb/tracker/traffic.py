"""Reactive generator of legal tracker traffic (pure Python), shared by the benches."""

from __future__ import annotations

from tb.tracker.model import LOCAL, REMOTE

__all__ = ["LegalTraffic"]


class LegalTraffic:
    """Reactive generator of error-free arm/update traffic.

    A tile is armed with a random threshold and then receives exactly that many updates;
    it returns to the free pool when its last update is accepted, so it may be re-armed in
    the very next cycle. An update may target a tile whose arm is offered in the same
    cycle (the arm port is always ready and ordered first).

    Parameters
    ----------
    tiles : list of int
        Tile ids this generator may use.
    arms : int
        Arms to issue before the generator stops.
    max_threshold : int
        Largest threshold drawn.
    max_in_flight : int
        Most tiles armed at once.
    repeat_tile : float
        Probability that an update goes to the same tile as the previous one.
    """

    def __init__(self, rng, *, tiles, arms, max_threshold, dma_cmd_limit, max_in_flight,
                 repeat_tile=0.3):
        self.rng = rng
        self.free = list(tiles)
        self.arms_left = arms
        self.max_threshold = max_threshold
        self.dma_cmd_limit = dma_cmd_limit
        self.max_in_flight = max_in_flight
        self.repeat_tile = repeat_tile
        self.remaining: dict[int, int] = {}  # armed tile -> updates still to offer
        self.last_tile: int | None = None
        self.arms_issued: list[tuple[int, int]] = []

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
        if self.arms_left == 0 or not self.free or len(self.remaining) >= self.max_in_flight:
            return None
        tile = self.free.pop(self.rng.randrange(len(self.free)))
        threshold = self._threshold()
        dma_cmd = self.rng.randrange(self.dma_cmd_limit)
        self.arms_left -= 1
        self.remaining[tile] = threshold
        self.arms_issued.append((tile, dma_cmd))
        return {"tile": tile, "threshold": threshold, "dma_cmd": dma_cmd}

    def next_update(self) -> dict | None:
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

    def done(self) -> bool:
        return self.arms_left == 0 and not self.remaining
