"""How a protocol abstracts its spec state for coverage (sim/coverage).

A protocol's `COVERAGE_ABSTRACTION` maps a spec variable's name to a
function of its value, giving what coverage should tell apart, or to DROP
to leave the variable out; a variable it does not name counts whole. Two
states that differ only in what the abstraction forgets are one state to
coverage, so it measures behaviour rather than how long a run went on: a
message bag whose copy counts differ (`in_flight`), or a counter that only
grows (DROP), would otherwise make every step a new state.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Set
from typing import Any

__all__ = ["DROP", "Abstraction", "in_flight"]

DROP = None
Abstraction = Mapping[str, Callable[[Any], Any] | None]


def in_flight(bag: Mapping[Hashable, int]) -> Set[Hashable]:
    """The kernel's bag of messages as the set of messages in flight,
    whatever their copy counts (it holds no message with no copy)."""
    return bag.keys()
