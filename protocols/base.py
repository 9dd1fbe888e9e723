"""The sans-IO contract between a protocol core and any runtime.

Theory of operation: a core is a class that takes one input at a time and
returns the effects it wants, in order. It never reads a clock (the runtime
passes `now`), never draws a random number (every choice is in its
configuration or workload), never touches a socket or a file. So the same
class runs under the simulator, under the trio runtime and in hypothesis
stateful tests.

Effects come in atomic steps. A step is every effect up to and including a
`Trace`: the runtime carries out the step's effects, then writes one trace
line whose state includes them. A crash may strike between two steps, never
inside one, so a trace line and the state change it describes always happen
together. A core must put every effect that changes a spec variable (a
`Persist`, a `Send`, a change of its own view) into its own step, so that
every window between two such effects is reachable by a crash.

This module is stdlib-only, like the rest of `protocols/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

# ---- inputs -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Start:
    """The node boots for the first time with an empty disk."""


@dataclass(frozen=True, slots=True)
class Receive:
    """A message was delivered. Its first step must name a receive action."""

    src: str
    msg: Any


@dataclass(frozen=True, slots=True)
class Timeout:
    """A timer set by `SetTimer` fired."""

    name: str


@dataclass(frozen=True, slots=True)
class Recover:
    """The node restarts after a crash; `log` is what it had synced, in order."""

    log: tuple[Mapping[str, Any], ...]


Input: TypeAlias = Start | Receive | Timeout | Recover

# ---- effects ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    dst: str
    msg: Any


@dataclass(frozen=True, slots=True)
class SetTimer:
    """Arm (or re-arm) the timer `name` to fire after `delay` ticks."""

    name: str
    delay: int


@dataclass(frozen=True, slots=True)
class CancelTimer:
    name: str


@dataclass(frozen=True, slots=True)
class Persist:
    """Append `record` to the node's log; `sync` makes it, and all before it, durable."""

    record: Mapping[str, Any]
    sync: bool


@dataclass(frozen=True, slots=True)
class Trace:
    """Close an atomic step: the spec action it is, and the node's view after it.

    `view` is a snapshot of the node's own spec variables taken when the step
    was built, so that a crash after this step shows this state and not the
    state after the handler's later steps.
    """

    action: str
    params: Mapping[str, Any]
    view: Mapping[str, Any]


Effect: TypeAlias = Send | SetTimer | CancelTimer | Persist | Trace


class Core(Protocol):
    """What a runtime needs from a protocol node."""

    node_id: str

    def handle(self, now: int, event: Input) -> list[Effect]: ...

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        """Rebuild volatile state from a synced log, with no effects."""
        ...

    def view(self) -> Mapping[str, Any]:
        """The node's own spec variables now, as fresh immutable values."""
        ...
