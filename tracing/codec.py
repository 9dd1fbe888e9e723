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
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal

import msgpack

from protocols.errors import ConfigError, InternalError, TraceFormatError
from tracing.values import Record, from_json, to_json

__all__ = [
    "HEADER_EVENT",
    "SCHEMA_VERSION",
    "STEP_EVENT",
    "Trace",
    "TraceFormat",
    "TraceStep",
    "TraceWriter",
    "read_trace",
    "thaw",
    "write_trace",
]

TraceFormat = Literal["ndjson", "msgpack"]

SCHEMA_VERSION = 1
HEADER_EVENT = "tla_trace_header"
STEP_EVENT = "tla_trace"


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


@dataclass(frozen=True, slots=True)
class Trace:
    """A whole trace. `header` is None for logs that carry none (another system's)."""

    path: str
    header: Record | None
    steps: tuple[TraceStep, ...]


# --- reading ----------------------------------------------------------------


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read an ndjson or msgpack trace, telling them apart by the first byte.

    Raises TraceFormatError naming the file, the line and the problem.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
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
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise TraceFormatError(f"{name}:{number}: bad JSON: {exc}") from None
        yield number, f"{name}:{number}", obj


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
    except ValueError as exc:  # msgpack's FormatError, StackError, ExtraData
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

    def add(self, number: int, where: str, obj: Any) -> None:
        if type(obj) is not dict:
            raise TraceFormatError(f"{where}: a trace record must be an object, not {obj!r:.60}")
        event = obj.get("event", obj.get("msg"))
        if event == HEADER_EVENT or HEADER_EVENT in obj:
            self._add_header(where, obj)
        elif "entry" in obj:
            self._add_step(number, where, _unwrap_entry(where, obj["entry"]))
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
            inner = _unwrap_entry(where, inner)
        self.header = _decode_header(where, inner if type(inner) is dict else obj)
        self.header_where = where

    def _add_step(self, number: int, where: str, obj: dict[str, Any]) -> None:
        # A partial log may leave out the action (the spec picks one) or some
        # variables (the spec picks their values), but not both entirely.
        action = obj.get("action")
        if action is not None and (type(action) is not str or not action):
            raise TraceFormatError(
                f"{where}: the action must be a non-empty string: {action!r:.60}"
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
            raise TraceFormatError(f"{where}: vars must map names to values, not {raw!r:.60}")
        out: dict[str, Any] = {}
        for name in raw:
            if type(name) is not str:
                raise TraceFormatError(f"{where}: vars key {name!r:.60} is not a string")
        for name in sorted(raw):
            value = raw[name]
            text = repr(value)
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
        return Trace(self.name, self.header, tuple(self.steps))


def _unwrap_entry(where: str, entry: Any) -> dict[str, Any]:
    if isinstance(entry, str):
        try:
            entry = json.loads(entry)
        except ValueError as exc:
            raise TraceFormatError(f"{where}: the entry string is not JSON: {exc}") from None
    if type(entry) is not dict:
        raise TraceFormatError(f"{where}: the entry must be an object, not {entry!r:.60}")
    return entry


def _optional(where: str, obj: dict[str, Any], field: str, kind: type) -> Any:
    value = obj.get(field)
    if value is not None and type(value) is not kind:
        raise TraceFormatError(f"{where}: {field} must be {kind.__name__}, not {value!r:.60}")
    return value


def _record(where: str, obj: dict[str, Any], field: str) -> Record:
    raw = obj.get(field, {})
    if type(raw) is not dict:
        raise TraceFormatError(f"{where}: {field} must be an object, not {raw!r:.60}")
    try:
        value = from_json(raw, field)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{where}: {exc}") from None
    if type(value) is not Record:
        raise TraceFormatError(f"{where}: {field} must map names to values, not {value!r:.60}")
    return value


def _decode_header(where: str, obj: dict[str, Any]) -> Record:
    schema = obj.get("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        raise TraceFormatError(
            f"{where}: header schema {schema!r} is not supported (this tlasim reads "
            f"{SCHEMA_VERSION})"
        )
    for name in ("protocol", "spec", "tool_version", "source_revision", "reproduce"):
        if name in obj and type(obj[name]) is not str:
            raise TraceFormatError(f"{where}: header {name} must be a string: {obj[name]!r:.60}")
    variables = obj.get("variables", {})
    if type(variables) is not dict or not all(type(t) is str for t in variables.values()):
        raise TraceFormatError(
            f"{where}: header variables must map each variable to its TLA+ type: {variables!r:.60}"
        )
    fields = {k: _plain(v) for k, v in obj.items()}
    if "constants" in obj:
        fields["constants"] = _record(where, obj, "constants")
    return Record._trusted(dict(sorted(fields.items())))


def _plain(obj: Any) -> Any:
    """Freeze untagged JSON (options, say), keeping the floats and nulls
    that options may hold and that no TLA+ value may."""
    if type(obj) is dict:
        return Record._trusted({k: _plain(obj[k]) for k in sorted(obj)})
    if type(obj) is list:
        return tuple(_plain(x) for x in obj)
    return obj


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


def write_trace(trace: Trace, path: str | os.PathLike[str], fmt: TraceFormat = "ndjson") -> None:
    """Write a whole `Trace` (header, if any, then its steps) as a trace file.

    A step keeps the fields it has: a partial line stays partial, so what
    `read_trace` reads back is the same trace.
    """
    with open(path, "wb") as stream:
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
            record["vars"] = to_json(step.vars, "vars")
            writer.write(record)
        writer.close()


def thaw(value: Any) -> Any:
    """A header value (frozen records and tuples) as plain JSON data."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value
