"""A node's log on a simulated disk: synced records survive a crash, others do not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Disk:
    __slots__ = ("_records", "_synced")

    def __init__(self) -> None:
        self._records: list[Mapping[str, Any]] = []
        self._synced = 0  # how many leading records are durable

    def persist(self, record: Mapping[str, Any], sync: bool) -> None:
        # Records are copied so the core can never mutate what is "on disk".
        self._records.append(dict(record))
        if sync:
            # fsync flushes the whole file: every earlier record becomes durable too.
            self._synced = len(self._records)

    def synced(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(dict(r) for r in self._records[: self._synced])

    def synced_view(self) -> list[Mapping[str, Any]]:
        """The durable records, shared read-only with the refinement mapping."""
        return self._records[: self._synced]

    def crash(self) -> int:
        """Lose every unsynced record; return how many were lost."""
        lost = len(self._records) - self._synced
        del self._records[self._synced :]
        return lost
