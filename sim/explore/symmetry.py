"""Symmetry reduction: states that differ only in which interchangeable node is which.

Theory of operation: a protocol may declare groups of interchangeable nodes
(`symmetric_nodes`), as a TLA+ spec declares a constant a symmetry set. Its
promise is the one TLC's SYMMETRY asks of a spec: the protocol does not
depend on the nodes' names, nor on the order in which its configuration
lists them, so renaming the nodes in a run gives a run. A configuration
may still tell the nodes apart by its workload (an RM that votes No, a
client with its own operations); renaming those nodes would not give a run
of this configuration. So the explorer keeps only the permutations of the
groups that map the configuration to itself, reading a list of one group's
nodes as a set (the stabiliser), and checks that on the configuration's
canonical encoding (sim/explore/canonical.py).

A state's name is then the least digest over the images of the state under
those permutations (the identity included): every core, disk, timer and
message in flight is walked with each node id replaced by its image, the
configuration left as it is, since every kept permutation maps it to
itself. States in one orbit get one name and are expanded once. Every
stored state is still a real state reached by its schedule, so a
counterexample replays as it is. The properties checked must be symmetric
too; an oracle that read the nodes' names would break the promise.

A node id may only ever appear as a whole string: a string that holds one
inside it ("rm1-log") would not be renamed, so meeting one is an error that
names it, never a silent merge of states that differ.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError
from tlasim.sim.explore.canonical import EmbeddedName, Renaming, canonical, state_digest

# Beyond this many permutations, naming a state would cost more than the
# states it saves: a group of 7 nodes alone has 5,040.
MAX_PERMUTATIONS = 720


@dataclass(frozen=True, slots=True)
class Symmetry:
    """The permutations of a configuration's interchangeable nodes that leave it as it is."""

    groups: tuple[tuple[str, ...], ...]  # as the protocol declared them
    renamings: tuple[Renaming, ...]  # the kept permutations, the identity first
    # When every permutation of the groups is kept, a state's nodes can be
    # put in order first, and only the renamings that order them tried.
    sorting: _Sorting | None = None

    @property
    def size(self) -> int:
        """How many permutations are kept, the identity included."""
        return len(self.renamings)

    def digest(self, state: Any) -> bytes:
        """The least digest of `state`'s images: one name for its whole orbit."""
        return self.name(state)[0]

    def name(self, state: Any, own: Mapping[str, Any] | None = None) -> tuple[bytes, int]:
        """The least digest of `state`'s images, and which renaming gives it.

        Given `own`, each node's own part of the state, and every permutation
        kept, only the renamings that put the group's nodes in the order of
        their signatures are tried: the least of those images is as much a
        name of the whole orbit, and costs one walk of the state instead of
        one per permutation, unless nodes tie."""
        candidates: Iterable[int] = range(len(self.renamings))
        if own is not None and self.sorting is not None:
            candidates = self.sorting.candidates(own)
        best: tuple[bytes, int] | None = None
        for index in candidates:
            digest = state_digest(state, self.renamings[index])
            if best is None or digest < best[0]:
                best = (digest, index)
        assert best is not None
        return best

    def translation(self, source: int, target: int) -> dict[str, str]:
        """How node ids read in another member of an orbit.

        A state named through renaming `source` and one named through
        renaming `target` under one digest map to the same image; this maps
        each node id of the first to the id that plays its part in the
        second."""
        there = self.renamings[source].names
        back = {image: name for name, image in self.renamings[target].names.items()}
        return {name: back[image] for name, image in there.items()}

    def describe(self) -> str:
        groups = "; ".join(", ".join(group) for group in self.groups)
        if self.size == 1:
            return f"none applies: the configuration tells {groups} apart"
        return f"{self.size} permutations of {groups}"


def symmetry_of(protocol: ProtocolDefinition, config: Any) -> Symmetry:
    """The symmetry `protocol` declares for `config`, cut to what `config` admits.

    Raises ConfigError when the declaration does not fit the configuration
    or the configuration holds a node id inside a longer string."""
    groups = _declared_groups(protocol, config)
    names = sorted(node for group in groups for node in group)
    try:
        identity = Renaming({n: n for n in names}, unchanged=(config,))
        as_declared = canonical(config, _unordered({n: n for n in names}))
        kept = [identity]
        for images in _permutations(groups):
            if images == {n: n for n in names}:
                continue
            if canonical(config, _unordered(images)) == as_declared:
                kept.append(Renaming(images, unchanged=(config,)))
    except EmbeddedName as embedded:
        raise ConfigError(f"{protocol.name}: in its configuration, {embedded}") from None
    every = math.prod(math.factorial(len(group)) for group in groups)
    sorting = _Sorting(groups, kept, config) if len(kept) == every > 1 else None
    return Symmetry(groups, tuple(kept), sorting)


class _Sorting:
    """Orders a group's nodes by a signature that no renaming changes.

    A node's signature is the digest of its own part of the state with its
    own id written as one placeholder and every other interchangeable id as
    its group's placeholder. Renaming a state renames its nodes and leaves
    their signatures as they were, so the renamings that sort a state's
    nodes by signature give the same set of images for every member of its
    orbit, and the least of them names the orbit. Nodes with equal
    signatures may go either way round: every such order is tried."""

    def __init__(
        self, groups: tuple[tuple[str, ...], ...], kept: list[Renaming], config: Any
    ) -> None:
        self.groups = groups
        self.index = {_key(renaming.names): index for index, renaming in enumerate(kept)}
        placeholders = {
            node: f"\0group{number}" for number, group in enumerate(groups) for node in group
        }
        self.signature = {
            node: Renaming({**placeholders, node: "\0self"}, unchanged=(config,))
            for node in placeholders
        }

    def candidates(self, own: Mapping[str, Any]) -> list[int]:
        per_group: list[list[dict[str, str]]] = []
        for group in self.groups:
            ranked = sorted((state_digest(own[node], self.signature[node]), node)
                            for node in group)
            ties = [[node for _, node in run]
                    for _, run in itertools.groupby(ranked, key=lambda pair: pair[0])]
            orders = [
                dict(zip([node for part in choice for node in part], group, strict=True))
                for choice in itertools.product(*(itertools.permutations(t) for t in ties))
            ]
            per_group.append(orders)
        candidates = []
        for choice in itertools.product(*per_group):
            images: dict[str, str] = {}
            for part in choice:
                images.update(part)
            candidates.append(self.index[_key(images)])
        return candidates


def _key(names: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(names.items()))


def _unordered(images: dict[str, str]) -> Renaming:
    return Renaming(images, unordered=True)


def _declared_groups(protocol: ProtocolDefinition, config: Any) -> tuple[tuple[str, ...], ...]:
    declared: Sequence[Sequence[str]] = protocol.symmetric_nodes(config)
    groups = tuple(tuple(group) for group in declared)
    nodes = set(protocol.node_ids(config))
    seen: set[str] = set()
    count = 1
    for group in groups:
        for node in group:
            if node not in nodes:
                raise ConfigError(
                    f"{protocol.name}: symmetric_nodes names {node!r}, which is not a node"
                )
            if node in seen:
                raise ConfigError(f"{protocol.name}: symmetric_nodes names {node!r} twice")
            seen.add(node)
        count *= math.factorial(len(group))
    if not groups:
        raise ConfigError(
            f"{protocol.name} declares no interchangeable nodes (symmetric_nodes), "
            "so --symmetry has nothing to merge"
        )
    if count > MAX_PERMUTATIONS:
        raise ConfigError(
            f"{protocol.name}: {count} permutations of its interchangeable nodes, more than "
            f"{MAX_PERMUTATIONS}: naming each state would cost more than symmetry saves"
        )
    return groups


def _permutations(groups: tuple[tuple[str, ...], ...]) -> Iterator[dict[str, str]]:
    """Every renaming that permutes each group within itself."""
    per_group = [
        [dict(zip(group, image, strict=True)) for image in itertools.permutations(group)]
        for group in groups
    ]
    for choice in itertools.product(*per_group):
        images: dict[str, str] = {}
        for part in choice:
            images.update(part)
        yield images
