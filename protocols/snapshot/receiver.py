"""The snapshot transfer receiver, as a sans-IO core.

Theory of operation: the receiver moves through `RECEIVER_TRANSITIONS`:
empty, receiving (it has joined), replaying (it has every chunk; its data is
the source's data at the snapshot position), ready (it has replayed a batch
of log records, so it caught up with the source as of that batch). Every
change to its durable state (state, snapshot position, chunks, data,
position) is synced in the step that makes it, and a chunk is acknowledged
only in the step that synced it, so its durable state never claims a chunk
it did not persist. It re-sends `Join`, carrying that durable state, every
`rcv_join_ticks` until it is ready, and after that while reads wait on the
log: that is how a transfer (and, once ready, the
log shipping its reads wait on) survives the loss of any message and a crash
of either side.

A chunk is applied once: a chunk the receiver already has (a duplicate, or a
resend after a lost acknowledgement) is acknowledged again, never applied
again, because by then the replay may have moved its keys past the snapshot.
Log records are applied only in order, from the position after its own.

Reads (the promise, also in docs/snapshot-model.md): a receiver that is not
ready answers `Retry`. A ready one parks the read and asks the source for its
log length (the read index); it serves the read once its own position has
reached that index, from its data. So every read it serves returns the
key's value in a log prefix at least as long as the source's log was at some
instant after the read was invoked: reads are linearizable with the writes
the source acknowledges. Parked reads are volatile.

Each spec action is one atomic step named as in specs/snapshot/SnapshotTransferMsg.tla.
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
from tlasim.protocols.snapshot import bugs
from tlasim.protocols.snapshot.config import (
    NO_POSITION,
    NO_VALUE,
    RECEIVER_ID,
    SOURCE_ID,
    SnapshotConfig,
    write_id,
)
from tlasim.protocols.snapshot.messages import Message, message
from tlasim.protocols.steps import StepList

EMPTY, RECEIVING, REPLAYING, READY = "empty", "receiving", "replaying", "ready"
RECEIVER_TRANSITIONS: dict[str, frozenset[str]] = {
    EMPTY: frozenset({RECEIVING}),
    RECEIVING: frozenset({REPLAYING}),
    REPLAYING: frozenset({READY}),
    READY: frozenset(),
}
_JOIN_TIMER = "join"


def _as_id(value: Mapping[str, Any]) -> FrozenRecord:
    # The disk hands back its own frozen records; the core keeps one type.
    return write_id(value["c"], value["n"])


class Receiver:
    # The view's variables a restart rebuilds from the synced log (`restore`);
    # the parked reads are the only volatile one. The refinement mapping holds
    # these to the synced log at every step (SnapshotTransferMsg's rcvSynced).
    DURABLE_VARS = ("rcvState", "rcvSnap", "rcvChunks", "rcvKv", "rcvPos")

    def __init__(self, config: SnapshotConfig) -> None:
        self.node_id = RECEIVER_ID
        self.config = config
        self.state = EMPTY
        self.snap = NO_POSITION
        self.chunks: set[str] = set()
        self.kv: dict[str, FrozenRecord] = dict.fromkeys(config.keys, NO_VALUE)
        self.pos = NO_POSITION
        self.reads: dict[FrozenRecord, tuple[str, int]] = {}  # id -> (key, read index)

    # ---- the view the refinement mapping reads ----

    def view(self) -> Mapping[str, Any]:
        return {
            "rcvState": self.state,
            "rcvSnap": self.snap,
            "rcvChunks": frozenset(self.chunks),
            "rcvKv": dict(self.kv),
            "rcvPos": self.pos,
            "rcvReads": frozenset(
                FrozenRecord(id=i, key=k, idx=idx) for i, (k, idx) in self.reads.items()
            ),
        }

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        self.state, self.snap, self.chunks = EMPTY, NO_POSITION, set()
        self.kv = dict.fromkeys(self.config.keys, NO_VALUE)
        self.pos, self.reads = NO_POSITION, {}
        for record in log:
            kind = record["kind"]
            if kind == "state":
                self.state = record["state"]
                self.pos = record["pos"]
            elif kind == "chunk":
                self.snap = record["snap"]
                self.chunks.add(record["chunk"])
                self.kv.update({k: _as_id(v) for k, v in record["data"].items()})
            elif kind == "records":
                for write in record["entries"]:
                    self.kv[write["key"]] = _as_id(write["val"])
                self.pos = record["pos"]

    # ---- inputs ----

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            out.add(SetTimer(_JOIN_TIMER, self.config.join_tick))
        elif isinstance(event, Recover):
            self.restore(event.log)
            out.step("RcvRecover", {})
            if self.state == EMPTY:
                out.add(SetTimer(_JOIN_TIMER, max(1, self.config.join_tick - now)))
            else:
                out.add(SetTimer(_JOIN_TIMER, 1))
        elif isinstance(event, Timeout):
            # A ready receiver joins again while reads wait on the log: a
            # source that crashed has forgotten the transfer and ships nothing.
            if event.name == _JOIN_TIMER:
                if self.state != READY or self.reads:
                    self._join(out)
                out.add(SetTimer(_JOIN_TIMER, self.config.options.rcv_join_ticks))
        elif isinstance(event, Receive):
            self._receive(out, event.msg)
        return out.effects

    def _receive(self, out: StepList, msg: Message) -> None:
        kind = msg["type"]
        params = {"msg": msg}
        if kind == "Chunk":
            self._on_chunk(out, params, msg)
        elif kind == "Records":
            self._on_records(out, params, msg)
        elif kind == "Get":
            op_id = msg["id"]
            if self.config.bug == bugs.READ_BEFORE_CHUNK and self.state != EMPTY:
                reply = message("GetOk", id=op_id, val=self.kv[msg["key"]])
                out.step("RcvGet", params, Send(op_id["c"], reply))
            elif self.state == READY:
                # A resent Get of a parked read keeps the parked one (and its index).
                self.reads.setdefault(op_id, (msg["key"], NO_POSITION))
                out.step("RcvGet", params, Send(SOURCE_ID, message("ReadIndexReq", id=op_id)))
            else:
                out.step("RcvGet", params, Send(op_id["c"], message("Retry", id=op_id)))
        elif kind == "ReadIndex":
            parked = self.reads.get(msg["id"])
            if parked is not None and parked[1] == NO_POSITION:
                self.reads[msg["id"]] = (parked[0], msg["pos"])
            out.step("RcvReadIndex", params)
            self._serve(out)
        else:
            raise ProtocolViolation(f"the receiver cannot handle {kind}")

    # ---- steps ----

    def _move(self, new: str) -> None:
        if new not in RECEIVER_TRANSITIONS[self.state]:
            raise ProtocolViolation(f"the receiver cannot move from {self.state} to {new}")
        self.state = new

    def _state_record(self) -> Persist:
        return Persist({"kind": "state", "state": self.state, "pos": self.pos}, True)

    def _join(self, out: StepList) -> None:
        join = message("Join", snap=self.snap, have=frozenset(self.chunks), pos=self.pos)
        if self.state == EMPTY:
            self._move(RECEIVING)
            out.step("RcvJoin", {}, self._state_record(), Send(SOURCE_ID, join))
        else:
            out.step("RcvJoin", {}, Send(SOURCE_ID, join))

    def _on_chunk(self, out: StepList, params: Mapping[str, Any], msg: Message) -> None:
        snap, chunk = msg["snap"], msg["chunk"]
        effects: list[Effect] = []
        fresh = chunk not in self.chunks
        if self.config.bug == bugs.DUPLICATE_CHUNK_REAPPLIED and self.state != EMPTY:
            fresh = True  # the bug: a chunk it already has is applied again
        same_snapshot = self.snap in (NO_POSITION, snap)
        if (
            self.state != EMPTY
            and same_snapshot
            and fresh
            and (self.state == RECEIVING or self.config.bug == bugs.DUPLICATE_CHUNK_REAPPLIED)
        ):
            self.snap = snap
            self.chunks.add(chunk)
            self.kv.update(msg["data"])
            # The ack-before-persist bug syncs the chunk lazily, yet acknowledges it now.
            synced = self.config.bug != bugs.ACK_BEFORE_PERSIST
            record = {"kind": "chunk", "snap": snap, "chunk": chunk, "data": dict(msg["data"])}
            effects.append(Persist(record, synced))
            if self.state == RECEIVING and self.chunks == set(self.config.chunks):
                self._move(REPLAYING)
                self.pos = snap + 1 if self.config.bug == bugs.REPLAY_FROM_WRONG_POSITION else snap
                effects.append(self._state_record())
        if self.snap == snap and chunk in self.chunks:
            effects.append(Send(SOURCE_ID, message("ChunkAck", snap=snap, chunk=chunk)))
        out.step("RcvChunk", params, *effects)

    def _on_records(self, out: StepList, params: Mapping[str, Any], msg: Message) -> None:
        start, entries = msg["from"], msg["entries"]
        effects: list[Effect] = []
        if self.state in (REPLAYING, READY) and start == self.pos + 1:
            for write in entries:
                self.kv[write["key"]] = write["val"]
            self.pos = start + len(entries) - 1
            if entries:
                record = {
                    "kind": "records",
                    "entries": tuple(dict(w) for w in entries),
                    "pos": self.pos,
                }
                effects.append(Persist(record, True))
            if self.state == REPLAYING:
                self._move(READY)
                effects.append(self._state_record())
        if self.state in (REPLAYING, READY):
            effects.append(Send(SOURCE_ID, message("RecordsAck", pos=self.pos)))
        out.step("RcvRecords", params, *effects)
        self._serve(out)

    def _serve(self, out: StepList) -> None:
        """Serve every parked read whose read index the replay has reached."""
        for op_id in sorted(self.reads, key=lambda i: (i["c"], i["n"])):
            key, index = self.reads[op_id]
            if index != NO_POSITION and self.pos >= index:
                del self.reads[op_id]
                reply = message("GetOk", id=op_id, val=self.kv[key])
                out.step("RcvServe", {"id": op_id}, Send(op_id["c"], reply))
