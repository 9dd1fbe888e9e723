"""Guided against plain swarm, side by side: seeds to each bug's first failure,
and the spec coverage each reaches after a given number of runs.

Both modes run the same slots in the same rounds (`guide.ROUND_SEEDS`), in
this process, without TLC: a plain slot is its own seed's swarm run, a guided
one is what `--guide coverage` chooses. A guided campaign's first round has
no corpus yet, so it is the plain campaign's first round: a bug that plain
swarm finds within it is found at the same seed by both. Sweeps start at
`starts` offsets, 100,000 seeds apart, and the guide's seed is the sweep's
number; the median over them is the figure, and a sweep that finds nothing
within `budget` counts as `budget` and as a miss.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from tlasim.protocols import get_protocol
from tlasim.sim.campaign.batch import run_batch
from tlasim.sim.campaign.guide import Guide
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.coverage.campaign import campaign_coverage
from tlasim.sim.kernel.simulation import OUTCOME_OK

MODES = ("plain", "guided")


@dataclass(frozen=True)
class FirstFailures:
    protocol: str
    bug: str
    mode: str
    seeds: tuple[int, ...]  # per sweep: seeds run up to the first failure (budget: a miss)
    seconds: tuple[float, ...]  # per sweep: until the round holding it was done
    misses: int

    @property
    def median_seeds(self) -> float:
        return statistics.median(self.seeds)

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds)


def first_failure(protocol: str, bug: str, mode: str, start: int, budget: int,
                  guide_seed: int) -> tuple[int | None, float]:
    """Seeds run until the first failure (None: none within `budget`), and seconds."""
    guide = Guide(protocol, None, range(start, start + budget), guide_seed)
    began = time.perf_counter()
    for slots in guide.rounds():
        inputs = guide.inputs(slots) if mode == "guided" else {}
        ran = run_batch(protocol, list(slots), bug, "none", None, inputs=inputs)
        failing = [o.seed for o in ran.outcomes if o.outcome != OUTCOME_OK]
        if failing:
            return min(failing) - start + 1, time.perf_counter() - began
        guide.observe(ran.outcomes)
    return None, time.perf_counter() - began


def first_failures(protocol: str, starts: int = 5, budget: int = 400) -> list[FirstFailures]:
    figures = []
    for bug in get_protocol(protocol).bugs:
        for mode in MODES:
            seeds, seconds, misses = [], [], 0
            for i in range(starts):
                found, took = first_failure(protocol, bug, mode, 100_000 * i, budget, i)
                misses += found is None
                seeds.append(found or budget)
                seconds.append(took)
            figures.append(FirstFailures(protocol, bug, mode, tuple(seeds), tuple(seconds),
                                         misses))
    return figures


@dataclass(frozen=True)
class Reached:
    protocol: str
    mode: str
    runs: int
    states: int
    pairs: int
    actions: int
    seconds: float


def coverage_after(protocol: str, marks: tuple[int, ...],
                   overrides: dict[str, int] | None = None,
                   workers: int = 2) -> dict[str, list[Reached]]:
    """Each mode's campaign coverage after each of `marks` runs (seeds 0 up,
    one campaign per mode, as long as the last mark), side by side."""
    reached: dict[str, list[Reached]] = {}
    actions = get_protocol(protocol).trace_actions
    for mode in MODES:
        began = time.perf_counter()
        outcomes = run_campaign(protocol, range(0, max(marks)), validate="none",
                                workers=workers, guide="coverage" if mode == "guided" else "none",
                                protocol_overrides=overrides)
        took = time.perf_counter() - began
        reached[mode] = []
        for mark in marks:
            united = campaign_coverage(actions, ((o.seed, o.coverage) for o in outcomes[:mark]))
            reached[mode].append(Reached(protocol, mode, mark, len(united.states),
                                         len(united.pairs), united.reached_actions,
                                         took * mark / len(outcomes)))
    return reached
