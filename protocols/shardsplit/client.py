"""A key-value client, as a sans-IO core: the load that runs during splits.

Theory of operation: a client runs its configured operations one at a time,
waiting each operation's think time before invoking it. It sends the request
to the shard its cached routing table names. A `Retry` answer (the shard is
frozen, not ready or no longer owns the key) arms a short backoff; silence
arms a timeout. When either fires the client asks the coordinator for the
routing table, and when the `Route` answer arrives it replaces its copy and
resends the outstanding operation where the new copy says. An operation ends
at the first answer carrying its id; later or duplicated answers are ignored.
A write's value is its id, so resending it anywhere is safe (shards
de-duplicate by id).

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
from tlasim.protocols.shardsplit.config import COORD_ID, ShardSplitConfig, write_id
from tlasim.protocols.shardsplit.messages import Message, message, request
from tlasim.protocols.steps import StepList

IDLE = "idle"
_NEXT_TIMER, _RETRY_TIMER = "next", "retry"


class Client:
    def __init__(self, node_id: str, config: ShardSplitConfig) -> None:
        self.node_id = node_id
        self.config = config
        self.ops = config.ops[node_id]
        self.route: FrozenRecord = FrozenRecord(config.initial_routing())
        self.invoked = 0  # operations invoked so far; the current one's n
        self.kind = IDLE
        self.key = "-"

    def view(self) -> Mapping[str, Any]:
        return {
            "clientRoute": self.route,
            "clientOp": FrozenRecord(
                kind=self.kind, key=self.key, id=write_id(self.node_id, self.invoked)
            ),
        }

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        raise ProtocolViolation(f"client {self.node_id} cannot recover: clients do not crash")

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            if self.ops:
                out.add(SetTimer(_NEXT_TIMER, self.ops[0].think_ticks))
        elif isinstance(event, Timeout):
            if event.name == _NEXT_TIMER and self.kind == IDLE:
                self._invoke(out)
            elif event.name == _RETRY_TIMER and self.kind != IDLE:
                out.step(
                    "ClientTimeout",
                    {"client": self.node_id},
                    Send(COORD_ID, message("RouteReq", c=self.node_id)),
                )
                out.add(SetTimer(_RETRY_TIMER, self.config.options.client_timeout_ticks))
        elif isinstance(event, Receive):
            self._receive(out, event.msg)
        else:
            raise ProtocolViolation(f"client {self.node_id} cannot handle {event!r}")
        return out.effects

    def _current_id(self) -> FrozenRecord:
        return write_id(self.node_id, self.invoked)

    def _request(self) -> Send:
        shard = self.route[self.key]
        return Send(shard, request(self.kind, shard, self.key, self._current_id()))

    def _invoke(self, out: StepList) -> None:
        op = self.ops[self.invoked]
        self.invoked += 1
        self.kind, self.key = op.kind, op.key
        out.step(
            "ClientInvoke",
            {"client": self.node_id, "kind": op.kind, "key": op.key},
            self._request(),
        )
        out.add(SetTimer(_RETRY_TIMER, self.config.options.client_timeout_ticks))

    def _receive(self, out: StepList, msg: Message) -> None:
        kind = msg["type"]
        params = {"client": self.node_id, "msg": msg}
        if kind == "Route":
            self.route = msg["routing"]
            if self.kind == IDLE:
                out.step("ClientRoute", params)
            else:
                out.step("ClientRoute", params, self._request())
                out.add(SetTimer(_RETRY_TIMER, self.config.options.client_timeout_ticks))
            return
        if kind not in ("GetOk", "PutOk", "Retry"):
            raise ProtocolViolation(f"client {self.node_id} cannot handle {kind}")
        current = self.kind != IDLE and msg["id"] == self._current_id()
        if not current:
            out.step("ClientIgnore", params)
        elif kind == "Retry":
            out.step("ClientRedirected", params)
            out.add(SetTimer(_RETRY_TIMER, self.config.options.retry_backoff_ticks))
        else:
            self.kind = IDLE  # the key stays: the spec changes only the kind
            out.step("ClientReturn", params)
            out.add(CancelTimer(_RETRY_TIMER))
            if self.invoked < len(self.ops):
                out.add(SetTimer(_NEXT_TIMER, self.ops[self.invoked].think_ticks))
