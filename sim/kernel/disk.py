"""A node's log on a simulated disk: synced records survive a crash, others do not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.tracing.values import Record


class Disk:
    __slots__ = ("_records", "_synced", "_synced_records")

    def __init__(self) -> None:
        self._records: list[Record] = []
        self._synced = 0  # how many leading records are durable
        # The durable prefix as one tuple, kept while it stays the same: the
        # refinement mapping reads it at every step of the node, and a
        # changed tuple (not the same object) is how the kernel tells that
        # the durable log changed.
        self._synced_records: tuple[Record, ...] = ()

    def persist(self, record: Mapping[str, Any], sync: bool) -> None:
        # Records are frozen so the core can never mutate what is "on disk",
        # and so the refinement mapping can use them as set elements as they are.
        self._records.append(Record(record))
        if sync:
            # fsync flushes the whole file: every earlier record becomes durable too.
            self._synced = len(self._records)
            self._synced_records = tuple(self._records)

    def synced(self) -> tuple[Record, ...]:
        return self._synced_records

    def contents(self) -> tuple[tuple[Record, ...], int]:
        """Every record, synced or not, and how many lead as synced: the disk's
        whole state, as the explorer names it."""
        return tuple(self._records), self._synced

    def crash(self) -> int:
        """Lose every unsynced record; return how many were lost."""
        lost = len(self._records) - self._synced
        del self._records[self._synced :]
        return lost
