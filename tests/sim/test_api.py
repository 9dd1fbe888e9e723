"""The Python API in a user's own hypothesis test."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tlasim.faults.plan import Crash, FaultPlan
from tlasim.faults.strategies import fault_plans
from tlasim.sim.api import RunFailed, nodes, run


def test_nodes_names_every_node_of_a_run() -> None:
    assert nodes("twopc") == ("tm", "r1", "r2", "r3")
    assert nodes("twopc", rm_count=2) == ("tm", "r1", "r2")


def test_assert_ok_passes_for_the_correct_protocol_under_a_plan() -> None:
    plan = FaultPlan(crashes=(Crash("tm", 50, restart_ticks=10, after_steps=2),), heal_tick=100)
    run("twopc", plan, seed=3).assert_ok()


def test_hypothesis_failure_output_carries_the_reproduce_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TLASIM_FAILURE_DIR", str(tmp_path))

    @settings(max_examples=100, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(plan=fault_plans(nodes("twopc"), kinds=("crash",)))
    def users_test(plan: FaultPlan) -> None:
        run("twopc", plan, seed=1, bug="tm-forgets-decision").assert_ok()

    with pytest.raises(RunFailed) as caught:
        users_test()
    message = str(caught.value)
    assert "durability" in message
    assert "reproduce: tlasim run twopc --seed 1 --bug tm-forgets-decision --plan " in message
    plan_file = Path(message.split("--plan ")[1].split()[0])
    assert plan_file.is_absolute()
    assert FaultPlan.from_json(plan_file.read_text()).crashes


def test_a_failing_hypothesis_test_leaves_only_the_reported_plan_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TLASIM_FAILURE_DIR", str(tmp_path))
    tried: list[FaultPlan] = []

    @settings(max_examples=100, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(plan=fault_plans(nodes("twopc"), kinds=("crash",)))
    def users_test(plan: FaultPlan) -> None:
        tried.append(plan)
        run("twopc", plan, seed=1, bug="tm-forgets-decision").assert_ok()

    with pytest.raises(RunFailed) as caught:
        users_test()
    reported = Path(str(caught.value).split("--plan ")[1].split()[0])
    # Hypothesis failed on many plans on its way to the reported one.
    assert len(set(map(repr, tried))) > 2
    assert list(tmp_path.iterdir()) == [reported]
    assert FaultPlan.from_json(reported.read_text()) == caught.value.report.plan
