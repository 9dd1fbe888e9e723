"""A batch's trace values in the binary form TLC reads at run time.

Theory of operation. SANY's parse of the text that spelled a batch's values
(`trace_module.trace_data`) was most of what checking a trace cost, growing
faster than the text. Instead the values go to a file in this format, and
tlasim's TLC override `TlasimIO!TlasimLoad(name)` (the Java in
`tracing/tla/java`) reads them into the values TLC builds from that text: a
record for a function whose keys are all field names, a function for other
keys, `<<>>` for every empty function, a tuple, a set. SANY parses only a
fixed module that names the file.

The format, all integers big-endian: the magic bytes `TLSM`, a version byte,
then one value, a tag byte and its payload: `F`/`T` (FALSE, TRUE), `I` (an
int32), `S` (a u32 byte count and UTF-8), `Q` tuple and `E` set (a u32 count
and the elements), `R` record (a u32 count, then each field's name as an `S`
payload and its value), `M` function (a u32 count, then key and value per
pair), `D` (the value that follows, which later `P` tags name by its number
in order of appearance) and `P` (a u32 number). The file's value is the
tuple `TraceLogs`, and each of its elements (one trace) numbers its `D`s
from 0: a trace's bytes stand alone, so a campaign's workers encode their
own traces and the batch file is their concatenation.

A trace is encoded either from a decoded trace file (`trace_blob`) or while
the simulator runs (`TraceBlobWriter`, which takes the simulator's own
values and needs no file at all). Both follow `tracing.values.freeze`: a
mapping whose keys are all strings is a record, a list a tuple, a set a set.
Both refuse, as `trace_module.check_writable` does, what the generated
modules cannot hold, so a value that would get no verdict from a file gets
none here either. A deeply immutable value met again (a message in flight,
a variable the step left alone) is written once and named after.
"""

from __future__ import annotations

import marshal
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from protocols.errors import TraceFormatError
from tracing.codec import Trace
from tracing.tla.literal import is_field_name, to_tla
from tracing.values import MAX_DEPTH, FnMap, Record

__all__ = [
    "MAGIC",
    "VERSION",
    "PreparedTrace",
    "TraceBlobWriter",
    "trace_blob",
    "trace_logs",
    "trace_logs_of",
]

MAGIC = b"TLSM"
VERSION = 2
_INT32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
# Containers whose contents can never change: only these are shared by
# identity, since a dict or a list may hold other values by the next step. A
# hashable mapping (protocols' FrozenRecord, say) promises the same: its hash
# would change with it.
_IMMUTABLE: dict[type, bool] = {tuple: True, frozenset: True, Record: True, FnMap: True}


def _immutable(t: type) -> bool:
    known = _IMMUTABLE.get(t)
    if known is None:
        known = _IMMUTABLE[t] = issubclass(t, Mapping) and t.__hash__ is not None
    return known


@dataclass(frozen=True, slots=True)
class PreparedTrace:
    """A trace encoded where it was made, ready for TLC (picklable): what a
    campaign's worker hands `tracing.validation.tlc_batch.CheckSession`.

    `first_action`, `later_actions` (those of every line after the first) and
    `variables` (every variable any line logged) let the session make the
    checks the validator makes before TLC.
    """

    spec: str
    constants: Mapping[str, Any]
    blob: bytes
    steps: int
    first_action: str
    later_actions: frozenset[str]
    variables: frozenset[str]
    full_logs: bool


class _Refused(Exception):
    """A value the modules cannot hold; its path is built as the walk unwinds."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []

    def error(self, where: str) -> TraceFormatError:
        return TraceFormatError(f"{where}{''.join(reversed(self.path))}: {self.message}")


class TraceBlobWriter:
    """Encodes one trace, a step at a time, into its element of `TraceLogs`.

    `persistent`: the caller promises that no container in a step's `vars`
    is ever changed afterwards (the simulator's spec variables are such
    snapshots, see `Simulation.spec_vars`), so any container met again, the
    very object, is the same value and is named rather than written again:
    a variable a step left alone costs a reference. Without it, and always
    for params, only containers that cannot change (tuples, frozensets,
    hashable mappings, holding only such) are.
    """

    def __init__(self, *, persistent: bool = False) -> None:
        self._out = bytearray()
        self._steps = 0
        self._persistent = persistent
        self._trusting = False  # writing vars, under `persistent`
        # Per variable: its last value's marshal bytes and the number of its D.
        self._last: dict[str, tuple[bytes, int]] = {}
        # Containers by identity (each kept alive, so its id stays its own),
        # strings by value: each the number of its `D`.
        self._shared: dict[int, tuple[Any, int]] = {}
        self._strings: dict[str, int] = {}
        self._checked: set[str] = set()
        self._fields: dict[str, bytes | None] = {}  # a key's bytes, if a field name
        self._defined = 0

    @property
    def steps(self) -> int:
        return self._steps

    def step(self, action: str, params: Any, vars: Mapping[str, Any]) -> None:
        """Add a line: `action` ("" when the line names none), its params and
        the variables it logged. Raises TraceFormatError, naming the part,
        for a value the generated modules cannot hold."""
        out = self._out
        mark = len(out)
        # The fields in sorted order, as a normalized TLC record has them.
        out += b"R\x00\x00\x00\x03\x00\x00\x00\x06action"
        where = "action"
        try:
            self._value(action, 0)
            out += b"\x00\x00\x00\x06params"
            where = "params"
            self._value(params, 0)
            out += b"\x00\x00\x00\x04vars"
            where = "vars"
            self._trusting = self._persistent
            self._variables(vars)
        except _Refused as exc:
            del out[mark:]
            raise exc.error(where) from None
        finally:
            self._trusting = False
        self._steps += 1

    def _variables(self, vars: Mapping[str, Any]) -> None:
        """The line's variables, as a record. A variable whose value is the
        one the line before logged is named, not written: marshal's bytes
        (format 2: no references, so they depend on the values alone) tell,
        for the values it takes, since they keep the types apart (TRUE from
        1, a set from a tuple) that Python's == would merge."""
        if not vars or not all(type(k) is str and self._field(k) for k in vars):
            self._function(vars, 0)
            return
        out = self._out
        out += b"R"
        out += _U32.pack(len(vars))
        last = self._last
        for name, value in vars.items():
            out += cast(bytes, self._field(name))
            try:
                key = marshal.dumps(value, 2)
            except ValueError:  # a type marshal does not take: walk it
                key = None
            seen = last.get(name)
            if key is not None and seen is not None and seen[0] == key:
                out += b"P"
                out += _U32.pack(seen[1])
                continue
            try:
                if key is not None:
                    # Defined here, so the next line can name it.
                    out += b"D"
                    last[name] = (key, self._defined)
                    self._defined += 1
                self._value(value, 0)
            except _Refused as exc:
                exc.path.append(f".{name}")
                raise

    def blob(self) -> bytes:
        """The trace's bytes: the tuple of its lines."""
        return b"Q" + _U32.pack(self._steps) + bytes(self._out)

    def _value(self, v: Any, depth: int) -> bool:
        """Write v; return whether it may be named when met again."""
        t = type(v)
        out = self._out
        if t is str:
            number = self._strings.get(v)
            if number is not None:
                out += b"P"
                out += _U32.pack(number)
            else:
                self._string(v)
            return True
        if t is bool:
            out += b"T" if v else b"F"
            return True
        if t is int:
            if not _INT_MIN <= v <= _INT_MAX:
                raise _Refused(f"the integer {v} does not fit TLC's 32-bit integers")
            out += b"I"
            out += _INT32.pack(v)
            return True
        hit = self._shared.get(id(v))
        if hit is not None and hit[0] is v:
            out += b"P"
            out += _U32.pack(hit[1])
            return True
        if depth >= MAX_DEPTH:
            raise _Refused(
                f"nested more than {MAX_DEPTH} levels deep (sequences, sets and "
                "functions within each other)"
            )
        if isinstance(v, str):
            return self._value(str.__str__(v), depth)
        if isinstance(v, int) and not isinstance(v, bool):
            return self._value(int(v), depth)
        if not v:
            self._compound(v, t, depth + 1)
            return True
        # Defined before its parts, as the reader numbers it; named when met
        # again only if it may be.
        out += b"D"
        number = self._defined
        self._defined += 1
        if self._compound(v, t, depth + 1) or self._trusting:
            self._shared[id(v)] = (v, number)
            return True
        return False

    def _string(self, v: str) -> None:
        if v not in self._checked:
            try:
                to_tla(v)
            except TraceFormatError as exc:
                raise _Refused(str(exc).removeprefix("value: ")) from None
            self._checked.add(v)
        data = v.encode("utf-8")
        out = self._out
        if len(data) > 8:
            out += b"D"
            self._strings[v] = self._defined
            self._defined += 1
        out += b"S"
        out += _U32.pack(len(data))
        out += data

    def _compound(self, v: Any, t: type, depth: int) -> bool:
        out = self._out
        immutable = True
        if t is tuple or t is list:
            out += b"Q"
            out += _U32.pack(len(v))
            for i, x in enumerate(v):
                immutable &= self._at(x, depth, "[%d]", i)
            return immutable and t is tuple
        if t is frozenset or t is set:
            out += b"E"
            out += _U32.pack(len(v))
            for x in v:
                immutable &= self._at(x, depth, "{element}", None)
            return immutable and t is frozenset
        if isinstance(v, Mapping):
            return self._function(v, depth) and _immutable(t)
        raise _Refused(f"a {t.__name__} is not a TLA+ value")

    def _field(self, key: str) -> bytes | None:
        """The record field's bytes (length and name), or None if `key` is no field name."""
        known = self._fields.get(key, _UNKNOWN)
        if known is _UNKNOWN:
            data = key.encode("utf-8")
            known = self._fields[key] = (
                _U32.pack(len(data)) + data if is_field_name(key) else None
            )
        return known  # type: ignore[return-value]

    def _function(self, m: Mapping[Any, Any], depth: int) -> bool:
        out = self._out
        if not m:
            # TLC equates <<>> with every function on the empty domain.
            out += b"Q\x00\x00\x00\x00"
            return True
        immutable = True
        # As freeze has it: string keys (str subclasses too) make a record,
        # written as one when every key is a field name.
        fields = [self._field(k) if type(k) is str else None for k in m]
        if None in fields and all(isinstance(k, str) for k in m):
            fields = [self._field(str.__str__(k)) for k in m]
        if None not in fields:
            out += b"R"
            out += _U32.pack(len(m))
            for name, x in zip(cast("list[bytes]", fields), m.values(), strict=True):
                out += name
                immutable &= self._at(x, depth, ".%s", name[4:])
            return immutable
        out += b"M"
        out += _U32.pack(len(m))
        for k, x in m.items():
            immutable &= self._at(k, depth, "{key}", None)
            immutable &= self._at(x, depth, "[%.60r]", k)
        return immutable

    def _at(self, x: Any, depth: int, segment: str, arg: Any) -> bool:
        """`_value(x)`, naming `segment % arg` (or `segment`) on the path of a refusal;
        formatted only then, since most values are written without one."""
        try:
            return self._value(x, depth)
        except _Refused as exc:
            part = arg.decode() if isinstance(arg, bytes) else arg
            exc.path.append(segment if arg is None else segment % (part,))
            raise


_UNKNOWN = object()


def trace_blob(trace: Trace) -> bytes:
    """A decoded trace's element of `TraceLogs`: per step line, the record
    `[action |-> .., params |-> .., vars |-> ..]` that `trace_module`
    describes, `vars` holding only the variables the line logged."""
    writer = TraceBlobWriter()
    for step in trace.steps:
        try:
            writer.step(step.action or "", step.params, step.vars)
        except TraceFormatError as exc:
            raise TraceFormatError(f"{trace.path}:{step.line}: {exc}") from None
    return writer.blob()


def trace_logs_of(blobs: Sequence[bytes]) -> bytes:
    """The file TLC reads for a batch: `TraceLogs`, the tuple of its traces."""
    return b"".join([MAGIC, bytes([VERSION]), b"Q", _U32.pack(len(blobs)), *blobs])


def trace_logs(traces: Sequence[Trace]) -> bytes:
    """The file TLC reads for a batch of decoded traces."""
    return trace_logs_of([trace_blob(t) for t in traces])
