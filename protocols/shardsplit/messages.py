"""Shard split messages: each one a FrozenRecord with a `type` field.

A message's record is exactly the spec's message record (the table in
docs/shardsplit-model.md); `protocols/wire.py` checks and encodes them.
"""

from __future__ import annotations

from tlasim.protocols.frozen import FrozenRecord
from tlasim.protocols.wire import ID, ID_MAP, ID_SET, STR, STR_MAP, Schema

SCHEMA = Schema(
    "shard split",
    {
        "Get": {"dst": STR, "key": STR, "id": ID},
        "Put": {"dst": STR, "key": STR, "id": ID},
        "GetOk": {"id": ID, "val": ID},
        "PutOk": {"id": ID},
        "Retry": {"id": ID, "why": STR},
        "RouteReq": {"c": STR},
        "Route": {"c": STR, "routing": STR_MAP},
        "Freeze": {"parent": STR},
        "Install": {"parent": STR, "child": STR, "data": ID_MAP, "applied": ID_SET},
        "Installed": {"parent": STR, "child": STR},
        "Retire": {"parent": STR},
        "Retired": {"parent": STR},
        "Activate": {"parent": STR, "child": STR},
        "Activated": {"parent": STR, "child": STR},
    },
)
FIELDS = {kind: tuple(fields) for kind, fields in SCHEMA.types.items()}
RETRY_REASONS = ("moved", "frozen", "notready")

Message = FrozenRecord
message = SCHEMA.message
to_wire = SCHEMA.to_wire
from_wire = SCHEMA.from_wire


def request(kind: str, dst: str, key: str, op_id: FrozenRecord) -> Message:
    return message("Put" if kind == "put" else "Get", dst=dst, key=key, id=op_id)
