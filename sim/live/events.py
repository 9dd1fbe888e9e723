"""A node's events file: the faults that fired on it and the datagrams it dropped.

Theory of operation: a node appends one JSON line per event to `NODE.events`
(one `os.write` each, so a SIGKILL leaves whole lines); the supervisor reads
the file to learn why a node died (its last `crash` event) and to sum up a
run. Drop counts are cumulative per incarnation, written now and then, so a
reader keeps each incarnation's last `dropped` line.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The events that are faults (or the real network's losses, or a torn log):
# the summary counts each kind.
FAULT_KINDS = ("crash", "loss", "partition", "duplicate", "delay", "send-dropped",
               "torn-record")


class EventLog:
    """Appends one node incarnation's events."""

    def __init__(self, path: Path, incarnation: int) -> None:
        self.incarnation = incarnation
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)

    def write(self, kind: str, ts: int, **fields: Any) -> None:
        line = {"incarnation": self.incarnation, "kind": kind, "ts": ts, **fields}
        os.write(self._fd, (json.dumps(line, sort_keys=True) + "\n").encode())


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every whole event line of a node's file (none if it has no file)."""
    if not path.exists():
        return []
    events = []
    for raw in path.read_bytes().split(b"\n")[:-1]:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def last_crash(path: Path, incarnation: int) -> dict[str, Any] | None:
    """The crash the node's `incarnation` logged before it SIGKILLed itself, if any."""
    crashes = [
        e for e in read_events(path)
        if e.get("kind") == "crash" and e.get("incarnation") == incarnation
    ]
    return crashes[-1] if crashes else None


@dataclass(slots=True)
class EventTotals:
    faults: Counter[str] = field(default_factory=Counter)  # faults fired, by kind
    dropped: Counter[str] = field(default_factory=Counter)  # datagrams dropped, by reason

    def add(self, path: Path) -> None:
        """Add one node's events."""
        last_counts: dict[Any, dict[str, Any]] = {}
        for event in read_events(path):
            kind = event.get("kind")
            if kind == "dropped" and isinstance(event.get("counts"), dict):
                last_counts[event.get("incarnation")] = event["counts"]
            elif kind in FAULT_KINDS:
                self.faults[str(kind)] += 1
        for counts in last_counts.values():
            self.dropped.update({str(k): int(v) for k, v in counts.items()})
