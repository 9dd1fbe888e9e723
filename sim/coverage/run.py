"""One run's spec coverage, gathered step by step as the run maps its state onto the spec.

The kernel hands every step's spec variables to a `CoverageRecorder`
(`StepMachine.record`), which keeps three sets:
- the abstract spec states the run passed through: each a 64-bit hash
  (`hashing`) of its variables after the protocol's abstraction;
- the actions it took;
- its action pairs: (node, an action of that node, the node's next action).

The protocol's abstraction (`protocols.coverage`) says what of each
variable coverage tells apart; a variable it does not name is hashed whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import compress
from operator import is_not, mul
from typing import Any

from tlasim.protocols.coverage import DROP, Abstraction
from tlasim.sim.coverage.hashing import ValueHasher, function_hash, mix

__all__ = ["CoverageRecorder", "RunCoverage", "abstraction_of"]

_MASK = (1 << 64) - 1

def abstraction_of(protocol: Any) -> Abstraction:
    """The protocol's coverage abstraction; none (every variable whole) if it declares none."""
    found = getattr(protocol, "COVERAGE_ABSTRACTION", None)
    return found if isinstance(found, Mapping) else {}


@dataclass(frozen=True, slots=True)
class RunCoverage:
    """What one run reached: abstract spec states (hashes), actions, action pairs."""

    states: frozenset[int]
    actions: frozenset[str]
    pairs: frozenset[tuple[str, str, str]]  # (node, action, that node's next action)


class CoverageRecorder:
    """Gathers a run's coverage from the spec variables of each of its steps."""

    __slots__ = ("_abstraction", "_actions", "_dicts", "_hash", "_hashes", "_last_action",
                 "_last_values", "_names", "_pairs", "_states", "_views", "_weights")

    def __init__(self, abstraction: Abstraction | None = None) -> None:
        self._abstraction = dict(abstraction or {})
        self._hash = ValueHasher()
        # The variables hashed, in name order, each with its abstraction (None: whole).
        self._names: tuple[str, ...] = ()
        self._views: tuple[Callable[[Any], Any] | None, ...] = ()
        self._weights: tuple[int, ...] = ()
        # The last step's values and their hashes: a variable that is the
        # same object as at the last step is not hashed again.
        self._last_values: tuple[Any, ...] | None = None
        self._hashes: list[int] = []
        # Per variable holding a dict: that dict, its items' hashes, their sum.
        self._dicts: dict[int, tuple[dict[Any, Any], dict[Any, int], int]] = {}
        self._last_action: dict[str, str] = {}
        self._states: set[int] = set()
        self._actions: set[str] = set()
        self._pairs: set[tuple[str, str, str]] = set()

    def _start(self, spec_vars: Mapping[str, Any]) -> None:
        kept = [n for n in sorted(spec_vars)
                if n not in self._abstraction or self._abstraction[n] is not DROP]
        self._names = tuple(kept)
        self._views = tuple(self._abstraction.get(n) for n in kept)
        # A state's hash weighs each variable's by a constant of its own, so
        # that two variables swapping values make another state.
        self._weights = tuple(mix(i + 1) | 1 for i in range(len(kept)))
        self._hashes = [0] * len(kept)

    def step(self, node: str | None, action: str, spec_vars: Mapping[str, Any]) -> None:
        last = self._last_values
        if last is None:
            self._start(spec_vars)
        values = tuple(map(spec_vars.__getitem__, self._names))
        hashes = self._hashes
        views = self._views
        changed = (range(len(values)) if last is None
                   else compress(range(len(values)), map(is_not, values, last)))
        for i in changed:
            view = views[i]
            value = values[i] if view is None else view(values[i])
            if type(value) is dict:
                hashes[i] = self._dict_hash(i, value)
            else:
                hashes[i] = self._hash(value)
        self._last_values = values
        self._states.add(mix(sum(map(mul, hashes, self._weights)) & _MASK))
        self._actions.add(action)
        who = node or ""
        before = self._last_action.get(who)
        if before is not None:
            self._pairs.add((who, before, action))
        self._last_action[who] = action

    def _dict_hash(self, i: int, value: dict[Any, Any]) -> int:
        """The hash of variable `i`'s new dict, from the items that changed
        since its last dict: a refinement mapping rebuilds a variable's dict
        when one entry moves, and keeps the other entries' very objects."""
        before = self._dicts.get(i)
        if before is not None and len(before[0]) == len(value):
            old, contributions, total = before
            keys = value.keys()
            moved = list(compress(keys, map(is_not, value.values(), map(old.get, keys))))
            if not moved or all(map(old.__contains__, moved)):
                for key in moved:  # the last dict's hashes are needed no more
                    fresh = self._hash.item(key, value[key])
                    total += fresh - contributions[key]
                    contributions[key] = fresh
                self._dicts[i] = (value, contributions, total)
                return function_hash(total, len(value))
        contributions = {key: self._hash.item(key, item) for key, item in value.items()}
        total = sum(contributions.values())
        self._dicts[i] = (value, contributions, total)
        return function_hash(total, len(value))

    def result(self) -> RunCoverage:
        return RunCoverage(frozenset(self._states), frozenset(self._actions),
                           frozenset(self._pairs))
