"""The chase: drive the correct code toward the spec steps it has not shown.

The explorer and the seeds reach what they happen to reach. A spec profile
that neither does may still be a step the code takes, only deep (a message
from before a crash delivered after a whole transfer), where breadth-first
search never gets and random runs rarely do. TLC's state graph says how to
get there: every state of the model, and every step between them.

So the chase is a best-first search of the code's schedules (the
explorer's moves: start, deliver, fire, restart, lose, duplicate, crash),
guided by the spec. Each code state maps to the spec state its variables
are, and its priority is that state's distance, in TLC's graph, to the
nearest step whose profile is still unreached. A schedule whose step
leaves the model (more messages in flight than the model's bound, say) is
not followed. Every step the code takes on the way is a real step of the
correct implementation and is profiled like any other; a target the code
reaches is no longer a target, and the distances are recomputed.

A profile the chase does not reach within its budget stays unexplained:
the search is bounded, so this is evidence, not proof, that the code cannot
take it. Like the explorer, the chase is deterministic: a state bound ends
it, and ties go to the shallower state, then to the one found first.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError
from tlasim.sim.conformance.impl_side import take_step
from tlasim.sim.conformance.profiles import Profiler
from tlasim.sim.conformance.spec_side import SideProfiles, SpecGraph, state_key
from tlasim.sim.explore.moves import Move
from tlasim.sim.explore.system import ExploredSystem, FaultBounds

# A code step as compare() matches it: (the code's action, role, before, after).
StepKey = tuple[object, ...]
FAR = 1 << 30  # a spec state from which no target can be reached

Steps = list[tuple[Mapping[str, Any], str, Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class Goal:
    """One unreached spec profile: the code steps that would count as taking
    it, and the edges of TLC's graph that take it."""

    keys: frozenset[StepKey]
    edges: tuple[int, ...]


def distances(graph: SpecGraph, edges: Collection[int]) -> list[int]:
    """For every spec state, the fewest steps to the source of one of `edges`."""
    dist = [FAR] * graph.size
    queue: deque[int] = deque()
    for edge in edges:
        source = graph.edges[edge][0]
        if dist[source]:
            dist[source] = 0
            queue.append(source)
    predecessors = graph.predecessors()
    while queue:
        state = queue.popleft()
        for before in predecessors[state]:
            if dist[before] == FAR:
                dist[before] = dist[state] + 1
                queue.append(before)
    return dist


class Targets:
    """The goals still open, and each spec state's distance to the nearest."""

    def __init__(self, graph: SpecGraph, goals: Sequence[Goal]) -> None:
        self.graph = graph
        self.open = dict(enumerate(goals))
        self.goal_of = {key: i for i, goal in enumerate(goals) for key in goal.keys}
        self.reached: list[Goal] = []
        self.failures = 0  # moves on which the correct code failed
        self.dist = self._distances()

    def _distances(self) -> list[int]:
        return distances(self.graph, {e for goal in self.open.values() for e in goal.edges})

    def hit(self, key: StepKey) -> bool:
        """Count a code step; True when it reached an open goal."""
        index = self.goal_of.get(key)
        if index is None or index not in self.open:
            return False
        self.reached.append(self.open.pop(index))
        self.dist = self._distances()
        return True


def chase(
    protocol: ProtocolDefinition,
    config: Any,
    graph: SpecGraph,
    targets: Targets,
    profiler: Profiler,
    side: SideProfiles,
    *,
    bounds: FaultBounds,
    max_states: int,
) -> int:
    """Search `config`'s schedules toward the open goals of `targets`,
    profiling every step into `side`; return the code states expanded."""
    steps: Steps = []

    def listen(system: ExploredSystem) -> None:
        steps.clear()
        system.observer = lambda before, step, after: steps.append((before, step.action, after))

    root = ExploredSystem(protocol, config, bounds)
    listen(root)
    root.initial_step()
    start = graph.index.get(state_key(root.last_vars))
    if start is None:
        return 0  # this workload's initial state is no state of the model
    seen = {root.digest()}
    found = 0
    frontier = [(targets.dist[start], 0, found, start, root.freeze())]
    expanded = 0
    while frontier and targets.open and expanded < max_states:
        _, depth, _, at, frozen = heapq.heappop(frontier)
        expanded += 1
        system = ExploredSystem.thaw(frozen, protocol)
        for move in list(system.moves()):
            tries: list[Move] = [move]
            first = True
            while tries:
                attempt = tries.pop(0)
                twin = ExploredSystem.thaw(frozen, protocol)
                listen(twin)
                try:
                    taken = twin.apply(attempt)
                except ConfigError:
                    raise
                except Exception:
                    # The correct code failed an oracle or raised: a finding
                    # of its own (the explorer shows it), and no path to follow.
                    targets.failures += 1
                    continue
                if first:
                    first = False
                    if attempt.fault_free and system.may_crash(attempt.node):
                        # The same move again, crashing after each of its steps.
                        tries.extend(attempt.crashing(k) for k in range(1, taken + 1))
                there, hit = _follow(steps, at, graph, profiler, side, targets)
                if hit:  # the distances changed: so do the priorities waiting
                    frontier = [(targets.dist[s], d, n, s, f) for _, d, n, s, f in frontier]
                    heapq.heapify(frontier)
                if there is None or targets.dist[there] == FAR:
                    continue
                digest = twin.digest()
                if digest in seen:
                    continue
                seen.add(digest)
                found += 1
                heapq.heappush(frontier,
                               (targets.dist[there], depth + 1, found, there, twin.freeze()))
    return expanded


def _follow(steps: Steps, at: int, graph: SpecGraph, profiler: Profiler, side: SideProfiles,
            targets: Targets) -> tuple[int | None, bool]:
    """Profile a move's steps: the spec state the move ends in (None where a
    step leaves the model), and whether a step reached a goal."""
    hit = False
    for before, action, after in steps:
        for profile in take_step(profiler, side, before, action, after):
            hit |= targets.hit((action, profile.role, profile.before, profile.after))
        state = graph.index.get(state_key(after))
        if state is None:
            return None, hit
        at = state
    return at, hit
