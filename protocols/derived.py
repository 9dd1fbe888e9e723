"""Spec variables that a refinement mapping builds again only when their inputs change.

Theory of operation. The kernel hands a protocol's `spec_vars` the same
objects for what a step left alone: a node's view until the node steps
again, its synced log until the next sync, its liveness flag. A variable
that gathers every node's part (`{rm: frozenset(logs[rm]) for rm in rms}`) is
nonetheless a new dict at every step. `Derived` keeps what its function
built and hands it out again, the very object, while every input is the
very object it was built from; the TLC recorder then names the variable by identity
instead of comparing it with the last step's or writing it again.

Inputs are compared by identity only, so they must be values nobody
changes (the views, logs and flags the kernel passes are such snapshots;
`ProtocolDefinition.spec_vars` says so). The function reads nothing but
its inputs, so nothing else can have changed what it would build. What is
handed out again must never be changed either, which is the promise every
spec variable already carries.

One entry is kept per `Derived`, and a protocol's definition (one object
shared by every run in the process) holds its `Derived`s: runs that
interleave only miss more often.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from operator import is_
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Derived(Generic[T]):
    """`build(*inputs)`, built again only when one of the inputs is not the
    very object it was the last time."""

    __slots__ = ("_build", "_kept")

    def __init__(self, build: Callable[..., T]) -> None:
        self._build = build
        self._kept: tuple[tuple[Any, ...], T] | None = None

    def __call__(self, *inputs: Any) -> T:
        # Read and replaced whole, so a run in another thread sees a
        # consistent entry (or misses).
        kept = self._kept
        if kept is not None and len(kept[0]) == len(inputs) and all(map(is_, kept[0], inputs)):
            return kept[1]
        value = self._build(*inputs)
        self._kept = (inputs, value)
        return value


class DerivedEach(Generic[T]):
    """A `Derived` for each key (a node, a transaction): `build(*inputs)`
    for the key, built again only when one of the inputs is not the very
    object it was the last time for that key. A part of a variable kept so
    stays the same object while the variable is built again around it."""

    __slots__ = ("_build", "_each")

    def __init__(self, build: Callable[..., T]) -> None:
        self._build = build
        self._each: dict[Hashable, Derived[T]] = {}

    def __call__(self, key: Hashable, *inputs: Any) -> T:
        derived = self._each.get(key)
        if derived is None:
            derived = self._each[key] = Derived(self._build)
        return derived(*inputs)


def per_node(nodes: Sequence[str], *values: Any) -> dict[str, Any]:
    """The function from each node to its value (`values` in the order of `nodes`)."""
    return dict(zip(nodes, values, strict=True))

