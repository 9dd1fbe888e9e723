"""Which fraction of the spec's reachable states a campaign and the explorer reach.

`spec_coverage` sets side by side, at the same small constants (the
conformance model's `coverage` bound, `reachable.reachable`):
- TLC's reachable abstract states;
- those a campaign's runs reached: a real campaign, plain or guided
  (`sweep.run_campaign`), at the small constants' protocol options;
- those the explorer reached, over the workloads of the first seeds.

TLC's model must be finite, so it is bounded, and a run is not: it may
hold more messages in flight, or more nodes down, than the bound lets TLC
explore. A run state outside TLC's set is then counted apart, not as
missed. It could also be a mismatch, a state that the code and TLC print
differently and so hash differently; to tell, TLC prints each state outside
its set back (up to `OUTSIDE_CHECKED` per side) and a state whose hash
changes on the way is counted as mismatched, which must be 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tlasim.faults.plan import FaultPlan
from tlasim.protocols.definition import ProtocolDefinition, StepInfo
from tlasim.protocols.errors import ConfigError
from tlasim.sim.campaign.records import SeedOutcome
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.coverage.reachable import (
    SpecStates,
    printed_back,
    reachable,
    same_variables,
    state_hash,
)
from tlasim.sim.coverage.run import CoverageRecorder, abstraction_of
from tlasim.sim.explore.search import SearchBounds, explore
from tlasim.sim.explore.system import FaultBounds
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.rng import split
from tlasim.sim.run.runner import build_simulation

__all__ = ["OUTSIDE_CHECKED", "CampaignPlan", "ExplorePlan", "SideCoverage", "SpecCoverage",
           "spec_coverage"]

OUTSIDE_CHECKED = 500  # states outside TLC's set that TLC prints back, per side


@dataclass(frozen=True, slots=True)
class CampaignPlan:
    seeds: range
    workers: int = 1
    guide: str = "none"
    guide_seed: int = 0


@dataclass(frozen=True, slots=True)
class ExplorePlan:
    faults: FaultBounds
    states: int  # distinct states per workload
    workloads: int = 1  # the workloads of seeds 0, 1, ...


@dataclass(frozen=True, slots=True)
class SideCoverage:
    """What one side (a campaign, or the explorer) reached."""

    name: str
    reached: frozenset[int]  # abstract states, within TLC's set or not
    within: int  # of them, in TLC's reachable set
    runs: int  # runs measured, or states the explorer found
    skipped: int  # runs (or workloads) whose workload gives other constants than TLC's
    exhausted: bool  # the explorer searched its whole bound (a campaign: True)
    seconds: float
    # States outside TLC's set, up to OUTSIDE_CHECKED, and how many of them
    # TLC printed back with another hash: a mismatch of the two sides.
    outside_sample: tuple[Mapping[str, Any], ...] = ()
    mismatched: int = 0

    @property
    def outside(self) -> int:
        return len(self.reached) - self.within

    def fraction(self, spec: SpecStates) -> float:
        return self.within / len(spec.states) if spec.states else 0.0


@dataclass(frozen=True, slots=True)
class SpecCoverage:
    spec: SpecStates
    sides: tuple[SideCoverage, ...]


class _Kept(CoverageRecorder):
    """A run's recorder that also keeps each step's spec variables (which
    never change after their step, so keeping them is keeping the state)."""

    __slots__ = ("steps",)

    def __init__(self, protocol: ProtocolDefinition) -> None:
        super().__init__(abstraction_of(protocol))
        self.steps: list[Mapping[str, Any]] = []

    def step(self, node: str | None, action: str, spec_vars: Mapping[str, Any]) -> None:
        self.steps.append(spec_vars)
        super().step(node, action, spec_vars)


def _config_at(protocol: ProtocolDefinition, spec: SpecStates, seed: int) -> Any | None:
    """The configuration of `seed`'s workload, if it gives TLC's constants."""
    config = protocol.configure(protocol.make_options(dict(spec.options)), None,
                                split(seed).workload)
    return config if dict(protocol.spec_constants(config)) == dict(spec.constants) else None


def _outside(protocol: ProtocolDefinition, spec: SpecStates, sample: dict[int, Mapping[str, Any]],
             spec_vars: Mapping[str, Any]) -> None:
    if len(sample) < OUTSIDE_CHECKED:
        found = state_hash(protocol, spec_vars)
        if found not in spec.states:
            sample.setdefault(found, spec_vars)


def _rerun(protocol: ProtocolDefinition, spec: SpecStates, outcome: SeedOutcome
           ) -> list[Mapping[str, Any]]:
    """The spec variables of every step of a campaign's run, run again."""
    if outcome.run_seed is None:
        sim = build_simulation(protocol, outcome.seed, protocol_overrides=dict(spec.options))
    else:  # a guided campaign's run: its own seed under the plan it was given
        sim = build_simulation(protocol, outcome.run_seed, protocol_overrides=dict(spec.options),
                               options=SimOptions(faults=FaultPlan.from_json(outcome.plan_json)))
    sim.coverage = kept = _Kept(protocol)
    sim.run()
    return kept.steps


def campaign_side(protocol: ProtocolDefinition, spec: SpecStates, plan: CampaignPlan,
                  progress: Callable[[str], None] | None = None) -> SideCoverage:
    started = time.monotonic()
    outcomes = run_campaign(protocol.name, plan.seeds, validate="none", workers=plan.workers,
                            protocol_overrides=dict(spec.options), guide=plan.guide,
                            guide_seed=plan.guide_seed)
    reached: set[int] = set()
    measured = []
    for outcome in outcomes:
        run_as = outcome.seed if outcome.run_seed is None else outcome.run_seed
        if outcome.coverage is not None and _config_at(protocol, spec, run_as) is not None:
            reached |= outcome.coverage.states
            measured.append(outcome)
    seconds = time.monotonic() - started
    if progress is not None:
        progress(f"campaign: {len(outcomes)} runs in {seconds:.0f} s")
    # The runs that went outside TLC's set, again, for those states' values.
    sample: dict[int, Mapping[str, Any]] = {}
    for outcome in measured:
        if len(sample) >= OUTSIDE_CHECKED:
            break
        assert outcome.coverage is not None
        if not outcome.coverage.states <= spec.states:
            steps = _rerun(protocol, spec, outcome)
            same_variables(protocol, steps[0], "a run's spec variables")
            for spec_vars in steps:
                _outside(protocol, spec, sample, spec_vars)
    name = "campaign" if plan.guide == "none" else f"guided ({plan.guide})"
    return SideCoverage(name, frozenset(reached), len(reached & spec.states), len(measured),
                        len(outcomes) - len(measured), True, seconds, tuple(sample.values()))


def explorer_side(protocol: ProtocolDefinition, spec: SpecStates, plan: ExplorePlan,
                  progress: Callable[[str], None] | None = None) -> SideCoverage:
    started = time.monotonic()
    reached: set[int] = set()
    sample: dict[int, Mapping[str, Any]] = {}
    states = skipped = 0
    exhausted = True

    # The explorer's steps come from states in no order: each is hashed afresh.
    def on_step(_before: Mapping[str, Any], _step: StepInfo, after: Mapping[str, Any],
                _path: Any) -> None:
        if not reached:
            same_variables(protocol, after, "the explorer's spec variables")
        found = state_hash(protocol, after)
        reached.add(found)
        if found not in spec.states and len(sample) < OUTSIDE_CHECKED:
            sample.setdefault(found, after)

    for seed in range(plan.workloads):
        config = _config_at(protocol, spec, seed)
        if config is None:
            skipped += 1
            continue
        result = explore(protocol, config, SearchBounds(plan.faults, max_states=plan.states),
                         on_step=on_step)
        states += result.states
        exhausted = exhausted and result.exhausted
        if progress is not None:
            progress(f"explorer, workload of seed {seed}: {result.states} states")
    if skipped == plan.workloads:
        raise ConfigError(f"none of the workloads of seeds 0 to {plan.workloads - 1} gives "
                          "TLC's constants: explore more workloads")
    return SideCoverage("explorer", frozenset(reached), len(reached & spec.states), states,
                        skipped, exhausted, time.monotonic() - started, tuple(sample.values()))


def _judged(protocol: ProtocolDefinition, spec: SpecStates, sides: Sequence[SideCoverage],
            timeout_s: float | None) -> tuple[SideCoverage, ...]:
    """Each side with its mismatches: the states outside TLC's set whose hash
    TLC's printing changes (one TLC run for every side's sample)."""
    states = [s for side in sides for s in side.outside_sample]
    if not states:
        return tuple(sides)
    printed = printed_back(protocol, spec, states, timeout_s=timeout_s)
    return tuple(
        replace(side, mismatched=len({state_hash(protocol, s) for s in side.outside_sample}
                                     - printed))
        for side in sides)


def spec_coverage(
    protocol: ProtocolDefinition,
    *,
    campaigns: Sequence[CampaignPlan] = (),
    explorer: ExplorePlan | None = None,
    options: Mapping[str, Any] | None = None,
    bound: Mapping[str, Any] | None = None,
    spec_dirs: Sequence[Path] | None = None,
    timeout_s: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> SpecCoverage:
    """TLC's reachable abstract states at the model's coverage constants
    (`options` and `bound` over them), and which of them each campaign and
    the explorer reached there."""
    spec = reachable(protocol, options=options, bound=bound, spec_dirs=spec_dirs,
                     timeout_s=timeout_s)
    if progress is not None:
        progress(f"TLC: {spec.tlc_states} states of {spec.module} "
                 f"({len(spec.states)} abstract) in {spec.seconds:.0f} s")
    sides = [campaign_side(protocol, spec, plan, progress) for plan in campaigns]
    if explorer is not None:
        sides.append(explorer_side(protocol, spec, explorer, progress))
    return SpecCoverage(spec, _judged(protocol, spec, sides, timeout_s))
