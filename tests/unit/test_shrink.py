"""Delta debugging of fault plans: minimal, deterministic, on budget, never losing the failure."""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlasim.faults.plan import Crash, FaultPlan, Partition, Window
from tlasim.faults.shrink import ShrinkResult, shrink_plan
from tlasim.faults.strategies import fault_plans
from tlasim.protocols.errors import ConfigError

NODES = ("tm", "r1", "r2", "r3")


def tm_crash_and_loss_to_r1(plan: FaultPlan) -> bool:
    """The synthetic failure: the TM crashes at tick 100 or later and tm->r1 loses messages."""
    return any(c.node == "tm" and c.tick >= 100 for c in plan.crashes) and any(
        w.kind == "loss" and w.covers("tm", "r1") for w in plan.windows
    )


MINIMAL = FaultPlan(
    crashes=(Crash("tm", 100, restart_ticks=1, after_steps=1),),
    windows=(Window("loss", 0, 1, 1.0, links=(("tm", "r1"),), seed=0),),
    heal_tick=101,
)


class Counting:
    """A predicate that records every plan it is asked about."""

    def __init__(self, predicate: Callable[[FaultPlan], bool]) -> None:
        self.predicate = predicate
        self.asked: list[FaultPlan] = []

    def __call__(self, plan: FaultPlan) -> bool:
        self.asked.append(plan)
        return self.predicate(plan)


def large_plan(seed: int, links: tuple[tuple[str, str], ...] | None) -> FaultPlan:
    """Ten faults of every kind, two of which (a late TM crash, a loss on tm->r1) matter."""
    rng = random.Random(seed)
    pairs = [(a, b) for a in NODES for b in NODES if a != b]

    def span() -> tuple[int, int]:
        start = rng.randrange(0, 500)
        return start, start + rng.randrange(1, 100)

    crashes = [Crash(rng.choice(NODES[1:]), rng.randrange(0, 599), rng.randrange(1, 150),
                     rng.randrange(1, 6)) for _ in range(3)]
    crashes.insert(1, Crash("tm", 347, 88, 4))
    windows = [Window(kind, *span(), rng.choice((0.1, 0.5)), tuple(rng.sample(pairs, 3)),
                      delay_ticks_max=50 if kind == "delay" else 0, seed=rng.randrange(99))
               for kind in ("duplicate", "delay", "loss")]
    windows.insert(2, Window("loss", *span(), 0.3, links, seed=12345))
    partitions = [Partition(*span(), ("tm", "r2"), ("r1", "r3"), both_ways=True),
                  Partition(*span(), ("r3",), ("r1",), both_ways=False)]
    return FaultPlan(tuple(crashes), tuple(windows), tuple(partitions), heal_tick=600)


@pytest.mark.parametrize(
    ("links", "nodes"),
    [((("r2", "r3"), ("tm", "r1"), ("r1", "tm"), ("r3", "tm")), None), (None, NODES)],
    ids=["explicit-links", "every-link"],
)
def test_shrinking_a_large_plan_finds_exactly_the_minimal_failing_plan(
    links: tuple[tuple[str, str], ...] | None, nodes: tuple[str, ...] | None
) -> None:
    plan = large_plan(5, links)
    assert plan.size == 10 and tm_crash_and_loss_to_r1(plan)
    predicate = Counting(tm_crash_and_loss_to_r1)
    result = shrink_plan(plan, predicate, nodes=nodes)
    assert result.plan == MINIMAL
    assert not result.exhausted
    assert result.runs == len(predicate.asked) <= 200
    assert len(set(predicate.asked)) == len(predicate.asked), "a plan was run twice"
    assert plan not in predicate.asked, "the input plan, known to fail, was run again"
    assert result.steps[0].startswith("removed 8 of 10 faults")


def test_a_window_on_every_link_stays_so_when_the_nodes_are_not_given() -> None:
    result = shrink_plan(large_plan(5, None), tm_crash_and_loss_to_r1)
    assert result.plan == FaultPlan(MINIMAL.crashes, (Window("loss", 0, 1, 1.0),), heal_tick=101)


def test_shrinking_is_deterministic() -> None:
    plan = large_plan(9, None)
    first = shrink_plan(plan, tm_crash_and_loss_to_r1, nodes=NODES)
    second = shrink_plan(plan, tm_crash_and_loss_to_r1, nodes=NODES)
    assert first == second
    assert first.steps and first.runs > 0


@pytest.mark.parametrize("max_runs", [0, 1, 7, 30])
def test_shrinking_never_runs_the_predicate_more_than_max_runs(max_runs: int) -> None:
    plan = large_plan(5, None)
    predicate = Counting(tm_crash_and_loss_to_r1)
    result = shrink_plan(plan, predicate, max_runs=max_runs, nodes=NODES)
    assert len(predicate.asked) == result.runs == max_runs
    assert result.exhausted
    assert tm_crash_and_loss_to_r1(result.plan) and result.plan.size <= plan.size


def test_a_failure_that_needs_no_fault_shrinks_to_the_empty_plan_healing_at_once() -> None:
    result = shrink_plan(large_plan(5, None), lambda plan: True)
    assert result.plan == FaultPlan(heal_tick=0)
    assert result.steps == ("removed all 10 faults", "heal_tick 600 -> 0")


def test_a_window_shrinks_to_the_shortest_span_over_the_tick_that_matters() -> None:
    plan = FaultPlan(windows=(Window("delay", 50, 300, 0.5, delay_ticks_max=80, seed=4),),
                     heal_tick=400)

    def delays_tick_120_by_30(p: FaultPlan) -> bool:
        return any(w.start <= 120 < w.end and w.delay_ticks_max >= 30 for w in p.windows)

    result = shrink_plan(plan, delays_tick_120_by_30)
    assert result.plan == FaultPlan(
        windows=(Window("delay", 120, 121, 1.0, delay_ticks_max=30),), heal_tick=121
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_a_partition_shrinks_to_one_way_in_the_direction_that_matters(reverse: bool) -> None:
    plan = FaultPlan(partitions=(Partition(10, 90, ("tm", "r1"), ("r2", "r3")),), heal_tick=100)
    cut = ("r3", "tm") if reverse else ("tm", "r3")

    def cuts(p: FaultPlan) -> bool:
        return any(q.cuts(*cut) for q in p.partitions)

    result = shrink_plan(plan, cuts)
    assert result.plan == FaultPlan(
        partitions=(Partition(0, 1, (cut[0],), (cut[1],), both_ways=False),), heal_tick=1
    )


def test_shrinking_rejects_a_malformed_plan_and_a_bad_budget() -> None:
    with pytest.raises(ConfigError, match="plan to shrink"):
        shrink_plan(FaultPlan(crashes=(Crash("tm", 5, 1),), heal_tick=5), lambda p: True)
    with pytest.raises(ConfigError, match="max_runs=-1"):
        shrink_plan(FaultPlan(), lambda p: True, max_runs=-1)


def arbitrary(original: FaultPlan, salt: int) -> Callable[[FaultPlan], bool]:
    """A deterministic predicate with no structure: about one plan in three fails."""

    def fails(plan: FaultPlan) -> bool:
        return plan == original or zlib.crc32(f"{salt}{plan.to_json()}".encode()) % 3 == 0

    return fails


@settings(max_examples=40, deadline=None)
@given(plan=fault_plans(NODES, horizon_ticks=200), salt=st.integers(0, 1000))
def test_the_shrunk_plan_still_fails_and_is_no_larger(plan: FaultPlan, salt: int) -> None:
    predicate = Counting(arbitrary(plan, salt))
    result: ShrinkResult = shrink_plan(plan, predicate, max_runs=60, nodes=NODES)
    assert predicate.predicate(result.plan)
    assert result.plan.size <= plan.size
    assert result.plan.heal_tick <= plan.heal_tick
    result.plan.check_wellformed()
    result.plan.check_recoverable(NODES)
    assert result.runs == len(predicate.asked) <= 60
    if not result.exhausted:
        # A shrink that ran to its end left nothing a second shrink could take.
        again = shrink_plan(result.plan, arbitrary(plan, salt), nodes=NODES)
        assert again.plan == result.plan and not again.steps


@settings(max_examples=15, deadline=None)
@given(
    noise=fault_plans(NODES, horizon_ticks=600),
    tick=st.integers(100, 599),
    link_noise=st.lists(st.sampled_from([("r1", "tm"), ("r2", "r3"), ("tm", "r2")]), unique=True),
    where=st.integers(0, 8),
)
def test_shrinking_any_plan_holding_the_failure_finds_exactly_the_minimal_plan(
    noise: FaultPlan, tick: int, link_noise: list[tuple[str, str]], where: int
) -> None:
    faults = noise.faults()
    faults.insert(where % (len(faults) + 1), Crash("tm", tick, 30, 2))
    faults.insert(where // 2 % (len(faults) + 1),
                  Window("loss", 0, 50, 0.4, tuple([*link_noise, ("tm", "r1")]), seed=9))
    result = shrink_plan(noise.with_faults(faults), tm_crash_and_loss_to_r1, nodes=NODES)
    assert result.plan == MINIMAL
