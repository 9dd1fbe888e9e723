"""A campaign's spec coverage: its runs' coverage united, in seed order.

The union is taken in seed order, whatever order the workers finished in,
so one campaign gives one growth curve. A protocol's trace actions (every
action a trace line may carry) are what "of T actions" counts against; an
action no run took is a hole in the fault model or the workload, and is
named.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass, field

from tlasim.sim.coverage.run import RunCoverage

__all__ = ["CampaignCoverage", "campaign_coverage"]


@dataclass(slots=True)
class CampaignCoverage:
    """What a campaign's runs reached together, and how it grew run by run."""

    all_actions: frozenset[str]  # the protocol's trace actions
    states: set[int] = field(default_factory=set)
    actions: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str, str]] = field(default_factory=set)
    runs: int = 0
    growth: list[int] = field(default_factory=list)  # distinct states after each run

    def add(self, run: RunCoverage) -> None:
        self.states |= run.states
        self.actions |= run.actions
        self.pairs |= run.pairs
        self.runs += 1
        self.growth.append(len(self.states))

    @property
    def unreached(self) -> list[str]:
        """The protocol's actions that no run took, sorted."""
        return sorted(self.all_actions - self.actions)

    @property
    def reached_actions(self) -> int:
        """The protocol's actions some run took (an action outside them is not counted)."""
        return len(self.actions & self.all_actions)

    def line(self, runs: int | None = None) -> str:
        """The summary line; `runs`, the campaign's runs, when some did not
        measure their coverage (recorded by an older tlasim)."""
        measured = "" if runs is None or runs == self.runs else \
            f" (measured in {self.runs:,} of {runs:,} runs)"
        return (f"spec coverage: {len(self.states):,} states, {self.reached_actions} of "
                f"{len(self.all_actions)} actions, {len(self.pairs):,} action pairs{measured}")


def campaign_coverage(
    all_actions: Set[str], runs: Iterable[tuple[int, RunCoverage | None]]
) -> CampaignCoverage:
    """The coverage of runs given as (seed, coverage), united in seed order;
    a run that did not measure its coverage (None) is left out."""
    united = CampaignCoverage(frozenset(all_actions))
    for _seed, run in sorted(runs, key=lambda item: item[0]):
        if run is not None:
            united.add(run)
    return united
