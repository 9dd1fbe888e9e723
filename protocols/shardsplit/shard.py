"""A shard of the key-value store, as a sans-IO core.

Theory of operation: a shard moves through the states of `SHARD_TRANSITIONS`.
An initial shard starts `active`; a split's child starts `absent`, becomes
`splitting` when it installs its parent's data, and `active` when the
coordinator activates it. A parent becomes `frozen` when told to freeze and
`retired` when told to retire. A shard serves a key (`serves`) when the key
is in its range and it is active or frozen: a frozen shard still answers
reads, because its data can change only through writes it accepted before
the freeze.

A write takes two steps: `ShardAccept` puts it in `pending`, and
`apply_delay_ticks` later `ShardApply` syncs it to the log, applies it and
acknowledges it. `pending` is volatile: a crash loses writes nobody was told
about. `applied` holds the ids of every write applied here or installed from
the parent; a write whose id is in it is acknowledged again and never applied
twice, so clients may resend a write to any shard any number of times.

A frozen parent with no pending write ships each child its half of the data
and the `applied` set (`ShardTransfer`), whenever it is (re)asked to freeze
and after its last pending write applies. A parent retires only when frozen
with nothing pending.

Every state change is synced in the step that makes it; the log is replayed
on recovery. Each spec action is one atomic step named as in
specs/shardsplit/ShardSplitMsg.tla.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.base import (
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
from tlasim.protocols.shardsplit.config import COORD_ID, NO_VALUE, ShardSplitConfig, write_id
from tlasim.protocols.shardsplit.messages import Message, message
from tlasim.protocols.steps import StepList

ABSENT, SPLITTING, ACTIVE, FROZEN, RETIRED = "absent", "splitting", "active", "frozen", "retired"
SHARD_TRANSITIONS: dict[str, frozenset[str]] = {
    ABSENT: frozenset({SPLITTING}),
    SPLITTING: frozenset({ACTIVE}),
    ACTIVE: frozenset({FROZEN}),
    FROZEN: frozenset({RETIRED}),
    RETIRED: frozenset(),
}
SERVING = frozenset({ACTIVE, FROZEN})


def _apply_timer(write: FrozenRecord) -> str:
    return f"apply {write['key']} {write['val']['c']} {write['val']['n']}"


def _as_id(value: Mapping[str, Any]) -> FrozenRecord:
    # The disk hands back its own frozen records; the core keeps one type.
    return write_id(value["c"], value["n"])


class Shard:
    def __init__(self, node_id: str, config: ShardSplitConfig) -> None:
        self.node_id = node_id
        self.config = config
        self.range = frozenset(config.shard_keys[node_id])
        self.split = config.split_of(node_id)  # the split this shard is the parent of, if any
        self.parent = config.parent_of(node_id)
        self._initial = ACTIVE if node_id in config.initial_shards else ABSENT
        self.state = self._initial
        self.kv: dict[str, FrozenRecord] = {k: NO_VALUE for k in config.keys}
        self.applied: set[FrozenRecord] = set()
        self.pending: dict[str, FrozenRecord] = {}  # timer name -> [key, val]

    # ---- the view the refinement mapping reads ----

    def view(self) -> Mapping[str, Any]:
        return {
            "shardState": self.state,
            "kv": dict(self.kv),
            "applied": frozenset(self.applied),
            "pending": frozenset(self.pending.values()),
        }

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        self.state = self._initial
        self.kv = {k: NO_VALUE for k in self.config.keys}
        self.applied = set()
        self.pending = {}
        for record in log:
            kind = record["kind"]
            if kind == "state":
                self.state = record["state"]
            elif kind == "apply":
                value = _as_id(record["val"])
                self.kv[record["key"]] = value
                self.applied.add(value)
            elif kind == "install":
                self.kv.update({k: _as_id(v) for k, v in record["data"].items()})
                self.applied = {_as_id(v) for v in record["applied"]}

    def serves(self, key: str) -> bool:
        if key not in self.range:
            return False
        if self.state == RETIRED and self.config.bug == bugs.RETIRED_SERVES_STALE_ROUTES:
            return True
        return self.state in SERVING

    # ---- inputs ----

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            pass
        elif isinstance(event, Recover):
            self.restore(event.log)
            out.step("ShardRecover", {"shard": self.node_id})
        elif isinstance(event, Timeout):
            write = self.pending.get(event.name)
            if write is not None:
                self._apply(out, event.name, write)
        elif isinstance(event, Receive):
            self._receive(out, event.msg)
        return out.effects

    def _receive(self, out: StepList, msg: Message) -> None:
        kind = msg["type"]
        params = {"shard": self.node_id, "msg": msg}
        if kind == "Get":
            if self.serves(msg["key"]):
                reply = message("GetOk", id=msg["id"], val=self.kv[msg["key"]])
                out.step("ShardGet", params, Send(msg["id"]["c"], reply))
            else:
                self._redirect(out, params, msg)
        elif kind == "Put":
            self._on_put(out, params, msg)
        elif kind == "Freeze":
            if self.state == ACTIVE:
                self._move(FROZEN)
                out.step("ShardFreeze", params, self._persist_state())
            else:
                out.step("ShardFreeze", params)
            self._maybe_transfer(out)
        elif kind == "Install":
            sends = [Send(COORD_ID, message("Installed", parent=msg["parent"], child=self.node_id))]
            if self.state == ABSENT:
                self._move(SPLITTING)
                self.kv.update(msg["data"])
                self.applied = set(msg["applied"])
                record = {
                    "kind": "install",
                    "data": dict(msg["data"]),
                    "applied": frozenset(msg["applied"]),
                }
                out.step(
                    "ShardInstall", params, Persist(record, True), self._persist_state(), *sends
                )
            else:
                out.step("ShardInstall", params, *sends)
        elif kind == "Retire":
            effects: list[Effect] = []
            drained = not self.pending or self.config.bug == bugs.RETIRE_WITH_PENDING
            if self.state == FROZEN and drained:
                self._move(RETIRED)
                effects.append(self._persist_state())
            if self.state == RETIRED:
                effects.append(Send(COORD_ID, message("Retired", parent=self.node_id)))
            out.step("ShardRetire", params, *effects)
        elif kind == "Activate":
            effects = []
            activates = self.state == SPLITTING or (
                self.state == ABSENT and self.config.bug == bugs.SWITCH_BEFORE_TRANSFER
            )
            if activates:
                self.state = ACTIVE  # from absent only under the bug, so not via _move
                effects.append(self._persist_state())
            if self.state == ACTIVE:
                effects.append(
                    Send(COORD_ID, message("Activated", parent=msg["parent"], child=self.node_id))
                )
            out.step("ShardActivate", params, *effects)
        else:
            raise ProtocolViolation(f"shard {self.node_id} cannot handle {kind}")

    def _on_put(self, out: StepList, params: Mapping[str, Any], msg: Message) -> None:
        key, op_id = msg["key"], msg["id"]
        if self.serves(key) and op_id in self.applied:
            out.step("ShardAckApplied", params, Send(op_id["c"], message("PutOk", id=op_id)))
            return
        accepting = (
            self.state == ACTIVE
            or (self.state == FROZEN and self.config.bug == bugs.FROZEN_ACCEPTS_WRITES)
            or (self.state == RETIRED and self.config.bug == bugs.RETIRED_SERVES_STALE_ROUTES)
        )
        if key in self.range and accepting:
            write = FrozenRecord(key=key, val=op_id)
            timer = _apply_timer(write)
            fresh = timer not in self.pending
            self.pending[timer] = write
            out.step("ShardAccept", params)
            if fresh:
                out.add(SetTimer(timer, self.config.options.apply_delay_ticks))
            return
        self._redirect(out, params, msg)

    def _redirect(self, out: StepList, params: Mapping[str, Any], msg: Message) -> None:
        if msg["key"] in self.range and self.state == FROZEN:
            why = "frozen"
        elif self.state in (ABSENT, SPLITTING):
            why = "notready"
        else:
            why = "moved"
        out.step(
            "ShardRedirect", params, Send(msg["id"]["c"], message("Retry", id=msg["id"], why=why))
        )

    # ---- steps ----

    def _move(self, new: str) -> None:
        if new not in SHARD_TRANSITIONS[self.state]:
            raise ProtocolViolation(f"shard {self.node_id} cannot move from {self.state} to {new}")
        self.state = new

    def _persist_state(self) -> Persist:
        return Persist({"kind": "state", "state": self.state}, True)

    def _apply(self, out: StepList, timer: str, write: FrozenRecord) -> None:
        del self.pending[timer]
        key, op_id = write["key"], write["val"]
        self.kv[key] = op_id
        self.applied.add(op_id)
        out.step(
            "ShardApply",
            {"shard": self.node_id, "key": key, "id": op_id},
            Persist({"kind": "apply", "key": key, "val": op_id}, True),
            Send(op_id["c"], message("PutOk", id=op_id)),
        )
        self._maybe_transfer(out)

    def _maybe_transfer(self, out: StepList) -> None:
        """A frozen parent with nothing pending ships each child its data."""
        drained = not self.pending or self.config.bug == bugs.RETIRE_WITH_PENDING
        if self.split is None or self.state != FROZEN or not drained:
            return
        sends = []
        for child in self.split.children:
            data = FrozenRecord({k: self.kv[k] for k in self.config.shard_keys[child]})
            install = message(
                "Install",
                parent=self.node_id,
                child=child,
                data=data,
                applied=frozenset(self.applied),
            )
            sends.append(Send(child, install))
        out.step("ShardTransfer", {"shard": self.node_id}, *sends)
