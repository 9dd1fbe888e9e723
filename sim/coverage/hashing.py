"""A 64-bit hash of a TLA+ value that is the same in every process.

Coverage hashes are stored in the results database and compared across
worker processes, Dask machines and resumed campaigns, so Python's own
`hash()` (salted per process for strings) will not do. The hash follows
TLA+ equality, as `tracing.values` does: a set or a function hashes the same
whatever its iteration order (its elements' hashes are summed, so nothing
is sorted), a `Record` and an `FnMap` with equal items hash alike, an empty
function equals `<<>>`, and a boolean is never an integer.

A run's spec variables are snapshots that never change and keep their
identity while unchanged (`ProtocolDefinition.spec_vars`), so a
`ValueHasher` remembers the hash of each container it met, by identity,
for as long as it lives: a step that changed one message of a bag hashes
that message, and finds the others'. It keeps each container alive while
it remembers it, so an identity is never reused under it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from hashlib import blake2b
from typing import Any

__all__ = ["ValueHasher", "function_hash", "mix", "value_hash"]

_MASK = (1 << 64) - 1
# Distinct seeds per kind, so that "1", 1, TRUE, <<1>> and {1} differ.
_TRUE = 0x6A09E667F3BCC908
_FALSE = 0xBB67AE8584CAA73B
_INT = 0x3C6EF372FE94F82B
_SEQ = 0xA54FF53A5F1D36F1
_SET = 0x510E527FADE682D1
_FN = 0x9B05688C2B3E6C1F
_PAIR = 0x1F83D9ABFB41BD6B
STRINGS_REMEMBERED = 1 << 16  # strings whose hash a process keeps (they repeat)


def mix(x: int) -> int:
    """splitmix64's finaliser: every bit of `x` reaches every bit of the result."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


_strings: dict[str, int] = {}


def _str_hash(s: str) -> int:
    found = _strings.get(s)
    if found is None:
        found = int.from_bytes(blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest())
        if len(_strings) >= STRINGS_REMEMBERED:
            _strings.clear()
        _strings[s] = found
    return found


def _int_hash(n: int) -> int:
    if -(1 << 63) <= n < (1 << 63):
        return mix((n & _MASK) ^ _INT)
    return mix(_str_hash(str(n)) ^ _INT)


_SMALL_INTS = tuple(_int_hash(n) for n in range(-16, 1024))


def _small_int_hash(n: int) -> int:
    return _SMALL_INTS[n + 16] if -16 <= n < 1024 else _int_hash(n)


# Hashes by value, for this process: a set, tuple or record equal to one met
# before (in any run) hashes by one lookup, at the C speed of Python's own
# hashing, whose per-process salt is harmless here since only the stable
# hash is kept. Python's equality is TLA+'s but for 0 == FALSE and
# 1 == TRUE, so a value holding a boolean, 0 or 1 anywhere is never
# remembered: a value found here then holds none of them, and a value equal
# to it in Python is equal to it in TLA+ too (<<TRUE>> never finds <<1>>,
# which two variables of one process may well hold). Emptied when full.
VALUES_REMEMBERED = 1 << 17
_by_value: dict[Any, int] = {}


class ValueHasher:
    """Hashes TLA+ values: a dict it met before by identity, others by value."""

    __slots__ = ("_ambiguous", "_known")

    def __init__(self) -> None:
        self._known: dict[int, tuple[Any, int]] = {}
        # Whether the value being hashed held a boolean, 0 or 1: one that
        # Python's equality would confuse with another (see _by_value).
        self._ambiguous = False

    def __call__(self, value: Any) -> int:
        kind = type(value)
        if kind is str:
            return _strings.get(value) or _str_hash(value)
        if kind is int:
            if 0 <= value <= 1:
                self._ambiguous = True
            return _small_int_hash(value)
        if kind is bool:
            self._ambiguous = True
            return _TRUE if value else _FALSE
        if kind is dict:
            known = self._known.get(id(value))
            if known is not None and known[0] is value:
                return known[1]
            h = _function(self, value)
            self._known[id(value)] = (value, h)
            return h
        try:
            found = _by_value.get(value)
        except TypeError:  # unhashable: a mapping or list of another kind
            found = None
            hashable = False
        else:
            hashable = True
        if found is not None:
            return found
        how = _KINDS.get(kind)
        if how is None:
            how = _KINDS[kind] = _kind_of(kind)
        outer = self._ambiguous
        self._ambiguous = False
        h = how(self, value)
        ambiguous = self._ambiguous
        self._ambiguous = outer or ambiguous
        if hashable and not ambiguous:
            if len(_by_value) >= VALUES_REMEMBERED:
                _by_value.clear()
            _by_value[value] = h
        return h

    def item(self, key: Any, value: Any) -> int:
        """The hash of one item of a function; a function's is their sum."""
        return mix((self(key) * _PAIR + self(value)) & _MASK)


def _sequence(hasher: ValueHasher, value: Any) -> int:
    h = _SEQ
    for element in value:
        h = mix((h + hasher(element)) & _MASK)
    return h


def _function(hasher: ValueHasher, value: Any) -> int:
    return function_hash(sum(hasher.item(k, v) for k, v in value.items()), len(value))


def function_hash(total: int, size: int) -> int:
    """A function's hash from the sum of its items' (`ValueHasher.item`)."""
    if not size:
        return _SEQ  # the empty function is <<>>
    return mix((total + _FN) & _MASK)


def _set(hasher: ValueHasher, value: Any) -> int:
    # Element hashes are mixed already, so their sum is a sound hash of the set.
    return mix((sum(map(hasher, value)) + len(value) * _SET) & _MASK)


def _as_str(_hasher: ValueHasher, value: Any) -> int:
    return _str_hash(str.__str__(value))  # a StrEnum, say: TLA+ sees the string


def _as_bool(hasher: ValueHasher, value: Any) -> int:
    hasher._ambiguous = True
    return _TRUE if value else _FALSE


def _as_int(hasher: ValueHasher, value: Any) -> int:
    n = int(value)
    if 0 <= n <= 1:
        hasher._ambiguous = True
    return _int_hash(n)  # an IntEnum


def _kind_of(kind: type) -> Callable[[ValueHasher, Any], int]:
    """How values of `kind` hash, found once per type (isinstance of an ABC is slow)."""
    if issubclass(kind, str):
        return _as_str
    if issubclass(kind, bool):
        return _as_bool
    if issubclass(kind, int):
        return _as_int
    if issubclass(kind, tuple | list):
        return _sequence
    if issubclass(kind, Mapping):
        return _function
    if issubclass(kind, Set):
        return _set
    raise TypeError(f"not a TLA+ value: {kind.__name__}")


_KINDS: dict[type, Callable[[ValueHasher, Any], int]] = {}


def value_hash(value: Any) -> int:
    """The hash of one value, remembering nothing."""
    return ValueHasher()(value)
