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
own traces and the batch file is their concatenation. An element may also
be a `K` (a u32 byte count and a pickle of the trace's lines), which a
recorded run's trace is: `tracing.tla.pickled` says why and how.

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

import itertools
import marshal
import pickle
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import is_not, itemgetter
from typing import Any

from tlasim.protocols.errors import TraceFormatError
from tlasim.tracing.codec import Trace
from tlasim.tracing.sharing import same_value
from tlasim.tracing.tla.literal import is_field_name, to_tla
from tlasim.tracing.values import MAX_DEPTH, FnMap, Record

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
VERSION = 3
_INT32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
# How the writer takes a container of each type, and whether its contents
# can never change: only such containers are shared by identity, since a
# dict or a list may hold other values by the next step. A hashable mapping
# (protocols' FrozenRecord, say) promises the same: its hash would change
# with it. Learned once per type; other types are no TLA+ values.
_SEQUENCE, _SET, _MAPPING, _TEXT, _INTEGER, _OTHER = (
    "sequence", "set", "mapping", "text", "integer", "other"
)
_KINDS: dict[type, tuple[str, bool]] = {
    tuple: (_SEQUENCE, True),
    list: (_SEQUENCE, False),
    frozenset: (_SET, True),
    set: (_SET, False),
    dict: (_MAPPING, False),
    Record: (_MAPPING, True),
    FnMap: (_MAPPING, True),
}


def _kind(t: type) -> tuple[str, bool]:
    """A type not in `_KINDS` yet: str and int subclasses (StrEnum, say)
    are written as the plain values, a mapping type as a function."""
    if issubclass(t, str):
        known = (_TEXT, True)
    elif issubclass(t, int) and not issubclass(t, bool):
        known = (_INTEGER, True)
    elif issubclass(t, Mapping):
        known = (_MAPPING, t.__hash__ is not None)
    else:
        known = (_OTHER, False)
    _KINDS[t] = known
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
        self.index = 0  # the refused part's position among its container's parts

    def error(self, where: str) -> TraceFormatError:
        return TraceFormatError(f"{where}{''.join(reversed(self.path))}: {self.message}")


class TraceBlobWriter:
    """Encodes one trace, a step at a time, into its element of `TraceLogs`.

    `persistent`: the caller promises that no container in a step's `vars`
    is ever changed afterwards (the simulator's spec variables are such
    snapshots, see `Simulation.spec_vars`), so any container met again, the
    very object, is the same value and is named rather than written again,
    and a variable whose value is exactly its last one (`same_value`, even
    when built afresh) costs a reference. Without it, and always for params,
    only containers that cannot change (tuples, frozensets, hashable
    mappings, holding only such) are named when met again.
    """

    def __init__(self, *, persistent: bool = False) -> None:
        self._out = bytearray()
        self._steps = 0
        self._persistent = persistent
        self._trusting = False  # writing vars, under `persistent`
        # Without `persistent`: per variable, its last value's pickle bytes
        # and the bytes that name its `D`.
        self._last: dict[str, tuple[Any, bytes]] = {}
        # Under `persistent`: the last line's variables (when they make a
        # record), their values, and the bytes that name each (its field and
        # the `P` of its value's `D`).
        self._names: tuple[str, ...] | None = None
        self._values: tuple[Any, ...] = ()
        self._named: list[bytes] = []
        # Containers by identity (each kept alive, so its id stays its own):
        # the bytes that name each (`P` and the number of its `D`).
        self._shared: dict[int, tuple[Any, bytes]] = {}
        # What a string or an integer met before is written as again: a
        # short string's `S` bytes, or the `P` naming a long one's `D`; an
        # integer's `I` bytes. Each was checked when first met.
        self._strings: dict[str, bytes] = {}
        self._ints: dict[int, bytes] = {}
        self._fields: dict[str, bytes | None] = {}  # a key's bytes, if a field name
        self._known_params: dict[bytes, bytes] = {}  # see `_params`
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
            self._params(params)
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

    def _params(self, params: Any) -> None:
        """A line's params: mostly a few strings and integers, the same few
        again and again (an action and the node it ran on). Such params are
        told by their marshal bytes, which keep the types apart (TRUE from
        1) and take plain values only, and written as they were the last
        time, when that defined nothing the bytes would define again. Params
        that hold a container are written as any value is."""
        if type(params) is not dict or not _PLAIN.issuperset(map(type, params.values())):
            self._value(params, 0)
            return
        key = marshal.dumps(params, 2)
        out = self._out
        known = self._known_params.get(key)
        if known is not None:
            out += known
            return
        mark = len(out)
        defined = self._defined
        self._value(params, 0)
        if self._defined == defined:
            self._known_params[key] = bytes(out[mark:])

    def _variables(self, vars: Mapping[str, Any]) -> None:
        """The line's variables, as a record. A variable whose value is the
        one the line before logged is named, not written. Under `persistent`
        `same_value` tells, comparing with that value itself. Otherwise
        pickle's bytes tell (the caller may change the value itself later):
        they keep the types apart (TRUE from 1, a set from a tuple) that
        Python's == would merge, and equal bytes are an equal value, while
        an equal value pickled otherwise (its parts shared differently, a set
        in another order) is merely written again. Not marshal's: it sorts
        each set by its elements' bytes, which takes time exponential in how
        deep sets nest, and a trace file may nest them 100 deep."""
        if self._persistent:
            # Every line logs the same variables, mostly.
            names = tuple(vars)
            if names != self._names:
                if not names or not all(type(k) is str and self._field(k) for k in names):
                    self._names = None
                    self._function(vars, 0)
                    return
                self._names = names
                self._values = (_UNKNOWN,) * len(names)
                self._named = [b""] * len(names)
            self._named_variables(names, tuple(vars.values()))
            return
        if not vars or not all(type(k) is str and self._field(k) for k in vars):
            self._function(vars, 0)
            return
        out = self._out
        out += b"R"
        out += _U32.pack(len(vars))
        last = self._last
        fields = self._fields
        for name, value in vars.items():
            field: Any = fields[name]
            out += field
            try:
                key = pickle.dumps(value, 5)
            except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
                key = None  # a value pickle does not take: walk it
            seen = last.get(name)
            if key is not None and seen is not None and seen[0] == key:
                out += seen[1]
                continue
            try:
                if key is not None:
                    # Defined here, so the next line can name it.
                    last[name] = (key, self._define())
                self._value(value, 0)
            except _Refused as exc:
                exc.path.append(f".{name}")
                raise

    def _named_variables(self, names: tuple[str, ...], values: tuple[Any, ...]) -> None:
        """The variables `names` (those of the line before) with `values`,
        under `persistent`. Each is named by the bytes in `_named` (its field
        and the reference to its value) while its value stays the same: the
        very object, found without a Python-level step per variable, or an
        equal one built afresh (`same_value`)."""
        out = self._out
        out += b"R"
        out += _U32.pack(len(names))
        named = self._named
        previous = self._values
        start = index = 0
        try:
            for index in itertools.compress(range(len(values)), map(is_not, previous, values)):
                out += b"".join(named[start:index])
                value = values[index]
                was = previous[index]
                if same_value(was, value):
                    out += named[index]
                else:
                    field: Any = self._fields[names[index]]
                    out += field
                    reference = self._define()
                    self._value(value, 0)
                    # `_named` names the value from now on. Kept by identity
                    # as well, every line's value of a variable that changes
                    # at every line (the bag of messages) would live as long
                    # as the trace, for the garbage collector to walk.
                    self._shared.pop(id(value), None)
                    named[index] = field + reference
                start = index + 1
        except _Refused as exc:
            exc.path.append(f".{names[index]}")
            raise
        out += b"".join(named[start:])
        # From now on the new objects: the next line's values are more likely
        # the very same objects as these than as the ones before.
        self._values = values

    def blob(self) -> bytes:
        """The trace's bytes: the tuple of its lines."""
        return b"Q" + _U32.pack(self._steps) + bytes(self._out)

    def _define(self) -> bytes:
        """Write a `D`; return the bytes that name the value written next."""
        self._out += b"D"
        name = b"P" + _U32.pack(self._defined)
        self._defined += 1
        return name

    def _value(self, v: Any, depth: int) -> bool:
        """Write v; return whether it may be named when met again."""
        t = type(v)
        out = self._out
        if t is str:
            known = self._strings.get(v)
            out += self._string(v) if known is None else known
            return True
        if t is bool:
            out += b"T" if v else b"F"
            return True
        if t is int:
            known = self._ints.get(v)
            out += self._int(v) if known is None else known
            return True
        hit = self._shared.get(id(v))
        if hit is not None and hit[0] is v:
            out += hit[1]
            return True
        return self._container(v, t, depth)

    def _container(self, v: Any, t: type, depth: int) -> bool:
        """`_value` for a value that is no plain atom and was not met before."""
        if depth >= MAX_DEPTH:
            raise _Refused(
                f"nested more than {MAX_DEPTH} levels deep (sequences, sets and "
                "functions within each other)"
            )
        kind, frozen = _KINDS.get(t) or _kind(t)
        if kind is _TEXT:
            return self._value(str.__str__(v), depth)
        if kind is _INTEGER:
            return self._value(int(v), depth)
        if kind is _OTHER:
            raise _Refused(f"a {t.__name__} is not a TLA+ value")
        out = self._out
        if kind is _MAPPING:
            keys = list(v)
            size = len(keys)
        else:
            size = len(v)
        if not size:
            # TLC equates <<>> with every function on the empty domain.
            out += b"E\x00\x00\x00\x00" if kind is _SET else b"Q\x00\x00\x00\x00"
            return True
        # Defined before its parts, as the reader numbers it, if it may be
        # named when met again: a container that may change (a dict, say)
        # never is, but among the variables under `persistent`.
        may_name = frozen or self._trusting
        if may_name:
            out += b"D"
            name = b"P" + _U32.pack(self._defined)
            self._defined += 1
        depth += 1
        if kind is _MAPPING:
            parts_frozen = self._mapping(v, keys, depth)
        elif kind is _SEQUENCE:
            out += b"Q"
            out += _U32.pack(size)
            try:
                parts_frozen = self._parts(v, depth)
            except _Refused as exc:
                exc.path.append(f"[{exc.index}]")
                raise
        else:
            out += b"E"
            out += _U32.pack(size)
            try:
                parts_frozen = self._parts(v, depth)
            except _Refused as exc:
                exc.path.append("{element}")
                raise
        if may_name and (parts_frozen or self._trusting):
            self._shared[id(v)] = (v, name)
            return True
        return False

    def _string(self, v: str) -> bytes:
        """A string met for the first time: check it, define it if it is long
        (so it is named when met again), and return its bytes."""
        try:
            to_tla(v)
        except TraceFormatError as exc:
            raise _Refused(str(exc).removeprefix("value: ")) from None
        data = v.encode("utf-8")
        written = b"S" + _U32.pack(len(data)) + data
        if len(data) > 8:
            self._strings[v] = self._define()
        else:
            self._strings[v] = written
        return written

    def _int(self, v: int) -> bytes:
        """An integer met for the first time: its bytes, if TLC holds it."""
        if not _INT_MIN <= v <= _INT_MAX:
            raise _Refused(f"the integer {v} does not fit TLC's 32-bit integers")
        written = self._ints[v] = b"I" + _INT32.pack(v)
        return written

    def _parts(
        self, parts: Iterable[Any], depth: int, fields: Iterable[bytes] | None = None
    ) -> bool:
        """Write each part, after its field's bytes for a record's values;
        return whether all may be named when met again. A refusal carries
        the position of the part it refused (`index`).

        The parts met most (strings, integers, booleans, containers met
        before) are written here rather than through `_value`, since a call
        per part costs more than writing most of them."""
        out = self._out
        strings = self._strings
        ints = self._ints
        shared = self._shared
        immutable = True
        index = 0
        try:
            # Without fields, an empty one per part (`repeat` never ends).
            prefixed = zip(itertools.repeat(b"") if fields is None else fields, parts, strict=False)
            for index, (field, x) in enumerate(prefixed):  # noqa: B007 (index names a refused part)
                out += field
                t = type(x)
                if t is str:
                    known = strings.get(x)
                    out += self._string(x) if known is None else known
                elif t is int:
                    known = ints.get(x)
                    out += self._int(x) if known is None else known
                elif t is bool:
                    out += b"T" if x else b"F"
                else:
                    hit = shared.get(id(x))
                    if hit is not None and hit[0] is x:
                        out += hit[1]
                    elif not self._container(x, t, depth):
                        immutable = False
        except _Refused as exc:
            exc.index = index
            raise
        return immutable

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
        keys = list(m)
        if not keys:
            # TLC equates <<>> with every function on the empty domain.
            self._out += b"Q\x00\x00\x00\x00"
            return True
        return self._mapping(m, keys, depth)

    def _mapping(self, m: Mapping[Any, Any], keys: list[Any], depth: int) -> bool:
        """A mapping with these (one or more) keys, as a record or a function."""
        out = self._out
        first = keys[0]
        # As freeze has it: string keys (str subclasses too) make a record,
        # written as one when every key is a field name. A key met before
        # has its bytes (or None) in `_fields` already.
        fields: list[Any] = [None]
        if type(first) is str:
            try:
                fields = list(map(self._fields.get, keys))
            except TypeError:  # an unhashable key (in a mapping that is no dict)
                fields = [None]
        if None in fields and isinstance(first, str):
            fields = [self._field(k) if type(k) is str else None for k in keys]
            if None in fields and all(isinstance(k, str) for k in keys):
                fields = [self._field(str.__str__(k)) for k in keys]
        if None in fields:
            out += b"M"
            out += _U32.pack(len(keys))
            try:
                # Each key, then its value.
                return self._parts(itertools.chain.from_iterable(m.items()), depth)
            except _Refused as exc:
                key = keys[exc.index // 2]
                exc.path.append("{key}" if exc.index % 2 == 0 else f"[{key!r:.60}]")
                raise
        out += b"R"
        out += _U32.pack(len(keys))
        try:
            # From `items`, which a Record gives faster than its values.
            return self._parts(map(_SECOND, m.items()), depth, fields)
        except _Refused as exc:
            exc.path.append(f".{fields[exc.index][4:].decode()}")
            raise


_UNKNOWN = object()
_PLAIN = frozenset({str, int, bool})
_SECOND = itemgetter(1)


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
