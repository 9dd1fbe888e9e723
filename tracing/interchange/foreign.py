"""Another system's log, read as a trace of a spec through a small mapping file.

Theory of operation. A foreign log is JSON lines, each step a record that
holds an action, the state and perhaps a time and the action's parameters,
under names that system chose, with values in plain JSON: a set is an array,
a function an object, a bag perhaps a list of messages. The mapping file
(tracing/interchange/log_mapping.py reads it and checks it against the spec) says where
each part of a step lives, how the log's names map to the spec's, and the
TLA+ type of each variable whose JSON form alone is ambiguous.
`load_foreign_trace` applies it and returns a `tracing.codec.Trace` with a
header naming the spec and constants, so `tracing.validation.validator.validate_trace`
checks it like any tlasim trace.

A type (a `Shape`, tracing/tla/type_expr.py) drives decoding: `SUBSET T` turns
an array into a set, `[D -> R]` an object (or a list of [key, value] pairs)
into a function, `Bag(T)` a list into a bag with one copy per occurrence,
`Seq(T)` an array into a sequence, `[f: T, ...]` checks a record's fields.
Where no type is given, or a type names a constant (`RM`, `Msg`), the value
is read as ITF JSON (tracing/interchange/itf.py), so tagged values (`{"#set": [...]}`)
need no type at all.

Every error in the log names the log file, its line and the path to the bad
value. This module only reads; validation is tracing.validation.validator's.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tlasim.protocols.errors import TraceFormatError
from tlasim.tracing.codec import Trace, TraceStep, load_json_line, unwrap_entry
from tlasim.tracing.inputs import TRACE_MAX_BYTES, open_regular_file
from tlasim.tracing.interchange.itf import itf_to_tagged
from tlasim.tracing.interchange.log_mapping import LogMapping, VariableMap, read_mapping
from tlasim.tracing.tla.type_expr import ANY, Shape
from tlasim.tracing.values import INT_MAX, INT_MIN, Record, canonical_json, from_json, short_repr

__all__ = ["decode_plain", "load_foreign_trace", "read_foreign_log"]


def load_foreign_trace(
    log_path: str | os.PathLike[str],
    mapping_path: str | os.PathLike[str],
    spec_dirs: Sequence[Path] | None = None,
) -> Trace:
    """Read another system's log through a mapping file into a Trace to validate.

    Raises ConfigError (a bad or missing mapping file, one that does not fit
    its spec, or a spec that cannot be found) and TraceFormatError (a bad or
    missing log, or a value that does not fit its type), each naming the
    file and line.
    """
    return read_foreign_log(log_path, read_mapping(mapping_path, spec_dirs))


# --- the log --------------------------------------------------------------------


def read_foreign_log(log_path: str | os.PathLike[str], mapping: LogMapping) -> Trace:
    """Read a log through a checked mapping; see the module docstring."""
    name = os.fspath(log_path)
    steps = []
    try:
        with open_regular_file(name, "log", TRACE_MAX_BYTES, error=TraceFormatError) as f:
            for number, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                where = f"{name}:{number}"
                step = _step(where, number, load_json_line(raw, where), mapping)
                if step is not None:
                    steps.append(step)
    except OSError as exc:
        raise TraceFormatError(f"{name}: cannot read the log: {exc.strerror}") from None
    if not steps:
        fields = mapping.fields
        raise TraceFormatError(
            f"{name}: no line holds the field {fields['vars']!r} or {fields['action']!r}; "
            f"set them under [fields] in {mapping.path}"
        )
    header = Record(
        {"spec": mapping.spec, "constants": mapping.constants, "mapping": mapping.path}
    )
    return Trace(name, header, tuple(steps))


def _step(where: str, number: int, record: Any, mapping: LogMapping) -> TraceStep | None:
    """The step a log record holds, or None for a record that is not a step."""
    fields = mapping.fields
    if type(record) is not dict:
        raise TraceFormatError(f"{where}: a log record must be an object, not {short_repr(record)}")
    if fields["entry"] and fields["entry"] in record:
        record = unwrap_entry(where, record[fields["entry"]])
    has_vars = fields["vars"] in record
    has_action = bool(fields["action"]) and fields["action"] in record
    if not has_vars and not has_action:
        return None
    action = record.get(fields["action"]) if has_action else None
    if action is not None:
        if type(action) is not str or not action:
            raise TraceFormatError(
                f"{where}: the action must be a non-empty string: {short_repr(action)}"
            )
        action = mapping.actions.get(action, action)
    return TraceStep(
        line=number,
        seq=_optional(where, record, fields["seq"], int),
        ts=_optional(where, record, fields["ts"], int),
        node=_optional(where, record, fields["node"], str),
        action=action,
        params=_params(where, record, mapping),
        vars=_vars(where, record.get(fields["vars"], {}), mapping),
    )


def _optional(where: str, record: dict[str, Any], field: str, kind: type) -> Any:
    if not field:
        return None
    value: Any = record.get(field)
    if value is not None and (
        type(value) is not kind or (type(value) is int and not INT_MIN <= value <= INT_MAX)
    ):
        what = "an integer of at most 64 bits" if kind is int else "a string"
        raise TraceFormatError(
            f"{where}: {field} must be {what}, not "
            f"{short_repr(value)} (set {field} = \"\" under [fields] to leave it unread)"
        )
    return value


def _params(where: str, record: dict[str, Any], mapping: LogMapping) -> Record:
    field = mapping.fields["params"]
    raw: Any = record.get(field, {}) if field else {}
    if type(raw) is not dict:
        raise TraceFormatError(f"{where}: {field} must be an object, not {short_repr(raw)}")
    logged: dict[str, Any] = raw
    out: dict[str, Any] = {}
    for key, value in logged.items():
        name = mapping.params.get(key, key)
        if name in out:
            raise TraceFormatError(f"{where}: the parameter {name!r} is logged twice")
        out[name] = decode_plain(value, ANY, f"{where}: {field}.{key}")
    return Record(out)


def _vars(where: str, raw: Any, mapping: LogMapping) -> Record:
    field = mapping.fields["vars"]
    if type(raw) is not dict:
        raise TraceFormatError(f"{where}: {field} must be an object, not {short_repr(raw)}")
    out: dict[str, Any] = {}
    for logged, value in raw.items():
        if logged in mapping.ignore:
            continue
        entry = mapping.variables.get(logged)
        if entry is None and logged in mapping.spec_variables:
            entry = VariableMap(logged, logged, ANY)
        if entry is None:
            raise TraceFormatError(
                f"{where}: the logged variable {logged!r} is not a variable of {mapping.spec} "
                f"nor under [variables] in {mapping.path} (list it in ignore = [...] if it is "
                "not the spec's)"
            )
        if entry.var in out:
            raise TraceFormatError(f"{where}: {entry.var} is logged twice")
        out[entry.var] = decode_plain(value, entry.shape, f"{where}: {field}.{logged}")
    return Record(out)


# --- values ---------------------------------------------------------------------

_WHAT = {
    "int": "an integer",
    "str": "a string",
    "bool": "a boolean",
    "set": "a set (an array)",
    "seq": "a sequence (an array)",
    "bag": "a bag (an array of its copies, or a function to counts)",
    "tuple": "a tuple (an array)",
    "record": "a record (an object)",
    "fn": "a function (an object, or an array of [key, value] pairs)",
}
# 20 digits hold every 64-bit integer (from_json checks the range); Python
# cannot even parse one of more than 4300.
_INT_KEY = re.compile(r"-?[0-9]{1,20}")
_SCALARS = {"int": int, "str": str, "bool": bool}
_ITF_TAGS = ("#bigint", "#tup", "#set", "#map", "#unserializable")
# The ITF tag that may stand for the array each kind is logged as.
_ARRAY_TAGS = {"set": "#set", "seq": "#tup", "tuple": "#tup", "bag": None}


class _Misfit(Exception):
    """A logged value that does not fit its declared type."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def decode_plain(value: Any, shape: Shape, where: str = "value") -> Any:
    """The TLA+ value that plain JSON of a shape stands for (see the module docstring).

    Raises TraceFormatError naming the path (from `where`) of a part that
    does not fit the shape.
    """
    try:
        tagged = _tag(value, shape, "")
    except _Misfit as exc:
        raise TraceFormatError(f"{where}{exc.path}: {exc.message}") from None
    return from_json(itf_to_tagged(tagged, where), where)


def _tag(o: Any, shape: Shape, path: str) -> Any:
    """Plain JSON of a shape, made ITF JSON: the tags that shape implies, added."""
    kind = shape.kind
    tag, inner = _tag_of(o)
    if kind == "any":
        return o
    if kind in ("int", "str", "bool"):
        if type(o) is _SCALARS[kind] or (kind == "int" and tag == "#bigint"):
            return o
    elif kind == "record":
        if type(o) is dict and tag is None:
            missing = [f for f in shape.names if f not in o]
            extra = sorted(set(o) - set(shape.names))
            if missing or extra:
                raise _Misfit(path, f"the record's fields are {sorted(o)}, not {list(shape.names)}")
            return {f: _tag(o[f], shape.field(f), f"{path}.{f}") for f in shape.names}
    elif kind == "fn" or (kind == "bag" and type(o) is dict):
        if type(o) is list or tag == "#map":
            return {"#map": _pairs(o if tag is None else inner, shape, path, from_object=False)}
        if type(o) is dict and tag not in _ITF_TAGS:
            # An ITF tag is never a key, but any other "#..." is one of the function's.
            pairs = [[k, v] for k, v in o.items()]
            return {"#map": _pairs(pairs, shape, path, from_object=True)}
    else:
        items = o if type(o) is list else inner if tag == _ARRAY_TAGS[kind] else None
        if type(items) is list:
            if kind == "tuple" and len(items) != len(shape.parts):
                raise _Misfit(path, f"expected {len(shape.parts)} items, got {len(items)}")
            tagged = [_tag(x, shape.item(i), f"{path}[{i}]") for i, x in enumerate(items)]
            if kind == "set":
                return {"#set": tagged}
            return _bag(tagged, path) if kind == "bag" else tagged
    raise _Misfit(path, f"expected {_WHAT[kind]}, got {_shown(o)}")


def _shown(o: Any) -> str:
    """A logged value for a message, as JSON, cut short; never an error of its own."""
    try:
        return json.dumps(o, ensure_ascii=False)[:60]
    except (RecursionError, ValueError, TypeError):
        return short_repr(o)


def _tag_of(o: Any) -> tuple[str | None, Any]:
    if type(o) is dict and len(o) == 1:
        ((key, inner),) = o.items()
        if key.startswith("#"):
            return key, inner
    return None, None


def _pairs(pairs: Any, shape: Shape, path: str, *, from_object: bool) -> list[list[Any]]:
    if type(pairs) is not list:
        raise _Misfit(path, f"#map must hold a list of pairs, not {_shown(pairs)}")
    domain, value = shape.domain(), shape.range()
    out = []
    for i, pair in enumerate(pairs):
        if type(pair) is not list or len(pair) != 2:
            raise _Misfit(f"{path}[{i}]", f"not a [key, value] pair: {_shown(pair)}")
        key, item = pair
        segment = f"[{key!r}]" if from_object else f"[{i}]"
        if from_object:
            key = _object_key(key, domain, f"{path}{segment}")
        else:
            key = _tag(key, domain, f"{path}[{i}][0]")
        out.append([key, _tag(item, value, f"{path}{segment}")])
    return out


def _object_key(key: str, domain: Shape, path: str) -> Any:
    """An object's key is a string; an integer domain reads it as a number."""
    if domain.kind == "int":
        if _INT_KEY.fullmatch(key) is None:
            raise _Misfit(path, f"the key {short_repr(key)} is not a 64-bit integer")
        return int(key)
    if domain.kind in ("any", "str"):
        return key
    raise _Misfit(
        path, f"an object's keys are strings; log a function over {_WHAT[domain.kind]} "
        "as an array of [key, value] pairs"
    )


def _bag(elements: list[Any], path: str) -> dict[str, Any]:
    """A bag from the list of its copies: each distinct element with its count."""
    counts: dict[str, list[Any]] = {}
    for i, element in enumerate(elements):
        try:
            key = canonical_json(from_json(itf_to_tagged(element, "element")))
        except TraceFormatError as exc:
            raise _Misfit(f"{path}[{i}]", str(exc)) from None
        counts.setdefault(key, [element, 0])[1] += 1
    return {"#map": [[element, n] for _, (element, n) in sorted(counts.items())]}
