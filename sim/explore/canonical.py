"""A canonical encoding of a whole system's state, for the explorer's visited set.

Theory of operation: the explorer must tell whether two runs reached the same
state of every core, disk, timer and message, without asking the protocol
how. `state_digest` walks Python values the way the cores hold them: plain
values as they are; tuples and lists by position; mappings and sets in a
sorted order, so insertion order never tells two equal states apart; and
objects by their class and their fields (`__dict__` and every `__slots__`),
so a core needs no method of its own to be explored. A frozen dataclass is
its value, wherever it is held. A mutable object met twice in one walk
(say, a shared memory every thread holds) is written in full once and as a
back-reference after that: which objects share it is part of the state,
and cycles through objects are safe.

The encoding is injective on what it walks. So two states with one digest
are equal, up to the collision of a 128-bit hash. The converse does not
hold: two equal states may encode differently, for example when one shares
a mutable object that the other holds as two copies, or when mutable
objects inside a mapping whose keys do not sort were first met in another
order. Then the
explorer visits that state twice, which costs time and is never wrong.

Given a `Renaming`, the walk encodes the state's image under a permutation
of node ids instead (sim/explore/symmetry.py): a string that is a renamed
id is written as its image, keys are sorted after renaming, and a string
that merely contains an id stops the walk, since no renaming of whole
strings reaches it.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import marshal
import re
import types
from collections.abc import Mapping, Set
from typing import Any

_PLAIN = frozenset({str, int, float, bytes, type(None)})
_CODE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType)
# class -> (its slot names, whether it has a __dict__), found once per class.
_LAYOUT: dict[type, tuple[tuple[str, ...], bool]] = {}
_FROZEN: dict[type, bool] = {}  # class -> whether it is a frozen dataclass


class Renaming:
    """A renaming of strings, for walking a state as its image under a symmetry.

    `names` maps each renamed string (a node id) to its image, whole strings
    only. A string that holds a renamed one inside it, rather than being it,
    cannot be renamed soundly, so meeting one is an error (`EmbeddedName`).
    An object equal to one in `unchanged` is encoded as that one's place
    there, whatever it holds: the configuration, which a symmetry leaves as
    it is by definition (sim/explore/symmetry.py). They must be of distinct
    types."""

    __slots__ = ("_inside", "names", "unchanged", "unordered")

    def __init__(
        self, names: Mapping[str, str], unchanged: tuple[Any, ...] = (), unordered: bool = False
    ) -> None:
        self.names = dict(names)
        # Whether a tuple or list of renamed strings only is read as a set:
        # so a configuration's list of interchangeable nodes is, whatever
        # order a renaming puts them in.
        self.unordered = unordered
        # Longest first, so the error names the longest id a string holds.
        ids = sorted(self.names, key=lambda name: (-len(name), name))
        self._inside = re.compile("|".join(map(re.escape, ids))) if ids else None
        self.unchanged = unchanged

    def rename(self, text: str) -> str:
        image = self.names.get(text)
        if image is not None:
            return image
        if self._inside is not None:
            found = self._inside.search(text)
            if found is not None:
                raise EmbeddedName(text, found.group())
        return text


class EmbeddedName(ValueError):
    """A state holds a node id inside a longer string, where a renaming cannot reach."""

    def __init__(self, text: str, name: str) -> None:
        super().__init__(
            f"the state holds the string {text!r}, which has the node id {name!r} inside it: "
            "renaming whole strings would leave it behind, so symmetry cannot be used"
        )
        self.text, self.name = text, name


def canonical(value: Any, renaming: Renaming | None = None) -> Any:
    """`value` as nested tuples of plain values, equal for equal states.

    With `renaming`, the encoding of the state's image under it."""
    return _Walk(renaming).encode(value)


def state_digest(value: Any, renaming: Renaming | None = None) -> bytes:
    """A 16-byte digest of `canonical(value, renaming)`."""
    # marshal's version 0 writes a value alone, with neither the
    # back-references of later versions nor pickle's memo, both of which
    # depend on which equal strings or tuples are one object. It is much
    # faster than repr.
    encoded = marshal.dumps(canonical(value, renaming), 0)
    return hashlib.blake2b(encoded, digest_size=16).digest()


def _sorted(items: list[Any]) -> tuple[Any, ...]:
    try:
        items.sort()
    except TypeError:
        # Unlike kinds (say, None and a string) do not compare; their reprs do.
        items.sort(key=repr)
    return tuple(items)


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _layout(kind: type) -> tuple[tuple[str, ...], bool]:
    layout = _LAYOUT.get(kind)
    if layout is None:
        names: list[str] = []
        for klass in kind.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name not in names and name not in ("__dict__", "__weakref__"):
                    names.append(name)
        has_dict = any("__dict__" in klass.__dict__ for klass in kind.__mro__)
        layout = _LAYOUT[kind] = (tuple(names), has_dict)
    return layout


def _frozen(kind: type) -> bool:
    frozen = _FROZEN.get(kind)
    if frozen is None:
        params = getattr(kind, "__dataclass_params__", None)
        frozen = _FROZEN[kind] = params is not None and bool(params.frozen)
    return frozen


class _Walk:
    __slots__ = ("_names", "_rename", "_seen", "_unchanged", "_values")

    def __init__(self, renaming: Renaming | None = None) -> None:
        self._rename = None if renaming is None else renaming.rename
        self._names = None if renaming is None or not renaming.unordered else renaming.names
        # Matched by type, then by value: a thawed state holds its own copy
        # of the configuration, equal to the one named here but not it.
        self._unchanged = (
            {} if renaming is None
            else {type(v): (n, v) for n, v in enumerate(renaming.unchanged)}
        )
        self._values: dict[int, Any] = {}
        # id -> position of every object encoded so far in this walk. The
        # objects stay alive for the walk (the caller holds the root), so an
        # id is never reused within it.
        self._seen: dict[int, int] = {}

    def encode(self, value: Any) -> Any:
        kind = type(value)
        if kind is str and self._rename is not None:
            return self._rename(value)
        if kind in _PLAIN:
            return value
        if kind is bool:
            # True == 1 and hash(True) == hash(1): keep them apart.
            return ("b", value)
        if kind is tuple or kind is list:
            encode = self.encode
            items = [encode(v) for v in value]
            names = self._names
            if names is not None and items and all(type(v) is str and v in names for v in value):
                items.sort()
            return (kind.__name__, tuple(items))
        if isinstance(value, Mapping):
            # Mappings and sets are walked by value, in sorted order, so
            # neither insertion order nor the objects' identity tells two
            # equal states apart.
            encode = self.encode
            # Objects in the values are then met, and numbered, in the order
            # of their keys' encodings (renamed, under a renaming), not in
            # the order they were inserted.
            keyed = [(encode(k), k) for k in value]
            with contextlib.suppress(TypeError):
                keyed.sort(key=_first)
            items = [(encoded, encode(value[k])) for encoded, k in keyed]
            return ("map", kind.__qualname__, _sorted(items))
        if isinstance(value, Set):
            encode = self.encode
            return ("set", _sorted([encode(v) for v in value]))
        if isinstance(value, enum.Enum):
            return ("enum", kind.__qualname__, value.name)
        if isinstance(value, _CODE):
            # Code, not state: a core that holds a callable holds the same code
            # in every state.
            return ("fn", getattr(value, "__qualname__", repr(value)))
        if isinstance(value, type):
            return ("type", value.__module__, value.__qualname__)
        if self._unchanged:
            constant = self._unchanged.get(kind)
            if constant is not None and (value is constant[1] or value == constant[1]):
                return ("unchanged", constant[0])
        if _frozen(kind):
            # An immutable object is its value: whether a state holds one copy
            # of it or two must not tell equal states apart (a core that
            # rebuilt a plan from its log holds an equal copy, not the
            # configuration's object). Its encoding is kept for the walk.
            encoded = self._values.get(id(value))
            if encoded is None:
                encoded = ("val", kind.__module__, kind.__qualname__, self._fields(value))
                self._values[id(value)] = encoded
            return encoded
        position = self._seen.get(id(value))
        if position is not None:
            return ("ref", position)
        # Each full encoding of an object carries its position, so a
        # back-reference names it unambiguously wherever sorting moved it.
        position = self._seen[id(value)] = len(self._seen)
        return ("obj", position, kind.__module__, kind.__qualname__, self._fields(value))

    def _fields(self, value: Any) -> tuple[Any, ...]:
        slots, has_dict = _layout(type(value))
        fields: list[tuple[str, Any]] = []
        for name in slots:
            try:
                field = getattr(value, name)
            except AttributeError:  # an unset slot
                continue
            fields.append((name, self.encode(field)))
        if has_dict:
            attributes = value.__dict__
            for name in sorted(attributes):
                if name not in slots:
                    fields.append((name, self.encode(attributes[name])))
        elif not slots:
            raise TypeError(
                f"cannot tell the state of a {type(value).__qualname__}: it has neither "
                "fields nor a known type"
            )
        return tuple(fields)
