"""Transition profiles: one step of a spec or of a run, seen from one node.

Theory of operation. Two systems are compared here, the spec (every state TLC
reaches at small constants) and the correct implementation (every step
`explore` and seeded runs take at the same constants). Whole states are far
too fine to compare, since a run reaches few of the spec's interleavings.
So each step is cut down to what one node sees of it:

- a node's *local state* is its part of the spec variables, as the model's
  declaration says (`ConformanceModel.ownership`): the TM's `tmState`, RM
  r's `rmState[t][r]` for every t, and so on;
- a step that changes some nodes' local states gives one profile per such
  node: (action, the node's role, its local state before, after);
- a step that changes no local state (a send, a loss, a message consumed
  and ignored) gives one profile: the messages it took and added, and the
  local states of the nodes those messages name.

Node names are replaced by their role and profiles are brought to one
canonical form under the protocol's interchangeable nodes, so a profile of
r1 and the same one of r2 are one profile. Values are first normalised to
plain tuples, so the spec's parsed TLA+ values and the implementation's
Python values compare equal exactly when they are the same TLA+ value (a
sequence is the function on 1..n, as in TLA+).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tlasim.protocols.errors import ConfigError
from tlasim.tracing.tla.parse import ModelValue

NETWORK = "network"
FIELD = "field:"  # in a message declaration: the nodes this field of the message names
NET_ROLE = "net"

# Normalised values: atoms (int, str), ("bool", b), ("fn", pairs) or ("set", items).
Norm = Any


def normalise(value: Any) -> Norm:
    """A plain, hashable, order-independent form of a TLA+-like value."""
    if isinstance(value, bool):
        return ("bool", value)  # tagged: TLC holds TRUE and 1 apart, Python does not
    if isinstance(value, (int, str)):
        return value
    if isinstance(value, ModelValue):
        return value.name
    if isinstance(value, Mapping):
        pairs = [(normalise(k), normalise(v)) for k, v in value.items()]
        return ("fn", tuple(sorted(pairs, key=repr)))
    if isinstance(value, (frozenset, set)):
        return ("set", tuple(sorted((normalise(v) for v in value), key=repr)))
    if isinstance(value, (tuple, list)):
        return ("fn", tuple((i, normalise(v)) for i, v in enumerate(value, start=1)))
    raise ConfigError(f"cannot compare a value of type {type(value).__name__}: {value!r:.80}")


def rename(value: Norm, names: Mapping[str, str]) -> Norm:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == "bool":
            return value
        if len(value) == 2 and value[0] in ("fn", "set"):
            items = value[1]
            if value[0] == "fn":
                renamed = [(rename(k, names), rename(v, names)) for k, v in items]
            else:
                renamed = [rename(v, names) for v in items]
            return (value[0], tuple(sorted(renamed, key=repr)))
        return tuple(rename(v, names) for v in value)
    return value


def _lookup(value: Any, key: str) -> tuple[bool, Any]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if (k.name if isinstance(k, ModelValue) else k) == key:
                return True, v
    return False, None


def _project(value: Any, path: Sequence[str], node: str) -> tuple[bool, Any]:
    """The node's part of `value` along `path` ("node" picks the node's entry,
    "*" keeps every key); False when the node has no part there."""
    if not path:
        return True, value
    head, rest = path[0], path[1:]
    if head == "node":
        found, inner = _lookup(value, node)
        return _project(inner, rest, node) if found else (False, None)
    if not isinstance(value, Mapping):
        return False, None
    parts = {}
    for k, v in value.items():
        found, inner = _project(v, rest, node)
        if not found:
            return False, None
        parts[k] = inner
    return True, parts


@dataclass(frozen=True, slots=True)
class Ownership:
    """Which node owns which part of each variable: the model's declaration."""

    # variable -> a node id that owns it whole, or a path such as ("*", "node")
    owners: Mapping[str, str | tuple[str, ...]]
    network: str | None  # the variable holding the messages in flight (a bag)
    # message type (or "*": every type) -> nodes a message of it concerns
    # besides those its fields name: the fixed-id sender or receiver.
    message_nodes: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict)

    @staticmethod
    def parse(declared: Mapping[str, Any], where: str,
              messages: Mapping[str, Any] | None = None) -> Ownership:
        owners: dict[str, str | tuple[str, ...]] = {}
        network = None
        for var, how in declared.items():
            if not isinstance(how, str) or not how:
                raise ConfigError(f"{where}: nodes.{var} must be a node id, a path or "
                                  f"{NETWORK!r}, not {how!r:.60}")
            if how == NETWORK:
                if network is not None:
                    raise ConfigError(f"{where}: two network variables, {network} and {var}")
                network = var
            elif how.startswith("["):
                path = tuple(p.strip() for p in how.strip("[]").split("]["))
                if path.count("node") != 1 or any(p not in ("node", "*") for p in path):
                    raise ConfigError(f"{where}: nodes.{var} = {how!r}: a path is made of "
                                      "[node] and [*] and names [node] once")
                owners[var] = path
            else:
                owners[var] = how
        message_nodes: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        for kind, nodes in (messages or {}).items():
            # A list concerns the nodes it names both ways; {"from", "to"}
            # says who sends a message (a step that adds it is seen from
            # them) and who takes it (a step that takes it).
            sides = (nodes.get("from", []), nodes.get("to", [])) if isinstance(nodes, dict) \
                else (nodes, nodes)
            if (isinstance(nodes, dict) and set(nodes) - {"from", "to"}) or not all(
                    isinstance(side, list) and all(isinstance(n, str) and n for n in side)
                    for side in sides):
                raise ConfigError(f"{where}: messages.{kind} must be a list of node ids "
                                  "(or field:F), or an object of from and to lists")
            message_nodes[kind] = (tuple(sides[0]), tuple(sides[1]))
        if message_nodes and network is None:
            raise ConfigError(f"{where}: messages are declared but no variable is the network")
        return Ownership(owners, network, message_nodes)

    def local(self, state: Mapping[str, Any], node: str) -> Norm:
        parts = []
        for var, how in self.owners.items():
            if isinstance(how, str):
                if how == node:
                    parts.append((var, normalise(state[var])))
                continue
            found, part = _project(state[var], how, node)
            if found:
                parts.append((var, normalise(part)))
        return tuple(parts)


@dataclass(frozen=True, slots=True)
class Profile:
    action: str
    role: str
    before: Norm  # the node's local state, or for a network profile the context
    after: Norm  # the node's local state, or the messages taken and added

    def render(self, action: str | None = None) -> str:
        """The profile as text; `action` names it otherwise (the action TLC's
        label is inferred to stand for)."""
        action = self.action if action is None else action
        if self.role == NET_ROLE:
            taken, added = self.after
            context = "; ".join(f"{role} {render(local)}" for role, local in self.before)
            moved = []
            if taken:
                moved.append("takes " + ", ".join(render(m) for m in taken))
            if added:
                moved.append("adds " + ", ".join(render(m) for m in added))
            text = " and ".join(moved) or "changes nothing"
            return f"{action}: {text}" + (f" (with {context})" if context else "")
        changed = [
            f"{var}: {render(old)} -> {render(new)}"
            for (var, old), (_, new) in zip(self.before, self.after, strict=False)
            if old != new
        ]
        return f"{action} at {self.role} {render(self.before)}: {'; '.join(changed)}"


def render(value: Norm) -> str:
    """A short TLA+-like text of a normalised value, for people."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "bool":
        return "TRUE" if value[1] else "FALSE"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "set":
        return "{" + ", ".join(render(v) for v in value[1]) + "}"
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "fn":
        items = value[1]
        if items and all(isinstance(k, str) for k, _ in items):
            return "[" + ", ".join(f"{k} |-> {render(v)}" for k, v in items) + "]"
        return "(" + " @@ ".join(f"{render(k)} :> {render(v)}" for k, v in items) + ")"
    if isinstance(value, tuple):  # a local state: (variable, value) pairs
        return "[" + ", ".join(f"{var}={render(v)}" for var, v in value) + "]"
    return repr(value)


class Profiler:
    """Cuts steps into canonical profiles for one system's nodes and symmetry."""

    def __init__(self, ownership: Ownership, nodes: Sequence[str],
                 symmetric: Sequence[Sequence[str]],
                 network_actions: Collection[str] = ()) -> None:
        self.ownership = ownership
        self.network_actions = frozenset(network_actions)
        self.nodes = tuple(nodes)
        self.role: dict[str, str] = {n: n for n in nodes}
        for group in symmetric:
            if not set(group) <= set(nodes):
                continue  # interchangeable values (addresses, say), not nodes
            label = _group_label(group)
            for n in group:
                self.role[n] = label
        # Every renaming of the interchangeable nodes and values; canonical =
        # least text.
        per_group = [
            [dict(zip(group, perm, strict=True)) for perm in itertools.permutations(group)]
            for group in symmetric if len(group) > 1
        ]
        self._renamings = [
            {k: v for part in combo for k, v in part.items()}
            for combo in itertools.product(*per_group)
        ] or [{}]
        self._canonical: dict[Any, Profile] = {}
        self._ids = frozenset(nodes)
        unknown = sorted({n for sides in ownership.message_nodes.values() for side in sides
                          for n in side if not n.startswith(FIELD)} - self._ids)
        if unknown:
            raise ConfigError(f"messages name {', '.join(unknown)}, not nodes of this run "
                              f"({', '.join(nodes)})")

    def locals_of(self, state: Mapping[str, Any]) -> dict[str, Norm]:
        return {n: self.ownership.local(state, n) for n in self.nodes}

    def profiles(self, action: str, before: Mapping[str, Any], after: Mapping[str, Any],
                 locals_before: Mapping[str, Norm] | None = None,
                 locals_after: Mapping[str, Norm] | None = None) -> Iterator[Profile]:
        old = locals_before if locals_before is not None else self.locals_of(before)
        new = locals_after if locals_after is not None else self.locals_of(after)
        changed = [n for n in self.nodes if old[n] != new[n]]
        for n in changed:
            yield self._canonical_profile(action, n, old[n], new[n])
        if changed or self.ownership.network is None:
            return
        taken, added = _bag_delta(before[self.ownership.network],
                                  after[self.ownership.network])
        if action in self.network_actions:
            # The network loses or copies any message at any moment: which
            # node's state it happens beside is no rule of any node.
            yield self._canonical_net(action, None, None, (taken, added))
            return
        named = sorted({*(n for m in added for n in self._concerned(m, 0)),
                        *(n for m in taken for n in self._concerned(m, 1))})
        # One profile per node the messages name, not one for all of them:
        # the product of several nodes' states would be mostly combinations
        # no single node's rule is about.
        if not named:
            yield self._canonical_net(action, None, None, (taken, added))
        for n in named:
            yield self._canonical_net(action, n, old[n], (taken, added))

    def _concerned(self, message: Norm, side: int) -> Iterator[str]:
        """The nodes a message concerns on one side (0: the step adds it, 1:
        takes it): those declared for its type (a node id, or `field:F`, the
        nodes field F names), or else every node it names."""
        declared = self.ownership.message_nodes
        everywhere = declared.get("*")
        if everywhere is not None:
            yield from everywhere[side]
        entries = declared.get(message_kind(message))
        if entries is None or not any(e.startswith(FIELD) for e in (*entries[0], *entries[1])):
            # No field declared: every node the message names anywhere.
            yield from _names_in(message, self._ids)
        for entry in entries[side] if entries is not None else ():
            if entry.startswith(FIELD):
                yield from _names_in(_field(message, entry[len(FIELD):]), self._ids)
            else:
                yield entry

    def _canonical_profile(self, action: str, node: str, old: Norm, new: Norm) -> Profile:
        key = (action, node, old, new)
        cached = self._canonical.get(key)
        if cached is None:
            best = min(
                ((rename(old, names), rename(new, names)) for names in self._renamings
                 if names.get(node, node) == self._first_of_role(node)),
                key=repr,
                default=(old, new),
            )
            cached = self._canonical[key] = Profile(action, self.role[node], *best)
        return cached

    def canonical_local(self, node: str, local: Norm) -> tuple[str, Norm]:
        """The node's role and its local state in canonical form."""
        profile = self._canonical_profile("", node, local, local)
        return profile.role, profile.before

    def _first_of_role(self, node: str) -> str:
        # A node is renamed to the first of its role, so its own id is fixed.
        return next(n for n in self.nodes if self.role[n] == self.role[node])

    def _canonical_net(self, action: str, node: str | None, local: Norm,
                       moved: tuple[tuple[Norm, ...], tuple[Norm, ...]]) -> Profile:
        key = (action, node, local, moved)
        cached = self._canonical.get(key)
        if cached is None:
            taken, added = moved
            first = None if node is None else self._first_of_role(node)
            best = min(
                ((rename(local, names),
                  tuple(sorted((rename(m, names) for m in taken), key=repr)),
                  tuple(sorted((rename(m, names) for m in added), key=repr)))
                 for names in self._renamings
                 if node is None or names.get(node, node) == first),
                key=repr,
            )
            context = () if node is None else ((self.role[node], best[0]),)
            cached = self._canonical[key] = Profile(action, NET_ROLE, context, best[1:])
        return cached


def _field(message: Norm, name: str) -> Norm:
    if isinstance(message, tuple) and len(message) == 2 and message[0] == "fn":
        for key, value in message[1]:
            if key == name:
                return value
    return None


def message_kind(message: Norm) -> str:
    """A message's type field, when it has one: what tells messages apart."""
    if isinstance(message, tuple) and len(message) == 2 and message[0] == "fn":
        for key, value in message[1]:
            if key == "type" and isinstance(value, str):
                return value
    return "message"


def _group_label(group: Sequence[str]) -> str:
    prefix = _common_prefix(group)
    return (prefix or "node") + "*"


def _common_prefix(names: Sequence[str]) -> str:
    prefix = names[0] if names else ""
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return prefix.rstrip("0123456789")


def _bag_delta(old: Any, new: Any) -> tuple[tuple[Norm, ...], tuple[Norm, ...]]:
    """The messages a step took out of the bag and put in, one entry per copy."""
    before = _counts(old)
    after = _counts(new)
    taken: list[Norm] = []
    added: list[Norm] = []
    for m in sorted(set(before) | set(after), key=repr):
        diff = after.get(m, 0) - before.get(m, 0)
        (added if diff > 0 else taken).extend([m] * abs(diff))
    return tuple(taken), tuple(added)


def _counts(bag: Any) -> dict[Norm, int]:
    if isinstance(bag, Mapping):
        return {normalise(m): int(c) for m, c in bag.items()}
    if isinstance(bag, (tuple, list)) and not bag:
        return {}  # TLC prints the empty bag as << >>
    raise ConfigError(f"the network variable is not a bag: {bag!r:.80}")


def _names_in(value: Norm, ids: frozenset[str]) -> Iterable[str]:
    if isinstance(value, str):
        if value in ids:
            yield value
    elif isinstance(value, tuple):
        for part in value:
            yield from _names_in(part, ids)
