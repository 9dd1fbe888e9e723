"""Seed sweeps of the correct shard split under swarm faults."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

from tlasim.sim.kernel.simulation import OUTCOME_OK
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import read_trace
from tlasim.tracing.validation.validator import validate_trace


def test_correct_shardsplit_passes_every_oracle_on_200_swarm_seeds() -> None:
    crashes = lost = duplicated = 0
    crashed_nodes: set[str] = set()
    for seed in range(200):
        result = run_seed("shardsplit", seed).result
        assert result.outcome == OUTCOME_OK, (seed, result.failure)
        crashes += result.stats.crashes
        lost += result.stats.messages_lost
        duplicated += result.stats.messages_duplicated
        crashed_nodes.update(c.node for c in result.plan.crashes)
    # The sweep must exercise every kind of fault, and crash the coordinator
    # and both kinds of shard (a parent and a child), or it proves little.
    assert crashes > 50 and lost > 500 and duplicated > 200, (crashes, lost, duplicated)
    assert {"coord", "s1", "s2", "s3"} <= crashed_nodes, crashed_nodes
    assert not any(node.startswith("c") and node != "coord" for node in crashed_nodes)


def test_clients_hit_every_phase_of_a_split(tmp_path: Path) -> None:
    # The workload must make clients race the splits: writes pending at a
    # freeze, requests refused by a frozen parent, stale routes to a retired
    # one and to a child not yet active. Otherwise the sweep above proves little.
    reasons: Counter[str] = Counter()
    drained = 0
    for seed in range(30):
        path = tmp_path / f"{seed}.ndjson"
        run_seed("shardsplit", seed, trace_path=path)
        steps = read_trace(path).steps
        for before, step in itertools.pairwise(steps):
            if step.action == "ShardRedirect":
                msg = step.params["msg"]
                reasons[str(_retry_reason(step.vars["msgs"], msg["id"]))] += 1
            if step.action == "ShardFreeze" and any(before.vars["pending"].values()):
                drained += 1
    assert reasons["frozen"] and reasons["moved"] and reasons["notready"], reasons
    assert drained, "no freeze ever found a write pending"


def _retry_reason(msgs: Any, op_id: Any) -> str | None:
    for record in msgs:
        if record["type"] == "Retry" and record["id"] == op_id:
            return str(record["why"])
    return None


def test_traces_of_correct_runs_are_accepted_by_tlc(tmp_path: Path) -> None:
    # Between them: crashes, loss, duplication (seeds 6 and 13 have all three)
    # and a quiet run (seed 3). Every step must be a step of ShardSplitMsg.
    for seed in (3, 6, 13):
        path = tmp_path / f"{seed}.ndjson"
        run_seed("shardsplit", seed, trace_path=path)
        verdict = validate_trace(path)
        assert verdict.accepted, verdict.report()
