"""The shard split coordinator, as a sans-IO core.

Theory of operation: the coordinator owns the routing table and runs the
configured splits one at a time, in order, each no earlier than its due tick.
A split moves through the phases of `PHASE_TRANSITIONS`: freezing (waiting
until both children have installed the parent's data), retiring (routing
switched; waiting for the parent to retire), activating (waiting for both
children to become active), done. Every phase change is synced to the log in
the step that makes it, and the routing table is a function of the phases
(a split at or past `retiring` routes its parent's keys to the children), so
the switch is atomic and a recovered coordinator knows exactly where every
split stands. Which children answered in the current phase is volatile: after
a crash the coordinator resends the phase's message and collects the answers
again, which every shard handler makes safe.

It also answers clients' `RouteReq` with its routing table.

Each spec action is one atomic step named as in specs/shardsplit/ShardSplitMsg.tla.
"""

from __future__ import annotations

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
from tlasim.protocols.frozen import FrozenRecord
from tlasim.protocols.shardsplit import bugs
from tlasim.protocols.shardsplit.config import COORD_ID, ShardSplitConfig, SplitPlan
from tlasim.protocols.shardsplit.messages import Message, message
from tlasim.protocols.steps import StepList

IDLE, FREEZING, RETIRING, ACTIVATING, DONE = "idle", "freezing", "retiring", "activating", "done"
PHASE_TRANSITIONS: dict[str, frozenset[str]] = {
    IDLE: frozenset({FREEZING}),
    FREEZING: frozenset({RETIRING}),
    RETIRING: frozenset({ACTIVATING}),
    ACTIVATING: frozenset({DONE}),
    DONE: frozenset(),
}
SWITCHED = frozenset({RETIRING, ACTIVATING, DONE})  # phases whose keys route to the children
_START_TIMER, _RESEND_TIMER = "start", "resend"


class Coordinator:
    def __init__(self, config: ShardSplitConfig) -> None:
        self.node_id = COORD_ID
        self.config = config
        self.phase: dict[str, str] = {plan.parent: IDLE for plan in config.splits}
        self.acks: dict[str, set[str]] = {plan.parent: set() for plan in config.splits}

    # ---- the view the refinement mapping reads ----

    def routing(self) -> dict[str, str]:
        table = self.config.initial_routing()
        for plan in self.config.splits:  # in split order, so a child's own split comes later
            if self.phase[plan.parent] in SWITCHED:
                for child in plan.children:
                    for key in self.config.shard_keys[child]:
                        table[key] = child
        return table

    def view(self) -> Mapping[str, Any]:
        return {
            "routing": self.routing(),
            "splitPhase": dict(self.phase),
            "coordAcks": {p: frozenset(a) for p, a in self.acks.items()},
        }

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        for parent in self.phase:
            self.phase[parent] = IDLE
            self.acks[parent] = set()
        for record in log:
            self.phase[record["parent"]] = record["phase"]

    # ---- inputs ----

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            self._arm(out, now)
        elif isinstance(event, Recover):
            self.restore(event.log)
            out.step("CoordRecover", {})
            self._arm(out, now)
        elif isinstance(event, Timeout):
            current = self._current()
            phase = IDLE if current is None else self.phase[current.parent]
            if current is not None and event.name == _START_TIMER and phase == IDLE:
                self._start(out, current)
            elif current is not None and event.name == _RESEND_TIMER and phase != IDLE:
                self._resend(out, current)
        elif isinstance(event, Receive):
            self._receive(out, now, event.msg)
        return out.effects

    def _receive(self, out: StepList, now: int, msg: Message) -> None:
        kind = msg["type"]
        if kind == "RouteReq":
            out.step(
                "CoordRoute",
                {"msg": msg},
                Send(msg["c"], message("Route", c=msg["c"], routing=FrozenRecord(self.routing()))),
            )
            return
        parent = msg["parent"]
        if parent not in self.phase:
            raise ProtocolViolation(
                f"coordinator got {kind} for {parent}, which is no split's parent"
            )
        params = {"parent": parent, "msg": msg}
        if kind == "Installed":
            if self.phase[parent] == FREEZING:
                self.acks[parent].add(msg["child"])
            out.step("CoordInstalled", params)
            children = set(self.config.split_of(parent).children)  # type: ignore[union-attr]
            ready = self.acks[parent] == children
            if self.config.bug == bugs.SWITCH_BEFORE_TRANSFER:
                ready = bool(self.acks[parent])
            if self.phase[parent] == FREEZING and ready:
                self._move(
                    out,
                    parent,
                    RETIRING,
                    "CoordSwitch",
                    [Send(parent, message("Retire", parent=parent))],
                )
        elif kind == "Retired":
            if self.phase[parent] == RETIRING:
                plan = self.config.split_of(parent)
                assert plan is not None
                self._move(out, parent, ACTIVATING, "CoordRetired", self._activations(plan), params)
            else:
                out.step("CoordRetired", params)
        elif kind == "Activated":
            if self.phase[parent] == ACTIVATING:
                self.acks[parent].add(msg["child"])
            out.step("CoordActivated", params)
            plan = self.config.split_of(parent)
            assert plan is not None
            if self.phase[parent] == ACTIVATING and self.acks[parent] == set(plan.children):
                self._move(out, parent, DONE, "CoordFinish", [])
                out.add(CancelTimer(_RESEND_TIMER))
                self._arm(out, now)
        else:
            raise ProtocolViolation(f"the coordinator cannot handle {kind}")

    # ---- steps ----

    def _current(self) -> SplitPlan | None:
        """The split the coordinator works on or starts next: the first not done."""
        for plan in self.config.splits:
            if self.phase[plan.parent] != DONE:
                return plan
        return None

    def _arm(self, out: StepList, now: int) -> None:
        current = self._current()
        if current is None:
            return
        if self.phase[current.parent] == IDLE:
            out.add(SetTimer(_START_TIMER, max(0, current.due_tick - now)))
        else:
            out.add(SetTimer(_RESEND_TIMER, self.config.options.coord_resend_ticks))

    def _move(
        self,
        out: StepList,
        parent: str,
        phase: str,
        action: str,
        sends: list[Effect],
        params: Mapping[str, Any] | None = None,
    ) -> None:
        old = self.phase[parent]
        if phase not in PHASE_TRANSITIONS[old]:
            raise ProtocolViolation(f"split of {parent} cannot move from {old} to {phase}")
        self.phase[parent] = phase
        self.acks[parent] = set()
        # The bug records progress but never syncs it, so a crash forgets it.
        sync = self.config.bug != bugs.SPLIT_PROGRESS_NOT_DURABLE
        record = {"kind": "phase", "parent": parent, "phase": phase}
        out.step(action, params or {"parent": parent}, Persist(record, sync), *sends)

    def _start(self, out: StepList, plan: SplitPlan) -> None:
        self._move(
            out,
            plan.parent,
            FREEZING,
            "CoordStartSplit",
            [Send(plan.parent, message("Freeze", parent=plan.parent))],
        )
        out.add(SetTimer(_RESEND_TIMER, self.config.options.coord_resend_ticks))

    def _activations(self, plan: SplitPlan) -> list[Effect]:
        return [
            Send(child, message("Activate", parent=plan.parent, child=child))
            for child in plan.children
            if child not in self.acks[plan.parent]
        ]

    def _resend(self, out: StepList, plan: SplitPlan) -> None:
        phase = self.phase[plan.parent]
        if phase == FREEZING:
            sends: list[Effect] = [Send(plan.parent, message("Freeze", parent=plan.parent))]
        elif phase == RETIRING:
            sends = [Send(plan.parent, message("Retire", parent=plan.parent))]
        else:
            sends = self._activations(plan)
        out.step("CoordResend", {"parent": plan.parent}, *sends)
        out.add(SetTimer(_RESEND_TIMER, self.config.options.coord_resend_ticks))
