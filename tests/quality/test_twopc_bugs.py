"""Each two-phase commit bug variant is a promise: tlasim finds it.

For every variant, a bounded swarm sweep must reach an oracle failure that
names one of the properties the variant documents as broken, and TLC must
reject the failing trace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from protocols.twopc.bugs import BUGS
from sim.kernel import OUTCOME_SAFETY
from sim.runner import run_seed
from tracing.validate import validate_trace

# Measured: every variant fails within its first 100 seeds; 300 leaves room
# for a change in the workload or fault draws without hiding a lost bug.
SEED_BUDGET = 300


def first_failing_seed(bug: str, tmp_path: Path) -> tuple[int, str, Path]:
    for seed in range(SEED_BUDGET):
        path = tmp_path / f"{bug}-{seed}.ndjson"
        result = run_seed("twopc", seed, bug=bug, trace_path=path).result
        if result.outcome == OUTCOME_SAFETY:
            assert result.failure is not None
            return seed, result.failure, path
        path.unlink()
    pytest.fail(f"bug {bug} was not found by the oracles in {SEED_BUDGET} seeds")


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_twopc_bug_variant_is_found_by_oracle_and_rejected_by_tlc(
    bug: str, tmp_path: Path
) -> None:
    seed, failure, trace = first_failing_seed(bug, tmp_path)
    broken = [prop.strip() for prop in BUGS[bug].breaks.split(",")]
    assert failure.split(":")[0] in broken, (seed, failure)

    verdict = validate_trace(trace)
    assert not verdict.accepted, f"TLC accepted the failing trace of seed {seed}"
    assert verdict.divergence is not None


def test_correct_twopc_passes_the_same_seeds_the_bugs_fail(tmp_path: Path) -> None:
    """The oracles do not fire on the correct protocol (no false alarms)."""
    for seed in range(100):
        result = run_seed("twopc", seed).result
        assert result.ok, (seed, result.failure)
