"""Shard split messages: each one a FrozenRecord with a `type` field.

A message's record is exactly the spec's message record (the table in
docs/shardsplit-model.md), so the refinement mapping of a message is the
message itself. On the wire (msgpack) sets become sorted lists and records
plain dicts; `from_wire` rebuilds them and rejects anything malformed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocols.errors import ProtocolViolation
from protocols.frozen import FrozenRecord

# type -> its fields besides `type`, in the order the constructors take them
FIELDS: dict[str, tuple[str, ...]] = {
    "Get": ("dst", "key", "id"),
    "Put": ("dst", "key", "id"),
    "GetOk": ("id", "val"),
    "PutOk": ("id",),
    "Retry": ("id", "why"),
    "RouteReq": ("c",),
    "Route": ("c", "routing"),
    "Freeze": ("parent",),
    "Install": ("parent", "child", "data", "applied"),
    "Installed": ("parent", "child"),
    "Retire": ("parent",),
    "Retired": ("parent",),
    "Activate": ("parent", "child"),
    "Activated": ("parent", "child"),
}
# fields whose value is a write id, a key -> id map, a key -> shard map, a set of ids
_ID_FIELDS = frozenset({"id", "val"})
RETRY_REASONS = ("moved", "frozen", "notready")

Message = FrozenRecord


def message(kind: str, **fields: Any) -> Message:
    expected = FIELDS[kind]
    if tuple(sorted(fields)) != tuple(sorted(expected)):
        raise ProtocolViolation(f"{kind} needs fields {expected}, got {tuple(fields)}")
    return FrozenRecord(fields, type=kind)


def request(kind: str, dst: str, key: str, op_id: FrozenRecord) -> Message:
    return message("Put" if kind == "put" else "Get", dst=dst, key=key, id=op_id)


def _id_to_wire(value: Mapping[str, Any]) -> dict[str, Any]:
    return {"c": value["c"], "n": value["n"]}


def to_wire(msg: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in msg.items():
        if name in _ID_FIELDS:
            out[name] = _id_to_wire(value)
        elif name == "data":
            out[name] = {k: _id_to_wire(v) for k, v in sorted(value.items())}
        elif name == "applied":
            out[name] = [_id_to_wire(v) for v in sorted(value, key=lambda v: (v["c"], v["n"]))]
        elif name == "routing":
            out[name] = dict(sorted(value.items()))
        else:
            out[name] = value
    return out


def _id_from_wire(value: Any, where: str) -> FrozenRecord:
    if (
        not isinstance(value, dict)
        or set(value) != {"c", "n"}
        or not isinstance(value["c"], str)
        or isinstance(value["n"], bool)
        or not isinstance(value["n"], int)
    ):
        raise ProtocolViolation(f"{where}: not a write id: {value!r}")
    return FrozenRecord(c=value["c"], n=value["n"])


def from_wire(data: Any) -> Message:
    if not isinstance(data, dict) or data.get("type") not in FIELDS:
        raise ProtocolViolation(f"not a shard split message: {data!r}")
    kind = data["type"]
    if set(data) != {"type", *FIELDS[kind]}:
        raise ProtocolViolation(f"{kind} with fields {sorted(data)}; expected {FIELDS[kind]}")
    fields: dict[str, Any] = {}
    for name in FIELDS[kind]:
        value = data[name]
        where = f"{kind}.{name}"
        if name in _ID_FIELDS:
            fields[name] = _id_from_wire(value, where)
        elif name == "data":
            if not isinstance(value, dict):
                raise ProtocolViolation(f"{where}: not a map: {value!r}")
            fields[name] = FrozenRecord({str(k): _id_from_wire(v, where) for k, v in value.items()})
        elif name == "applied":
            if not isinstance(value, list):
                raise ProtocolViolation(f"{where}: not a list: {value!r}")
            fields[name] = frozenset(_id_from_wire(v, where) for v in value)
        elif name == "routing":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ProtocolViolation(f"{where}: not a key -> shard map: {value!r}")
            fields[name] = FrozenRecord(value)
        else:
            if not isinstance(value, str):
                raise ProtocolViolation(f"{where}: not a string: {value!r}")
            fields[name] = value
    return message(kind, **fields)
