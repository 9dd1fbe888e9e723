"""Symmetry reduction in the explorer (sim/explore/symmetry.py).

The reduction is sound only if the protocol keeps its promise (renaming
interchangeable nodes maps runs to runs) and the renaming reaches every
node id in the state. The closure test checks both at once on twopc: the
states reachable within a bound are closed under every kept permutation.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.sim import exitcodes
from tlasim.sim.explore.canonical import EmbeddedName, Renaming, canonical, state_digest
from tlasim.sim.explore.search import BFS, DFS, FOUND_SAFETY, SearchBounds, explore
from tlasim.sim.explore.symmetry import symmetry_of
from tlasim.sim.explore.system import ExploredSystem, FaultBounds
from tlasim.sim.kernel.rng import split

TWOPC = get_protocol("twopc")
ALL_YES = {"tx_count": 1, "no_vote_probability": 0, "self_abort_probability": 0}


def twopc_config(rm_count: int, bug: str | None = None, **options: Any) -> Any:
    overrides = {**ALL_YES, "rm_count": rm_count, **options}
    return TWOPC.configure(TWOPC.make_options(overrides), bug, split(0).workload)


def reachable(config: Any, faults: FaultBounds, depth: int) -> list[ExploredSystem]:
    """Every state within `depth` moves, by a plain search of the system's own moves."""
    root = ExploredSystem(TWOPC, config, faults)
    root.initial_step()
    states = {root.digest(): root.freeze()}
    queue = deque([(root.freeze(), 0)])
    while queue:
        frozen, level = queue.popleft()
        if level == depth:
            continue
        for move in ExploredSystem.thaw(frozen, TWOPC).moves():
            twin = ExploredSystem.thaw(frozen, TWOPC)
            twin.apply(move)
            digest = twin.digest()
            if digest not in states:
                states[digest] = twin.freeze()
                queue.append((states[digest], level + 1))
    return [ExploredSystem.thaw(frozen, TWOPC) for frozen in states.values()]


def one_no(config: Any) -> Any:
    """`config` with r1 voting No: only r2 and r3 stay interchangeable."""
    plan = config.txs[0]
    return replace(config, txs=(replace(plan, votes={**plan.votes, "r1": "no"}),))


@pytest.mark.parametrize(("workload", "kept", "depth"), [("all yes", 6, 7), ("r1 no", 2, 6)])
def test_the_states_twopc_reaches_are_closed_under_every_kept_permutation(
    workload: str, kept: int, depth: int
) -> None:
    config = twopc_config(3) if workload == "all yes" else one_no(twopc_config(3))
    symmetry = symmetry_of(TWOPC, config)
    assert symmetry.size == kept
    states = reachable(config, FaultBounds(losses=1, duplicates=1), depth=depth)
    identity = symmetry.renamings[0]
    names = {state_digest(s.renameable_state(), identity) for s in states}
    # The renameable shape tells apart exactly the states the plain digest does.
    assert len(names) == len(states) > 500
    for state in states:
        view = state.renameable_state()
        for renaming in symmetry.renamings[1:]:
            assert state_digest(view, renaming) in names, (renaming.names, state.in_flight)
    # So each orbit is a set of reachable states, and a symmetric search keeps one each.
    orbits = {symmetry.digest(s.renameable_state()) for s in states}
    result = explore(TWOPC, config, SearchBounds(FaultBounds(losses=1, duplicates=1),
                                                 max_depth=depth, symmetry=True))
    assert result.states == len(orbits) < len(states) * 0.7


def test_symmetry_merges_states_and_keeps_every_verdict_of_the_plain_search() -> None:
    config = twopc_config(2)
    bounds = SearchBounds(FaultBounds(crashes=1), max_depth=9)
    plain = explore(TWOPC, config, bounds)
    merged = explore(TWOPC, config, replace(bounds, symmetry=True))
    assert plain.exhausted and merged.exhausted
    assert plain.counterexample is None and merged.counterexample is None
    assert merged.liveness_checked
    assert merged.states < plain.states * 0.6


@pytest.mark.parametrize(
    ("bug", "crashes", "depth"),
    [("commit-before-durable", 1, 9), ("abort-after-prepare", 0, 9),
     ("tm-forgets-decision", 1, 8)],
)
def test_a_symmetric_search_finds_the_variant_at_its_shortest_depth(
    bug: str, crashes: int, depth: int
) -> None:
    config = twopc_config(2, bug)
    result = explore(TWOPC, config, SearchBounds(FaultBounds(crashes=crashes), symmetry=True))
    found = result.counterexample
    assert found is not None and found.kind == FOUND_SAFETY
    assert len(found.schedule) == depth
    # Every stored state is a real one: the schedule replays to the same failure.
    system = ExploredSystem(TWOPC, config, FaultBounds(crashes=crashes))
    system.initial_step()
    with pytest.raises(Exception, match=found.failure.split(":")[0]):
        for move in found.schedule:
            system.apply(move)


def test_only_permutations_that_keep_the_workload_are_kept() -> None:
    config = twopc_config(3)
    plan = config.txs[0]
    # r1 votes No: it is told apart; r2 and r3 may still swap.
    symmetry = symmetry_of(TWOPC, one_no(config))
    assert symmetry.size == 2
    assert symmetry.renamings[1].names == {"r1": "r1", "r2": "r3", "r3": "r2"}
    all_apart = replace(config, txs=(replace(plan, votes={"r1": "no", "r2": "yes", "r3": "no"},
                                             self_abort_ticks={"r3": 5}),))
    assert symmetry_of(TWOPC, all_apart).size == 1
    assert "tells" in symmetry_of(TWOPC, all_apart).describe()


def test_a_string_that_holds_a_node_id_inside_it_stops_the_walk() -> None:
    renaming = Renaming({"r1": "r2", "r2": "r1"})
    assert canonical({"r1": ["r2", "t1"]}, renaming) == canonical({"r2": ["r1", "t1"]})
    with pytest.raises(EmbeddedName, match="'r1-log'"):
        canonical({"key": "r1-log"}, renaming)


@dataclass(frozen=True)
class _LabelledConfig:
    rms: tuple[str, ...]
    labels: tuple[str, ...]


class _Declares:
    """Just enough of a protocol for symmetry_of: its nodes and its groups."""

    name = "declares"

    def __init__(self, groups: Any) -> None:
        self.groups = groups

    def node_ids(self, config: Any) -> tuple[str, ...]:
        return ("tm", *config.rms)

    def symmetric_nodes(self, config: Any) -> Any:
        return self.groups


@pytest.mark.parametrize(
    ("groups", "config", "message"),
    [
        ((("r1", "r9"),), _LabelledConfig(("r1", "r2"), ()), "'r9', which is not a node"),
        ((("r1", "r2"), ("r2",)), _LabelledConfig(("r1", "r2"), ()), "'r2' twice"),
        ((), _LabelledConfig(("r1", "r2"), ()), "declares no interchangeable nodes"),
        ((("r1", "r2"),), _LabelledConfig(("r1", "r2"), ("r1-log",)), "'r1-log'"),
        ((tuple(f"r{i}" for i in range(7)),), _LabelledConfig(tuple(f"r{i}" for i in range(7)), ()),
         "more than 720"),
    ],
)
def test_a_declaration_that_does_not_fit_is_refused_with_its_reason(
    groups: Any, config: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        symmetry_of(_Declares(groups), config)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rm_count", "faults", "depth", "order"),
    [(3, FaultBounds(), 10, BFS), (2, FaultBounds(1, 1, 1), 7, BFS),
     (3, FaultBounds(losses=1, duplicates=1), 7, DFS)],
)
def test_sleep_sets_under_symmetry_keep_every_orbit_and_drop_moves(
    rm_count: int, faults: FaultBounds, depth: int, order: str
) -> None:
    """Sleep sets drop moves, never states: with a state met again as another
    member of its orbit, its sleep set must be translated into the stored
    state's node ids, or the search would skip moves it never tried and
    reach fewer orbits."""
    config = twopc_config(rm_count)
    bounds = SearchBounds(faults, max_depth=depth, order=order, symmetry=True)
    alone = explore(TWOPC, config, bounds)
    both = explore(TWOPC, config, replace(bounds, reduce=True))
    assert both.reduced and alone.exhausted and both.exhausted
    assert both.states == alone.states
    assert both.transitions < alone.transitions


def test_both_reductions_still_find_a_variant_at_its_shortest_depth() -> None:
    config = twopc_config(2, "commit-before-durable")
    result = explore(TWOPC, config, SearchBounds(FaultBounds(crashes=1), reduce=True,
                                                 symmetry=True))
    assert result.counterexample is not None and len(result.counterexample.schedule) == 9


def test_a_core_that_embeds_a_node_id_in_a_string_is_refused_during_the_search() -> None:
    class Labelled(type(TWOPC)):  # type: ignore[misc]
        def make_core(self, config: Any, node_id: str) -> Any:
            core = super().make_core(config, node_id)
            core.label = f"{node_id}:{random.Random(0).random()}"
            return core

    with pytest.raises(ConfigError, match="has the node id 'r"):
        explore(Labelled(), twopc_config(2), SearchBounds(max_depth=3, symmetry=True))


def tlasim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tlasim.sim", *args], capture_output=True,
                          text=True, check=False)


def test_the_cli_reports_the_symmetry_it_used_and_refuses_what_it_cannot_do() -> None:
    run = tlasim("explore", "twopc", "--symmetry", "--quiet", "--depth", "6",
                 "--set", "rm_count=3", "--set", "tx_count=1",
                 "--set", "no_vote_probability=0", "--set", "self_abort_probability=0")
    assert run.returncode == exitcodes.OK, run.stderr
    assert "symmetry: 6 permutations of r1, r2, r3" in run.stdout
    undeclared = tlasim("explore", "snapshot", "--symmetry", "--quiet", "--depth", "2")
    assert undeclared.returncode == exitcodes.USAGE
    assert "declares no interchangeable nodes" in undeclared.stderr
