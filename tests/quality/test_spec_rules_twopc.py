"""Rules the two-phase commit code states are rules TLC enforces.

docs/twopc-model.md lists each rule the cores state or rely on, and where
TwoPhaseCommitMsg enforces it. For each rule issue 30 tightened, a core
that breaks exactly that rule runs under swarm faults until a seed makes the
break matter; TLC must reject that trace at the very line where the rule
was first broken (found here from the trace, not written down), and the
correct core must pass the same seed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tlasim.protocols.base import Core
from tlasim.protocols.steps import StepList
from tlasim.protocols.twopc.config import TwoPCConfig
from tlasim.protocols.twopc.definition import TwoPhaseCommit
from tlasim.protocols.twopc.rm import ResourceManager
from tlasim.protocols.twopc.tm import TM_ID, TransactionManager
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import Trace, TraceStep, read_trace
from tlasim.tracing.validation.validator import validate_trace

SEEDS = range(400)  # swarm seeds searched for one where the broken rule shows

# A rule broken in a trace: the line number where it first shows, or None.
FirstBreak = Callable[[Trace], int | None]


class KeepsLostWork(ResourceManager):
    """Recovers without giving up the work its crash lost, so it may still vote Yes."""

    def _abort_lost_work(self, out: object) -> None:
        return None


class ForgetsLostWork(ResourceManager):
    """Recovers as if its crash had lost no work at all."""

    def _work_lost_in_crash(self, now: int) -> frozenset[str]:
        return frozenset()


class CommitsAtRoundTimer(TransactionManager):
    """Counts the last Yes vote but commits only when its round timer fires."""

    def _all_voted(self, tx: str) -> bool:
        return False

    def _vote_timeout(self, out: StepList, tx: str) -> None:
        if set(self.votes[tx]) == set(self.config.rms):
            self._commit(out, tx)
        else:
            super()._vote_timeout(out, tx)


class AbortsHoldingEveryVote(CommitsAtRoundTimer):
    """Commits at its round timer, and checks its rounds before its votes there,
    so it aborts a transaction every RM voted Yes on once its rounds run out."""

    def _vote_timeout(self, out: StepList, tx: str) -> None:
        if self.prepare_rounds[tx] >= self.config.options.prepare_attempts_max:
            self._abort(out, tx)
        else:
            super()._vote_timeout(out, tx)


class WithCores(TwoPhaseCommit):
    """Two-phase commit whose TM is `tm_class` and whose RMs are `rm_class`."""

    def __init__(
        self,
        tm_class: type[TransactionManager] = TransactionManager,
        rm_class: type[ResourceManager] = ResourceManager,
    ) -> None:
        super().__init__()
        self.tm_class = tm_class
        self.rm_class = rm_class

    def make_core(self, config: TwoPCConfig, node_id: str) -> Core:
        if node_id == TM_ID:
            return self.tm_class(config)
        return self.rm_class(node_id, config)


def _begun(step: TraceStep, tx: str) -> bool:
    return any(rec["kind"] == "begin" and rec["tx"] == tx for rec in step.vars["tmLog"])


def _recoveries(trace: Trace) -> Iterator[tuple[int, TraceStep, set[str]]]:
    """Each RMRecover, with the transactions its RM was working on that the TM
    had begun: work the RM held in memory from the begin tick, so lost."""
    for i, step in enumerate(trace.steps):
        if step.action == "RMRecover":
            rm = step.params["rm"]
            states = step.vars["rmState"]
            lost = {tx for tx in states if states[tx][rm] == "working" and _begun(step, tx)}
            yield i, step, lost


def first_yes_on_lost_work(trace: Trace) -> int | None:
    """The first line where an RM votes Yes on a transaction whose work it lost."""
    breaks = []
    for i, step, lost in _recoveries(trace):
        rm = step.params["rm"]
        for later in trace.steps[i + 1 :]:
            if later.action == "RMCrash" and later.params["rm"] == rm:
                break
            if any(later.vars["rmState"][tx][rm] == "prepared" for tx in lost):
                breaks.append(later.line)
                break
    return min(breaks, default=None)


def first_recovery_hiding_lost_work(trace: Trace) -> int | None:
    """The first RMRecover that does not name all the work its RM lost."""
    for _, step, lost in _recoveries(trace):
        if not lost <= set(step.vars["rmLostWork"][step.params["rm"]]):
            return step.line
    return None


def first_step_between_last_vote_and_commit(trace: Trace) -> int | None:
    """The first step of the TM's own after it counted every RM's Yes vote on a
    transaction it is still preparing that is neither that commit nor its crash:
    the vote's handler commits at once, and only the TM's crash can cut it short.
    Other nodes' steps may fall between, as they run concurrently with it."""
    holds_every_vote = False
    for step in trace.steps:
        if step.node == TM_ID and holds_every_vote and step.action not in ("TMCommit", "TMCrash"):
            return step.line
        tm_state, votes = step.vars["tmState"], step.vars["tmPrepared"]
        holds_every_vote = step.vars["tmUp"] and any(
            state == "preparing" and set(votes[tx]) == set(step.vars["rmState"][tx])
            for tx, state in tm_state.items()
        )
    return None


def _trace(protocol: TwoPhaseCommit, seed: int, path: Path) -> Trace:
    run_seed(protocol, seed, trace_path=path)
    return read_trace(path)


def _assert_rejected_where_the_rule_breaks(
    broken: TwoPhaseCommit, first_break: FirstBreak, tmp_path: Path
) -> None:
    """Run `broken` until a seed breaks its rule; TLC must reject that trace at
    the first breaking line, and accept the correct protocol on the same seed."""
    for seed in SEEDS:
        trace = _trace(broken, seed, tmp_path / f"broken-{seed}.ndjson")
        line = first_break(trace)
        if line is not None:
            break
    else:
        pytest.fail(f"no seed in {SEEDS} makes the broken core break its rule")
    verdict = validate_trace(trace.path)
    assert not verdict.accepted, f"seed {seed}: TLC accepted a trace that breaks the rule"
    assert verdict.divergence is not None
    assert verdict.divergence.line == line
    correct = _trace(TwoPhaseCommit(), seed, tmp_path / f"correct-{seed}.ndjson")
    assert first_break(correct) is None
    assert validate_trace(correct.path).accepted


@pytest.mark.parametrize(
    ("rm_class", "first_break"),
    [(KeepsLostWork, first_yes_on_lost_work), (ForgetsLostWork, first_recovery_hiding_lost_work)],
    ids=["votes-yes-on-lost-work", "recovery-hides-lost-work"],
)
def test_twopc_rm_that_keeps_work_lost_in_a_crash_is_rejected_where_it_breaks_the_rule(
    rm_class: type[ResourceManager], first_break: FirstBreak, tmp_path: Path
) -> None:
    _assert_rejected_where_the_rule_breaks(WithCores(rm_class=rm_class), first_break, tmp_path)


@pytest.mark.parametrize(
    "tm_class", [CommitsAtRoundTimer, AbortsHoldingEveryVote], ids=["commits-late", "aborts-yes"]
)
def test_twopc_tm_holding_every_yes_vote_that_does_not_commit_at_once_is_rejected_there(
    tm_class: type[TransactionManager], tmp_path: Path
) -> None:
    _assert_rejected_where_the_rule_breaks(
        WithCores(tm_class=tm_class), first_step_between_last_vote_and_commit, tmp_path
    )
