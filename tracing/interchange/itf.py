"""The Informal Trace Format (ITF) of Apalache and Quint: writing and reading traces.

Theory of operation. ITF (Apalache ADR-015) is one JSON object:
`{"#meta": {...}, "params": [constants], "vars": [variables], "states": [...]}`,
each state an object holding its own `#meta` and one value per variable.
`trace_to_itf` turns a `Trace` into that object and `itf_to_trace` turns it
back, exactly: values, actions, params, ts, seq, node, line, the timer a
step answers, the plan's faults that struck in it, and the header all
survive the round trip (docs/interchange.md has the mapping). The end
record (the oracles' verdict) does not travel: ITF has no place for it.

- The header's fields go into the top-level `#meta` beside ITF's own
  `format`, `format-description`, `source` and `description`; its constants
  become ITF `params`, set in the first state, as ADR-015 asks.
- A step's action, params, ts, seq, node, file line, timer and faults go
  into its state's `#meta`, so `vars` lists exactly the spec's variables.
- Values: integers are `{"#bigint": "n"}`, as Quint writes them (a reader
  also takes plain JSON integers); sequences are JSON arrays; sets are
  `#set` in tlasim's canonical order; records are objects; functions are
  `#map`. A TLA+ record is a function over strings and tlasim keeps no
  difference between them, so a string-keyed function is written as a
  `#map` where the header's declared type of its variable says function
  (`[Tx -> ...]`, read by tracing/tla/type_expr.py), and as a record otherwise.
  `value_to_itf` and `itf_to_tagged` convert one value on its own;
  tracing/interchange/foreign.py reads a log's untyped values with the latter.

Reading is lenient where ITF allows a choice (`#tup` or an array, a number or
`#bigint`, a record or a string-keyed `#map`) and strict elsewhere: every
error names the file and the path to the bad part. This module only converts;
it never runs TLC.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any, TextIO

from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import TraceFormatError
from tlasim.tracing.codec import Trace, TraceStep, freeze_plain, thaw
from tlasim.tracing.inputs import TRACE_MAX_BYTES, read_regular_file
from tlasim.tracing.tla.type_expr import ANY, Shape, type_hint
from tlasim.tracing.values import (
    INT_MAX,
    INT_MIN,
    MAX_DEPTH,
    Record,
    from_json,
    short_repr,
    to_json,
)

__all__ = [
    "ITF_DESCRIPTION_URL",
    "itf_to_tagged",
    "itf_to_trace",
    "read_itf",
    "trace_to_itf",
    "value_to_itf",
    "write_itf",
]

ITF_DESCRIPTION_URL = "https://apalache-mc.org/docs/adr/015adr-trace.html"
# Keys of the top-level #meta that ITF tools write; every other key is a header field.
_ITF_META_KEYS = ("format", "format-description", "source", "description")
# Header fields that do not travel: the record type is ndjson's, the constants are params.
_HEADER_SKIPPED = ("event", "constants")
_STEP_META = ("line", "seq", "ts", "node")
# 20 digits hold every 64-bit integer; from_json checks the range. Python
# cannot even parse an integer of more than 4300 digits.
_BIGINT = re.compile(r"-?[0-9]{1,20}")


class _Bad(Exception):
    """A value ITF cannot hold or that is not ITF; `path` is filled innermost first."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []


def _at(segment: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except _Bad as exc:
        exc.path.append(segment)
        raise


def _fail(where: str, exc: _Bad) -> TraceFormatError:
    return TraceFormatError(f"{where}{''.join(reversed(exc.path))}: {exc.message}")


# --- values: tlasim -> ITF ------------------------------------------------------


def value_to_itf(value: Any, shape: Shape = ANY) -> Any:
    """The ITF JSON of a tlasim value; `shape` says where a string-keyed function is a #map."""
    return _out(to_json(value), shape)


def _out(j: Any, shape: Shape) -> Any:
    """Tagged JSON (canonical, from `values.to_json`) to ITF JSON."""
    t = type(j)
    if t is str or t is bool:
        return j
    if t is int:
        return {"#bigint": str(j)}
    if t is list:
        return [_out(x, shape.item(i)) for i, x in enumerate(j)]
    if len(j) == 1:
        ((tag, inner),) = j.items()
        if tag == "#set":
            return {"#set": [_out(x, shape.element()) for x in inner]}
        if tag == "#map":
            key, val = shape.domain(), shape.range()
            return {"#map": [[_out(k, key), _out(v, val)] for k, v in inner]}
    if shape.is_function() or any(k.startswith("#") for k in j):
        # ITF field names must not start with "#"; a function may have any keys.
        val = shape.range()
        return {"#map": [[k, _out(v, val)] for k, v in j.items()]}
    return {k: _out(v, shape.field(k)) for k, v in j.items()}


# --- values: ITF -> tlasim ------------------------------------------------------


def itf_to_tagged(obj: Any, where: str = "value") -> Any:
    """Turn an ITF value into tlasim's tagged JSON (`values.from_json` reads it).

    Raises TraceFormatError naming the path (from `where`) of a part that is
    not an ITF value, or that TLA+ cannot hold (a float, null, #unserializable).
    """
    try:
        return _in(obj, 0)
    except _Bad as exc:
        raise _fail(where, exc) from None


def _in(o: Any, depth: int) -> Any:
    t = type(o)
    if t is str or t is bool or t is int:
        return o
    if (t is list or t is dict) and depth >= MAX_DEPTH:
        raise _Bad(f"nests deeper than {MAX_DEPTH} levels, the limit")
    if t is list:
        return [_at(f"[{i}]", _in, x, depth + 1) for i, x in enumerate(o)]
    if t is dict:
        for key in o:
            if type(key) is not str:
                raise _Bad(f"the key {short_repr(key)} is not a string")
        if len(o) == 1:
            ((key, inner),) = o.items()
            if key.startswith("#"):
                return _at(f"[{short_repr(key)}]", _tagged, key, inner, depth)
        tags = sorted(key for key in o if key.startswith("#"))
        if tags:
            # `{"#bigint": "5", "x": 1}` is neither the integer nor a record:
            # ITF reserves keys that start with # for tags, each alone in its object.
            raise _Bad(f"the tag {short_repr(tags[0])} must be its object's only key")
        return {k: _at(f"[{short_repr(k)}]", _in, v, depth + 1) for k, v in o.items()}
    if t is float:
        raise _Bad(f"{o!r} is a float; TLA+ values hold only integers")
    if o is None:
        raise _Bad("null is not a TLA+ value")
    raise _Bad(f"{short_repr(o)} is not an ITF value")


def _tagged(tag: str, inner: Any, depth: int) -> Any:
    if tag == "#bigint":
        if type(inner) is not str or _BIGINT.fullmatch(inner) is None:
            raise _Bad(
                "must hold a decimal integer of at most 20 digits in a string, not "
                + short_repr(inner)
            )
        return int(inner)
    if tag == "#unserializable":
        raise _Bad(f"the value {short_repr(inner)} was not serialised, so it cannot be read back")
    if tag not in ("#tup", "#set", "#map"):
        raise _Bad(
            f"unknown tag {short_repr(tag)} (ITF has #bigint, #tup, #set, #map, #unserializable)"
        )
    if type(inner) is not list:
        raise _Bad(f"must hold a list, not {short_repr(inner)}")
    if depth >= MAX_DEPTH:
        raise _Bad(f"nests deeper than {MAX_DEPTH} levels, the limit")
    items = [_at(f"[{i}]", _in, x, depth + 1) for i, x in enumerate(inner)]
    if tag == "#tup":
        return items
    if tag == "#set":
        return {"#set": items}
    for i, pair in enumerate(items):
        if type(pair) is not list or len(pair) != 2:
            raise _Bad(f"entry {i} is not a [key, value] pair: {short_repr(inner[i])}")
    return {"#map": items}


def _value(obj: Any, where: str) -> Any:
    return from_json(itf_to_tagged(obj, where), where)


# --- traces ---------------------------------------------------------------------


def trace_to_itf(trace: Trace) -> dict[str, Any]:
    """The ITF object of a trace; see the module docstring.

    Raises TraceFormatError when ITF cannot hold the trace: a line that logs
    other variables than the first (ITF wants every variable in every state).
    """
    header = trace.header or Record()
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": ITF_DESCRIPTION_URL,
        "source": trace.path,
        "description": "a tlasim trace; each state's #meta holds its action and params",
    }
    for key, value in header.items():
        if key in _HEADER_SKIPPED:
            continue
        if key in meta:
            raise TraceFormatError(f"{trace.path}: the header field {key!r} clashes with ITF's")
        meta[key] = thaw(value)
    constants = header.get("constants") or Record()
    if not isinstance(constants, Mapping):
        raise TraceFormatError(f"{trace.path}: the header's constants are not name: value")
    names = list(trace.steps[0].vars) if trace.steps else []
    clash = sorted(set(constants) & set(names))
    if clash:
        raise TraceFormatError(f"{trace.path}: {clash} are both constants and variables")
    types = header.get("variables")
    hints = {
        name: type_hint(types[name]) if isinstance(types, Mapping) and name in types else ANY
        for name in names
    }
    states = []
    for index, step in enumerate(trace.steps):
        if list(step.vars) != names:
            missing = ", ".join(sorted(set(names) - set(step.vars))) or "nothing"
            extra = ", ".join(sorted(set(step.vars) - set(names))) or "nothing"
            raise TraceFormatError(
                f"{trace.path}:{step.line}: ITF needs a value for every variable in every "
                f"state, but this line lacks {missing} and adds {extra} (against the first line)"
            )
        state: dict[str, Any] = {"#meta": _step_meta(index, step)}
        if index == 0:
            state.update((c, value_to_itf(v)) for c, v in constants.items())
        state.update((v, value_to_itf(step.vars[v], hints[v])) for v in names)
        states.append(state)
    return {"#meta": meta, "params": list(constants), "vars": names, "states": states}


def _step_meta(index: int, step: TraceStep) -> dict[str, Any]:
    meta: dict[str, Any] = {"index": index}
    if step.action is not None:
        meta["action"] = step.action
    meta["params"] = value_to_itf(step.params)
    for key in _STEP_META:
        value = getattr(step, key)
        if value is not None:
            meta[key] = value
    if step.timer is not None:
        meta["timer"] = step.timer
    if step.faults:
        meta["faults"] = list(step.faults)
    return meta


def write_itf(trace: Trace, stream: TextIO) -> None:
    """Write a trace as ITF: the top-level keys one per line, then one state per line.

    A state per line keeps big traces readable with grep and diff, and the
    bytes depend only on the trace.
    """
    doc = trace_to_itf(trace)

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    stream.write("{\n")
    for key in ("#meta", "params", "vars"):
        stream.write(f"  {dump(key)}: {dump(doc[key])},\n")
    stream.write('  "states": [\n')
    last = len(doc["states"]) - 1
    for i, state in enumerate(doc["states"]):
        stream.write(f"    {dump(state)}{',' if i < last else ''}\n")
    stream.write("  ]\n}\n")


def read_itf(path: str | os.PathLike[str]) -> Trace:
    """Read an ITF file into a Trace; TraceFormatError names the file and the problem."""
    name = os.fspath(path)
    data = read_regular_file(name, "ITF trace", TRACE_MAX_BYTES, error=TraceFormatError)
    # Each level of a value is two levels of ITF (`{"#set": [...]}`).
    doc = load_json(
        data, name, error=TraceFormatError, max_depth=2 * MAX_DEPTH + 8,
        max_bytes=TRACE_MAX_BYTES,
    )
    return itf_to_trace(doc, name)


def itf_to_trace(doc: Any, path: str) -> Trace:
    """The Trace an ITF object holds; the inverse of `trace_to_itf`.

    A state whose #meta names no action gives a step with no action, as an
    Apalache counterexample would. `loop` (a lasso's loop start) is ignored:
    the states are read as the finite behaviour they spell out.
    """
    if type(doc) is not dict:
        raise TraceFormatError(f"{path}: an ITF trace is a JSON object, not {short_repr(doc)}")
    names = _names(doc, "vars", path)
    params = _names(doc, "params", path) if "params" in doc else []
    states = doc.get("states")
    if type(states) is not list or not states:
        raise TraceFormatError(f"{path}: 'states' must be a non-empty list of states")
    meta = doc.get("#meta", {})
    if type(meta) is not dict:
        raise TraceFormatError(f"{path}: '#meta' must be an object, not {short_repr(meta)}")
    fields = {
        k: freeze_plain(v, f"{path}: #meta {k}")
        for k, v in meta.items()
        if k not in _ITF_META_KEYS
    }
    steps = []
    constants: dict[str, Any] = {}
    for index, state in enumerate(states):
        where = f"{path}: states[{index}]"
        if type(state) is not dict:
            raise TraceFormatError(f"{where}: a state must be an object, not {short_repr(state)}")
        expected = set(names) | (set(params) if index == 0 else set())
        present = set(state) - {"#meta"}
        if present != expected:
            raise TraceFormatError(
                f"{where}: {_difference(expected, present)} (ITF sets every var in every "
                "state, and the params in the first)"
            )
        if index == 0:
            constants = {c: _value(state[c], f"{where}.{c}") for c in params}
        values = {v: _value(state[v], f"{where}.{v}") for v in names}
        steps.append(_step(where, index, state.get("#meta", {}), Record(values)))
    if params:
        fields["constants"] = Record(constants)
    header = Record._trusted(dict(sorted(fields.items()))) if fields else None
    return Trace(path, header, tuple(steps))


def _names(doc: dict[str, Any], key: str, path: str) -> list[str]:
    names = doc.get(key)
    if type(names) is not list or not all(type(n) is str for n in names):
        raise TraceFormatError(f"{path}: {key!r} must be a list of names, not {short_repr(names)}")
    twice = sorted(n for n, count in Counter(names).items() if count > 1)
    if twice:
        raise TraceFormatError(f"{path}: {key!r} lists {', '.join(twice)} twice")
    return names


def _difference(expected: set[str], present: set[str]) -> str:
    parts = []
    if expected - present:
        parts.append(f"no value for {', '.join(sorted(expected - present))}")
    if present - expected:
        parts.append(f"{', '.join(sorted(present - expected))} not in vars or params")
    return "; ".join(parts)


def _step(where: str, index: int, meta: Any, values: Record) -> TraceStep:
    if type(meta) is not dict:
        raise TraceFormatError(f"{where}: '#meta' must be an object, not {short_repr(meta)}")
    for key, kind in (("line", int), ("seq", int), ("ts", int), ("node", str), ("action", str),
                      ("timer", str)):
        if key in meta and (
            type(meta[key]) is not kind or (kind is int and not INT_MIN <= meta[key] <= INT_MAX)
        ):
            raise TraceFormatError(
                f"{where}: #meta {key} must be {kind.__name__}, not {short_repr(meta[key])}"
            )
    params = _value(meta.get("params", {}), f"{where}.#meta.params")
    if type(params) is not Record:
        raise TraceFormatError(f"{where}: #meta params must be a record, not {short_repr(params)}")
    faults = meta.get("faults", [])
    if type(faults) is not list or not all(type(name) is str for name in faults):
        raise TraceFormatError(
            f"{where}: #meta faults must be a list of strings, not {short_repr(faults)}"
        )
    return TraceStep(
        line=meta.get("line", index + 1),
        seq=meta.get("seq"),
        ts=meta.get("ts"),
        node=meta.get("node"),
        action=meta.get("action"),
        params=params,
        vars=values,
        faults=tuple(faults),
        timer=meta.get("timer"),
    )
