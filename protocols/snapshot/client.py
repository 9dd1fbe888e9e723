"""A snapshot transfer client, as a sans-IO core: writes go to the source, reads to the receiver.

Theory of operation: a client runs its configured operations one at a time,
each after its think time. It resends the outstanding operation, to the same
node, when its timer fires: after `client_timeout_ticks` of silence, or after
`retry_backoff_ticks` once the receiver answered `Retry` (not ready yet). The
first answer carrying the operation's id ends it; later ones are ignored. A
write's value is its id, so the source appends a resent write at most once.

Clients do not crash: they are the load and the observer whose history the
linearizability oracle checks, not the system under test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.base import (
    CancelTimer,
    Effect,
    Input,
    Receive,
    Send,
    SetTimer,
    Start,
    Timeout,
)
from tlasim.protocols.errors import ProtocolViolation
from tlasim.protocols.frozen import FrozenRecord
from tlasim.protocols.snapshot.config import PUT, RECEIVER_ID, SOURCE_ID, SnapshotConfig, write_id
from tlasim.protocols.snapshot.messages import Message, message
from tlasim.protocols.steps import StepList

IDLE = "idle"
_NEXT_TIMER, _RESEND_TIMER = "next", "resend"


class SnapshotClient:
    def __init__(self, node_id: str, config: SnapshotConfig) -> None:
        self.node_id = node_id
        self.config = config
        self.ops = config.ops[node_id]
        self.invoked = 0
        self.kind = IDLE
        self.key = "-"

    def view(self) -> Mapping[str, Any]:
        op_id = write_id(self.node_id, self.invoked)
        return {"clientOp": FrozenRecord(kind=self.kind, key=self.key, id=op_id)}

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        raise ProtocolViolation(f"client {self.node_id} cannot recover: clients do not crash")

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        options = self.config.options
        if isinstance(event, Start):
            if self.ops:
                out.add(SetTimer(_NEXT_TIMER, self.ops[0].think_ticks))
        elif isinstance(event, Timeout):
            if event.name == _NEXT_TIMER and self.kind == IDLE:
                op = self.ops[self.invoked]
                self.invoked += 1
                self.kind, self.key = op.kind, op.key
                params = {"client": self.node_id, "kind": op.kind, "key": op.key}
                out.step("ClientInvoke", params, self._request())
                out.add(SetTimer(_RESEND_TIMER, options.client_timeout_ticks))
            elif event.name == _RESEND_TIMER and self.kind != IDLE:
                out.step("ClientTimeout", {"client": self.node_id}, self._request())
                out.add(SetTimer(_RESEND_TIMER, options.client_timeout_ticks))
        elif isinstance(event, Receive):
            self._receive(out, event.msg)
        else:
            raise ProtocolViolation(f"client {self.node_id} cannot handle {event!r}")
        return out.effects

    def _request(self) -> Send:
        op_id = write_id(self.node_id, self.invoked)
        if self.kind == PUT:
            return Send(SOURCE_ID, message("Put", key=self.key, id=op_id))
        return Send(RECEIVER_ID, message("Get", key=self.key, id=op_id))

    def _receive(self, out: StepList, msg: Message) -> None:
        kind = msg["type"]
        if kind not in ("GetOk", "PutOk", "Retry"):
            raise ProtocolViolation(f"client {self.node_id} cannot handle {kind}")
        params = {"client": self.node_id, "msg": msg}
        current = self.kind != IDLE and msg["id"] == write_id(self.node_id, self.invoked)
        if not current:
            out.step("ClientIgnore", params)
        elif kind == "Retry":
            out.step("ClientRedirected", params)
            out.add(SetTimer(_RESEND_TIMER, self.config.options.retry_backoff_ticks))
        else:
            self.kind = IDLE  # the key stays: the spec changes only the kind
            out.step("ClientReturn", params)
            out.add(CancelTimer(_RESEND_TIMER))
            if self.invoked < len(self.ops):
                out.add(SetTimer(_NEXT_TIMER, self.ops[self.invoked].think_ticks))
