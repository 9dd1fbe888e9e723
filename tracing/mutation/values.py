"""The `change-value` mutation's part that knows values: what may change, and to what.

Theory of operation. `change_value` changes one part of one variable on a
given line, as tracing/mutation/mutate.py's `change-value` mutation describes: a
boolean flipped, an integer plus one, a string replaced by another string
the variable holds somewhere in the trace, a set with one element more (one
the variable holds in a set elsewhere, of a kind this set holds) or one
fewer. The parts are the leaves (booleans, integers, strings) and the sets
inside the value, each named by its path of keys and indexes; records and
functions keep their keys, so the changed value stays in canonical order.

Every choice is drawn from the caller's `random.Random`, and every list it
draws from is sorted first (strings, and set elements by canonical JSON),
so `PYTHONHASHSEED` never changes one. Which line to change, and how a
mutant's detail names it, is tracing/mutation/mutate.py's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tlasim.tracing.codec import TraceStep
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.values import FnMap, Record, canonical_json

__all__ = ["ValueChange", "change_value"]

Path = tuple[Any, ...]


def _places(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every leaf and every set inside a value, with its path of keys and indexes."""
    t = type(value)
    if t is bool or t is int or t is str or t is frozenset:
        yield path, value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _places(inner, (*path, key))
    elif t is tuple:
        for i, inner in enumerate(value):
            yield from _places(inner, (*path, i))


def _set_at(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if type(value) is tuple:
        return (*value[:head], _set_at(value[head], rest, new), *value[head + 1 :])
    items = dict(value.items())
    items[head] = _set_at(items[head], rest, new)
    # The key is unchanged, so the items stay in canonical order.
    return Record._trusted(items) if type(value) is Record else FnMap._trusted(items)


@dataclass(slots=True)
class _Pools:
    """What one variable holds anywhere in the trace: its strings and set elements."""

    strings: list[str]
    elements: list[Any]


def _pools(steps: list[TraceStep], name: str) -> _Pools:
    strings: set[str] = set()
    elements: dict[str, Any] = {}
    seen: set[int] = set()
    for step in steps:
        value = step.vars.get(name)
        # Lines share the objects of unchanged values: each is walked once.
        if value is None or id(value) in seen:
            continue
        seen.add(id(value))
        for _, leaf in _places(value):
            if type(leaf) is str:
                strings.add(leaf)
            elif type(leaf) is frozenset:
                for element in leaf:
                    elements.setdefault(canonical_json(element), element)
    return _Pools(sorted(strings), [elements[k] for k in sorted(elements)])


def _kind(value: Any) -> tuple[Any, ...]:
    """What makes two set elements alike: their type, and a record's fields."""
    if type(value) is Record:
        return (Record, tuple(value))
    return (type(value),)


def _changes(leaf: Any, pools: _Pools) -> list[Callable[[random.Random], tuple[Any, str]]]:
    """The ways this leaf or set may change; each draws its new value and says what it did."""
    if type(leaf) is bool:
        return [lambda _rng: (not leaf, "flipped")]
    if type(leaf) is int:
        return [lambda _rng: (leaf + 1, "incremented")]
    if type(leaf) is str:
        others = [s for s in pools.strings if s != leaf]
        if not others:
            return []
        return [lambda rng: (rng.choice(others), "replaced")]
    kinds = {_kind(e) for e in leaf}
    addable = [e for e in pools.elements if e not in leaf and (not kinds or _kind(e) in kinds)]
    ways: list[Callable[[random.Random], tuple[Any, str]]] = []
    if leaf:
        present = sorted(leaf, key=canonical_json)
        ways.append(lambda rng: _without(leaf, rng.choice(present)))
    if addable:
        ways.append(lambda rng: _with(leaf, rng.choice(addable)))
    return ways


def _without(s: frozenset[Any], element: Any) -> tuple[Any, str]:
    return s - {element}, f"took {to_tla(element)} out of"


def _with(s: frozenset[Any], element: Any) -> tuple[Any, str]:
    return s | {element}, f"added {to_tla(element)} to"


@dataclass(frozen=True, slots=True)
class ValueChange:
    """One part of one variable changed on a line: the line's variables now, and how."""

    vars: Record  # the line's variables, the one change made
    done: str  # what was done to which part, as in: incremented rm_votes["r1"]
    old: Any  # the part before
    new: Any  # the part after

    def detail(self, line: str) -> str:
        """What was done on `line` (the caller's name for it), for people."""
        if type(self.old) is frozenset:
            # The verb already names the element added or taken out.
            return f"{self.done} on {line}"
        return f"{self.done} on {line}: {to_tla(self.old)} became {to_tla(self.new)}"


def change_value(steps: list[TraceStep], i: int, rng: random.Random) -> ValueChange | None:
    """One change, drawn by `rng`, to a variable of line `i` (None if nothing can change)."""
    step = steps[i]
    pools: dict[str, _Pools] = {}
    choices: list[tuple[str, Path, Any, Callable[[random.Random], tuple[Any, str]]]] = []
    for name in sorted(step.vars):
        pools[name] = _pools(steps, name)
        for path, leaf in _places(step.vars[name]):
            choices.extend((name, path, leaf, way) for way in _changes(leaf, pools[name]))
    if not choices:
        return None
    name, path, leaf, way = rng.choice(choices)
    new, verb = way(rng)
    where = name + "".join(f"[{to_tla(k)}]" for k in path)
    vars_ = dict(step.vars.items())
    vars_[name] = _set_at(vars_[name], path, new)
    return ValueChange(Record._trusted(vars_), f"{verb} {where}", leaf, new)
