"""How many seeds go in each batch a campaign hands to its workers.

Handing out a batch costs something fixed: a pickle each way for the pool,
and for Dask a task through the scheduler, the client and the worker's
event loop (milliseconds, and the worker's task thread shares the GIL with
that loop while it runs). A twopc seed takes a few milliseconds, so ten
seeds a batch spent a third of a LocalCluster's time on handing out. Too
large a batch has costs too: the progress bars and the results database
move in larger jumps, and at the end of a campaign one worker runs its last
big batch while the others wait.

So batches are sized by time, learnt as the campaign runs: each aims at
BATCH_TARGET_SECONDS of a worker's time at the recent pace (a moving
average over the batches that came back, so a worker's first batches,
slowed by starting its TLC, are soon forgotten), and holds no more than an
even share of what is left, so the last batches spread over every slot;
but no less than TAIL_BATCH_SECONDS' worth, so the tail is not handed out
one seed at a time. The first batches, sent before any is back, are small.
Which seeds share a batch changes nothing a seed does, only when its
result arrives.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

__all__ = ["BATCH_TARGET_SECONDS", "FIRST_BATCH_SEEDS", "BatchSizer"]

BATCH_TARGET_SECONDS = 0.3  # a worker's time per batch, once the pace is known
TAIL_BATCH_SECONDS = 0.05  # the least a batch holds, at the end of a campaign
PACE_WEIGHT = 0.3  # how much the last batch moves the pace
FIRST_BATCH_SEEDS = 10  # seeds per batch before any batch came back
MAX_BATCH_SEEDS = 2000  # however fast the seeds, so progress still moves


class BatchSizer:
    """The batches of `seeds`, sized as the measured pace says; `observe`
    tells it how long each finished batch took its worker."""

    def __init__(self, seeds: Sequence[int], slots: int, *, fixed: int | None = None,
                 in_flight_per_slot: int = 1) -> None:
        """`slots`: batches that run at once (worker processes or threads);
        `fixed`: every batch this size, whatever the pace."""
        self._seeds = seeds
        self._fixed = fixed
        # Each slot keeps `in_flight_per_slot` batches queued; the tail is
        # shared out over all of them.
        self._spread = max(1, slots * max(1, in_flight_per_slot))
        self._lock = threading.Lock()
        self._pace: float | None = None  # a worker's seconds per seed, lately

    def observe(self, seeds: int, seconds: float) -> None:
        """A batch of `seeds` seeds took its worker `seconds`."""
        if seeds <= 0 or seconds < 0:
            return
        rate = seconds / seeds
        with self._lock:
            pace = self._pace
            self._pace = rate if pace is None else pace + PACE_WEIGHT * (rate - pace)

    def size(self, left: int) -> int:
        """The next batch's size, with `left` seeds still to hand out."""
        if self._fixed is not None:
            return self._fixed
        share = max(1, left // self._spread)
        with self._lock:
            pace = self._pace
        if pace is None:
            return min(FIRST_BATCH_SEEDS, share)
        # In seeds, capped before rounding: a pace near 0 makes them infinite.
        if pace <= 0:
            wanted = least = float(MAX_BATCH_SEEDS)
        else:
            wanted = min(BATCH_TARGET_SECONDS / pace, MAX_BATCH_SEEDS, share)
            least = min(TAIL_BATCH_SECONDS / pace, MAX_BATCH_SEEDS)
        return max(1, min(round(max(wanted, least)), left))

    def __iter__(self) -> Iterator[list[int]]:
        start = 0
        total = len(self._seeds)
        while start < total:
            end = start + self.size(total - start)
            yield list(self._seeds[start:end])
            start = end
