"""The snapshot transfer source, as a sans-IO core.

Theory of operation: the source's store is its write-ahead log, appended and
synced by `SrcWrite` before the write is acknowledged; the log is never
rewritten, so the data at any position `p` (`kv_at(p)`, the log prefix
`1..p`) never changes. That makes a snapshot free: a transfer is just a
position, and a chunk of it is computed from the log prefix whenever it is
(re)sent. The transfer state (the snapshot position, the chunks the receiver
acknowledged, the log position it acknowledged) is volatile and is set by
the receiver's `Join`, which carries what the receiver holds durably; so a
source crash costs a `Join` round trip and nothing else.

Once every chunk is acknowledged the source ships the log after what the
receiver has (`SrcShip`), when a chunk or records acknowledgement arrives,
after a write while the receiver is caught up, and on its resend timer; it
keeps shipping after the receiver is ready. It answers a receiver's
`ReadIndexReq` with its log length.

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

_RESEND_TIMER = "resend"


class Source:
    # The view's variables a restart rebuilds from the synced log (`restore`);
    # the transfer state is volatile. The refinement mapping holds these to
    # the synced log at every step (SnapshotTransferMsg's srcSynced).
    DURABLE_VARS = ("srcLog",)

    def __init__(self, config: SnapshotConfig) -> None:
        self.node_id = SOURCE_ID
        self.config = config
        self.log: list[FrozenRecord] = []
        self.written: set[FrozenRecord] = set()  # ids in the log, for de-duplication
        self.snap = NO_POSITION
        self.acked: set[str] = set()
        self.shipped = NO_POSITION

    # ---- the view the refinement mapping reads ----

    def view(self) -> Mapping[str, Any]:
        return {
            "srcLog": tuple(self.log),
            "srcSnap": self.snap,
            "srcAcked": frozenset(self.acked),
            "srcShipped": self.shipped,
        }

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        self.log = [
            FrozenRecord(key=r["key"], val=write_id(r["val"]["c"], r["val"]["n"])) for r in log
        ]
        self.written = {w["val"] for w in self.log}
        self.snap, self.acked, self.shipped = NO_POSITION, set(), NO_POSITION

    def kv_at(self, position: int) -> dict[str, FrozenRecord]:
        data = dict.fromkeys(self.config.keys, NO_VALUE)
        for write in self.log[:position]:
            data[write["key"]] = write["val"]
        return data

    # ---- inputs ----

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            pass
        elif isinstance(event, Recover):
            self.restore(event.log)
            out.step("SrcRecover", {})
        elif isinstance(event, Timeout):
            if event.name == _RESEND_TIMER and self.snap != NO_POSITION:
                if self.acked != set(self.config.chunks):
                    out.step("SrcResend", {}, *self._chunks())
                else:
                    self._ship(out)
                out.add(SetTimer(_RESEND_TIMER, self.config.options.src_resend_ticks))
        elif isinstance(event, Receive):
            self._receive(out, event.msg)
        return out.effects

    def _receive(self, out: StepList, msg: Message) -> None:
        kind = msg["type"]
        params = {"msg": msg}
        if kind == "Put":
            caught_up = self._ship_from() == len(self.log) + 1
            effects: list[Effect] = []
            if msg["id"] not in self.written:
                write = FrozenRecord(key=msg["key"], val=msg["id"])
                self.log.append(write)
                self.written.add(msg["id"])
                effects.append(Persist({"key": write["key"], "val": write["val"]}, True))
            effects.append(Send(msg["id"]["c"], message("PutOk", id=msg["id"])))
            out.step("SrcWrite", params, *effects)
            if caught_up:
                self._ship(out)
        elif kind == "Join":
            self.snap = len(self.log) if msg["snap"] == NO_POSITION else msg["snap"]
            self.acked = set(msg["have"])
            self.shipped = msg["pos"]
            out.step("SrcJoin", params, *self._chunks())
            out.add(SetTimer(_RESEND_TIMER, self.config.options.src_resend_ticks))
            self._ship(out, even_empty=True)
        elif kind == "ChunkAck":
            completes = (
                msg["snap"] == self.snap
                and self.acked | {msg["chunk"]} == set(self.config.chunks)
                and msg["chunk"] not in self.acked
            )
            sends: list[Effect] = []
            if msg["snap"] == self.snap and msg["chunk"] not in self.acked:
                self.acked.add(msg["chunk"])
                sends = self._chunks()
            out.step("SrcChunkAck", params, *sends)
            self._ship(out, even_empty=completes)
        elif kind == "RecordsAck":
            if self.snap != NO_POSITION and msg["pos"] > self.shipped:
                self.shipped = msg["pos"]
            out.step("SrcRecordsAck", params)
            self._ship(out)
        elif kind == "ReadIndexReq":
            reply = message("ReadIndex", id=msg["id"], pos=len(self.log))
            out.step("SrcReadIndex", params, Send(RECEIVER_ID, reply))
        else:
            raise ProtocolViolation(f"the source cannot handle {kind}")

    # ---- steps ----

    def _chunks(self) -> list[Effect]:
        """Send the first chunk the receiver has not acknowledged, as of the snapshot.

        One chunk is in flight at a time (the next goes when this one is
        acknowledged), so a large snapshot never floods the network, and the
        source keeps taking writes while the transfer streams.
        """
        missing = [chunk for chunk in self.config.chunks if chunk not in self.acked]
        return [self._chunk_send(missing[0])] if missing else []

    def _chunk_send(self, chunk: str) -> Effect:
        """The Chunk message carrying `chunk`'s keys as of the snapshot."""
        if self.config.bug == bugs.FUZZY_SNAPSHOT:
            data = self.kv_at(len(self.log))  # the bug: now, not at the snapshot position
        else:
            data = self.kv_at(self.snap)
        keys = self.config.chunk_keys[chunk]
        payload = FrozenRecord({k: data[k] for k in keys})
        return Send(RECEIVER_ID, message("Chunk", snap=self.snap, chunk=chunk, data=payload))

    def _ship_from(self) -> int | None:
        if self.snap == NO_POSITION or self.acked != set(self.config.chunks):
            return None
        return self.snap + 1 if self.shipped == NO_POSITION else self.shipped + 1

    def _ship(self, out: StepList, *, even_empty: bool = False) -> None:
        """Ship the log after what the receiver has; an empty batch (sent in
        answer to a Join and when the last chunk is in) tells it it is caught up."""
        start = self._ship_from()
        if start is None or start > len(self.log) + 1:
            return
        if start == len(self.log) + 1 and not even_empty:
            return
        entries = tuple(self.log[start - 1 :])
        records = message("Records", **{"from": start, "entries": entries})
        out.step("SrcShip", {}, Send(RECEIVER_ID, records))
