"""A two-phase commit resource manager, as a sans-IO core.

Theory of operation: the RM owns one state machine per transaction (`RMTx`,
moves checked against `RM_TRANSITIONS`). It holds uncommitted work for a
transaction from the transaction's begin tick. Asked to vote, it votes as
the workload says; it may also abort on its own while still working, and it
aborts when it has been working for `working_timeout_ticks` without being
asked. Every move is synced to its log in the same step, so its durable
state is its state, and a crash loses only timers and uncommitted work: a
recovered RM names the transactions whose work it held (`lost_work`, the
spec's rmLostWork) and aborts them, since it can no longer vote Yes on
them. A prepared RM
resends its vote every `inquiry_interval_ticks` until the decision arrives,
which is how it survives a lost Commit or a TM crash.

This module knows only its own state and its configuration. Each spec
action it performs is one atomic step named exactly as in
specs/twopc/TwoPhaseCommitMsg.tla.
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
from tlasim.protocols.twopc.config import VOTE_YES, TwoPCConfig
from tlasim.protocols.twopc.messages import Abort, Aborted, Commit, Prepare, Prepared
from tlasim.protocols.twopc.tm import TM_ID


class RMTx(enum.Enum):
    WORKING = "working"
    PREPARED = "prepared"
    COMMITTED = "committed"
    ABORTED = "aborted"


RM_TRANSITIONS: dict[RMTx, frozenset[RMTx]] = {
    RMTx.WORKING: frozenset({RMTx.PREPARED, RMTx.ABORTED}),
    RMTx.PREPARED: frozenset({RMTx.COMMITTED, RMTx.ABORTED}),
    RMTx.COMMITTED: frozenset(),
    RMTx.ABORTED: frozenset(),
}

_RECORD_STATE = {
    "prepared": RMTx.PREPARED,
    "committed": RMTx.COMMITTED,
    "aborted": RMTx.ABORTED,
}


class ResourceManager:
    def __init__(self, node_id: str, config: TwoPCConfig) -> None:
        self.node_id = node_id
        self.config = config
        self.state: dict[str, RMTx] = {plan.tx: RMTx.WORKING for plan in config.txs}
        # Volatile: the transactions whose work this RM lost in its last crash,
        # worked out again at each recovery (a crashed RM knows of none).
        self.lost_work: frozenset[str] = frozenset()

    def view(self) -> Mapping[str, Any]:
        return {
            "rmState": {tx: s.value for tx, s in self.state.items()},
            "rmLostWork": self.lost_work,
        }

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        for tx in self.state:
            self.state[tx] = RMTx.WORKING
        for rec in log:
            self.state[rec["tx"]] = _RECORD_STATE[rec["kind"]]

    # ---- inputs ----

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            self._arm_work_timers(out, now)
        elif isinstance(event, Recover):
            self.restore(event.log)
            self.lost_work = self._work_lost_in_crash(now)
            out.step("RMRecover", {"rm": self.node_id})
            self._abort_lost_work(out)
            self._arm_work_timers(out, now)
            inquiry = self.config.options.inquiry_interval_ticks
            for tx, state in self.state.items():
                if state is RMTx.PREPARED:
                    out.add(SetTimer(_inquiry_timer(tx), inquiry))
        elif isinstance(event, Timeout):
            kind, _, tx = event.name.partition(":")
            self._on_timeout(out, kind, tx)
        elif isinstance(event, Receive):
            msg = event.msg
            if isinstance(msg, Prepare):
                self._on_prepare(out, msg.tx)
            elif isinstance(msg, Commit):
                self._on_commit(out, msg.tx)
            elif isinstance(msg, Abort):
                self._on_abort(out, msg.tx)
            else:
                raise ProtocolViolation(f"RM {self.node_id} cannot handle {msg!r}")
        return out.effects

    # ---- steps ----

    def _params(self, tx: str) -> dict[str, str]:
        return {"tx": tx, "rm": self.node_id}

    def _move(self, tx: str, new: RMTx) -> None:
        old = self.state[tx]
        if new not in RM_TRANSITIONS[old]:
            raise ProtocolViolation(
                f"RM {self.node_id} cannot move {tx} from {old.value} to {new.value}"
            )
        self.state[tx] = new

    def _work_lost_in_crash(self, now: int) -> frozenset[str]:
        """Uncommitted work is held in memory from a transaction's begin tick, so
        a crash lost it for every transaction still working whose tick has passed."""
        return frozenset(
            plan.tx
            for plan in self.config.txs
            if self.state[plan.tx] is RMTx.WORKING and plan.begin_tick <= now
        )

    def _abort_lost_work(self, out: StepList) -> None:
        # Work held in memory is gone, so the RM can no longer vote Yes.
        for plan in self.config.txs:
            if plan.tx in self.lost_work:
                self._choose_to_abort(out, plan.tx)

    def _arm_work_timers(self, out: StepList, now: int) -> None:
        options = self.config.options
        for plan in self.config.txs:
            if self.state[plan.tx] is not RMTx.WORKING:
                continue
            deadline = plan.begin_tick + options.working_timeout_ticks
            out.add(SetTimer(_deadline_timer(plan.tx), max(0, deadline - now)))
            self_abort = plan.self_abort_ticks.get(self.node_id)
            if self_abort is not None and self_abort >= now:
                out.add(SetTimer(_self_abort_timer(plan.tx), self_abort - now))

    def _on_timeout(self, out: StepList, kind: str, tx: str) -> None:
        state = self.state[tx]
        if kind in ("deadline", "self-abort") and state is RMTx.WORKING:
            self._choose_to_abort(out, tx)
        elif kind == "inquiry" and state is RMTx.PREPARED:
            if self.config.bug == bugs.ABORT_AFTER_PREPARE:
                # The bug: give up on the TM instead of asking again.
                self._choose_to_abort(out, tx)
                return
            out.step("RMSendPrepared", self._params(tx), Send(TM_ID, Prepared(tx, self.node_id)))
            out.add(SetTimer(_inquiry_timer(tx), self.config.options.inquiry_interval_ticks))

    def _choose_to_abort(self, out: StepList, tx: str) -> None:
        self._move(tx, RMTx.ABORTED)
        out.step(
            "RMChooseToAbort",
            self._params(tx),
            CancelTimer(_inquiry_timer(tx)),
            Persist({"kind": "aborted", "tx": tx}, sync=True),
        )

    def _on_prepare(self, out: StepList, tx: str) -> None:
        if self.state[tx] is RMTx.WORKING:
            vote_yes = self.config.plan(tx).votes[self.node_id] == VOTE_YES
            new = RMTx.PREPARED if vote_yes else RMTx.ABORTED
            self._move(tx, new)
            out.step(
                "RMRcvPrepare",
                self._params(tx),
                Persist({"kind": new.value, "tx": tx}, sync=True),
            )
        else:
            out.step("RMRcvPrepare", self._params(tx))
        state = self.state[tx]
        if state is RMTx.PREPARED:
            out.step("RMSendPrepared", self._params(tx), Send(TM_ID, Prepared(tx, self.node_id)))
            out.add(SetTimer(_inquiry_timer(tx), self.config.options.inquiry_interval_ticks))
        elif state is RMTx.ABORTED:
            out.step("RMSendAborted", self._params(tx), Send(TM_ID, Aborted(tx, self.node_id)))

    def _on_commit(self, out: StepList, tx: str) -> None:
        # A Commit for a transaction this RM never prepared cannot happen in a
        # correct protocol; the step is still traced, so TLC names the culprit.
        if self.state[tx] is RMTx.PREPARED:
            self._move(tx, RMTx.COMMITTED)
            out.step(
                "RMRcvCommit",
                self._params(tx),
                CancelTimer(_inquiry_timer(tx)),
                Persist({"kind": "committed", "tx": tx}, sync=True),
            )
        else:
            out.step("RMRcvCommit", self._params(tx))

    def _on_abort(self, out: StepList, tx: str) -> None:
        if self.state[tx] in (RMTx.WORKING, RMTx.PREPARED):
            self._move(tx, RMTx.ABORTED)
            out.step(
                "RMRcvAbort",
                self._params(tx),
                CancelTimer(_inquiry_timer(tx)),
                Persist({"kind": "aborted", "tx": tx}, sync=True),
            )
        else:
            out.step("RMRcvAbort", self._params(tx))


def _deadline_timer(tx: str) -> str:
    return f"deadline:{tx}"


def _self_abort_timer(tx: str) -> str:
    return f"self-abort:{tx}"


def _inquiry_timer(tx: str) -> str:
    return f"inquiry:{tx}"
