"""Messages as FrozenRecords, and their msgpack-safe wire form, from a schema.

A protocol describes each message type by its fields and each field's kind;
`Schema` builds messages (checking the fields), turns them into plain
msgpack-able data (sets become sorted lists, records plain dicts) and back,
rejecting anything malformed with ProtocolViolation. A message's record is
the spec's message record, so the refinement mapping of a message is the
message itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.errors import ProtocolViolation
from tlasim.protocols.frozen import FrozenRecord

# Field kinds: a string, an integer, a write id [c, n], a map from strings to
# write ids, a set of write ids, a map from strings to strings, a set of
# strings, a sequence of [key, val] writes.
STR, INT, ID, ID_MAP, ID_SET, STR_MAP, STR_SET, WRITES = (
    "str",
    "int",
    "id",
    "id_map",
    "id_set",
    "str_map",
    "str_set",
    "writes",
)


def _id_key(value: Mapping[str, Any]) -> tuple[str, int]:
    return (value["c"], value["n"])


def _id_out(value: Mapping[str, Any]) -> dict[str, Any]:
    return {"c": value["c"], "n": value["n"]}


def _id_in(value: Any, where: str) -> FrozenRecord:
    if (
        not isinstance(value, dict)
        or set(value) != {"c", "n"}
        or not isinstance(value["c"], str)
        or isinstance(value["n"], bool)
        or not isinstance(value["n"], int)
    ):
        raise ProtocolViolation(f"{where}: not a write id: {value!r}")
    return FrozenRecord(c=value["c"], n=value["n"])


def _need(ok: bool, where: str, what: str, value: Any) -> None:
    if not ok:
        raise ProtocolViolation(f"{where}: not {what}: {value!r}")


def _out(kind: str, value: Any) -> Any:
    if kind == ID:
        return _id_out(value)
    if kind == ID_MAP:
        return {k: _id_out(v) for k, v in sorted(value.items())}
    if kind == ID_SET:
        return [_id_out(v) for v in sorted(value, key=_id_key)]
    if kind == STR_MAP:
        return dict(sorted(value.items()))
    if kind == STR_SET:
        return sorted(value)
    if kind == WRITES:
        return [{"key": w["key"], "val": _id_out(w["val"])} for w in value]
    return value


def _in(kind: str, value: Any, where: str) -> Any:
    if kind == STR:
        _need(isinstance(value, str), where, "a string", value)
        return value
    if kind == INT:
        _need(isinstance(value, int) and not isinstance(value, bool), where, "an integer", value)
        return value
    if kind == ID:
        return _id_in(value, where)
    if kind == ID_MAP:
        _need(isinstance(value, dict), where, "a map", value)
        return FrozenRecord({str(k): _id_in(v, where) for k, v in value.items()})
    if kind == ID_SET:
        _need(isinstance(value, list), where, "a list", value)
        return frozenset(_id_in(v, where) for v in value)
    if kind == STR_MAP:
        _need(
            isinstance(value, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()),
            where,
            "a map of strings",
            value,
        )
        return FrozenRecord(value)
    if kind == STR_SET:
        _need(
            isinstance(value, list) and all(isinstance(v, str) for v in value),
            where,
            "a list of strings",
            value,
        )
        return frozenset(value)
    if kind == WRITES:
        _need(isinstance(value, list), where, "a list", value)
        out = []
        for w in value:
            _need(
                isinstance(w, dict) and set(w) == {"key", "val"} and isinstance(w["key"], str),
                where,
                "a write",
                w,
            )
            out.append(FrozenRecord(key=w["key"], val=_id_in(w["val"], where)))
        return tuple(out)
    raise ProtocolViolation(f"{where}: unknown field kind {kind!r}")


class Schema:
    """The message types of one protocol: type -> {field: kind}."""

    def __init__(self, protocol: str, types: Mapping[str, Mapping[str, str]]) -> None:
        self.protocol = protocol
        self.types = {name: dict(fields) for name, fields in types.items()}

    def message(self, kind: str, **fields: Any) -> FrozenRecord:
        expected = self.types[kind]
        if set(fields) != set(expected):
            raise ProtocolViolation(f"{kind} needs fields {sorted(expected)}, got {sorted(fields)}")
        return FrozenRecord(fields, type=kind)

    def to_wire(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        fields = self.types[msg["type"]]
        out: dict[str, Any] = {"type": msg["type"]}
        for name, kind in fields.items():
            out[name] = _out(kind, msg[name])
        return out

    def from_wire(self, data: Any) -> FrozenRecord:
        if not isinstance(data, dict) or data.get("type") not in self.types:
            raise ProtocolViolation(f"not a {self.protocol} message: {data!r}")
        kind = data["type"]
        fields = self.types[kind]
        if set(data) != {"type", *fields}:
            raise ProtocolViolation(f"{kind} with fields {sorted(data)}; expected {sorted(fields)}")
        return self.message(
            kind, **{name: _in(k, data[name], f"{kind}.{name}") for name, k in fields.items()}
        )
