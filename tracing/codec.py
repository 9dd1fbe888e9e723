"""Reading and writing trace files: ndjson and msgpack (docs/trace-format.md).

Theory of operation. A trace is a stream of records: at most one header, then
step records. `read_trace` accepts what tlasim writes and also what other
systems log: a bare `{"ts", "action", "vars"}` object, or any log record that
carries it in the field `entry`, as an object or as a string holding JSON
(Go's slog does the latter). Other log records are skipped. Values are
decoded with `values.from_json`, so a step's `vars` is a `Record` of frozen
values. Every error names the file, the line (or msgpack record) and what is
wrong.

`TraceWriter` only serialises: its records are already in tagged JSON form
(the emitter applies `values.to_json`), and it writes their keys in their own
order, so the caller fixes the field order and the bytes are deterministic.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal

import msgpack

from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import ConfigError, InternalError, TraceFormatError
from tlasim.tracing.inputs import TRACE_MAX_BYTES, open_regular_file
from tlasim.tracing.outputs import open_output
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
    "HEADER_EVENT",
    "SCHEMA_VERSION",
    "STEP_EVENT",
    "Trace",
    "TraceFormat",
    "TraceStep",
    "TraceWriter",
    "freeze_plain",
    "load_json_line",
    "read_trace",
    "thaw",
    "unwrap_entry",
    "write_trace",
]

TraceFormat = Literal["ndjson", "msgpack"]

SCHEMA_VERSION = 1
HEADER_EVENT = "tla_trace_header"
STEP_EVENT = "tla_trace"
END_EVENT = "tla_trace_end"


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One step record. `line` is its 1-based line (ndjson) or record (msgpack) number."""

    line: int
    seq: int | None
    ts: int | None
    node: str | None
    action: str | None  # None: the line did not say
    params: Record
    vars: Record
    faults: tuple[str, ...] = ()  # the fault plan's entries that struck in this step
    timer: str | None = None  # the timer whose expiry this step answers


@dataclass(frozen=True, slots=True)
class TraceEnd:
    """How the run's oracles judged it, from the trace's end record (tlasim writes one)."""

    outcome: str
    failure: str | None
    failing_step: int | None


@dataclass(frozen=True, slots=True)
class Trace:
    """A whole trace. `header` is None for logs that carry none (another system's);
    `end` is None for a trace without an end record (another system's, or an older one)."""

    path: str
    header: Record | None
    steps: tuple[TraceStep, ...]
    end: TraceEnd | None = None


# --- reading ----------------------------------------------------------------


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read an ndjson or msgpack trace, telling them apart by the first byte.

    Raises TraceFormatError naming the file, the line and the problem. The
    file must be a regular file of at most TRACE_MAX_BYTES (tracing.inputs).
    """
    name = os.fspath(path)
    try:
        with open_regular_file(name, "trace", TRACE_MAX_BYTES, error=TraceFormatError) as f:
            size = os.fstat(f.fileno()).st_size
            start = _first_non_space(f)
            if start is None:
                raise TraceFormatError(f"{name}: the trace is empty")
            f.seek(start)
            first = f.read(1)
            if first == b"{":
                f.seek(0)
                records = _ndjson_records(name, f)
            elif first[0] in _MSGPACK_MAP_STARTS:
                f.seek(start)
                records = _msgpack_records(name, f, start, size)
            else:
                raise TraceFormatError(
                    f"{name}: starts with {first!r}, which begins neither an ndjson trace "
                    "('{') nor a msgpack one (a map)"
                )
            builder = _TraceBuilder(name)
            for number, where, obj in records:
                builder.add(number, where, obj)
    except OSError as exc:
        raise TraceFormatError(f"{name}: cannot read the trace: {exc.strerror}") from None
    return builder.finish()


# fixmap, map16, map32: the first byte of every msgpack trace record.
_MSGPACK_MAP_STARTS = frozenset(range(0x80, 0x90)) | {0xDE, 0xDF}


def _first_non_space(f: BinaryIO) -> int | None:
    offset = 0
    while chunk := f.read(65536):
        stripped = chunk.lstrip()
        if stripped:
            return offset + len(chunk) - len(stripped)
        offset += len(chunk)
    return None


def _ndjson_records(name: str, f: BinaryIO) -> Iterator[tuple[int, str, Any]]:
    # Binary lines split only on b"\n", so U+2028 and friends inside a string
    # never cut a record in two.
    for number, raw in enumerate(f, 1):
        if not raw.strip():
            continue
        yield number, f"{name}:{number}", load_json_line(raw, f"{name}:{number}")


def load_json_line(raw: bytes | str, where: str, problem: str = "bad JSON") -> Any:
    """One JSON text of a trace, or TraceFormatError naming `where` (the one
    JSON reader, protocols.checked, with the trace's own limits)."""
    return load_json(
        raw, where, error=TraceFormatError, max_depth=None, max_bytes=TRACE_MAX_BYTES,
        unique_keys=False, problem=problem,
    )


def _msgpack_records(
    name: str, f: BinaryIO, start: int, size: int
) -> Iterator[tuple[int, str, Any]]:
    unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False)
    number = 0
    # The unpacker stops quietly at a partial record, so count what it consumed.
    consumed = start
    try:
        for obj in unpacker:
            number += 1
            consumed = start + unpacker.tell()
            yield number, f"{name}: record {number}", obj
    except (ValueError, msgpack.UnpackException) as exc:
        # FormatError, StackError (nesting past msgpack's stack), ExtraData,
        # invalid UTF-8, BufferFull (a record past the unpacker's buffer).
        raise TraceFormatError(
            f"{name}: record {number + 1}: bad msgpack: {type(exc).__name__}: {exc}"
        ) from None
    except TypeError as exc:  # a map key msgpack cannot hash (an array, say)
        raise TraceFormatError(f"{name}: record {number + 1}: bad msgpack: {exc}") from None
    if consumed != size:
        raise TraceFormatError(
            f"{name}: record {number + 1}: truncated ({size - consumed} bytes after the last "
            "whole record)"
        )


class _TraceBuilder:
    """Sorts records into the header and the steps, checking each."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.header: Record | None = None
        self._last_vars: dict[str, tuple[str, Any]] = {}
        self.header_where = ""
        self.steps: list[TraceStep] = []
        self.end: TraceEnd | None = None
        self.end_where = ""

    def add(self, number: int, where: str, obj: Any) -> None:
        if type(obj) is not dict:
            raise TraceFormatError(
                f"{where}: a trace record must be an object, not {short_repr(obj)}"
            )
        event = obj.get("event", obj.get("msg"))
        if self.end is not None and (event in (HEADER_EVENT, STEP_EVENT) or "vars" in obj):
            raise TraceFormatError(f"{where}: a record after the end record at {self.end_where}")
        if event == END_EVENT:
            if self.end is not None:
                # Two verdicts of one run: neither may silently win.
                raise TraceFormatError(
                    f"{where}: a second end record (the first is at {self.end_where})"
                )
            self.end = _decode_end(where, obj)
            self.end_where = where
        elif event == HEADER_EVENT or HEADER_EVENT in obj:
            self._add_header(where, obj)
        elif "entry" in obj:
            self._add_step(number, where, unwrap_entry(where, obj["entry"]))
        elif event == STEP_EVENT or "vars" in obj:
            self._add_step(number, where, obj)

    def _add_header(self, where: str, obj: dict[str, Any]) -> None:
        if self.header is not None:
            raise TraceFormatError(
                f"{where}: a second header (the first is at {self.header_where})"
            )
        if self.steps:
            raise TraceFormatError(f"{where}: the header comes after the first step")
        inner = obj.get(HEADER_EVENT)
        if isinstance(inner, str):
            inner = unwrap_entry(where, inner)
        self.header = _decode_header(where, inner if type(inner) is dict else obj)
        self.header_where = where

    def _add_step(self, number: int, where: str, obj: dict[str, Any]) -> None:
        # A partial log may leave out the action (the spec picks one) or some
        # variables (the spec picks their values), but not both entirely.
        action = obj.get("action")
        if action is not None and (type(action) is not str or not action):
            raise TraceFormatError(
                f"{where}: the action must be a non-empty string: {short_repr(action)}"
            )
        if action is None and "vars" not in obj:
            raise TraceFormatError(f"{where}: the step has neither an action nor vars")
        self.steps.append(
            TraceStep(
                line=number,
                seq=_optional(where, obj, "seq", int),
                ts=_optional(where, obj, "ts", int),
                node=_optional(where, obj, "node", str),
                action=action,
                params=_record(where, obj, "params"),
                vars=self._vars(where, obj),
                faults=_fault_names(where, obj),
                timer=_optional(where, obj, "timer", str),
            )
        )

    def _vars(self, where: str, obj: dict[str, Any]) -> Record:
        """The step's vars, each decoded once while it stays unchanged.

        Most variables keep their value from one line to the next, so a
        variable whose raw form repeats the line before's is that line's very
        object: reading costs what changed, and the validator can tell an
        unchanged value by identity. repr keeps TRUE and 1 apart.
        """
        raw = obj.get("vars", {})
        if type(raw) is not dict or (
            len(raw) == 1 and isinstance(next(iter(raw)), str) and next(iter(raw)).startswith("#")
        ):
            raise TraceFormatError(f"{where}: vars must map names to values, not {short_repr(raw)}")
        out: dict[str, Any] = {}
        for name in raw:
            if type(name) is not str:
                raise TraceFormatError(f"{where}: vars key {short_repr(name)} is not a string")
        for name in sorted(raw):
            value = raw[name]
            try:
                text = repr(value)
            except RecursionError:
                raise TraceFormatError(
                    f"{where}: vars[{name!r}]: nests deeper than {MAX_DEPTH} levels, the limit"
                ) from None
            last = self._last_vars.get(name)
            if last is not None and last[0] == text:
                out[name] = last[1]
                continue
            try:
                decoded = from_json(value, f"vars[{name!r}]")
            except TraceFormatError as exc:
                raise TraceFormatError(f"{where}: {exc}") from None
            self._last_vars[name] = (text, decoded)
            out[name] = decoded
        return Record._trusted(out)

    def finish(self) -> Trace:
        if not self.steps:
            raise TraceFormatError(f"{self.name}: the trace holds no step records")
        return Trace(self.name, self.header, tuple(self.steps), self.end)


def _fault_names(where: str, obj: dict[str, Any]) -> tuple[str, ...]:
    """A step's optional `faults`: the plan entries (`windows/3`) that struck in it."""
    names = obj.get("faults")
    if names is None:
        return ()
    if type(names) is not list or any(type(n) is not str for n in names):
        raise TraceFormatError(
            f"{where}: faults must be a list of fault names, not {short_repr(names)}"
        )
    return tuple(names)


def _decode_end(where: str, obj: dict[str, Any]) -> TraceEnd:
    outcome = obj.get("outcome")
    if type(outcome) is not str:
        raise TraceFormatError(
            f"{where}: the end record's outcome must be a string, not {short_repr(outcome)}"
        )
    step = _optional(where, obj, "failing_step", int)
    if step is not None and step < 0:
        raise TraceFormatError(f"{where}: failing_step must not be negative: {step}")
    return TraceEnd(outcome, _optional(where, obj, "failure", str), step)


def unwrap_entry(where: str, entry: Any) -> dict[str, Any]:
    """A log record's `entry` field: an object, or a string holding one (as slog writes)."""
    if isinstance(entry, str):
        entry = load_json_line(entry, where, "the entry string is not JSON")
    if type(entry) is not dict:
        raise TraceFormatError(f"{where}: the entry must be an object, not {short_repr(entry)}")
    return entry


def _optional(where: str, obj: dict[str, Any], field: str, kind: type) -> Any:
    """An optional field of exactly `kind` (a bool is not an int), ints in 64 bits."""
    value: Any = obj.get(field)
    if value is None:
        return None
    if type(value) is not kind or (type(value) is int and not INT_MIN <= value <= INT_MAX):
        raise TraceFormatError(
            f"{where}: {field} must be {_KIND_NAMES[kind]}, not {short_repr(value)}"
        )
    return value


_KIND_NAMES = {int: "an integer of at most 64 bits", str: "a string"}


def _record(where: str, obj: dict[str, Any], field: str) -> Record:
    raw = obj.get(field, {})
    if type(raw) is not dict:
        raise TraceFormatError(f"{where}: {field} must be an object, not {short_repr(raw)}")
    try:
        value = from_json(raw, field)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{where}: {exc}") from None
    if type(value) is not Record:
        raise TraceFormatError(
            f"{where}: {field} must map names to values, not {short_repr(value)}"
        )
    return value


# Header fields that name things, and the integer fields: exact types (a
# header whose schema is `true` must not pass for schema 1).
_HEADER_STRINGS = ("protocol", "spec", "tool_version", "source_revision", "reproduce")
_HEADER_INTS = ("schema", "seed")


def _decode_header(where: str, obj: dict[str, Any]) -> Record:
    for key in obj:
        if type(key) is not str:
            raise TraceFormatError(f"{where}: header key {short_repr(key)} is not a string")
    schema = obj.get("schema", SCHEMA_VERSION)
    if type(schema) is not int or schema != SCHEMA_VERSION:
        raise TraceFormatError(
            f"{where}: header schema {short_repr(schema)} is not supported (this tlasim reads "
            f"{SCHEMA_VERSION}, an integer)"
        )
    for name in _HEADER_STRINGS:
        if name in obj and type(obj[name]) is not str:
            raise TraceFormatError(
                f"{where}: header {name} must be a string: {short_repr(obj[name])}"
            )
    for name in _HEADER_INTS:
        if name in obj and (type(obj[name]) is not int or not INT_MIN <= obj[name] <= INT_MAX):
            raise TraceFormatError(
                f"{where}: header {name} must be an integer of at most 64 bits: "
                f"{short_repr(obj[name])}"
            )
    variables = obj.get("variables", {})
    if type(variables) is not dict or not all(
        type(k) is str and type(t) is str for k, t in variables.items()
    ):
        raise TraceFormatError(
            f"{where}: header variables must map each variable to its TLA+ type: "
            f"{short_repr(variables)}"
        )
    fields = {k: freeze_plain(v, f"{where}: header {k}") for k, v in obj.items()}
    if "constants" in obj:
        fields["constants"] = _record(where, obj, "constants")
    return Record._trusted(dict(sorted(fields.items())))


def freeze_plain(obj: Any, where: str) -> Any:
    """Freeze untagged JSON (a header's options, say): objects become Records
    and arrays tuples, keeping the floats and nulls that options may hold and
    no TLA+ value may. Only what JSON can write back passes: string keys,
    finite floats, integers of 64 bits, MAX_DEPTH levels; anything else is a
    TraceFormatError naming `where` and the path."""
    return _plain(obj, where, 0)


def _plain(obj: Any, where: str, depth: int) -> Any:
    t = type(obj)
    if t is str or t is bool or obj is None:
        return obj
    if t is int:
        if INT_MIN <= obj <= INT_MAX:
            return obj
        raise TraceFormatError(f"{where}: the integer {short_repr(obj)} does not fit in 64 bits")
    if t is float:
        if math.isfinite(obj):
            return obj
        raise TraceFormatError(f"{where}: {obj!r} is not a finite number")
    if t is not dict and t is not list:
        raise TraceFormatError(f"{where}: {short_repr(obj)} is not plain JSON")
    if depth >= MAX_DEPTH:
        raise TraceFormatError(f"{where}: nests deeper than {MAX_DEPTH} levels, the limit")
    if t is list:
        return tuple(_plain(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(obj))
    for k in obj:
        if type(k) is not str:
            raise TraceFormatError(f"{where}: key {short_repr(k)} is not a string")
    return Record._trusted({k: _plain(obj[k], f"{where}.{k}", depth + 1) for k in sorted(obj)})


# --- writing ----------------------------------------------------------------

# allow_nan=False: NaN is not JSON, and a reader would choke on it.
_JSON_ENCODE = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
).encode


class TraceWriter:
    """Serialises trace records, already in tagged JSON form, to a binary stream.

    Keys are written in each record's own order. The stream belongs to the
    caller: `close` flushes it but leaves it open.
    """

    def __init__(self, stream: BinaryIO, fmt: TraceFormat) -> None:
        if fmt == "ndjson":
            self.encode = self._encode_ndjson
        elif fmt == "msgpack":
            # One packer per writer: a Packer keeps a buffer, so writers in
            # different threads must not share one.
            self._packer = msgpack.Packer(use_bin_type=True)
            self.encode = self._encode_msgpack
        else:
            raise ConfigError(f"trace format {fmt!r} is not one of 'ndjson', 'msgpack'")
        self.fmt: TraceFormat = fmt
        self._stream = stream
        self._closed = False

    def _encode_ndjson(self, record: Mapping[str, Any]) -> bytes:
        try:
            return (_JSON_ENCODE(record) + "\n").encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise TraceFormatError(f"cannot write {_event(record)} as JSON: {exc}") from None

    def _encode_msgpack(self, record: Mapping[str, Any]) -> bytes:
        try:
            data: bytes = self._packer.pack(record)
        except (TypeError, ValueError, OverflowError) as exc:
            raise TraceFormatError(f"cannot write {_event(record)} as msgpack: {exc}") from None
        return data

    def write(self, record: Mapping[str, Any]) -> None:
        """Encode and write one record."""
        self.write_encoded(self.encode(record))

    def write_encoded(self, data: bytes) -> None:
        """Write the bytes `encode` made for one record."""
        if self._closed:
            raise InternalError("a trace record was written after the writer was closed")
        self._stream.write(data)

    def close(self) -> None:
        """Flush the stream; later writes are a bug."""
        if not self._closed:
            self._closed = True
            self._stream.flush()


def _event(record: Mapping[str, Any]) -> str:
    return f"the {record.get('event', 'trace')!r} record"


def write_trace(
    trace: Trace, path: str | os.PathLike[str], fmt: TraceFormat = "ndjson", *, what: str = "trace"
) -> None:
    """Write a whole `Trace` (header, if any, then its steps) as a trace file.

    A step keeps the fields it has: a partial line stays partial, so what
    `read_trace` reads back is the same trace. The file is written by
    `tracing.outputs`' rule; `what` names it in an error.
    """
    with open_output(path, what) as stream:
        writer = TraceWriter(stream, fmt)
        if trace.header is not None:
            header = {"event": HEADER_EVENT, **{k: thaw(v) for k, v in trace.header.items()}}
            if "constants" in trace.header:
                header["constants"] = to_json(trace.header["constants"], "constants")
            writer.write(header)
        for step in trace.steps:
            record: dict[str, Any] = {"event": STEP_EVENT}
            for name in ("seq", "ts", "node"):
                if getattr(step, name) is not None:
                    record[name] = getattr(step, name)
            if step.action is not None:
                record["action"] = step.action
            if step.params:
                record["params"] = to_json(step.params, "params")
            if step.timer is not None:
                record["timer"] = step.timer
            if step.faults:
                record["faults"] = list(step.faults)
            record["vars"] = to_json(step.vars, "vars")
            writer.write(record)
        if trace.end is not None:
            writer.write({
                "event": END_EVENT, "outcome": trace.end.outcome, "failure": trace.end.failure,
                "failing_step": trace.end.failing_step,
            })
        writer.close()


def thaw(value: Any) -> Any:
    """A header value (frozen records and tuples) as plain JSON data."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value
