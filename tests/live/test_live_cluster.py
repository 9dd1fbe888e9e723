"""Real clusters on loopback: SIGKILLed, restarted, merged, and judged by the oracles and TLC.

Each run starts one process per node and stops by itself: when the merged
state says the workload is done, or at the liveness deadline, or after
TIMEOUT_S. The fault plans strike after a named step, so which step a
SIGKILL follows does not depend on timing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlasim.faults.plan import Crash, FaultPlan, Partition, Window
from tlasim.sim.live.supervisor import LiveOptions, LiveResult, Supervisor
from tlasim.sim.view.model import build_run_view
from tlasim.tracing.codec import read_trace
from tlasim.tracing.validation.validator import validate_trace

TIMEOUT_S = 90.0
# Two RMs and one transaction on which both vote yes: the TM's steps are
# then TMBegin, two TMSendPrepare, two TMRcvPrepared, and the decision.
ONE_TX = {"tx_count": 1, "rm_count": 2, "no_vote_probability": 0.0,
          "self_abort_probability": 0.0}


def run(tmp_path: Path, protocol: str, plan: FaultPlan, *, bug: str | None = None,
        overrides: dict[str, object] | None = None) -> LiveResult:
    return Supervisor(
        protocol, 1, bug=bug, overrides=overrides, plan=plan,
        options=LiveOptions(tick_ms=5.0, timeout_s=TIMEOUT_S), run_dir=tmp_path / "run",
    ).run()


def test_twopc_cluster_with_sigkills_and_restarts_is_a_behaviour_of_the_spec(
    tmp_path: Path,
) -> None:
    plan = FaultPlan(
        crashes=(Crash("tm", 0, 10, 6), Crash("r2", 0, 20, 2)),
        windows=(Window("duplicate", 0, 300, 0.3, seed=1), Window("loss", 0, 300, 0.1, seed=2),
                 Window("delay", 0, 300, 0.3, delay_ticks_max=10, seed=3)),
        partitions=(Partition(150, 250, ("r1",), ("tm",), both_ways=False),),
        heal_tick=300,
    )
    result = run(tmp_path, "twopc", plan, overrides={"tx_count": 2, "rm_count": 2})
    assert result.merged.failure is None
    assert result.merged.unfinished is None, result.stopped_by
    assert result.incarnations["tm"] == 2 and result.incarnations["r2"] == 2
    assert result.events["crash"] == 2
    assert {"loss", "duplicate", "delay"} <= set(result.events)
    assert not result.dropped
    # The merged trace holds the network too, rebuilt from sends and receipts.
    lines = [json.loads(line) for line in result.trace_path.read_text().splitlines()]
    steps = [line for line in lines if line.get("event") == "tla_trace"]
    assert steps and all("msgs" in line["vars"] for line in steps)
    assert any(line.get("faults") for line in steps) and any(line.get("timer") for line in steps)
    assert lines[-1] == {"event": "tla_trace_end", "outcome": "ok", "failure": None,
                         "failing_step": None}
    # So a viewer draws it as a simulated run: deliveries matched to their
    # sends, and both crashes marked as the plan's faults that fired.
    view = build_run_view(read_trace(result.trace_path))
    assert view.kind == "live run" and view.faults_recorded and view.oracle_verdict is not None
    assert sum(m.delivered is not None for m in view.messages) > 10
    assert view.plan is not None
    assert {"crashes/0", "crashes/1"} <= {entry.name for entry in view.plan if entry.fired}
    verdict = validate_trace(result.trace_path, explain=False)
    assert verdict.accepted, verdict.summary()


# Each bug with the options and the crash that expose it: the crash strikes
# after a step counted from tick 0, so which step it follows is fixed.
# commit-before-durable: the TM is killed after sending Commit, before its
# decision is fsynced; tm-forgets-decision: after the durable decision;
# ack-before-persist: the receiver after acking its first chunk, unsynced
# (no client reads at the receiver, so its steps are the join, then chunks).
BUG_RUNS = [
    ("twopc", "commit-before-durable", ONE_TX, Crash("tm", 0, 10, 6)),
    ("twopc", "tm-forgets-decision", ONE_TX, Crash("tm", 0, 10, 7)),
    ("snapshot", "ack-before-persist", {"get_ratio": 0.0}, Crash("rcv", 0, 10, 2)),
]


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "bug", "overrides", "crash"), BUG_RUNS,
                         ids=[bug for _, bug, _, _ in BUG_RUNS])
def test_bug_exposed_by_a_sigkill_is_rejected_and_the_correct_code_is_not(
    tmp_path: Path, protocol: str, bug: str, overrides: dict[str, object], crash: Crash,
) -> None:
    plan = FaultPlan(crashes=(crash,), heal_tick=200)
    buggy = run(tmp_path / "bug", protocol, plan, bug=bug, overrides=overrides)
    assert buggy.events["crash"] == 1
    assert buggy.merged.failure is not None
    verdict = validate_trace(buggy.trace_path, explain=False)
    assert not verdict.accepted
    correct = run(tmp_path / "correct", protocol, plan, overrides=overrides)
    assert correct.events["crash"] == 1
    assert correct.merged.failure is None and correct.merged.unfinished is None
    assert validate_trace(correct.trace_path, explain=False).accepted


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "crashing"), [("shardsplit", "coord"),
                                                   ("snapshot", "src")])
def test_key_value_protocols_run_live_under_a_sigkill_and_validate(
    tmp_path: Path, protocol: str, crashing: str,
) -> None:
    # The coordinator's first step is its first split, near tick 224.
    plan = FaultPlan(
        crashes=(Crash(crashing, 20, 15, 2),),
        windows=(Window("duplicate", 0, 400, 0.2, seed=4),
                 Window("delay", 0, 400, 0.2, delay_ticks_max=10, seed=5)),
        heal_tick=400,
    )
    result = run(tmp_path, protocol, plan)
    assert result.merged.failure is None
    assert result.merged.unfinished is None, result.stopped_by
    assert result.events["crash"] == 1 and result.incarnations[crashing] == 2
    assert not result.dropped
    verdict = validate_trace(result.trace_path, explain=False)
    assert verdict.accepted, verdict.summary()
