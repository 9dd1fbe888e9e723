"""Shrink a failing run's fault plan to the smallest one that still breaks the same property.

The seed stays fixed, so the workload and the network's latencies stay the
same; only the faults change. A candidate plan counts as "still failing"
only if it breaks the same property (the oracle's name, such as
`agreement`), so shrinking never slides from one bug to a different one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tlasim.faults.plan import FaultPlan
from tlasim.faults.shrink import ShrinkResult, shrink_plan
from tlasim.protocols.errors import ConfigError
from tlasim.sim.api import Outcome, nodes, run
from tlasim.sim.kernel.simulation import OUTCOME_OK


def broken_property(outcome: Outcome) -> str | None:
    """The name of the property a run broke (`agreement`, `liveness`, ...), or None."""
    if outcome.result.outcome == OUTCOME_OK or not outcome.result.failure:
        return None
    return outcome.result.failure.split(":", 1)[0]


@dataclass(slots=True)
class ShrunkFailure:
    original: Outcome
    shrunk: Outcome
    shrink: ShrinkResult


def shrink_failure(
    protocol: str,
    seed: int,
    *,
    bug: str | None = None,
    plan: FaultPlan | None = None,
    options: Mapping[str, Any] | None = None,
    max_runs: int = 300,
) -> ShrunkFailure:
    """Run `seed` (under `plan`, or its swarm plan), then shrink the plan it fails with."""
    original = run(protocol, plan, seed=seed, bug=bug, options=options)
    target = broken_property(original)
    if target is None:
        raise ConfigError(
            f"{protocol} seed {seed} passes"
            + (f" with bug {bug}" if bug else "")
            + ": there is no failure to shrink"
        )

    def still_fails(candidate: FaultPlan) -> bool:
        outcome = run(protocol, candidate, seed=seed, bug=bug, options=options)
        return broken_property(outcome) == target

    result = shrink_plan(
        original.result.plan,
        still_fails,
        max_runs=max_runs,
        nodes=nodes(protocol, **dict(options or {})),
    )
    shrunk = run(protocol, result.plan, seed=seed, bug=bug, options=options)
    return ShrunkFailure(original, shrunk, result)
