"""Seed sweeps of the correct snapshot transfer under swarm faults."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from tlasim.sim.kernel.simulation import OUTCOME_OK
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import read_trace
from tlasim.tracing.validation.validator import validate_trace


def test_correct_snapshot_passes_every_oracle_on_200_swarm_seeds() -> None:
    crashes = lost = duplicated = 0
    crashed: set[str] = set()
    for seed in range(200):
        result = run_seed("snapshot", seed).result
        assert result.outcome == OUTCOME_OK, (seed, result.failure)
        crashes += result.stats.crashes
        lost += result.stats.messages_lost
        duplicated += result.stats.messages_duplicated
        crashed.update(c.node for c in result.plan.crashes)
    assert crashes > 50 and lost > 500 and duplicated > 200, (crashes, lost, duplicated)
    assert crashed == {"src", "rcv"}, crashed


def test_writes_race_the_transfer_and_faults_hit_every_phase(tmp_path: Path) -> None:
    # The sweep above proves little unless writes land during the transfer
    # (so the replay has work), chunks are resent, transfers resume after a
    # crash, and reads wait on the read index.
    seen: Counter[str] = Counter()
    for seed in range(30):
        path = tmp_path / f"{seed}.ndjson"
        run_seed("snapshot", seed, trace_path=path)
        for before, step in itertools.pairwise(read_trace(path).steps):
            if step.action == "SrcWrite" and before.vars["rcvState"] in ("receiving", "replaying"):
                seen["write during transfer"] += 1
            if step.action == "SrcResend":
                seen["chunk resent"] += 1
            if step.action == "SrcJoin" and step.params["msg"]["snap"] != -1:
                seen["transfer resumed"] += 1
            if step.action == "RcvServe" and before.vars["rcvPos"] >= 0:
                seen["read served"] += 1
            if step.action == "RcvRecords" and step.params["msg"]["entries"]:
                seen["records replayed"] += 1
    assert len(seen) == 5 and min(seen.values()) > 3, seen


def test_traces_of_correct_runs_are_accepted_by_tlc(tmp_path: Path) -> None:
    # Seed 85 crashes both nodes; between them the seeds lose, duplicate and
    # delay messages. Every step must be a step of SnapshotTransferMsg.
    for seed in (3, 6, 85):
        path = tmp_path / f"{seed}.ndjson"
        run_seed("snapshot", seed, trace_path=path)
        verdict = validate_trace(path)
        assert verdict.accepted, verdict.report()
