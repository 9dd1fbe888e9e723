"""TLA+ values in Python: the frozen forms and the tagged JSON form.

Theory of operation. A TLA+ value is a string, an integer, a boolean, a
sequence, a set or a function (records are functions whose domain is
strings). In Python they are `str`, `int`, `bool`, `tuple`, `frozenset`,
`Record` and `FnMap`: all immutable and hashable, so sets of records and bags
keyed by messages work. `freeze` turns the plain containers a refinement
mapping builds (dict, list, set) into these forms.

JSON cannot tell a set from a sequence, so `to_json` tags what JSON leaves
ambiguous (docs/trace-format.md). Every value has exactly one encoding: set
elements and function keys are ordered by their canonical JSON text, compared
as Python strings (code-point order, which is also UTF-8 byte order), and
records list their keys sorted. Nothing here iterates a hash-ordered
container without sorting, so `PYTHONHASHSEED` never reaches the output.

`tracing.tla.literal` writes these values as TLA+ text.

Known limits, inherited from Python: `1 == True`, so a set or a function
domain cannot hold both (TLC refuses to compare them anyway), and the empty
function, the empty record and `<<>>` are one value in TLA+ but `Record()`,
`FnMap()` and `()` in Python.
"""

from __future__ import annotations

import json
import re
from collections.abc import ItemsView, Iterable, Iterator, Mapping
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NoReturn, Self, TypeVar

from protocols.errors import InternalError, TraceFormatError

__all__ = ["FnMap", "Record", "canonical_json", "freeze", "from_json", "to_json"]

# A JSON object with exactly one key that starts with "#" is a tag.
_SET, _MAP, _TUP = "#set", "#map", "#tup"
_TAGS = (_SET, _MAP, _TUP)

_K = TypeVar("_K")

# One encoder serves both sorting and canonical text: to_json already emits
# record keys sorted, so sort_keys would only repeat the work.
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False
)
if c_make_encoder is None:  # pragma: no cover - only interpreters without _json
    _ENCODE = _ENCODER.encode
else:
    # Sorting calls this once per set element; the C encoder made once skips
    # JSONEncoder.encode's per-call setup, which costs more than the encoding.
    _C_ENCODE = c_make_encoder(
        None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, False
    )

    def _ENCODE(obj: Any) -> str:  # type: ignore[misc]  # one of two definitions
        return "".join(_C_ENCODE(obj, 0))


_LEAVES = frozenset({str, int, bool})

# Strings free of these characters sort in the same order as their JSON
# texts: nothing is escaped and every character sorts after the closing quote.
_NOT_PLAIN = re.compile(r"[\x00-\x22\\]")


class _Unsupported(Exception):
    """A value this module cannot represent; `path` is filled in innermost first."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []


def _fail(where: str, exc: _Unsupported) -> NoReturn:
    path = where + "".join(reversed(exc.path))
    raise TraceFormatError(f"{path}: {exc.message}") from None


def _key_segment(key: Any) -> str:
    return f"[{key!r}]"


class _Function(Mapping[_K, Any]):
    """What `Record` and `FnMap` share: an immutable dict in a fixed key order."""

    __slots__ = ("_d", "_hash")
    _d: dict[_K, Any]
    _hash: int | None

    @classmethod
    def _trusted(cls, d: dict[_K, Any]) -> Self:
        """Wrap `d`, whose keys are in canonical order and whose items are frozen."""
        f = cls.__new__(cls)
        f._d = d
        f._hash = None
        return f

    def __getitem__(self, key: _K) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def items(self) -> ItemsView[_K, Any]:
        return self._d.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Function):
            return self._d == other._d
        if isinstance(other, Mapping):
            return self._d == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._d.items()))
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        # The cached hash depends on PYTHONHASHSEED, so it must not travel to
        # another process inside a pickle.
        return (type(self)._trusted, (self._d,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._d!r})"


class Record(_Function[str]):
    """A TLA+ record, or any function whose domain is strings.

    Iterates in sorted key order. Equal to any Mapping with equal items, so
    `Record({"a": 1}) == {"a": 1}`; equal records and `FnMap`s hash alike.
    """

    __slots__ = ()

    def __init__(self, data: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /) -> None:
        items = data.items() if isinstance(data, Mapping) else data
        frozen: dict[str, Any] = {}
        for key, value in items:
            if type(key) is not str:
                if not isinstance(key, str):
                    raise TraceFormatError(
                        f"a Record key must be a str, got {type(key).__name__} {key!r}"
                    )
                key = str.__str__(key)
            if key in frozen:
                raise TraceFormatError(f"Record key {key!r} given twice")
            frozen[key] = freeze(value, f"Record[{key!r}]")
        self._d = dict(sorted(frozen.items()))
        self._hash = None


class FnMap(_Function[Any]):
    """A TLA+ function whose domain is not all strings (a bag of messages, say).

    Iterates in canonical key order. Equality and hashing match `Record`.
    """

    __slots__ = ()

    def __init__(self, data: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = (), /) -> None:
        items = data.items() if isinstance(data, Mapping) else data
        frozen: dict[Any, Any] = {}
        for key, value in items:
            fkey = freeze(key, "FnMap key")
            if fkey in frozen:
                raise TraceFormatError(f"FnMap key {fkey!r} given twice")
            frozen[fkey] = freeze(value, f"FnMap[{fkey!r}]")
        self._d = {k: frozen[k] for k in _canonical_order(frozen)}
        self._hash = None


_ALLOWED = "str, int, bool, tuple/list, frozenset/set, and mappings (dict, Record, FnMap)"


def _unsupported(value: Any) -> _Unsupported:
    return _Unsupported(
        f"a {type(value).__name__} ({value!r:.60}) is not a TLA+ value; allowed: {_ALLOWED}"
    )


# --- freeze ---------------------------------------------------------------


def freeze(value: Any, where: str = "value") -> Any:
    """Return the hashable canonical form of a value built from plain containers.

    Raises TraceFormatError naming the path (starting at `where`) and the type
    of the first part that is not a TLA+ value (float, None, bytes, ...).
    """
    try:
        return _freeze(value)
    except _Unsupported as exc:
        _fail(where, exc)


def _freeze(v: Any) -> Any:
    t = type(v)
    if t is str or t is int or t is bool or t is Record or t is FnMap:
        return v
    if t is tuple or t is list:
        out = []
        for i, x in enumerate(v):
            try:
                out.append(_freeze(x))
            except _Unsupported as exc:
                exc.path.append(f"[{i}]")
                raise
        return tuple(out)
    if t is frozenset or t is set:
        elems = []
        for x in v:
            try:
                elems.append(_freeze(x))
            except _Unsupported as exc:
                exc.path.append("{element}")
                raise
        return frozenset(elems)
    if isinstance(v, Mapping):
        pairs: dict[Any, Any] = {}
        for k, x in v.items():
            try:
                fk = _freeze(k)
            except _Unsupported as exc:
                exc.path.append("{key}")
                raise
            try:
                pairs[fk] = _freeze(x)
            except _Unsupported as exc:
                exc.path.append(_key_segment(k))
                raise
        if all(type(k) is str for k in pairs):
            return Record._trusted(dict(sorted(pairs.items())))
        return FnMap(pairs)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return int(v)
    raise _unsupported(v)


# --- to_json ----------------------------------------------------------------


def to_json(value: Any, where: str = "value") -> Any:
    """Return the tagged JSON form of a value (frozen or plain containers).

    Raises TraceFormatError naming the path (starting at `where`) of the first
    unsupported part.
    """
    try:
        return _enc(value)
    except _Unsupported as exc:
        freeze(value, where)  # walks again, slowly, to name the path
        raise InternalError(f"to_json refused a value that freeze accepts: {exc}") from exc


def _enc(v: Any) -> Any:
    t = type(v)
    if t in _LEAVES:
        return v
    if t is Record:
        d = v._d
        if len(d) == 1:
            return _enc_str_keyed(d)
        # Leaves are tested inline: most values are, and a call costs more.
        return {k: x if type(x) in _LEAVES else _enc(x) for k, x in d.items()}
    if t is dict:
        return _enc_dict(v)
    if t is frozenset or t is set:
        return {_SET: _sorted_json(v)}
    if t is tuple or t is list:
        return [x if type(x) in _LEAVES else _enc(x) for x in v]
    if t is FnMap:
        return _enc_dict(v._d)
    if isinstance(v, Mapping):
        return _enc_dict(dict(v.items()))
    if isinstance(v, str | int):
        return _freeze(v)
    raise _unsupported(v)


def _enc_dict(d: dict[Any, Any]) -> Any:
    for k in d:
        if type(k) is not str:
            if any(isinstance(k, str) and type(k) is not str for k in d):
                # str subclasses (StrEnum, say) must become the plain strings
                # that decide between a record and a function.
                return _enc(_freeze(d))
            keys = list(d)
            fast = _fast_sort_keys(keys)
            if fast is None:
                pairs = [[_enc(k), _enc(x)] for k, x in d.items()]
                pairs.sort(key=lambda pair: _ENCODE(pair[0]))
                return {_MAP: pairs}
            order = sorted(range(len(keys)), key=fast.__getitem__)
            return {_MAP: [[_enc(keys[i]), _enc(d[keys[i]])] for i in order]}
    return _enc_str_keyed(d)


def _enc_str_keyed(d: dict[str, Any]) -> Any:
    if len(d) == 1:
        ((k, x),) = d.items()
        if k.startswith("#"):
            # {"#x": ...} would read back as a tag, so spell it as a function.
            return {_MAP: [[k, _enc(x)]]}
        return {k: _enc(x)}
    return {k: x if type(x := d[k]) in _LEAVES else _enc(x) for k in sorted(d)}


def _sorted_json(elements: Iterable[Any]) -> list[Any]:
    """Encode set elements and put them in canonical order."""
    items = list(elements)
    if len(items) < 2:
        return [_enc(x) for x in items]
    fast = _fast_sort_keys(items)
    if fast is None:
        enc = [_enc(x) for x in items]
        enc.sort(key=_ENCODE)
        return enc
    if fast is items:
        items.sort()
        return items
    order = sorted(range(len(items)), key=fast.__getitem__)
    return [_enc(items[i]) for i in order]


def _fast_sort_keys(items: list[Any]) -> list[Any] | None:
    """Sort keys that order `items` as their canonical texts do, for the shapes
    states are made of, or None when only the texts themselves will do.

    Plain strings (see _NOT_PLAIN) sort as their texts. Records that share
    their keys and hold only plain strings have texts that differ only inside
    the values, where a shorter value meets the closing quote, which sorts
    before any plain character: so their texts sort as their value tuples.
    Integers sort as their decimal text, not numerically.
    """
    if not items:
        return items
    first = type(items[0])
    try:
        if first is str:
            # join raises TypeError unless every item is a str.
            return items if _NOT_PLAIN.search("".join(items)) is None else None
        if first is Record:
            fields = items[0]._d.keys()
            rows = []
            for x in items:
                if type(x) is not Record or x._d.keys() != fields:
                    return None
                rows.append(tuple(x._d.values()))
            flat = "".join([v for row in rows for v in row])
            return rows if _NOT_PLAIN.search(flat) is None else None
    except TypeError:
        return None
    if first is int and all(type(x) is int for x in items):
        return [str(x) for x in items]
    return None


def _canonical_order(values: Iterable[Any]) -> list[Any]:
    """The values in the order of their canonical JSON texts."""
    items = list(values)
    fast = _fast_sort_keys(items)
    if fast is None:
        return sorted(items, key=lambda x: _ENCODE(_enc(x)))
    return [items[i] for i in sorted(range(len(items)), key=fast.__getitem__)]


def canonical_json(value: Any) -> str:
    """The one canonical JSON text of a value (sorted keys, no spaces)."""
    return json.dumps(to_json(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- from_json --------------------------------------------------------------


def from_json(obj: Any, where: str = "value") -> Any:
    """Decode the tagged JSON form (also what msgpack decodes to) into frozen values.

    Raises TraceFormatError naming the path (starting at `where`) of a float,
    null, bytes or bad tag.
    """
    try:
        return _dec(obj)
    except _Unsupported as exc:
        _fail(where, exc)


def _dec(o: Any) -> Any:
    t = type(o)
    if t is str or t is int or t is bool:
        return o
    if t is list:
        return tuple(_dec_items(o))
    if t is dict:
        if len(o) == 1:
            ((k, x),) = o.items()
            if type(k) is str and k.startswith("#"):
                if k not in _TAGS:
                    raise _Unsupported(f"unknown tag {k!r} (known: {', '.join(_TAGS)})")
                try:
                    return _dec_tagged(k, x)
                except _Unsupported as exc:
                    exc.path.append(_key_segment(k))
                    raise
        out: dict[str, Any] = {}
        for k in sorted(o, key=_str_key):
            try:
                out[k] = _dec(o[k])
            except _Unsupported as exc:
                exc.path.append(_key_segment(k))
                raise
        return Record._trusted(out)
    if t is float:
        raise _Unsupported(f"{o!r} is a float; TLA+ values hold only integers")
    if o is None:
        raise _Unsupported("null is not a TLA+ value")
    raise _unsupported(o)


def _str_key(k: Any) -> str:
    if type(k) is not str:
        raise _Unsupported(f"object key {k!r} is not a string; use {{{_MAP!r}: ...}}")
    return str(k)


def _dec_items(xs: list[Any]) -> list[Any]:
    out = []
    for i, x in enumerate(xs):
        try:
            out.append(_dec(x))
        except _Unsupported as exc:
            exc.path.append(f"[{i}]")
            raise
    return out


def _check_domain(keys: list[Any]) -> None:
    # Python equates 1 with True and 0 with False, so a set holding both
    # would silently lose one.
    if len({(type(k), k) for k in keys}) != len(set(keys)):
        raise _Unsupported("holds 1 and TRUE (or 0 and FALSE), which Python cannot tell apart")


def _dec_tagged(tag: str, x: Any) -> Any:
    if type(x) is not list:
        raise _Unsupported(f"{tag!r} must hold a list, not a {type(x).__name__}")
    if tag == _TUP:
        return tuple(_dec_items(x))
    if tag == _SET:
        elems = _dec_items(x)
        _check_domain(elems)
        return frozenset(elems)
    pairs: dict[Any, Any] = {}
    for i, pair in enumerate(x):
        if type(pair) is not list or len(pair) != 2:
            raise _Unsupported(f"entry {i} of {_MAP!r} is not a [key, value] pair: {pair!r:.60}")
        key, value = _dec_items(pair)
        if key in pairs:
            _check_domain([key, *pairs])
            raise _Unsupported(f"{_MAP!r} lists the key {key!r} twice")
        pairs[key] = value
    if all(type(k) is str for k in pairs):
        return Record._trusted(dict(sorted(pairs.items())))
    return FnMap(pairs)
