"""Options, workload and the per-run configuration of a snapshot transfer run.

The workload is plain data drawn once per run from the workload stream: when
the receiver joins and every client's operations with their think times.
Clients write to the source and read from the receiver.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tlasim.protocols.defaults import OptionsBase
from tlasim.protocols.definition import check_option_values
from tlasim.protocols.errors import ConfigError
from tlasim.protocols.frozen import FrozenRecord

SOURCE_ID, RECEIVER_ID = "src", "rcv"
GET, PUT = "get", "put"
NO_VALUE = FrozenRecord(c="-", n=0)  # the value of a key nobody wrote
NO_POSITION = -1  # no snapshot, or no log position yet


def write_id(client: str, n: int) -> FrozenRecord:
    """The id of client's n-th operation; for a write, also the value it writes."""
    return FrozenRecord(c=client, n=n)


@dataclass(frozen=True, slots=True)
class SnapshotOptions(OptionsBase):
    key_count: int = 6
    chunk_count: int = 3  # the keys are divided into this many chunks
    client_count: int = 3
    ops_per_client: int = 8
    get_ratio: float = 0.5  # chance an operation is a read (at the receiver)
    think_ticks_max: int = 30  # a client waits 1..this many ticks before each operation
    join_tick_max: int = 150  # the receiver joins at a tick drawn up to this
    client_timeout_ticks: int = 30  # a client with no answer resends its operation
    retry_backoff_ticks: int = 8  # a client told Retry waits this long
    rcv_join_ticks: int = 40  # a receiver not ready re-sends Join this often
    src_resend_ticks: int = 20  # the source resends chunks and records this often

    def __post_init__(self) -> None:
        check_option_values(self, ("get_ratio",))
        if self.key_count > 64:
            raise ConfigError(f"key_count={self.key_count}: must be at most 64")
        if self.chunk_count > self.key_count:
            raise ConfigError(
                f"chunk_count={self.chunk_count}: every chunk needs a key, so it must be at "
                f"most key_count={self.key_count}"
            )
        if self.client_count > 32 or self.ops_per_client > 999:
            raise ConfigError("at most 32 clients and 999 operations per client")


@dataclass(frozen=True, slots=True)
class Operation:
    kind: str  # GET (at the receiver) or PUT (at the source)
    key: str
    think_ticks: int


@dataclass(frozen=True, slots=True)
class SnapshotConfig:
    keys: tuple[str, ...]
    chunks: tuple[str, ...]
    chunk_keys: dict[str, tuple[str, ...]]
    clients: tuple[str, ...]
    ops: dict[str, tuple[Operation, ...]]
    join_tick: int
    options: SnapshotOptions
    bug: str | None = None

    def chunk_of(self, key: str) -> str:
        for chunk, keys in self.chunk_keys.items():
            if key in keys:
                return chunk
        raise KeyError(key)


def build_config(options: SnapshotOptions, bug: str | None, rng: random.Random) -> SnapshotConfig:
    keys = tuple(f"k{i}" for i in range(1, options.key_count + 1))
    chunks = tuple(f"ch{i}" for i in range(1, options.chunk_count + 1))
    per = len(keys) / len(chunks)
    chunk_keys = {
        chunk: keys[round(i * per) : round((i + 1) * per)] for i, chunk in enumerate(chunks)
    }
    join_tick = rng.randint(1, options.join_tick_max)
    clients = tuple(f"c{i}" for i in range(1, options.client_count + 1))
    ops = {
        client: tuple(
            Operation(
                kind=GET if rng.random() < options.get_ratio else PUT,
                key=rng.choice(keys),
                think_ticks=rng.randint(1, options.think_ticks_max),
            )
            for _ in range(options.ops_per_client)
        )
        for client in clients
    }
    return SnapshotConfig(keys, chunks, chunk_keys, clients, ops, join_tick, options, bug)
