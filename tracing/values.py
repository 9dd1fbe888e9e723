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

Types stay TLA+'s. Python holds `1 == True` and `0 == False` (with equal
hashes), so a set or a function domain that held both, at any depth (two
records `[a |-> 0]` and `[a |-> FALSE]` in one set), would silently lose one
element, and an invalid trace could pass. TLC cannot compare an integer with
a boolean anyway, so `from_json` refuses such a set or domain, naming its
path, as it refuses one that mixes kinds TLC cannot compare (an integer and
a string, a set and a record). Only a container that came out smaller than
its input needs the type-strict look, so the common path stays fast. Python
equality between two values is still Python's: compare `canonical_json`
texts where `0` and `FALSE` must differ.

Limits (docs/trace-format.md, "Limits"): a value nests at most `MAX_DEPTH`
containers deep, and a decoded integer fits in 64 bits. Every reader and
writer here is recursive, so the depth limit is what keeps them far from
Python's recursion limit.

The empty function, the empty record and `<<>>` are one value in TLA+, so an
empty `Record` or `FnMap` equals `()` and hashes alike: a set or a function
domain holding two spellings of it holds one value, as in TLC.
"""

from __future__ import annotations

import json
import re
from collections.abc import ItemsView, Iterable, Iterator, Mapping
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NoReturn, Self, TypeVar

from tlasim.protocols.checked import VALUE_MAX_DEPTH
from tlasim.protocols.errors import InternalError, TraceFormatError, short_repr

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_DEPTH",
    "FnMap",
    "Record",
    "canonical_json",
    "freeze",
    "from_json",
    "short_repr",
    "strict_frozenset",
    "to_json",
]

# How many containers deep a value may nest (one limit for every reader).
MAX_DEPTH = VALUE_MAX_DEPTH
# A decoded integer fits in 64 bits, as msgpack's do (TLC itself checks 32).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

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
    raise TraceFormatError(f"{where}{_path_text(exc.path)}: {exc.message}") from None


def _path_text(innermost_first: list[str]) -> str:
    """The path to a part, its middle left out when it is long (a deep value's)."""
    segments = list(reversed(innermost_first))
    if len(segments) > 12:
        segments = [*segments[:6], f"...({len(segments) - 10} more)...", *segments[-4:]]
    return "".join(segments)


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
        if type(other) is tuple:
            # TLA+ has one empty function: <<>>, [x \in {} |-> ...] and the empty record.
            return not self._d and not other
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._d.items())) if self._d else hash(())
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
        f"a {type(value).__name__} ({short_repr(value)}) is not a TLA+ value; allowed: {_ALLOWED}"
    )


# --- freeze ---------------------------------------------------------------


def freeze(value: Any, where: str = "value") -> Any:
    """Return the hashable canonical form of a value built from plain containers.

    Raises TraceFormatError naming the path (starting at `where`) and the type
    of the first part that is not a TLA+ value (float, None, bytes, ...), or
    of a part nested deeper than MAX_DEPTH.
    """
    try:
        return _freeze(value, 0)
    except _Unsupported as exc:
        _fail(where, exc)


def _too_deep() -> _Unsupported:
    return _Unsupported(f"nests deeper than {MAX_DEPTH} levels, the limit")


def _freeze(v: Any, depth: int) -> Any:
    t = type(v)
    if t is str or t is bool or t is Record or t is FnMap:
        return v
    if t is int:
        return _checked_int(v)
    if depth >= MAX_DEPTH and (t in (tuple, list, frozenset, set) or isinstance(v, Mapping)):
        raise _too_deep()
    depth += 1
    if t is tuple or t is list:
        out = []
        for i, x in enumerate(v):
            try:
                out.append(_freeze(x, depth))
            except _Unsupported as exc:
                exc.path.append(f"[{i}]")
                raise
        return tuple(out)
    if t is frozenset or t is set:
        elems = []
        for x in v:
            try:
                elems.append(_freeze(x, depth))
            except _Unsupported as exc:
                exc.path.append("{element}")
                raise
        return frozenset(elems)
    if isinstance(v, Mapping):
        pairs: dict[Any, Any] = {}
        for k, x in v.items():
            try:
                fk = _freeze(k, depth)
            except _Unsupported as exc:
                exc.path.append("{key}")
                raise
            try:
                pairs[fk] = _freeze(x, depth)
            except _Unsupported as exc:
                exc.path.append(_key_segment(k))
                raise
        if all(type(k) is str for k in pairs):
            return Record._trusted(dict(sorted(pairs.items())))
        return FnMap(pairs)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return _checked_int(int(v))
    raise _unsupported(v)


def _checked_int(n: int) -> int:
    if INT_MIN <= n <= INT_MAX:
        return n
    # Python cannot even print an integer of thousands of digits, nor sort it
    # by its text, so the bound is checked before anything else meets it.
    raise _Unsupported(f"the integer {_short_int(n)} does not fit in 64 bits")


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
    except ValueError:
        # Sorting a set by text met an integer of thousands of digits, which
        # Python cannot print; freeze names it.
        freeze(value, where)
        raise
    except RecursionError:
        # Only a value nested in Records built one by one gets here: freeze
        # refuses every other value deeper than MAX_DEPTH.
        raise TraceFormatError(
            f"{where}: nests too deep to encode (the limit is {MAX_DEPTH} levels)"
        ) from None


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
        return _freeze(v, 0)
    raise _unsupported(v)


def _enc_dict(d: dict[Any, Any]) -> Any:
    for k in d:
        if type(k) is not str:
            if any(isinstance(k, str) and type(k) is not str for k in d):
                # str subclasses (StrEnum, say) must become the plain strings
                # that decide between a record and a function.
                return _enc(_freeze(d, 0))
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
    encoded = to_json(value)
    try:
        return json.dumps(encoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        # An integer past 64 bits that freeze did not see (in a plain dict):
        # freeze names it; anything else is a bug.
        freeze(value)
        raise


# --- from_json --------------------------------------------------------------


def from_json(obj: Any, where: str = "value") -> Any:
    """Decode the tagged JSON form (also what msgpack decodes to) into frozen values.

    Raises TraceFormatError naming the path (starting at `where`) of a float,
    null, bytes or bad tag, of an integer outside 64 bits, of a part nested
    deeper than MAX_DEPTH, and of a set or function domain that TLC could not
    hold (see the module docstring).
    """
    try:
        return _dec(obj, 0)
    except _Unsupported as exc:
        _fail(where, exc)


def _dec(o: Any, depth: int) -> Any:
    t = type(o)
    if t is str or t is bool:
        return o
    if t is int:
        return _checked_int(o)
    if t is list:
        if depth >= MAX_DEPTH:
            raise _too_deep()
        return tuple(_dec_items(o, depth + 1))
    if t is dict:
        if depth >= MAX_DEPTH:
            raise _too_deep()
        if len(o) == 1:
            ((k, x),) = o.items()
            if type(k) is str and k.startswith("#"):
                if k not in _TAGS:
                    raise _Unsupported(f"unknown tag {short_repr(k)} (known: {', '.join(_TAGS)})")
                try:
                    return _dec_tagged(k, x, depth + 1)
                except _Unsupported as exc:
                    exc.path.append(_key_segment(k))
                    raise
        out: dict[str, Any] = {}
        for k in sorted(o, key=_str_key):
            try:
                out[k] = _dec(o[k], depth + 1)
            except _Unsupported as exc:
                exc.path.append(_key_segment(k))
                raise
        return Record._trusted(out)
    if t is float:
        raise _Unsupported(f"{o!r} is a float; TLA+ values hold only integers")
    if o is None:
        raise _Unsupported("null is not a TLA+ value")
    raise _unsupported(o)


def _short_int(n: int) -> str:
    """An integer for a message: Python cannot print one of thousands of digits."""
    if -(10**30) < n < 10**30:
        return str(n)
    return f"{'-' if n < 0 else ''}(about 2**{abs(n).bit_length() - 1})"


def _str_key(k: Any) -> str:
    if type(k) is not str:
        raise _Unsupported(f"object key {short_repr(k)} is not a string; use {{{_MAP!r}: ...}}")
    return str(k)


def _dec_items(xs: list[Any], depth: int) -> list[Any]:
    out = []
    for i, x in enumerate(xs):
        try:
            out.append(_dec(x, depth))
        except _Unsupported as exc:
            exc.path.append(f"[{i}]")
            raise
    return out


# What TLC can compare: values of one kind. Sequences, records and functions
# are all functions to TLC. A type not listed (a TLC model value, say) is
# comparable with anything.
_KINDS: dict[type, str] = {
    int: "an integer",
    bool: "a boolean",
    str: "a string",
    frozenset: "a set",
    tuple: "a function",
    Record: "a function",
    FnMap: "a function",
}


def _check_kinds(values: list[Any], what: str) -> None:
    types = set(map(type, values))
    if len(types) < 2:
        return
    kinds = {_KINDS[t] for t in types if t in _KINDS}
    if len(kinds) > 1:
        shown = " and ".join(sorted(kinds))
        raise _Unsupported(
            f"{what} mixes {shown}, which TLC cannot compare; a set or a function "
            "domain holds values of one kind"
        )


def _unify_empty(j: Any) -> Any:
    """Tagged JSON `j` with every empty function spelled `[]`, as TLA+ has
    only one, and sets and domains sorted again by the new texts."""
    if type(j) is list:
        return [_unify_empty(x) for x in j]
    if type(j) is not dict:
        return j
    if not j:
        return []
    if len(j) == 1 and _SET in j:
        return {_SET: sorted((_unify_empty(x) for x in j[_SET]), key=_ENCODE)}
    if len(j) == 1 and _MAP in j:
        pairs = [[_unify_empty(k), _unify_empty(x)] for k, x in j[_MAP]]
        return {_MAP: sorted(pairs, key=lambda pair: _ENCODE(pair[0]))}
    return {k: _unify_empty(x) for k, x in j.items()}


def _tla_text(v: Any) -> str:
    """A text equal for two values exactly when TLA+ holds them equal; used
    only where Python equality merged two values, so its cost is rare."""
    return _ENCODE(_unify_empty(_enc(v)))


def _collapsed(values: list[Any], what: str) -> _Unsupported:
    """The error for values that Python equates but TLA+ does not (0 and FALSE)."""
    seen: dict[Any, tuple[str, Any]] = {}
    for x in values:
        text = _tla_text(x)
        if x in seen and seen[x][0] != text:
            return _Unsupported(
                f"{what} holds {seen[x][0]:.60} and {text:.60}, which Python cannot tell "
                "apart (it holds 0 == FALSE and 1 == TRUE) and TLC cannot compare"
            )
        seen.setdefault(x, (text, x))
    raise InternalError(f"{what} came out smaller than its input but nothing collapsed")


def strict_frozenset(values: list[Any], what: str = "a set") -> frozenset[Any]:
    """The set of `values`, or TraceFormatError if TLC could not hold it: its
    values mix kinds, or two of them differ only by a boolean where the other
    has an integer (which Python would silently merge)."""
    try:
        return _strict_frozenset(values, what)
    except _Unsupported as exc:
        _fail("value", exc)


def _strict_frozenset(values: list[Any], what: str) -> frozenset[Any]:
    out = frozenset(values)
    if len(values) > 1:
        _check_kinds(values, what)
    # Duplicates are fine; values that differ in their text are not.
    if len(out) < len(values) and len({_tla_text(x) for x in values}) != len(out):
        raise _collapsed(values, what)
    return out


def _dec_tagged(tag: str, x: Any, depth: int) -> Any:
    if type(x) is not list:
        raise _Unsupported(f"{tag!r} must hold a list, not a {type(x).__name__}")
    if tag == _TUP:
        return tuple(_dec_items(x, depth))
    if tag == _SET:
        return _strict_frozenset(_dec_items(x, depth), "the set")
    pairs: dict[Any, Any] = {}
    for i, pair in enumerate(x):
        if type(pair) is not list or len(pair) != 2:
            raise _Unsupported(
                f"entry {i} of {_MAP!r} is not a [key, value] pair: {short_repr(pair)}"
            )
        try:
            key, value = _dec_items(pair, depth)
        except _Unsupported as exc:
            exc.path.append(f"[{i}]")
            raise
        if key in pairs:
            first = next(k for k in pairs if k == key)
            if _tla_text(first) != _tla_text(key):
                raise _collapsed([first, key], f"the domain of {_MAP!r}")
            raise _Unsupported(f"{_MAP!r} lists the key {_ENCODE(_enc(key))!s:.60} twice")
        pairs[key] = value
    if len(pairs) > 1:
        _check_kinds(list(pairs), f"the domain of {_MAP!r}")
    if all(type(k) is str for k in pairs):
        return Record._trusted(dict(sorted(pairs.items())))
    return FnMap(pairs)
