"""How fast swarm sweeps find each bug: median seeds to the first failure.

For each bug variant, sweeps start at `starts` different offsets (1000 seeds
apart, so no two sweeps share a seed) and count the seeds run until the
first oracle failure. The median over those sweeps is the figure; a sweep
that finds nothing within `budget` seeds counts as `budget` and is reported.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from protocols.twopc.bugs import BUGS
from sim.kernel import OUTCOME_OK
from sim.runner import run_seed


@dataclass(frozen=True)
class SeedsToFailure:
    bug: str
    counts: tuple[int, ...]
    misses: int  # sweeps that hit the budget without a failure

    @property
    def median(self) -> float:
        return statistics.median(self.counts)


def seeds_to_first_failure(bug: str, start: int, budget: int) -> int | None:
    for n, seed in enumerate(range(start, start + budget), start=1):
        if run_seed("twopc", seed, bug=bug).result.outcome != OUTCOME_OK:
            return n
    return None


def run(starts: int = 15, budget: int = 400) -> list[SeedsToFailure]:
    figures = []
    for bug in BUGS:
        counts, misses = [], 0
        for i in range(starts):
            found = seeds_to_first_failure(bug, 1000 * i, budget)
            if found is None:
                misses += 1
            counts.append(found or budget)
        figures.append(SeedsToFailure(bug, tuple(counts), misses))
    return figures
