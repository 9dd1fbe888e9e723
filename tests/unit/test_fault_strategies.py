"""The exported hypothesis strategies: valid plans, and shrinking toward simpler faults."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from tlasim.faults.plan import Crash, FaultPlan, Partition, Window
from tlasim.faults.strategies import fault_plans, workloads
from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.protocols.twopc.config import TwoPCOptions

NODES = ("tm", "r1", "r2")


@settings(max_examples=200, deadline=None)
@given(plan=fault_plans(NODES, horizon_ticks=300))
def test_fault_plans_are_wellformed_recoverable_and_heal_at_the_horizon(plan: FaultPlan) -> None:
    plan.check_wellformed()
    plan.check_recoverable(NODES)
    assert plan.heal_tick == 300
    assert len(plan.crashes) <= 4 and len(plan.windows) <= 4 and len(plan.partitions) <= 2
    for w in plan.windows:
        assert 0.0 < w.probability <= 1.0
        assert w.links is None or (w.links and all(a != b for a, b in w.links))
        assert (w.delay_ticks_max >= 1) == (w.kind == "delay")


@settings(max_examples=50, deadline=None)
@given(plan=fault_plans(["solo"], horizon_ticks=1))
def test_fault_plans_over_one_node_and_one_tick_are_valid(plan: FaultPlan) -> None:
    plan.check_wellformed()
    plan.check_recoverable(["solo"])
    assert not plan.partitions
    assert all(w.links is None for w in plan.windows)


@settings(max_examples=50, deadline=None)
@given(plan=fault_plans(NODES, kinds={"delay", "crash"}, max_crashes=1))
def test_fault_plans_draw_only_the_kinds_asked_for(plan: FaultPlan) -> None:
    assert not plan.partitions
    assert all(w.kind == "delay" for w in plan.windows)
    assert len(plan.crashes) <= 1


def minimal(condition: Callable[[FaultPlan], bool], **kwargs: Any) -> FaultPlan:
    return find(fault_plans(NODES, **kwargs), condition, settings=settings(database=None))


def test_fault_plans_shrink_to_the_empty_plan() -> None:
    assert minimal(lambda p: True) == FaultPlan(heal_tick=600)


def test_a_crash_shrinks_to_the_first_node_at_tick_0_after_one_step_restarting_at_once() -> None:
    assert minimal(lambda p: bool(p.crashes), kinds={"crash"}).crashes == (Crash("tm", 0, 1, 1),)


def test_a_window_shrinks_to_one_tick_at_0_on_one_link_always_firing_with_seed_0() -> None:
    assert minimal(lambda p: bool(p.windows), kinds={"loss"}).windows == (
        Window("loss", 0, 1, 1.0, links=(("tm", "r1"),), seed=0),
    )


def test_a_delay_window_shrinks_to_one_tick_of_delay() -> None:
    plan = minimal(lambda p: bool(p.windows), kinds={"delay"})
    assert plan.windows == (Window("delay", 0, 1, 1.0, (("tm", "r1"),), delay_ticks_max=1),)


def test_a_partition_shrinks_to_one_way_between_the_first_two_nodes() -> None:
    assert minimal(lambda p: bool(p.partitions), kinds={"partition"}).partitions == (
        Partition(0, 1, ("tm",), ("r1",), both_ways=False),
    )


def test_a_late_crash_shrinks_to_the_earliest_tick_that_satisfies_the_condition() -> None:
    plan = minimal(lambda p: any(c.node == "r2" and c.tick >= 250 for c in p.crashes),
                   kinds={"crash"})
    assert plan.crashes == (Crash("r2", 250, 1, 1),)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": []}, "need one or more node names"),
        ({"nodes": ["a", "a"]}, "names must be distinct"),
        ({"kinds": {"crash", "meteor"}}, "unknown kind(s) meteor"),
        ({"kinds": "crash"}, "kinds='crash': expected a collection of kinds"),
        ({"horizon_ticks": 0}, "horizon_ticks=0: must be an integer >= 1"),
        ({"max_crashes": -1}, "max_crashes=-1: must be an integer >= 0"),
        ({"restart_ticks_max": 0}, "restart_ticks_max=0: must be an integer >= 1"),
    ],
)
def test_fault_plans_reject_bad_arguments_at_once(kwargs: dict[str, Any], message: str) -> None:
    nodes = kwargs.pop("nodes", NODES)
    with pytest.raises(ConfigError) as caught:
        fault_plans(nodes, **kwargs)
    assert message in str(caught.value)


TWOPC_RANGES = get_protocol("twopc").workload_ranges


def test_twopc_ranges_name_real_twopc_options() -> None:
    assert set(TWOPC_RANGES) <= {f.name for f in dataclasses.fields(TwoPCOptions)}


@settings(max_examples=100, deadline=None)
@given(overrides=workloads(TWOPC_RANGES))
def test_twopc_options_make_valid_twopc_options(overrides: dict[str, Any]) -> None:
    options = TwoPCOptions(**overrides)
    assert 2 <= options.rm_count <= 4 and 1 <= options.tx_count <= 6
    assert 0.0 <= options.no_vote_probability <= 0.5


def test_workloads_shrink_every_range_to_its_first_bound() -> None:
    drawn = find(
        workloads({"n": (3, 9), "p": (0.1, 0.7), "mode": st.sampled_from(["a", "b"])}),
        lambda d: True,
        settings=settings(database=None),
    )
    assert drawn == {"n": 3, "p": 0.1, "mode": "a"}
    assert list(drawn) == ["n", "p", "mode"]


@settings(max_examples=100, deadline=None)
@given(drawn=workloads({"p": (0.1, 0.7), "q": (0.0, 1e-7)}))
def test_workloads_keep_floats_inside_their_range(drawn: dict[str, Any]) -> None:
    assert 0.1 <= drawn["p"] <= 0.7
    assert 0.0 <= drawn["q"] <= 1e-7


@pytest.mark.parametrize("spec", [(1,), (2, 1), ("a", "b"), (True, 3), [1, 2]])
def test_workloads_reject_a_bad_range(spec: Any) -> None:
    with pytest.raises(ConfigError, match="workload range x="):
        workloads({"x": spec})
