"""The shard split protocol as the simulator sees it (docs/shardsplit-model.md)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from tlasim.protocols.base import Core
from tlasim.protocols.coverage import in_flight
from tlasim.protocols.defaults import ProtocolBase
from tlasim.protocols.derived import Derived, DerivedEach, per_node
from tlasim.protocols.shardsplit import bugs
from tlasim.protocols.shardsplit.client import Client
from tlasim.protocols.shardsplit.config import (
    COORD_ID,
    ShardSplitConfig,
    ShardSplitOptions,
    build_config,
)
from tlasim.protocols.shardsplit.coordinator import Coordinator
from tlasim.protocols.shardsplit.messages import SCHEMA
from tlasim.protocols.shardsplit.oracles import ShardSplitOracle
from tlasim.protocols.shardsplit.shard import Shard

_VALUE = '[c: Clients \\cup {"-"}, n: Nat]'
_SHARD_STATES = '{"absent", "splitting", "active", "frozen", "retired"}'
_PHASES = '{"idle", "freezing", "retiring", "activating", "done"}'
# The spec variables each core's `restore` rebuilds from its synced log (the
# "durable" column of docs/shardsplit-model.md); the rest of a view (the
# coordinator's collected answers, a shard's pending writes) is volatile. The
# mapping holds these to the synced log at every step (coordSynced, shardSynced).
_COORD_DURABLE = ("routing", "splitPhase")
_SHARD_DURABLE = ("shardState", "kv", "applied")


class ShardSplit(ProtocolBase):
    name = "shardsplit"
    summary = "shard split: a sharded key-value store splitting shards under client load"
    spec_module = "ShardSplitMsg"
    net_lose_action = "NetLose"
    net_duplicate_action = "NetDuplicate"
    # Coverage counts which messages are in flight, not how many copies.
    COVERAGE_ABSTRACTION = MappingProxyType({"msgs": in_flight})
    variable_types: Mapping[str, str] = {
        "routing": "[Keys -> Shards]",
        "splitPhase": f"[Parents -> {_PHASES}]",
        "coordAcks": "[Parents -> SUBSET Shards]",
        "coordUp": "BOOLEAN",
        "coordSynced": "BOOLEAN",
        "shardState": f"[Shards -> {_SHARD_STATES}]",
        "kv": f"[Shards -> [Keys -> {_VALUE}]]",
        "applied": f"[Shards -> SUBSET {_VALUE}]",
        "pending": f"[Shards -> SUBSET [key: Keys, val: {_VALUE}]]",
        "shardUp": "[Shards -> BOOLEAN]",
        "shardSynced": "[Shards -> BOOLEAN]",
        "clientRoute": "[Clients -> [Keys -> Shards]]",
        "clientOp": (
            f'[Clients -> [kind: {{"idle", "get", "put"}}, key: Keys \\cup {{"-"}}, id: {_VALUE}]]'
        ),
        "msgs": "[Msg -> Nat \\ {0}] (a bag)",
    }
    # Search mode draws from these; each shrinks toward its first bound: few
    # keys, one split, one client doing few operations.
    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]] = {
        "key_count": (3, 6),
        "split_count": (1, 2),
        "client_count": (1, 4),
        "ops_per_client": (1, 8),
        "get_ratio": (0.0, 0.8),
    }
    source_files: Sequence[str] = (
        "protocols/shardsplit/coordinator.py",
        "protocols/shardsplit/shard.py",
        "protocols/shardsplit/client.py",
        "protocols/shardsplit/messages.py",
        "protocols/shardsplit/definition.py",
    )
    OPTIONS = ShardSplitOptions
    BUGS = bugs.BUGS
    MESSAGES = SCHEMA

    def __init__(self) -> None:
        # Each variable gathered from every shard or client, and the shards'
        # liveness, kept while every node's part is the same object (see
        # protocols.derived).
        self._gathered: dict[str, Derived[dict[str, Any]]] = {
            name: Derived(per_node)
            for name in ("shardState", "kv", "applied", "pending", "clientRoute", "clientOp")
        }
        self._shard_up: Derived[dict[str, Any]] = Derived(per_node)
        self._shard_synced: Derived[dict[str, Any]] = Derived(per_node)
        # What each node would recover to from its synced log, rebuilt by its
        # own `restore` (as the kernel does at a crash) only when the log changes.
        self._recovered: DerivedEach[Mapping[str, Any]] = DerivedEach(self._recover)
        self._synced: DerivedEach[bool] = DerivedEach(_durable_vars_agree)

    def configure(
        self, options: ShardSplitOptions, bug: str | None, workload_rng: random.Random
    ) -> ShardSplitConfig:
        return build_config(options, self.check_bug(bug), workload_rng)

    def node_ids(self, config: ShardSplitConfig) -> tuple[str, ...]:
        return (COORD_ID, *config.shards, *config.clients)

    def crash_nodes(self, config: ShardSplitConfig) -> tuple[str, ...]:
        return (COORD_ID, *config.shards)

    def make_core(self, config: ShardSplitConfig, node_id: str) -> Core:
        if node_id == COORD_ID:
            return Coordinator(config)
        if node_id in config.clients:
            return Client(node_id, config)
        return Shard(node_id, config)

    def crash_step(self, node_id: str) -> tuple[str, Mapping[str, Any]]:
        if node_id == COORD_ID:
            return "CoordCrash", {}
        return "ShardCrash", {"shard": node_id}

    def spec_constants(self, config: ShardSplitConfig) -> Mapping[str, Any]:
        return {
            "Keys": frozenset(config.keys),
            "Shards": frozenset(config.shards),
            "Clients": frozenset(config.clients),
            "InitialShards": frozenset(config.initial_shards),
            "ShardKeys": {s: frozenset(keys) for s, keys in config.shard_keys.items()},
            "Children": {p.parent: frozenset(p.children) for p in config.splits},
            "SplitOrder": tuple(p.parent for p in config.splits),
            "MaxOps": config.options.ops_per_client,
        }

    def spec_vars(
        self,
        config: ShardSplitConfig,
        views: Mapping[str, Mapping[str, Any]],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        up: Mapping[str, bool],
        in_flight: Mapping[Hashable, int],
    ) -> dict[str, Any]:
        coord = views[COORD_ID]
        shards, clients = config.shards, config.clients
        shard_views = [views[s] for s in shards]
        client_views = [views[c] for c in clients]
        each = self._each
        return {
            "routing": coord["routing"],
            "splitPhase": coord["splitPhase"],
            "coordAcks": coord["coordAcks"],
            "coordUp": up[COORD_ID],
            "coordSynced": self._node_synced(config, COORD_ID, _COORD_DURABLE, coord, logs),
            "shardState": each(shards, shard_views, "shardState"),
            "kv": each(shards, shard_views, "kv"),
            "applied": each(shards, shard_views, "applied"),
            "pending": each(shards, shard_views, "pending"),
            "shardUp": self._shard_up(shards, *map(up.__getitem__, shards)),
            "shardSynced": self._shard_synced(
                shards,
                *[
                    self._node_synced(config, s, _SHARD_DURABLE, view, logs)
                    for s, view in zip(shards, shard_views, strict=True)
                ],
            ),
            "clientRoute": each(clients, client_views, "clientRoute"),
            "clientOp": each(clients, client_views, "clientOp"),
            "msgs": in_flight,
        }

    def _each(
        self, nodes: Sequence[str], node_views: list[Mapping[str, Any]], name: str
    ) -> dict[str, Any]:
        """Variable `name` gathered from the views of `nodes`, kept while
        every node's part is the same object."""
        return self._gathered[name](nodes, *[view[name] for view in node_views])

    def _node_synced(
        self,
        config: ShardSplitConfig,
        node_id: str,
        durable: tuple[str, ...],
        view: Mapping[str, Any],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
    ) -> bool:
        """Whether the node's durable variables are what its synced log recovers to.

        The spec's durable variables are what a crash keeps, so a change to one
        that the step did not sync (an unsynced or missing `Persist`, a record
        `restore` reads back differently) is a step the spec rejects at once,
        and not only at a crash that happens to fall before the next sync.
        """
        recovered = self._recovered(node_id, config, node_id, logs[node_id])
        return self._synced(node_id, durable, view, recovered)

    def _recover(
        self, config: ShardSplitConfig, node_id: str, log: Sequence[Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        core = self.make_core(config, node_id)
        core.restore(tuple(log))
        return core.view()

    def make_oracle(self, config: ShardSplitConfig) -> ShardSplitOracle:
        return ShardSplitOracle(config)

    def settle_tick(self, config: ShardSplitConfig) -> int:
        """By this tick every split is due and every client would have invoked its
        last operation had each earlier one answered at once."""
        last_split = max((p.due_tick for p in config.splits), default=0)
        busiest = max((sum(op.think_ticks for op in ops) for ops in config.ops.values()), default=0)
        return max(last_split, busiest)


def _durable_vars_agree(
    durable: tuple[str, ...], view: Mapping[str, Any], recovered: Mapping[str, Any]
) -> bool:
    return all(view[name] == recovered[name] for name in durable)


DEFINITION = ShardSplit()
