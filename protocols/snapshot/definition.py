"""The snapshot transfer protocol as the simulator sees it (docs/snapshot-model.md)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from tlasim.protocols.base import Core
from tlasim.protocols.coverage import in_flight
from tlasim.protocols.defaults import ProtocolBase
from tlasim.protocols.derived import Derived, DerivedEach, per_node
from tlasim.protocols.snapshot import bugs
from tlasim.protocols.snapshot.client import SnapshotClient
from tlasim.protocols.snapshot.config import (
    RECEIVER_ID,
    SOURCE_ID,
    SnapshotConfig,
    SnapshotOptions,
    build_config,
)
from tlasim.protocols.snapshot.messages import SCHEMA
from tlasim.protocols.snapshot.oracles import SnapshotOracle
from tlasim.protocols.snapshot.receiver import Receiver
from tlasim.protocols.snapshot.source import Source

_VALUE = '[c: Clients \\cup {"-"}, n: Nat]'
_WRITE = f"[key: Keys, val: {_VALUE}]"


class SnapshotTransfer(ProtocolBase):
    name = "snapshot"
    summary = "snapshot transfer: a replica joins from a snapshot while the source keeps writing"
    spec_module = "SnapshotTransferMsg"
    net_lose_action = "NetLose"
    net_duplicate_action = "NetDuplicate"
    # Coverage counts which messages are in flight, not how many copies.
    COVERAGE_ABSTRACTION = MappingProxyType({"msgs": in_flight})
    variable_types: Mapping[str, str] = {
        "srcLog": f"Seq({_WRITE})",
        "srcSnap": "Int",
        "srcAcked": "SUBSET Chunks",
        "srcShipped": "Int",
        "srcUp": "BOOLEAN",
        "srcSynced": "BOOLEAN",
        "rcvState": '{"empty", "receiving", "replaying", "ready"}',
        "rcvSnap": "Int",
        "rcvChunks": "SUBSET Chunks",
        "rcvKv": f"[Keys -> {_VALUE}]",
        "rcvPos": "Int",
        "rcvReads": f"SUBSET [id: {_VALUE}, key: Keys, idx: Int]",
        "rcvUp": "BOOLEAN",
        "rcvSynced": "BOOLEAN",
        "clientOp": (
            f'[Clients -> [kind: {{"idle", "get", "put"}}, key: Keys \\cup {{"-"}}, id: {_VALUE}]]'
        ),
        "msgs": "[Msg -> Nat \\ {0}] (a bag)",
    }
    # Search mode draws from these; each shrinks toward its first bound.
    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]] = {
        "key_count": (2, 6),
        "chunk_count": (1, 2),
        "client_count": (1, 4),
        "ops_per_client": (1, 8),
        "get_ratio": (0.0, 0.8),
    }
    source_files: Sequence[str] = (
        "protocols/snapshot/source.py",
        "protocols/snapshot/receiver.py",
        "protocols/snapshot/client.py",
        "protocols/snapshot/messages.py",
        "protocols/snapshot/definition.py",
    )
    OPTIONS = SnapshotOptions
    BUGS = bugs.BUGS
    MESSAGES = SCHEMA

    def __init__(self) -> None:
        # The clients' operations, kept while each client's is the same
        # object (see protocols.derived).
        self._client_op: Derived[dict[str, Any]] = Derived(per_node)
        # What each node would recover to from its synced log, rebuilt by its
        # own `restore` (as the kernel does at a crash) only when the log changes.
        self._recovered: DerivedEach[Mapping[str, Any]] = DerivedEach(self._recover)
        self._synced: DerivedEach[bool] = DerivedEach(_durable_vars_agree)

    def configure(
        self, options: SnapshotOptions, bug: str | None, workload_rng: random.Random
    ) -> SnapshotConfig:
        return build_config(options, self.check_bug(bug), workload_rng)

    def node_ids(self, config: SnapshotConfig) -> tuple[str, ...]:
        return (SOURCE_ID, RECEIVER_ID, *config.clients)

    def crash_nodes(self, config: SnapshotConfig) -> tuple[str, ...]:
        return (SOURCE_ID, RECEIVER_ID)

    def make_core(self, config: SnapshotConfig, node_id: str) -> Core:
        if node_id == SOURCE_ID:
            return Source(config)
        if node_id == RECEIVER_ID:
            return Receiver(config)
        return SnapshotClient(node_id, config)

    def crash_step(self, node_id: str) -> tuple[str, Mapping[str, Any]]:
        return ("SrcCrash" if node_id == SOURCE_ID else "RcvCrash"), {}

    def spec_constants(self, config: SnapshotConfig) -> Mapping[str, Any]:
        return {
            "Keys": frozenset(config.keys),
            "Clients": frozenset(config.clients),
            "ChunkOrder": tuple(config.chunks),
            "ChunkKeys": {c: frozenset(keys) for c, keys in config.chunk_keys.items()},
            "MaxOps": config.options.ops_per_client,
        }

    def spec_vars(
        self,
        config: SnapshotConfig,
        views: Mapping[str, Mapping[str, Any]],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        up: Mapping[str, bool],
        in_flight: Mapping[Hashable, int],
    ) -> dict[str, Any]:
        src, rcv = views[SOURCE_ID], views[RECEIVER_ID]
        return {
            **src,
            "srcUp": up[SOURCE_ID],
            "srcSynced": self._node_synced(config, SOURCE_ID, Source.DURABLE_VARS, src, logs),
            **rcv,
            "rcvUp": up[RECEIVER_ID],
            "rcvSynced": self._node_synced(config, RECEIVER_ID, Receiver.DURABLE_VARS, rcv, logs),
            "clientOp": self._client_op(
                config.clients, *[views[c]["clientOp"] for c in config.clients]
            ),
            "msgs": in_flight,
        }

    def _node_synced(
        self,
        config: SnapshotConfig,
        node_id: str,
        durable: tuple[str, ...],
        view: Mapping[str, Any],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
    ) -> bool:
        """Whether the node's durable variables are what its synced log recovers to.

        The spec's durable variables are what a crash keeps, so a change to one
        that the step did not sync (an unsynced or missing `Persist`, a record
        `restore` reads back differently) is a step the spec rejects, at once,
        and not only at a crash that happens to fall before the next sync.
        """
        recovered = self._recovered(node_id, config, node_id, logs[node_id])
        return self._synced(node_id, durable, view, recovered)

    def _recover(
        self, config: SnapshotConfig, node_id: str, log: Sequence[Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        core = self.make_core(config, node_id)
        core.restore(tuple(log))
        return core.view()

    def make_oracle(self, config: SnapshotConfig) -> SnapshotOracle:
        return SnapshotOracle(config)

    def settle_tick(self, config: SnapshotConfig) -> int:
        """By this tick the receiver has joined and every client would have invoked
        its last operation had each earlier one answered at once."""
        busiest = max((sum(op.think_ticks for op in ops) for ops in config.ops.values()), default=0)
        return max(config.join_tick, busiest)


def _durable_vars_agree(
    durable: tuple[str, ...], view: Mapping[str, Any], recovered: Mapping[str, Any]
) -> bool:
    return all(view[name] == recovered[name] for name in durable)


DEFINITION = SnapshotTransfer()
