"""Snapshot transfer messages (docs/snapshot-model.md), checked and encoded by protocols/wire.py."""

from __future__ import annotations

from tlasim.protocols.frozen import FrozenRecord
from tlasim.protocols.wire import ID, ID_MAP, INT, STR, STR_SET, WRITES, Schema

SCHEMA = Schema(
    "snapshot transfer",
    {
        "Put": {"key": STR, "id": ID},
        "PutOk": {"id": ID},
        "Get": {"key": STR, "id": ID},
        "GetOk": {"id": ID, "val": ID},
        "Retry": {"id": ID},
        "Join": {"snap": INT, "have": STR_SET, "pos": INT},
        "Chunk": {"snap": INT, "chunk": STR, "data": ID_MAP},
        "ChunkAck": {"snap": INT, "chunk": STR},
        "Records": {"from": INT, "entries": WRITES},
        "RecordsAck": {"pos": INT},
        "ReadIndexReq": {"id": ID},
        "ReadIndex": {"id": ID, "pos": INT},
    },
)

Message = FrozenRecord
message = SCHEMA.message
to_wire = SCHEMA.to_wire
from_wire = SCHEMA.from_wire
