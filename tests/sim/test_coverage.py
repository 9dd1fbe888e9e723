"""A run's spec coverage: gathered step by step, it is what hashing each state afresh gives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.protocols.coverage import in_flight
from tlasim.sim.coverage.run import CoverageRecorder, abstraction_of
from tlasim.sim.run.runner import build_simulation, run_seed

PROTOCOLS = ("twopc", "shardsplit", "snapshot")


class Keeping(CoverageRecorder):
    """Also keeps each step's spec variables, to hash them again one by one."""

    __slots__ = ("seen",)

    def __init__(self, abstraction: Any) -> None:
        super().__init__(abstraction)
        self.seen: list[tuple[str | None, str, Mapping[str, Any]]] = []

    def step(self, node: str | None, action: str, spec_vars: Mapping[str, Any]) -> None:
        self.seen.append((node, action, spec_vars))
        super().step(node, action, spec_vars)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("abstracted", [False, True])
def test_coverage_gathered_step_by_step_is_each_state_hashed_afresh(
    protocol: str, abstracted: bool
) -> None:
    definition = get_protocol(protocol)
    abstraction = abstraction_of(definition) if abstracted else {}
    for seed in range(6):
        sim = build_simulation(definition, seed)
        sim.coverage = keeping = Keeping(abstraction)
        result = sim.run()
        assert result.coverage is not None
        fresh_states = set()
        last: dict[str, str] = {}
        pairs = set()
        for node, action, spec_vars in keeping.seen:
            alone = CoverageRecorder(abstraction)
            alone.step(node, action, spec_vars)
            (state,) = alone.result().states
            fresh_states.add(state)
            who = node or ""
            if who in last:
                pairs.add((who, last[who], action))
            last[who] = action
        assert result.coverage.states == fresh_states
        assert result.coverage.actions == {action for _, action, _ in keeping.seen}
        assert result.coverage.pairs == pairs
        assert result.coverage.actions <= definition.trace_actions


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_one_seed_gives_one_coverage(protocol: str) -> None:
    first = run_seed(protocol, 3, coverage=True).result.coverage
    again = run_seed(protocol, 3, coverage=True).result.coverage
    assert first is not None and first == again
    assert len(first.states) > 1 and "Init" in first.actions
    assert run_seed(protocol, 3).result.coverage is None  # measured only when asked


def test_in_flight_forgets_copy_counts() -> None:
    one, two = {"m": 1}, {"m": 2}
    a, b = CoverageRecorder({"msgs": in_flight}), CoverageRecorder({"msgs": in_flight})
    a.step(None, "Init", {"x": 1, "msgs": one})
    b.step(None, "Init", {"x": 1, "msgs": two})
    assert a.result().states == b.result().states
    whole_one, whole_two = CoverageRecorder(), CoverageRecorder()
    whole_one.step(None, "Init", {"x": 1, "msgs": one})
    whole_two.step(None, "Init", {"x": 1, "msgs": two})
    assert whole_one.result().states != whole_two.result().states


def test_a_dropped_variable_makes_no_state_of_its_own() -> None:
    counted = CoverageRecorder({"n": None})
    for n in range(5):
        counted.step("a", "Tick", {"n": n, "phase": "on"})
    assert len(counted.result().states) == 1
    assert counted.result().pairs == {("a", "Tick", "Tick")}
