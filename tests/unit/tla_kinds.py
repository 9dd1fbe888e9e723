"""A test oracle, written apart from tracing.values: which values TLC can hold.

TLC compares the elements of a set and the keys of a function, and it cannot
compare an integer with a boolean, a string or a function. So every set and
every function domain must hold one kind of value; tracing.values refuses the
others. Property tests draw values of any kind and expect that refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | str):
        return type(value).__name__
    return "set" if isinstance(value, frozenset | set) else "function"


def tlc_can_hold(value: Any) -> bool:
    """Whether every set and function domain in `value` holds one kind of value."""
    if isinstance(value, frozenset | set | Mapping):
        if len({_kind(x) for x in value}) > 1:
            return False
        if isinstance(value, Mapping):
            return all(tlc_can_hold(k) and tlc_can_hold(v) for k, v in value.items())
        return all(tlc_can_hold(x) for x in value)
    if isinstance(value, list | tuple):
        return all(tlc_can_hold(x) for x in value)
    return True
