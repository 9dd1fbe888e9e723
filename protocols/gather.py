"""The refinement mapping declared rather than written: each spec variable
gathered from the nodes by a declaration.

Theory of operation: most variables of a message-level spec have one of a
few shapes. A function from some nodes to a part of each node's view
(`state[n]`), to each node's synced log (`log[n]`, as a set or in order),
to whether each node is up (`up[n]`); the same for a role that has one node
(the coordinator's `coordState`, not a function); or the bag of messages in
flight. A definition declares its variables in `SPEC_VARS`:

    SPEC_VARS = {
        "state": view("state"),          # [n \\in Nodes |-> views[n]["state"]]
        "log": log(role="replica"),      # [r \\in Replicas |-> the set of r's records]
        "primaryUp": up(role="primary", one=True),
        "msgs": messages(),
    }

and ProtocolBase's `spec_vars` gathers them on every step. A role's nodes
are `roles(config)[role]`; no role means every node. A variable of another
shape is computed by overriding `spec_vars` (calling `gather` for the rest).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tlasim.protocols.errors import ConfigError

__all__ = ["Gathered", "gather", "log", "messages", "up", "view"]

Source = Literal["view", "log", "up", "messages"]


@dataclass(frozen=True, slots=True)
class Gathered:
    """How one spec variable is gathered from the nodes (see the module's docstring)."""

    source: Source
    key: str = ""  # the view's key, for source "view"
    role: str | None = None  # the nodes of this role; None: every node
    one: bool = False  # the role's only node: its value, not a function of nodes
    ordered: bool = False  # a log as a tuple in order, not a set


def view(key: str, role: str | None = None, *, one: bool = False) -> Gathered:
    return Gathered("view", key=key, role=role, one=one)


def log(role: str | None = None, *, one: bool = False, ordered: bool = False) -> Gathered:
    return Gathered("log", role=role, one=one, ordered=ordered)


def up(role: str | None = None, *, one: bool = False) -> Gathered:
    return Gathered("up", role=role, one=one)


def messages() -> Gathered:
    return Gathered("messages")


def _value(how: Gathered, node: str, views: Mapping[str, Mapping[str, Any]],
           logs: Mapping[str, Sequence[Mapping[str, Any]]], up: Mapping[str, bool]) -> Any:
    if how.source == "view":
        try:
            return views[node][how.key]
        except KeyError:
            raise ConfigError(f"node {node}'s view has no {how.key!r}, which SPEC_VARS "
                                f"gathers; its view has {sorted(views[node])}") from None
    if how.source == "log":
        records = logs[node]
        return tuple(records) if how.ordered else frozenset(records)
    return up[node]


def gather(
    declared: Mapping[str, Gathered],
    roles: Mapping[str | None, Sequence[str]],
    views: Mapping[str, Mapping[str, Any]],
    logs: Mapping[str, Sequence[Mapping[str, Any]]],
    up: Mapping[str, bool],
    in_flight: Mapping[Hashable, int],
) -> dict[str, Any]:
    """The spec variables `declared`, from this step's views, logs and liveness;
    `roles` maps each role (and None, every node) to its nodes."""
    found: dict[str, Any] = {}
    for name, how in declared.items():
        if how.source == "messages":
            found[name] = in_flight
            continue
        try:
            nodes = roles[how.role]
        except KeyError:
            raise ConfigError(f"SPEC_VARS gathers {name} from role {how.role!r}, which "
                                f"roles() does not name ({sorted(map(str, roles))})") from None
        if how.one:
            if len(nodes) != 1:
                raise ConfigError(f"SPEC_VARS gathers {name} from the one node of role "
                                    f"{how.role!r}, which has {len(nodes)}")
            found[name] = _value(how, nodes[0], views, logs, up)
        else:
            found[name] = {node: _value(how, node, views, logs, up) for node in nodes}
    return found
