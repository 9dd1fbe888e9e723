"""Telling a value built afresh from the one before.

A core hands the runtime a fresh view at every step (`Core.view`), so a
node's unchanged spec variables come back as new objects equal to the old
ones. The TLC writer (`tracing.tla.binary`) names such a value rather than
writing it again, once `same_value` holds.

Strict means the same types at every level: Python's `==` holds `1 == True`
and a dict equal to a record, which are different TLA+ values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import is_, itemgetter
from typing import Any

from tlasim.tracing.values import MAX_DEPTH

__all__ = ["same_value"]

_SECOND = itemgetter(1)


def same_value(old: Any, new: Any, depth: int = 0) -> bool:
    """Whether `new` is exactly the value `old` is, in the same form: the
    same types at every level, equal leaves, and each container's parts in
    the same order. Stricter than `==`, which holds `1 == TRUE` and a dict
    equal to a record of another type; an equal set that iterates in
    another order is merely not the same here. Both must be values nobody
    changes, whose parts are mostly the very same objects."""
    if old is new:
        return True
    t = type(new)
    if type(old) is not t:
        return False
    if t is str or t is int:
        return bool(old == new)
    if t is bool or depth >= MAX_DEPTH:
        return False
    if t is dict:
        # Python's == looks in C, and turns down most changed dicts (a bag
        # whose counts moved) before a part is looked at in Python.
        return (
            len(old) == len(new)
            and old == new
            and _same_parts(old, new, depth + 1)
            and _same_parts(old.values(), new.values(), depth + 1)
        )
    if t is tuple or t is list or t is frozenset or t is set:
        return len(old) == len(new) and _same_parts(old, new, depth + 1)
    if isinstance(new, Mapping):
        # A record's == would run in Python, and the parts are looked at anyway.
        return (
            len(old) == len(new)
            and _same_parts(old, new, depth + 1)
            and _same_parts(
                list(map(_SECOND, old.items())), list(map(_SECOND, new.items())), depth + 1
            )
        )
    # Anything else is no TLA+ value: only the very same object is the same.
    return False


def _same_parts(old: Iterable[Any], new: Iterable[Any], depth: int) -> bool:
    # Parts that are the very same objects: map(is_) finds them without a
    # Python-level step per part.
    if all(map(is_, old, new)):
        return True
    return all(a is b or same_value(a, b, depth) for a, b in zip(old, new, strict=True))
