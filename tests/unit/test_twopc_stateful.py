"""Hypothesis stateful test of the two-phase commit cores, without the simulator.

One rule per TLA+ action that an input can start (the action named by the
rule is the first step the input produces; later steps of the same handler,
such as TMCommit after the last TMRcvPrepared, follow in the same rule).
Every rule may crash the node between any two of its steps. One invariant per
spec invariant of specs/twopc/TwoPhaseCommitMsg.tla.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tlasim.protocols.base import (
    CancelTimer,
    Persist,
    Receive,
    Recover,
    Send,
    SetTimer,
    Start,
    Timeout,
    Trace,
)
from tlasim.protocols.twopc.config import VOTE_NO, VOTE_YES, TwoPCConfig, TwoPCOptions, TxPlan
from tlasim.protocols.twopc.messages import Abort, Aborted, Commit, Prepare, Prepared
from tlasim.protocols.twopc.rm import ResourceManager
from tlasim.protocols.twopc.tm import TM_ID, TransactionManager

RMS = ("r1", "r2", "r3")
TXS = ("t1", "t2")
SPEC_ACTIONS = {
    "TMBegin", "TMSendPrepare", "TMRcvPrepared", "TMRcvAborted", "TMCommit", "TMAbort",
    "TMSendCommit", "TMSendAbort", "TMRecover", "RMRcvPrepare", "RMSendPrepared",
    "RMSendAborted", "RMChooseToAbort", "RMRcvCommit", "RMRcvAbort", "RMRecover",
}  # TMCrash, RMCrash, NetLose and NetDuplicate are the runtime's steps

CONFIG = TwoPCConfig(
    rms=RMS,
    txs=(
        TxPlan("t1", 1, {"r1": VOTE_YES, "r2": VOTE_YES, "r3": VOTE_YES}),
        TxPlan("t2", 2, {"r1": VOTE_YES, "r2": VOTE_NO, "r3": VOTE_YES}, {"r3": 5}),
    ),
    options=TwoPCOptions(rm_count=3, tx_count=2),
)

crash_points = st.none() | st.integers(min_value=1, max_value=6)


class TwoPhaseCommitCores(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.cores: dict[str, Any] = {TM_ID: TransactionManager(CONFIG)}
        self.cores.update({rm: ResourceManager(rm, CONFIG) for rm in RMS})
        self.up = dict.fromkeys(self.cores, True)
        self.logs: dict[str, list[dict[str, Any]]] = {n: [] for n in self.cores}
        self.timers: dict[str, set[str]] = {n: set() for n in self.cores}
        self.bag: Counter[Any] = Counter()
        self.actions_seen: set[str] = set()
        for node in self.cores:
            self._run(node, Start(), None)

    # ---- harness: carry out effects step by step, crashing where told ----

    def _run(self, node: str, event: Any, crash_after: int | None) -> None:
        self.now += 1
        steps = 0
        for effect in self.cores[node].handle(self.now, event):
            if isinstance(effect, Send):
                self.bag[effect.msg] += 1
            elif isinstance(effect, Persist):
                assert effect.sync, "the correct protocol syncs every record"
                self.logs[node].append(dict(effect.record))
            elif isinstance(effect, SetTimer):
                self.timers[node].add(effect.name)
            elif isinstance(effect, CancelTimer):
                self.timers[node].discard(effect.name)
            elif isinstance(effect, Trace):
                assert effect.action in SPEC_ACTIONS, effect.action
                self.actions_seen.add(effect.action)
                steps += 1
                if steps == crash_after:
                    self._crash(node)
                    return

    def _crash(self, node: str) -> None:
        self.up[node] = False
        self.timers[node].clear()

    def _deliver(self, msg: Any, dst: str, crash_after: int | None) -> None:
        self.bag[msg] -= 1
        if not self.bag[msg]:
            del self.bag[msg]
        self._run(dst, Receive("x", msg), crash_after)

    def _in_bag(self, kind: type) -> list[Any]:
        return sorted((m for m in self.bag if isinstance(m, kind)), key=repr)

    def tm_state(self, tx: str) -> str:
        return self.cores[TM_ID].state[tx].value

    def rm_state(self, rm: str, tx: str) -> str:
        """A crashed RM's state is what it will recover to: its log."""
        if not self.up[rm]:
            restored = ResourceManager(rm, CONFIG)
            restored.restore(tuple(self.logs[rm]))
            return restored.state[tx].value
        return self.cores[rm].state[tx].value

    # ---- TM rules ----

    @precondition(lambda self: self.up[TM_ID])
    @rule(tx=st.sampled_from(TXS), crash_after=crash_points)
    def tm_begin(self, tx: str, crash_after: int | None) -> None:
        if f"begin:{tx}" in self.timers[TM_ID]:
            self.timers[TM_ID].discard(f"begin:{tx}")
            self._run(TM_ID, Timeout(f"begin:{tx}"), crash_after)

    @precondition(lambda self: self.up[TM_ID])
    @rule(tx=st.sampled_from(TXS), crash_after=crash_points)
    def tm_send_prepare_or_abort_on_vote_timeout(self, tx: str, crash_after: int | None) -> None:
        if f"vote:{tx}" in self.timers[TM_ID]:
            self.timers[TM_ID].discard(f"vote:{tx}")
            self._run(TM_ID, Timeout(f"vote:{tx}"), crash_after)

    @precondition(lambda self: self.up[TM_ID] and self._in_bag(Prepared))
    @rule(data=st.data(), crash_after=crash_points)
    def tm_rcv_prepared(self, data: st.DataObject, crash_after: int | None) -> None:
        self._deliver(data.draw(st.sampled_from(self._in_bag(Prepared))), TM_ID, crash_after)

    @precondition(lambda self: self.up[TM_ID] and self._in_bag(Aborted))
    @rule(data=st.data(), crash_after=crash_points)
    def tm_rcv_aborted(self, data: st.DataObject, crash_after: int | None) -> None:
        self._deliver(data.draw(st.sampled_from(self._in_bag(Aborted))), TM_ID, crash_after)

    @precondition(lambda self: self.up[TM_ID])
    @rule()
    def tm_crash(self) -> None:
        self._crash(TM_ID)

    @precondition(lambda self: not self.up[TM_ID])
    @rule(crash_after=crash_points)
    def tm_recover(self, crash_after: int | None) -> None:
        self.cores[TM_ID] = TransactionManager(CONFIG)
        self.up[TM_ID] = True
        self._run(TM_ID, Recover(tuple(self.logs[TM_ID])), crash_after)

    # ---- RM rules ----

    def _rm_rcv(self, kind: type, data: st.DataObject, crash_after: int | None) -> None:
        live = [m for m in self._in_bag(kind) if self.up[m.rm]]
        if live:
            msg = data.draw(st.sampled_from(live))
            self._deliver(msg, msg.rm, crash_after)

    @precondition(lambda self: self._in_bag(Prepare))
    @rule(data=st.data(), crash_after=crash_points)
    def rm_rcv_prepare(self, data: st.DataObject, crash_after: int | None) -> None:
        self._rm_rcv(Prepare, data, crash_after)

    @precondition(lambda self: self._in_bag(Commit))
    @rule(data=st.data(), crash_after=crash_points)
    def rm_rcv_commit(self, data: st.DataObject, crash_after: int | None) -> None:
        self._rm_rcv(Commit, data, crash_after)

    @precondition(lambda self: self._in_bag(Abort))
    @rule(data=st.data(), crash_after=crash_points)
    def rm_rcv_abort(self, data: st.DataObject, crash_after: int | None) -> None:
        self._rm_rcv(Abort, data, crash_after)

    @rule(rm=st.sampled_from(RMS), tx=st.sampled_from(TXS), crash_after=crash_points)
    def rm_choose_to_abort(self, rm: str, tx: str, crash_after: int | None) -> None:
        for timer in (f"deadline:{tx}", f"self-abort:{tx}"):
            if self.up[rm] and timer in self.timers[rm]:
                self.timers[rm].discard(timer)
                self._run(rm, Timeout(timer), crash_after)
                return

    @rule(rm=st.sampled_from(RMS), tx=st.sampled_from(TXS), crash_after=crash_points)
    def rm_send_prepared(self, rm: str, tx: str, crash_after: int | None) -> None:
        if self.up[rm] and f"inquiry:{tx}" in self.timers[rm]:
            self.timers[rm].discard(f"inquiry:{tx}")
            self._run(rm, Timeout(f"inquiry:{tx}"), crash_after)

    @rule(rm=st.sampled_from(RMS))
    def rm_crash(self, rm: str) -> None:
        if self.up[rm]:
            self._crash(rm)

    @rule(rm=st.sampled_from(RMS), crash_after=crash_points)
    def rm_recover(self, rm: str, crash_after: int | None) -> None:
        if not self.up[rm]:
            self.cores[rm] = ResourceManager(rm, CONFIG)
            self.up[rm] = True
            self._run(rm, Recover(tuple(self.logs[rm])), crash_after)

    # ---- network rules ----

    @precondition(lambda self: bool(self.bag))
    @rule(data=st.data())
    def net_lose(self, data: st.DataObject) -> None:
        msg = data.draw(st.sampled_from(sorted(self.bag, key=repr)))
        self.bag[msg] -= 1
        if not self.bag[msg]:
            del self.bag[msg]

    @precondition(lambda self: bool(self.bag))
    @rule(data=st.data())
    def net_duplicate(self, data: st.DataObject) -> None:
        self.bag[data.draw(st.sampled_from(sorted(self.bag, key=repr)))] += 1

    # ---- invariants of TwoPhaseCommitMsg ----

    @invariant()
    def consistent(self) -> None:
        for tx in TXS:
            states = {self.rm_state(rm, tx) for rm in RMS}
            assert not {"committed", "aborted"} <= states, (tx, states)

    @invariant()
    def tm_decision_agrees_with_rms(self) -> None:
        for tx in TXS:
            states = {self.rm_state(rm, tx) for rm in RMS}
            if self.up[TM_ID] and self.tm_state(tx) == "committed":
                assert "aborted" not in states
                assert "working" not in states

    @invariant()
    def rm_commit_implies_tm_committed(self) -> None:
        recovered = TransactionManager(CONFIG)
        recovered.restore(tuple(self.logs[TM_ID]))
        tm = self.cores[TM_ID] if self.up[TM_ID] else recovered
        for tx in TXS:
            if any(self.rm_state(rm, tx) == "committed" for rm in RMS):
                assert tm.state[tx].value == "committed", tx

    @invariant()
    def commit_record_implies_every_rm_logged_prepared(self) -> None:
        for rec in self.logs[TM_ID]:
            if rec["kind"] == "commit":
                for rm in RMS:
                    assert {"kind": "prepared", "tx": rec["tx"]} in self.logs[rm]

    @invariant()
    def abort_in_flight_implies_tm_aborted(self) -> None:
        for msg in self.bag:
            if isinstance(msg, Abort) and self.up[TM_ID]:
                assert self.tm_state(msg.tx) == "aborted"

    @invariant()
    def rm_state_matches_its_log(self) -> None:
        for rm in (rm for rm in RMS if self.up[rm]):
            restored = ResourceManager(rm, CONFIG)
            restored.restore(tuple(self.logs[rm]))
            assert restored.state == self.cores[rm].state


TwoPhaseCommitCores.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
test_twopc_cores_keep_spec_invariants = TwoPhaseCommitCores.TestCase
