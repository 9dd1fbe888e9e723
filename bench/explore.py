"""The explorer's states per second beside TLC's, on the same constants.

Each row explores a protocol's implementation with `tlasim explore` and runs
the manifest's TLC check of its spec whose constants match, one after the
other in this process. The two count different things: the explorer counts
whole-system states (every core's volatile state, disks, timers, messages),
and TLC counts spec states, after its symmetry reduction where the config
asks for one. So the ratio compares speeds, not state spaces. A row whose
explorer run is cut by its time limit still measures a rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tlasim.protocols import get_protocol
from tlasim.sim.explore.search import SearchBounds, explore
from tlasim.sim.explore.system import FaultBounds
from tlasim.sim.kernel.rng import split
from tlasim.tracing.tla.speccheck import check_specs


@dataclass(frozen=True)
class Row:
    label: str
    explorer_states: int
    explorer_seconds: float
    explorer_exhausted: bool
    tlc_check: str
    tlc_states: int
    tlc_seconds: float

    @property
    def explorer_rate(self) -> float:
        return self.explorer_states / self.explorer_seconds

    @property
    def tlc_rate(self) -> float:
        return self.tlc_states / self.tlc_seconds


# (label, protocol, options, fault bounds, depth, seconds allowed, manifest check)
CASES: tuple[tuple[str, str, dict[str, Any], FaultBounds, int | None, float, str], ...] = (
    ("twopc, 2 RMs, 1 tx, 1 crash, 1 loss, 1 dup, depth 10", "twopc",
     {"rm_count": 2, "tx_count": 1}, FaultBounds(1, 1, 1), 10, 120.0, "twopc-safety"),
    ("lockfree-stack, 2 threads, 3 nodes, 3 ops", "lockfree-stack",
     {"thread_count": 2, "node_count": 3, "ops_per_thread": 3}, FaultBounds(), None, 120.0,
     "lockfree-stack"),
    ("lockfree-queue, 3 threads, 4 nodes, 4 ops (60 s)", "lockfree-queue",
     {"thread_count": 3, "node_count": 4, "ops_per_thread": 4}, FaultBounds(), None, 60.0,
     "lockfree-queue"),
)


def run() -> list[Row]:
    rows = []
    for label, protocol, options, faults, depth, seconds, check in CASES:
        definition = get_protocol(protocol)
        config = definition.configure(definition.make_options(options), None, split(0).workload)
        found = explore(definition, config, SearchBounds(faults, max_depth=depth,
                                                         time_limit=seconds))
        (tlc,) = check_specs(names=[check])
        rows.append(Row(label, found.states, found.seconds, found.exhausted, check,
                        tlc.distinct_states or 0, tlc.seconds))
    return rows


@dataclass(frozen=True)
class Projection:
    label: str
    implementation_states: int
    projected_states: int
    projected_steps: int
    tlc_check: str
    tlc_states: int


def projection() -> Projection:
    """The spec states the implementation reaches, beside TLC's count for the
    same constants (twopc, RM = {r1, r2}, Tx = {t1}). TLC's check bounds the
    bag (MaxCopies 2, MaxInFlight 3) and counts up to symmetry; the
    explorer's bound is 1 crash, 1 loss, 1 duplicate and 9 moves."""
    from tlasim.sim.explore.differential import collect

    definition = get_protocol("twopc")
    config = definition.configure(
        definition.make_options({"rm_count": 2, "tx_count": 1}), None, split(0).workload
    )
    found = collect(definition, config, SearchBounds(FaultBounds(1, 1, 1), max_depth=9))
    (tlc,) = check_specs(names=["twopc-safety"])
    return Projection(
        "twopc, 2 RMs, 1 tx, 1 crash, 1 loss, 1 dup, depth 9",
        found.exploration.states, len(found.states), len(found.witnesses),
        "twopc-safety", tlc.distinct_states or 0,
    )


@dataclass(frozen=True)
class Reduction:
    label: str
    reduction: str  # "--reduce", "--symmetry" or "both"
    plain_states: int
    plain_moves: int
    plain_seconds: float
    reduced_states: int
    reduced_moves: int
    reduced_seconds: float


# (label, options, fault bounds, depth): twopc with every RM voting yes, so
# that the workload leaves the RMs interchangeable.
REDUCTION_CASES: tuple[tuple[str, dict[str, Any], FaultBounds, int], ...] = (
    ("twopc, 2 RMs, 1 tx, depth 12", {"rm_count": 2}, FaultBounds(), 12),
    ("twopc, 3 RMs, 1 tx, depth 12", {"rm_count": 3}, FaultBounds(), 12),
    ("twopc, 3 RMs, 1 tx, 1 crash, depth 9", {"rm_count": 3}, FaultBounds(crashes=1), 9),
)


def reductions() -> list[Reduction]:
    """What each reduction saves: the same bound searched without it and with
    it, back to back in this process."""
    definition = get_protocol("twopc")
    rows = []
    for label, options, faults, depth in REDUCTION_CASES:
        all_yes = {"tx_count": 1, "no_vote_probability": 0, "self_abort_probability": 0,
                   **options}
        config = definition.configure(definition.make_options(all_yes), None, split(0).workload)
        plain = explore(definition, config, SearchBounds(faults, max_depth=depth))
        for flag, bounds in (
            ("--reduce", SearchBounds(faults, max_depth=depth, reduce=True)),
            ("--symmetry", SearchBounds(faults, max_depth=depth, symmetry=True)),
            ("both", SearchBounds(faults, max_depth=depth, reduce=True, symmetry=True)),
        ):
            reduced = explore(definition, config, bounds)
            rows.append(Reduction(label, flag, plain.states, plain.transitions, plain.seconds,
                                  reduced.states, reduced.transitions, reduced.seconds))
    return rows
