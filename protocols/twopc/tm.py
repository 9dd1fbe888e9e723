"""The two-phase commit transaction manager, as a sans-IO core.

Theory of operation: the TM owns one state machine per transaction
(`TMTx`, moves checked against `TM_TRANSITIONS`). It begins each transaction
at the tick the workload gives, asks every RM to vote, commits once every RM
voted Yes and aborts on a No vote or when votes stay missing after
`prepare_attempts_max` rounds. Abort is presumed: the TM syncs a `begin`
record before it sends Prepare and a `commit` record before it sends Commit,
never an abort record, and recovery treats a begun transaction without a
commit record as aborted. RMs drive termination: a prepared RM resends its
vote until it hears the decision, and the TM answers a vote for a decided
transaction with the decision. So every handler is idempotent under
duplicated and resent messages.

This module knows only its own state and its configuration. It never reads
a clock, draws a random number or does I/O; each spec action it performs is
one atomic step named exactly as in specs/twopc/TwoPhaseCommitMsg.tla.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from tlasim.protocols.base import (
    CancelTimer,
    Effect,
    Input,
    Persist,
    Receive,
    Recover,
    Send,
    SetTimer,
    Start,
    Timeout,
)
from tlasim.protocols.errors import ProtocolViolation
from tlasim.protocols.steps import StepList
from tlasim.protocols.twopc import bugs
from tlasim.protocols.twopc.config import TwoPCConfig
from tlasim.protocols.twopc.messages import Abort, Aborted, Commit, Prepare, Prepared

TM_ID = "tm"


class TMTx(enum.Enum):
    INIT = "init"
    PREPARING = "preparing"
    COMMITTED = "committed"
    ABORTED = "aborted"


TM_TRANSITIONS: dict[TMTx, frozenset[TMTx]] = {
    TMTx.INIT: frozenset({TMTx.PREPARING}),
    TMTx.PREPARING: frozenset({TMTx.COMMITTED, TMTx.ABORTED}),
    TMTx.COMMITTED: frozenset(),
    TMTx.ABORTED: frozenset(),
}


def _begin_timer(tx: str) -> str:
    return f"begin:{tx}"


def _vote_timer(tx: str) -> str:
    return f"vote:{tx}"


class TransactionManager:
    def __init__(self, config: TwoPCConfig) -> None:
        self.node_id = TM_ID
        self.config = config
        self.state: dict[str, TMTx] = {plan.tx: TMTx.INIT for plan in config.txs}
        # Voters are a set so a duplicated vote changes nothing; the
        # counts-duplicate-votes bug keeps every vote message instead.
        self.votes: dict[str, list[str]] = {plan.tx: [] for plan in config.txs}
        self.prepare_rounds: dict[str, int] = {plan.tx: 0 for plan in config.txs}

    # ---- the view the refinement mapping reads ----

    def view(self) -> Mapping[str, Any]:
        return {
            "tmState": {tx: s.value for tx, s in self.state.items()},
            "tmPrepared": {tx: frozenset(v) for tx, v in self.votes.items()},
        }

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        begun = {rec["tx"] for rec in log if rec["kind"] == "begin"}
        committed = {rec["tx"] for rec in log if rec["kind"] == "commit"}
        if self.config.bug == bugs.TM_FORGETS_DECISION:
            committed = set()
        for tx in self.state:
            if tx in committed:
                self.state[tx] = TMTx.COMMITTED
            elif tx in begun:
                self.state[tx] = TMTx.ABORTED
            else:
                self.state[tx] = TMTx.INIT
            self.votes[tx] = []
            self.prepare_rounds[tx] = 0

    # ---- inputs ----

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            for plan in self.config.txs:
                out.add(SetTimer(_begin_timer(plan.tx), plan.begin_tick - now))
        elif isinstance(event, Recover):
            self.restore(event.log)
            out.step("TMRecover", {})
            for plan in self.config.txs:
                if self.state[plan.tx] is TMTx.INIT:
                    out.add(SetTimer(_begin_timer(plan.tx), max(0, plan.begin_tick - now)))
        elif isinstance(event, Timeout):
            kind, _, tx = event.name.partition(":")
            if kind == "begin" and self.state[tx] is TMTx.INIT:
                self._begin(out, tx)
            elif kind == "vote" and self.state[tx] is TMTx.PREPARING:
                self._vote_timeout(out, tx)
        elif isinstance(event, Receive):
            msg = event.msg
            if isinstance(msg, Prepared):
                self._on_prepared(out, msg)
            elif isinstance(msg, Aborted):
                out.step("TMRcvAborted", {"tx": msg.tx, "rm": msg.rm})
                if self.state[msg.tx] is TMTx.PREPARING:
                    self._abort(out, msg.tx)
            else:
                raise ProtocolViolation(f"TM cannot handle {msg!r}: it only receives votes")
        return out.effects

    # ---- steps ----

    def _move(self, tx: str, new: TMTx) -> None:
        old = self.state[tx]
        if new not in TM_TRANSITIONS[old]:
            raise ProtocolViolation(f"TM cannot move {tx} from {old.value} to {new.value}")
        self.state[tx] = new

    def _send_prepare(self, out: StepList, tx: str, rms: list[str]) -> None:
        for rm in rms:
            out.step("TMSendPrepare", {"tx": tx, "rm": rm}, Send(rm, Prepare(tx, rm)))

    def _begin(self, out: StepList, tx: str) -> None:
        self._move(tx, TMTx.PREPARING)
        self.prepare_rounds[tx] = 1
        out.step("TMBegin", {"tx": tx}, Persist({"kind": "begin", "tx": tx}, sync=True))
        self._send_prepare(out, tx, list(self.config.rms))
        out.add(SetTimer(_vote_timer(tx), self.config.options.vote_timeout_ticks))

    def _vote_timeout(self, out: StepList, tx: str) -> None:
        if self.prepare_rounds[tx] >= self.config.options.prepare_attempts_max:
            self._abort(out, tx)
            return
        self.prepare_rounds[tx] += 1
        voted = set(self.votes[tx])
        self._send_prepare(out, tx, [rm for rm in self.config.rms if rm not in voted])
        out.add(SetTimer(_vote_timer(tx), self.config.options.vote_timeout_ticks))

    def _all_voted(self, tx: str) -> bool:
        if self.config.bug == bugs.COUNTS_DUPLICATE_VOTES:
            return len(self.votes[tx]) >= len(self.config.rms)
        return set(self.votes[tx]) == set(self.config.rms)

    def _on_prepared(self, out: StepList, msg: Prepared) -> None:
        tx, rm = msg.tx, msg.rm
        state = self.state[tx]
        if state is TMTx.PREPARING and (
            rm not in self.votes[tx] or self.config.bug == bugs.COUNTS_DUPLICATE_VOTES
        ):
            self.votes[tx].append(rm)
        out.step("TMRcvPrepared", {"tx": tx, "rm": rm})
        if state is TMTx.PREPARING:
            if self._all_voted(tx):
                self._commit(out, tx)
        elif state is TMTx.COMMITTED:
            out.step("TMSendCommit", {"tx": tx, "rm": rm}, Send(rm, Commit(tx, rm)))
        elif state is TMTx.ABORTED:
            out.step("TMSendAbort", {"tx": tx, "rm": rm}, Send(rm, Abort(tx, rm)))

    def _send_commit(self, out: StepList, tx: str) -> None:
        for rm in self.config.rms:
            out.step("TMSendCommit", {"tx": tx, "rm": rm}, Send(rm, Commit(tx, rm)))

    def _commit(self, out: StepList, tx: str) -> None:
        if self.config.bug == bugs.COMMIT_BEFORE_DURABLE:
            # The bug: tell the RMs first, make the decision durable after.
            self._send_commit(out, tx)
        self._move(tx, TMTx.COMMITTED)
        out.step(
            "TMCommit",
            {"tx": tx},
            CancelTimer(_vote_timer(tx)),
            Persist({"kind": "commit", "tx": tx}, sync=True),
        )
        if self.config.bug != bugs.COMMIT_BEFORE_DURABLE:
            self._send_commit(out, tx)

    def _abort(self, out: StepList, tx: str) -> None:
        self._move(tx, TMTx.ABORTED)
        out.step("TMAbort", {"tx": tx}, CancelTimer(_vote_timer(tx)))
        for rm in self.config.rms:
            out.step("TMSendAbort", {"tx": tx, "rm": rm}, Send(rm, Abort(tx, rm)))
