"""Every schedule within the bounds: breadth- or depth-first over whole-system states.

Theory of operation: a search starts from the initial state (the "Init"
line written, no node started) and tries every enabled move from every
state it reaches (`ExploredSystem.moves`), each on its own copy of the
state. A move of a node that may still crash is also tried once per step it
took, crashing after that step. States are named by their canonical digest,
so each is expanded once. Breadth-first order, the default, finds a shortest
counterexample. Depth-first order keeps less in memory.

Every oracle runs at every trace step of every move, as in a simulated run.
A step the oracle rejects, or a core that raises, ends the search with that
schedule. When the search has seen every state within its bounds, it checks
liveness: from every state it expanded, some fault-free schedule (starts,
deliveries, timers, restarts) must reach a state where the protocol has
finished; a state left unexpanded at the depth bound counts as one that
may. A state that cannot is a counterexample too. The depth bound is part
of the bound: a search that expanded every state shallower than it has
exhausted the bound. A search cut short by `max_states` or `time_limit`
says so: what it did not expand, it did not check, and it checks no
liveness.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tlasim.protocols.definition import ProtocolDefinition, StepInfo
from tlasim.protocols.errors import ConfigError, InvariantViolation
from tlasim.sim.explore.canonical import EmbeddedName
from tlasim.sim.explore.moves import DUPLICATE, LOSE, Move
from tlasim.sim.explore.symmetry import Symmetry, symmetry_of
from tlasim.sim.explore.system import ExploredSystem, FaultBounds

BFS = "bfs"
DFS = "dfs"

FOUND_SAFETY = "safety"
FOUND_LIVENESS = "liveness"
FOUND_ERROR = "error"  # a core raised: the protocol's code failed, not an oracle


@dataclass(frozen=True, slots=True)
class SearchBounds:
    faults: FaultBounds = field(default_factory=FaultBounds)
    max_depth: int | None = None
    max_states: int | None = None
    time_limit: float | None = None  # seconds
    order: str = BFS
    # Partial-order reduction (sleep sets): skip a move that commutes with
    # one already tried from an earlier state. See `independent`.
    reduce: bool = False
    # Symmetry reduction: one state per orbit under the permutations of the
    # protocol's interchangeable nodes (sim/explore/symmetry.py).
    symmetry: bool = False

    def __post_init__(self) -> None:
        if self.order not in (BFS, DFS):
            raise ConfigError(f"order {self.order!r}: must be {BFS} or {DFS}")
        for name in ("max_depth", "max_states"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name}={value}: must be at least 1")


@dataclass(slots=True)
class Counterexample:
    kind: str  # FOUND_SAFETY, FOUND_LIVENESS or FOUND_ERROR
    failure: str
    schedule: tuple[Move, ...]


@dataclass(slots=True)
class Exploration:
    states: int = 0  # distinct states reached
    transitions: int = 0  # moves made, leading to new states or not
    depth: int = 0  # the deepest state reached, in moves
    seconds: float = 0.0
    queue: int = 0  # states found but not yet expanded (as of the last progress report)
    exhausted: bool = False  # every state within the bounds was expanded
    depth_bounded: bool = False  # some state was left unexpanded at the depth bound
    cut_by: str | None = None  # which limit ("states", "time") ended the search early
    liveness_checked: bool = False
    reduced: bool = False  # partial-order reduction was on (and applicable)
    symmetry: Symmetry | None = None  # the symmetry used, when asked for
    counterexample: Counterexample | None = None

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class _Node:
    parent: int  # -1 for the initial state
    move: Move | None
    depth: int
    done: bool  # the protocol has finished in this state
    expanded: bool = False
    fault_free_next: list[int] = field(default_factory=list)
    # The moves not to try from here, under reduction: each commutes with a
    # move already tried from an earlier state, which reaches the same state.
    sleep: frozenset[Move] = frozenset()
    # Under symmetry, which of the kept renamings names this state: its
    # sleep set is written in the node ids of the state stored for it.
    naming: int = 0


Progress = Callable[[Exploration], None]
# Hears every trace step: variables before, the step, variables after, and a
# function that gives the schedule taking it (built only when asked for).
StepObserver = Callable[
    [Mapping[str, Any], StepInfo, Mapping[str, Any], Callable[[], tuple[Move, ...]]], None
]


def explore(
    protocol: ProtocolDefinition,
    config: Any,
    bounds: SearchBounds,
    *,
    progress: Progress | None = None,
    progress_every: float = 0.5,
    on_step: StepObserver | None = None,
) -> Exploration:
    result = Exploration()
    started = time.monotonic()
    root = ExploredSystem(protocol, config, bounds.faults)
    # Moves of different nodes commute only when no two cores share state.
    reduce = bounds.reduce and not root.cores_share_state()
    result.reduced = reduce
    symmetry = result.symmetry = symmetry_of(protocol, config) if bounds.symmetry else None
    if symmetry is not None and symmetry.size == 1:
        symmetry = None  # the workload tells every node apart: nothing to merge

    def name(system: ExploredSystem) -> tuple[bytes, int]:
        if symmetry is None:
            return system.digest(), 0
        try:
            return symmetry.name(system.renameable_state(), system.own_parts())
        except EmbeddedName as embedded:
            raise ConfigError(f"{protocol.name}: no symmetry reduction: {embedded}") from None

    # Under both reductions, a state met again may be another member of its
    # orbit, whose moves name other nodes: its sleep set is translated into
    # the stored state's node ids, and the stored state is what is expanded
    # again, so every state keeps its frozen copy.
    keep_frozen = reduce and symmetry is not None
    frozen_of: dict[int, bytes] = {}

    def translated(sleep: frozenset[Move], system: ExploredSystem, source: int,
                   target: int) -> frozenset[Move]:
        if symmetry is None or source == target or not sleep:
            return sleep
        names = symmetry.translation(source, target)
        return frozenset(system.renamed(move, names) for move in sleep)
    nodes: list[_Node] = []
    seen: dict[bytes, int] = {}

    def schedule_to(index: int, last: Move | None = None) -> tuple[Move, ...]:
        moves = [] if last is None else [last]
        while index > 0:
            node = nodes[index]
            assert node.move is not None
            moves.append(node.move)
            index = node.parent
        return tuple(reversed(moves))

    def finish(counterexample: Counterexample | None = None) -> Exploration:
        result.counterexample = counterexample
        result.seconds = time.monotonic() - started
        return result

    def observe(system: ExploredSystem, index: int, move: Move | None) -> None:
        if on_step is not None:
            observer = on_step
            system.observer = lambda before, step, after: observer(
                before, step, after, lambda: schedule_to(index, move)
            )

    observe(root, 0, None)
    try:
        root.initial_step()
    except InvariantViolation as violation:
        return finish(Counterexample(FOUND_SAFETY, str(violation), ()))
    nodes.append(_Node(-1, None, 0, root.unfinished() is None))
    seen[name(root)[0]] = 0
    result.states = 1
    frontier: deque[tuple[int, bytes]] = deque([(0, root.freeze())])
    if keep_frozen:
        frozen_of[0] = frontier[0][1]
    take = frontier.popleft if bounds.order == BFS else frontier.pop
    last_report = started
    while frontier:
        now = time.monotonic()
        if bounds.time_limit is not None and now - started >= bounds.time_limit:
            result.cut_by = "time"
            break
        if progress is not None and now - last_report >= progress_every:
            result.seconds = now - started
            result.queue = len(frontier)
            progress(result)
            last_report = now
        index, frozen = take()
        node = nodes[index]
        if bounds.max_depth is not None and node.depth >= bounds.max_depth:
            result.depth_bounded = True
            continue
        node.expanded = True
        system = ExploredSystem.thaw(frozen, protocol)
        tried: list[Move] = []  # base moves tried from here, in order
        crash_budget_left = system.crashes < bounds.faults.crashes
        for move in list(system.moves()):
            if move in node.sleep:
                continue
            # A successor sleeps on every move it commutes with that was
            # slept on here, or tried from here before this one.
            successor_sleep: frozenset[Move] = frozenset()
            if reduce:
                successor_sleep = frozenset(
                    other for other in (*node.sleep, *tried)
                    if independent(other, move, system.crash_nodes, crash_budget_left)
                )
            tried.append(move)
            tries = [move]
            first = True
            while tries:
                attempt = tries.pop(0)
                twin = ExploredSystem.thaw(frozen, protocol)
                observe(twin, index, attempt)
                result.transitions += 1
                try:
                    steps = twin.apply(attempt)
                except InvariantViolation as violation:
                    return finish(
                        Counterexample(FOUND_SAFETY, str(violation), schedule_to(index, attempt))
                    )
                except ConfigError:
                    raise
                except Exception as exc:  # a core's own failure is a finding, with its schedule
                    failure = f"{type(exc).__name__}: {exc}"
                    return finish(
                        Counterexample(FOUND_ERROR, failure, schedule_to(index, attempt))
                    )
                if first:
                    first = False
                    if attempt.fault_free and system.may_crash(attempt.node):
                        # The same move again, crashing after each of its steps.
                        tries.extend(attempt.crashing(k) for k in range(1, steps + 1))
                digest, naming = name(twin)
                known = seen.get(digest)
                if known is None:
                    known = seen[digest] = len(nodes)
                    nodes.append(_Node(index, attempt, node.depth + 1, twin.unfinished() is None,
                                       sleep=successor_sleep, naming=naming))
                    result.states += 1
                    result.depth = max(result.depth, node.depth + 1)
                    frozen_twin = twin.freeze()
                    frontier.append((known, frozen_twin))
                    if keep_frozen:
                        frozen_of[known] = frozen_twin
                    if bounds.max_states is not None and result.states >= bounds.max_states:
                        result.cut_by = "states"
                        frontier.clear()
                        tries.clear()
                elif nodes[known].depth > node.depth + 1:
                    # Depth-first order met this state deeper first. Reached
                    # sooner now, it is expanded again from here, so that the
                    # depth bound cuts every path at the same length.
                    old = nodes[known]
                    sleep = translated(old.sleep, twin, old.naming, naming) & successor_sleep
                    nodes[known] = _Node(index, attempt, node.depth + 1, old.done,
                                         sleep=sleep, naming=naming)
                    frozen_twin = twin.freeze()
                    frontier.append((known, frozen_twin))
                    if keep_frozen:
                        frozen_of[known] = frozen_twin
                elif reduce:
                    # Reached again, sleeping on fewer moves: those it slept
                    # on before but not now must be tried after all.
                    known_node = nodes[known]
                    sleep = translated(successor_sleep, twin, naming, known_node.naming)
                    if not known_node.sleep <= sleep:
                        known_node.sleep &= sleep
                        if known_node.expanded:
                            known_node.expanded = False
                            frontier.append(
                                (known, frozen_of[known] if keep_frozen else twin.freeze())
                            )
                if attempt.fault_free:
                    node.fault_free_next.append(known)
            if result.cut_by == "states":
                break
    result.exhausted = result.cut_by is None
    # Reduction keeps every state but not every move between them, so the
    # graph the liveness check walks would lack edges: it is not checked.
    if result.exhausted and not reduce:
        stuck = _stuck_state(nodes)
        result.liveness_checked = True
        if stuck is not None:
            system = _replay(protocol, config, bounds.faults, schedule_to(stuck))
            problem = system.unfinished() or "unfinished"
            return finish(
                Counterexample(
                    FOUND_LIVENESS,
                    f"no fault-free schedule from this state finishes: {problem}",
                    schedule_to(stuck),
                )
            )
    return finish()


def independent(a: Move, b: Move, crash_nodes: frozenset[str], crash_budget_left: bool) -> bool:
    """Whether moves `a` and `b`, both enabled, commute and neither disables the other.

    Moves of different nodes do, when no two cores share state (the search
    checks that first): each changes its own node, its own timers and disk,
    and adds to or takes its own messages from the bag, and counts commute.
    What breaks it is a shared budget: two losses (or two duplicates) when
    one more is allowed, and two moves that may each end in a crash while a
    crash is left. A loss or duplicate counts as its message's destination's
    move, so it never commutes with a delivery of the same message.
    """
    if a.node == b.node:
        return False
    if a.kind == b.kind and a.kind in (LOSE, DUPLICATE):
        return False
    return not (crash_budget_left and a.node in crash_nodes and b.node in crash_nodes)


def _stuck_state(nodes: list[_Node]) -> int | None:
    """The first expanded state from which no fault-free path reaches a
    finished state or one the search did not expand (and so cannot judge)."""
    predecessors: list[list[int]] = [[] for _ in nodes]
    for index, node in enumerate(nodes):
        for successor in node.fault_free_next:
            predecessors[successor].append(index)
    good = [node.done or not node.expanded for node in nodes]
    queue = deque(index for index, ok in enumerate(good) if ok)
    while queue:
        index = queue.popleft()
        for before in predecessors[index]:
            if not good[before]:
                good[before] = True
                queue.append(before)
    return next((index for index, ok in enumerate(good) if not ok), None)


def _replay(
    protocol: ProtocolDefinition, config: Any, faults: FaultBounds, schedule: tuple[Move, ...]
) -> ExploredSystem:
    system = ExploredSystem(protocol, config, faults)
    system.initial_step()
    for move in schedule:
        system.apply(move)
    return system
