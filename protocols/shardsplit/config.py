"""Options, workload and the per-run configuration shared by every shard split node.

The workload is plain data drawn once per run from the workload stream: the
key ranges, which shard each split divides and when, and every client's
operations with their think times. A core never draws a random number.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tlasim.protocols.defaults import OptionsBase
from tlasim.protocols.definition import check_option_values
from tlasim.protocols.errors import ConfigError
from tlasim.protocols.frozen import FrozenRecord

COORD_ID = "coord"
GET, PUT = "get", "put"
# The value of a key nobody wrote, and the id of a client's operation 0.
NO_VALUE = FrozenRecord(c="-", n=0)


def write_id(client: str, n: int) -> FrozenRecord:
    """The id of client's n-th operation; for a write, also the value it writes."""
    return FrozenRecord(c=client, n=n)


@dataclass(frozen=True, slots=True)
class ShardSplitOptions(OptionsBase):
    key_count: int = 4  # keys k1..kN
    initial_shards: int = 1  # shards active at the start; they divide the keys evenly
    split_count: int = 2  # splits the coordinator runs, one at a time
    client_count: int = 3
    ops_per_client: int = 8
    get_ratio: float = 0.5  # chance an operation is a read
    think_ticks_max: int = 30  # a client waits 1..this many ticks before each operation
    split_start_max_ticks: int = 300  # each split is due at a tick drawn up to this
    apply_delay_ticks: int = 4  # a shard applies an accepted write this long after
    client_timeout_ticks: int = 30  # a client with no answer asks for the route again
    retry_backoff_ticks: int = 6  # a client told Retry waits this long
    coord_resend_ticks: int = 20  # the coordinator resends the current phase this often

    def __post_init__(self) -> None:
        check_option_values(self, ("get_ratio",), {"split_count": 0})
        if not 2 <= self.key_count <= 64:
            raise ConfigError(f"key_count={self.key_count}: must be between 2 and 64")
        if self.initial_shards > self.key_count:
            raise ConfigError(
                f"initial_shards={self.initial_shards}: must be at most key_count="
                f"{self.key_count} (every shard owns at least one key)"
            )
        if self.initial_shards + self.split_count > self.key_count:
            raise ConfigError(
                f"split_count={self.split_count}: each split adds a shard and every shard "
                f"needs a key, so initial_shards + split_count must be at most key_count="
                f"{self.key_count}"
            )
        if self.client_count > 32 or self.ops_per_client > 999:
            raise ConfigError("at most 32 clients and 999 operations per client")


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """One split: the parent, its two children (lower half, upper half), when it is due."""

    parent: str
    children: tuple[str, str]
    due_tick: int


@dataclass(frozen=True, slots=True)
class ClientOp:
    kind: str  # GET or PUT
    key: str
    think_ticks: int  # the client waits this long before invoking it


@dataclass(frozen=True, slots=True)
class ShardSplitConfig:
    """Everything a core knows: the cast, the ranges, the workload, the timing and the bug."""

    keys: tuple[str, ...]
    shards: tuple[str, ...]  # every shard, children included, in creation order
    initial_shards: tuple[str, ...]
    shard_keys: dict[str, tuple[str, ...]]  # the range a shard owns once active
    splits: tuple[SplitPlan, ...]  # in the order the coordinator runs them
    clients: tuple[str, ...]
    ops: dict[str, tuple[ClientOp, ...]]
    options: ShardSplitOptions
    bug: str | None = None

    def split_of(self, parent: str) -> SplitPlan | None:
        for plan in self.splits:
            if plan.parent == parent:
                return plan
        return None

    def parent_of(self, child: str) -> str | None:
        for plan in self.splits:
            if child in plan.children:
                return plan.parent
        return None

    def initial_routing(self) -> dict[str, str]:
        return {k: s for s in self.initial_shards for k in self.shard_keys[s]}


def key_ids(count: int) -> tuple[str, ...]:
    return tuple(f"k{i}" for i in range(1, count + 1))


def client_ids(count: int) -> tuple[str, ...]:
    return tuple(f"c{i}" for i in range(1, count + 1))


def _halves(keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    middle = (len(keys) + 1) // 2
    return keys[:middle], keys[middle:]


def build_config(
    options: ShardSplitOptions, bug: str | None, rng: random.Random
) -> ShardSplitConfig:
    """Draw the split plan and the clients' operations, from the workload stream only."""
    keys = key_ids(options.key_count)
    shard_keys: dict[str, tuple[str, ...]] = {}
    initial = tuple(f"s{i}" for i in range(1, options.initial_shards + 1))
    per = len(keys) / len(initial)
    for i, shard in enumerate(initial):
        shard_keys[shard] = keys[round(i * per) : round((i + 1) * per)]
    leaves = list(initial)
    splits = []
    due = 0
    for _ in range(options.split_count):
        splittable = [s for s in leaves if len(shard_keys[s]) >= 2]
        parent = rng.choice(splittable)
        low, high = _halves(shard_keys[parent])
        children = (f"s{len(shard_keys) + 1}", f"s{len(shard_keys) + 2}")
        shard_keys[children[0]], shard_keys[children[1]] = low, high
        leaves.remove(parent)
        leaves.extend(children)
        due = max(due, rng.randint(1, options.split_start_max_ticks))
        splits.append(SplitPlan(parent, children, due))
    clients = client_ids(options.client_count)
    ops = {
        client: tuple(
            ClientOp(
                kind=GET if rng.random() < options.get_ratio else PUT,
                key=rng.choice(keys),
                think_ticks=rng.randint(1, options.think_ticks_max),
            )
            for _ in range(options.ops_per_client)
        )
        for client in clients
    }
    return ShardSplitConfig(
        keys=keys,
        shards=tuple(shard_keys),
        initial_shards=initial,
        shard_keys=shard_keys,
        splits=tuple(splits),
        clients=clients,
        ops=ops,
        options=options,
        bug=bug,
    )
