"""The chase's guidance: distances in TLC's state graph to the spec steps no run has shown."""

from __future__ import annotations

from pathlib import Path

from tlasim.sim.conformance.chase import FAR, Goal, Targets, distances
from tlasim.sim.conformance.profiles import Ownership, Profiler
from tlasim.sim.conformance.spec_side import SpecGraph, _read_dot, state_key


def chain_graph() -> SpecGraph:
    """0 -> 1 -> 2 -> 3, a side branch 1 -> 4, and 5 that nothing reaches or leaves."""
    graph = SpecGraph()
    for n in range(6):
        graph.index[(("n", n),)] = n
    graph.edges = [(0, 1, ()), (1, 2, ()), (2, 3, ()), (1, 4, ())]
    return graph


def test_each_state_is_as_far_as_its_fewest_steps_to_a_goal_step() -> None:
    graph = chain_graph()
    assert distances(graph, [2]) == [2, 1, 0, FAR, FAR, FAR]  # edge 2 leaves state 2
    assert distances(graph, [2, 3]) == [1, 0, 0, FAR, FAR, FAR]  # edge 3 leaves state 1


def test_a_reached_goal_is_closed_and_the_distances_move_to_the_next() -> None:
    graph = chain_graph()
    near = Goal(frozenset({("A", "near")}), (1,))
    far = Goal(frozenset({("A", "far"), ("B", "far")}), (2,))
    targets = Targets(graph, [near, far])
    assert targets.dist[0] == 1
    assert not targets.hit(("A", "elsewhere"))
    assert targets.hit(("A", "near"))
    assert targets.reached == [near] and targets.dist[0] == 2
    assert not targets.hit(("A", "near")), "a goal is reached once"
    assert targets.hit(("B", "far"))  # any of its keys takes it
    assert not targets.open and targets.dist == [FAR] * 6


def test_a_code_state_finds_its_spec_state_by_value(tmp_path: Path) -> None:
    # The chase maps the code's variables to TLC's states: the same TLA+
    # value must give the same key, whichever side wrote it.
    profiler = Profiler(Ownership.parse({"x": "[node]"}, "test"), ("a", "b"), (("a", "b"),))
    dot = tmp_path / "states.dot"
    dot.write_text(
        "strict digraph DiskGraph {\n"
        '1 [label="/\\\\ x = (a :> {} @@ b :> {1, 2})\\n/\\\\ y = <<\\"q\\">>",style = filled]\n'
        '1 -> 2 [label="Inc",color="black",fontcolor="black"];\n'
        '2 [label="/\\\\ x = (a :> {3} @@ b :> {1, 2})\\n/\\\\ y = <<\\"q\\">>"];\n'
        "}\n"
    )
    graph = _read_dot(dot, profiler).graph
    assert graph is not None and graph.size == 2 and [e[:2] for e in graph.edges] == [(0, 1)]
    code_state = {"y": ["q"], "x": {"b": frozenset({2, 1}), "a": frozenset({3})}}
    assert graph.index[state_key(code_state)] == 1
    assert state_key({**code_state, "y": ["r"]}) not in graph.index
