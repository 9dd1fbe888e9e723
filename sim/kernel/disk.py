"""A node's log on a simulated disk: synced records survive a crash, others do not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracing.values import Record


class Disk:
    __slots__ = ("_records", "_synced")

    def __init__(self) -> None:
        self._records: list[Record] = []
        self._synced = 0  # how many leading records are durable

    def persist(self, record: Mapping[str, Any], sync: bool) -> None:
        # Records are frozen so the core can never mutate what is "on disk",
        # and so the refinement mapping can use them as set elements as they are.
        self._records.append(Record(record))
        if sync:
            # fsync flushes the whole file: every earlier record becomes durable too.
            self._synced = len(self._records)

    def synced(self) -> tuple[Record, ...]:
        return tuple(self._records[: self._synced])

    def crash(self) -> int:
        """Lose every unsynced record; return how many were lost."""
        lost = len(self._records) - self._synced
        del self._records[self._synced :]
        return lost
