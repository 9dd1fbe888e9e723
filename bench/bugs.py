"""How fast swarm sweeps find each bug: median seeds to the first failure.

For each bug variant of a protocol, sweeps start at `starts` different
offsets (1000 seeds apart, so no two sweeps share a seed) and count the seeds
run until the first failure of any kind (safety or liveness). The median over
those sweeps is the figure; a sweep that finds nothing within `budget` seeds
counts as `budget` and is reported as a miss. The budget bounds the cost of a
variant that swarm faults rarely expose.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from tlasim.protocols import get_protocol
from tlasim.sim.kernel.simulation import OUTCOME_OK
from tlasim.sim.run.runner import run_seed


@dataclass(frozen=True)
class SeedsToFailure:
    protocol: str
    bug: str
    counts: tuple[int, ...]
    misses: int  # sweeps that hit the budget without a failure

    @property
    def median(self) -> float:
        return statistics.median(self.counts)


def seeds_to_first_failure(protocol: str, bug: str, start: int, budget: int) -> int | None:
    for n, seed in enumerate(range(start, start + budget), start=1):
        if run_seed(protocol, seed, bug=bug).result.outcome != OUTCOME_OK:
            return n
    return None


def run(protocol: str = "twopc", starts: int = 15, budget: int = 400) -> list[SeedsToFailure]:
    figures = []
    for bug in get_protocol(protocol).bugs:
        counts, misses = [], 0
        for i in range(starts):
            found = seeds_to_first_failure(protocol, bug, 1000 * i, budget)
            if found is None:
                misses += 1
            counts.append(found or budget)
        figures.append(SeedsToFailure(protocol, bug, tuple(counts), misses))
    return figures
