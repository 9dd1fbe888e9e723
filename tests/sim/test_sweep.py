"""Seed sweeps of the correct two-phase commit under swarm faults."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.simulation import OUTCOME_OK
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import read_trace
from tlasim.tracing.validation.validator import validate_trace


def test_correct_twopc_passes_every_oracle_on_200_swarm_seeds() -> None:
    outcomes = Counter()
    crashes = lost = duplicated = 0
    for seed in range(200):
        result = run_seed("twopc", seed).result
        assert result.outcome == OUTCOME_OK, (seed, result.failure)
        outcomes[result.outcome] += 1
        crashes += result.stats.crashes
        lost += result.stats.messages_lost
        duplicated += result.stats.messages_duplicated
    # The sweep must actually exercise every kind of fault, or it proves little.
    assert crashes > 20 and lost > 100 and duplicated > 100, (crashes, lost, duplicated)


def test_swarm_seeds_explore_different_fault_mixes() -> None:
    mixes = set()
    for seed in range(40):
        plan = run_seed("twopc", seed).result.plan
        kinds = {w.kind for w in plan.windows}
        mixes.add((bool(plan.crashes), bool(plan.partitions), *sorted(kinds)))
    assert len(mixes) >= 8


def test_traces_of_correct_runs_are_accepted_by_tlc(tmp_path: Path) -> None:
    # Seeds chosen to include crashes, loss, duplication and delay between them.
    for seed in (3, 85, 96):
        path = tmp_path / f"{seed}.ndjson"
        run_seed("twopc", seed, trace_path=path)
        verdict = validate_trace(path)
        assert verdict.accepted, verdict.report()


def test_msgpack_and_ndjson_traces_hold_the_same_steps(tmp_path: Path) -> None:
    json_path = tmp_path / "t.ndjson"
    msgpack_path = tmp_path / "t.msgpack"
    run_seed("twopc", 85, trace_path=json_path)
    run_seed("twopc", 85, trace_path=msgpack_path, options=SimOptions(trace_format="msgpack"))
    as_json, as_msgpack = read_trace(json_path), read_trace(msgpack_path)
    # The headers differ only in the command that regenerates each format.
    assert as_json.header is not None and as_msgpack.header is not None
    assert {**as_json.header, "reproduce": None} == {**as_msgpack.header, "reproduce": None}
    assert "--trace-format msgpack" in as_msgpack.header["reproduce"]
    assert [(s.action, s.vars) for s in as_json.steps] == [
        (s.action, s.vars) for s in as_msgpack.steps
    ]
    assert msgpack_path.stat().st_size < json_path.stat().st_size
