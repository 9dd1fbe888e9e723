"""`--guide coverage`: a campaign that steers toward spec states no run has reached.

Theory of operation. A guided campaign keeps a corpus: the runs that
reached something new (an abstract spec state, an action pair, an action)
when they were taken in seed order. Each seed of the campaign (a slot) is
either a fresh swarm run, exactly the run a plain campaign gives that seed,
or a mutant of a corpus entry: the entry's seed under its fault plan mutated
(faults/mutation.py: shift, add, drop, retarget), or the entry's plan under
the slot's own seed (another workload and network). Entries that found more,
and rarer, things are picked more often, and each pick makes its entry less
likely to be picked again, so the budget spreads over what is new.

Determinism. The slots run in rounds of consecutive seeds
(FIRST_ROUND_SEEDS, doubling up to ROUND_SEEDS). A round's inputs are
decided before it starts, from the corpus that the rounds before it built,
with a random stream drawn from the guide's seed and the slot's number
alone; the round's results join the corpus in seed order after the whole
round is in. So which worker finished first never matters, one guide seed
always gives one campaign, and a resumed campaign rebuilds the corpus from
the database (each run's coverage and input are stored) and decides the
missing slots as the first attempt did.

A mutant is recorded with the seed it ran with (`run_seed`) and the plan it
carried out, so it replays (`tlasim repro`) and shrinks like any run.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tlasim.faults.mutation import mutate_plan
from tlasim.faults.plan import FaultPlan
from tlasim.protocols.errors import ConfigError
from tlasim.sim.api import crash_nodes, nodes
from tlasim.sim.campaign.records import SeedOutcome

__all__ = ["GUIDES", "ROUND_SEEDS", "Guide", "check_guide"]

GUIDES = ("none", "coverage")
ROUND_SEEDS = 50  # slots decided together, from the corpus of the rounds before
FIRST_ROUND_SEEDS = 10  # rounds start this small and double: guidance starts early
# Of a round's slots, the share of mutants follows which kind of run found
# more new states per run in the rounds before (mutants near a run that
# found much, or fresh seeds): most are mutants where a fine abstraction's
# states run out slowly near a corpus entry, few where every fresh run is
# new anyway. Never all of either, so neither kind goes unmeasured.
MUTANT_SHARE_FIRST, MUTANT_SHARE_MIN, MUTANT_SHARE_MAX = 0.5, 0.1, 0.9
YIELD_WEIGHT = 0.5  # how much the last round moves each kind's yield
FRESH_WORKLOAD_SHARE = 0.2  # of the mutants: the entry's plan under the slot's seed
# What an entry found, weighed: a new action pair or action is rarer than
# a new state, and a sign of behaviour the states alone do not show.
PAIR_WEIGHT, ACTION_WEIGHT = 20, 100


def check_guide(guide: str) -> str:
    if guide not in GUIDES:
        raise ConfigError(f"--guide {guide!r}: expected one of {', '.join(GUIDES)}")
    return guide


@dataclass(slots=True)
class _Entry:
    seed: int  # the slot that found it
    run_seed: int
    plan: FaultPlan
    score: float
    picked: int = 0

    @property
    def weight(self) -> float:
        return self.score / (1 + self.picked)


class Guide:
    """The corpus of a guided campaign, and the inputs it chooses for its slots."""

    def __init__(self, protocol: str, protocol_overrides: Mapping[str, Any] | None,
                 seeds: range, guide_seed: int) -> None:
        overrides = dict(protocol_overrides or {})
        self.seeds = seeds
        self.guide_seed = guide_seed
        self._nodes = nodes(protocol, **overrides)
        self._crash_nodes = crash_nodes(protocol, **overrides)
        self._corpus: list[_Entry] = []
        self._states: set[int] = set()
        self._pairs: set[tuple[str, str, str]] = set()
        self._actions: set[str] = set()
        self.origins: dict[int, str] = {}  # slot -> how its input was made (for reports)
        # New states per run, lately, of fresh runs and of mutants.
        self._yields: dict[bool, float | None] = {False: None, True: None}

    @property
    def mutant_share(self) -> float:
        fresh, mutant = self._yields[False], self._yields[True]
        if fresh is None or mutant is None:
            return MUTANT_SHARE_FIRST
        # Squared, so that a kind that finds twice as much gets four fifths.
        share = mutant**2 / (mutant**2 + fresh**2) if mutant or fresh else MUTANT_SHARE_FIRST
        return min(MUTANT_SHARE_MAX, max(MUTANT_SHARE_MIN, share))

    @property
    def corpus_size(self) -> int:
        return len(self._corpus)

    def rounds(self) -> Iterator[range]:
        start, size = self.seeds.start, FIRST_ROUND_SEEDS
        while start < self.seeds.stop:
            yield range(start, min(start + size, self.seeds.stop))
            start += size
            size = min(2 * size, ROUND_SEEDS)

    def inputs(self, slots: range) -> dict[int, tuple[int, str]]:
        """The round's mutants: slot -> (the seed it runs with, its plan as
        JSON); a slot left out is a fresh swarm run."""
        chosen: dict[int, tuple[int, str]] = {}
        share = self.mutant_share
        for slot in slots:
            rng = random.Random(f"tlasim-guide:{self.guide_seed}:{slot}")
            if not self._corpus or rng.random() >= share:
                self.origins[slot] = "fresh"
                continue
            parent = rng.choices(self._corpus, weights=[e.weight for e in self._corpus])[0]
            parent.picked += 1
            if rng.random() < FRESH_WORKLOAD_SHARE:
                run_seed, plan, what = slot, parent.plan, ["its plan, another workload"]
            else:
                plan, what = mutate_plan(rng, parent.plan, self._nodes, self._crash_nodes,
                                         count=rng.choice((1, 1, 2, 3)))
                run_seed = parent.run_seed
            chosen[slot] = (run_seed, plan.to_json())
            self.origins[slot] = f"from seed {parent.seed}: {', '.join(what) or 'unchanged'}"
        return chosen

    def observe(self, outcomes: Iterable[SeedOutcome]) -> None:
        """A finished round's runs join the corpus, in seed order, each
        that reached something no run before it had."""
        found: dict[bool, list[int]] = {False: [], True: []}
        for o in sorted(outcomes, key=lambda o: o.seed):
            reached = o.coverage
            if reached is None:
                continue
            states = len(reached.states - self._states)
            found[o.run_seed is not None].append(states)
            pairs = len(reached.pairs - self._pairs)
            actions = len(reached.actions - self._actions)
            self._states |= reached.states
            self._pairs |= reached.pairs
            self._actions |= reached.actions
            if states or pairs or actions:
                # A log of the states: a run of many states is not worth
                # many runs of a few.
                score = math.log2(1 + states) + PAIR_WEIGHT * pairs + ACTION_WEIGHT * actions
                self._corpus.append(_Entry(
                    o.seed, o.seed if o.run_seed is None else o.run_seed,
                    FaultPlan.from_json(o.plan_json), score,
                ))
        for mutant, news in found.items():
            if news:
                mean, last = sum(news) / len(news), self._yields[mutant]
                self._yields[mutant] = mean if last is None else last + YIELD_WEIGHT * (mean - last)
