"""A hashable, immutable record for protocol code.

Protocol state that the spec sees as a record (a write id `[c |-> "c1",
n |-> 3]`, a message) must be usable as a set element and a dict key, and
must never change after a view snapshot took it. `protocols/` is stdlib-only,
so it cannot use `tracing.values.Record`; this class is its small stand-in.
The kernel and the tracer freeze any Mapping, so a FrozenRecord becomes a
TLA+ record in the trace with no conversion code.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any


class FrozenRecord(Mapping[str, Any]):
    """An immutable mapping from field names to hashable values."""

    __slots__ = ("_fields", "_hash")

    def __init__(self, fields: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        merged = dict(fields or {}, **kwargs)
        self._fields: dict[str, Any] = dict(sorted(merged.items()))
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    # The dict's own views: Mapping's would step through __getitem__ in
    # Python, and the tracer reads every message's fields at every step.
    def keys(self) -> KeysView[str]:
        return self._fields.keys()

    def values(self) -> ValuesView[Any]:
        return self._fields.values()

    def items(self) -> ItemsView[str, Any]:
        return self._fields.items()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._fields.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenRecord):
            return self._fields == other._fields
        if isinstance(other, Mapping):
            return self._fields == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"FrozenRecord({inner})"

    def replace(self, **changes: Any) -> FrozenRecord:
        return FrozenRecord(self._fields, **changes)
