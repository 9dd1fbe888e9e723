"""Each bug variant of each protocol is a promise: tlasim finds it.

For every variant of every protocol:
- a swarm campaign over a fixed seed budget reaches an oracle failure that names one of the
  properties the variant documents as broken, and TLC rejects its trace, also when the
  trace is stripped into a partial log (unless the stripped variables are what shows it);
- shrinking that failure leaves no more faults than the variant needs
  (`BugVariant.minimal_faults`), and the shrunk plan replays to the same
  failure;
- search mode (hypothesis) finds it too, within a bounded number of examples
  (test_bug_zoo_search.py: a file of its own, so that pytest-xdist runs the
  two halves side by side).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from bug_zoo_table import VARIANTS, documented

from tlasim.faults.plan import Crash
from tlasim.protocols import PROTOCOLS
from tlasim.protocols.shardsplit.bugs import SPLIT_PROGRESS_NOT_DURABLE
from tlasim.protocols.snapshot.bugs import ACK_BEFORE_PERSIST
from tlasim.protocols.twopc.bugs import COMMIT_BEFORE_DURABLE, TM_FORGETS_DECISION
from tlasim.sim.campaign.shrinking import broken_property, shrink_failure
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.kernel.simulation import OUTCOME_SAFETY
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import read_trace
from tlasim.tracing.mutation.partial import STRIPPINGS, strip
from tlasim.tracing.validation.validator import validate_traces

# Measured: every variant fails within its first 45 swarm seeds; 300 leaves
# room for a change in the workload or fault draws without hiding a lost bug.
SEED_BUDGET = 300
# Variants whose only way to fail is a crash of one node, and that node.
CRASH_OF = {
    ("twopc", COMMIT_BEFORE_DURABLE): "tm",
    ("twopc", TM_FORGETS_DECISION): "tm",
    ("shardsplit", SPLIT_PROGRESS_NOT_DURABLE): "coord",
    ("snapshot", ACK_BEFORE_PERSIST): "rcv",
}


# Partial logs that leave out what shows a variant's bug: without the
# network, a read answered before the chunk arrived looks like any other read.
HIDDEN_BY = {("snapshot", "read-before-chunk"): ("no-network",)}

# Seeds are swept in batches, so a variant found early costs one batch.
SWEEP_BATCH = 50


@functools.cache
def _first_failure(protocol: str, bug: str) -> tuple[int, str] | None:
    """The first swarm seed, within the budget, whose run breaks a safety oracle."""
    for start in range(0, SEED_BUDGET, SWEEP_BATCH):
        seeds = range(start, min(start + SWEEP_BATCH, SEED_BUDGET))
        outcomes = run_campaign(protocol, seeds, bug=bug, validate="none", workers=1)
        failed = [o for o in outcomes if o.outcome == OUTCOME_SAFETY]
        if failed:
            assert failed[0].failure is not None
            return failed[0].seed, failed[0].failure
    return None


def first_failing_seed(protocol: str, bug: str, tmp_path: Path) -> tuple[int, str, Path]:
    """Sweep swarm seeds up to the budget; return the first failure and its trace."""
    found = _first_failure(protocol, bug)
    if found is None:
        pytest.fail(f"bug {bug} was not found by the oracles in {SEED_BUDGET} seeds")
    seed, failure = found
    path = tmp_path / f"{bug}-{seed}.ndjson"
    replayed = run_seed(protocol, seed, bug=bug, trace_path=path).result
    assert replayed.failure == failure
    return seed, failure, path


@pytest.mark.parametrize(("protocol", "bug"), VARIANTS)
def test_bug_variant_is_found_by_oracle_and_rejected_by_tlc(
    protocol: str, bug: str, tmp_path: Path
) -> None:
    seed, failure, trace = first_failing_seed(protocol, bug, tmp_path)
    assert documented(protocol, bug, failure), (seed, failure)

    # The whole trace and its partial-log shapes, in one batched TLC run.
    full = read_trace(trace)
    shapes = {"full": full} | {how: strip(full, how) for how in STRIPPINGS}
    verdicts = dict(zip(shapes, validate_traces(list(shapes.values())), strict=True))
    assert not verdicts["full"].accepted, f"TLC accepted the failing trace of seed {seed}"
    assert verdicts["full"].divergence is not None
    for how, verdict in verdicts.items():
        if how in HIDDEN_BY.get((protocol, bug), ()):
            continue
        assert not verdict.accepted, f"the {how} log of seed {seed} hides the bug"
        assert verdict.divergence is not None


@pytest.mark.parametrize(("protocol", "bug"), VARIANTS)
def test_bug_variant_shrinks_to_the_faults_it_needs(
    protocol: str, bug: str, tmp_path: Path
) -> None:
    seed, failure, _ = first_failing_seed(protocol, bug, tmp_path)
    shrunk = shrink_failure(protocol, seed, bug=bug)
    plan = shrunk.shrunk.result.plan
    assert plan.size <= PROTOCOLS[protocol].bugs[bug].minimal_faults, plan.describe()
    assert plan.size <= shrunk.original.result.plan.size
    assert broken_property(shrunk.shrunk) == failure.split(":")[0]
    if (protocol, bug) in CRASH_OF:
        assert [type(f) for f in plan.faults()] == [Crash]
        assert plan.crashes[0].node == CRASH_OF[protocol, bug]


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_correct_protocol_passes_the_same_seeds_the_bugs_fail(protocol: str) -> None:
    """The oracles do not fire on the correct protocol (no false alarms)."""
    for seed in range(100):
        result = run_seed(protocol, seed).result
        assert result.ok, (seed, result.failure)
