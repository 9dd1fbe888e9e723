"""A node's events file: the faults that fired on it and the datagrams it dropped.

Theory of operation: a node appends one JSON line per event to `NODE.events`
(one `os.write` each, so a SIGKILL leaves whole lines); the supervisor reads
the file to learn why a node died (its last `crash` event) and to sum up a
run. Drop counts are cumulative per incarnation, written now and then, so a
reader keeps each incarnation's last `dropped` line.

The file is a node's, but anything may have written to it, so it is read as
input from outside: within a size limit, each line through the one JSON
reader and every field used checked by type and range. A line that fails
is skipped and counted (`EventsRead.unreadable`), and a file that cannot be
read at all (a folder, a FIFO, too large) counts as one; nothing in it can
stop the node or the run.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlasim.faults.plan import PLAN_INT_MAX
from tlasim.protocols.checked import checked_int, clip, load_json
from tlasim.protocols.errors import TlasimError
from tlasim.sim.live.config import INCARNATION_MAX
from tlasim.sim.live.files import open_node_file
from tlasim.tracing.inputs import read_regular_file

# The events that are faults (or the real network's losses, or a torn log):
# the summary counts each kind.
FAULT_KINDS = ("crash", "loss", "partition", "duplicate", "delay", "send-dropped",
               "torn-record")
# The largest events file read: a node writes its counts at most five times a
# second and a line per fault, some megabytes in an hour's run.
EVENTS_MAX_BYTES = 64 * 2**20
EVENT_LINE_MAX_BYTES = 64 * 2**10  # the largest line: a crash's faults, a count per reason
EVENT_MAX_DEPTH = 4  # an event is an object of strings, integers, a list or an object of them
COUNT_MAX = 2**62  # a drop count, a tick


class _Unreadable(TlasimError):
    """An events line that is not an event (caught here, counted, never raised on)."""


class EventLog:
    """Appends one node incarnation's events."""

    def __init__(self, path: Path, incarnation: int) -> None:
        self.incarnation = incarnation
        self._fd = open_node_file(path, "events file", os.O_WRONLY | os.O_APPEND,
                                  limit=EVENTS_MAX_BYTES)

    def write(self, kind: str, ts: int, **fields: Any) -> None:
        line = {"incarnation": self.incarnation, "kind": kind, "ts": ts, **fields}
        os.write(self._fd, (json.dumps(line, sort_keys=True) + "\n").encode())


@dataclass(slots=True)
class EventsRead:
    events: list[dict[str, Any]] = field(default_factory=list)  # every readable event
    unreadable: int = 0  # lines skipped (a file that could not be read counts one)
    problem: str | None = None  # why the first of them was skipped


def read_events(path: Path) -> EventsRead:
    """Every whole, well-formed event line of a node's file (none if it has no file)."""
    read = EventsRead()
    if not os.path.lexists(path):
        return read
    try:
        data = read_regular_file(path, "the events file", EVENTS_MAX_BYTES, error=_Unreadable)
    except _Unreadable as exc:
        read.unreadable, read.problem = 1, str(exc)
        return read
    for number, raw in enumerate(data.split(b"\n")[:-1], 1):  # after the last newline: torn
        try:
            read.events.append(_event(raw, f"{path}:{number}"))
        except _Unreadable as exc:
            read.unreadable += 1
            read.problem = read.problem or str(exc)
    return read


def _event(raw: bytes, where: str) -> dict[str, Any]:
    """One line as an event, each field it is read for checked; else _Unreadable."""
    event = load_json(raw, where, error=_Unreadable, max_depth=EVENT_MAX_DEPTH,
                      max_bytes=EVENT_LINE_MAX_BYTES)
    if type(event) is not dict or type(event.get("kind")) is not str:
        raise _Unreadable(f"{where}: not an event (an object with a kind)")
    checked_int(event.get("incarnation"), f"{where}: incarnation", low=0,
                high=INCARNATION_MAX, error=_Unreadable)
    checked_int(event.get("ts"), f"{where}: ts", low=0, high=COUNT_MAX, error=_Unreadable)
    kind = event["kind"]
    if kind == "crash":
        checked_int(event.get("after_steps"), f"{where}: after_steps", low=1, high=PLAN_INT_MAX,
                    error=_Unreadable)
        checked_int(event.get("tick"), f"{where}: tick", low=0, high=PLAN_INT_MAX,
                    error=_Unreadable)
        checked_int(event.get("restart_ticks"), f"{where}: restart_ticks", low=1,
                    high=PLAN_INT_MAX, error=_Unreadable)
        faults = event.get("faults")
        if type(faults) is not list or not all(type(f) is str for f in faults):
            raise _Unreadable(f"{where}: a crash's faults must be a list of names")
    elif kind == "dropped":
        counts = event.get("counts")
        if type(counts) is not dict:
            raise _Unreadable(f"{where}: a dropped event's counts must be an object")
        for reason, count in counts.items():
            checked_int(count, f"{where}: counts[{clip(repr(reason), 40)}]", low=0,
                        high=COUNT_MAX, error=_Unreadable)
    return event


def last_crash(path: Path, incarnation: int) -> dict[str, Any] | None:
    """The crash the node's `incarnation` logged before it SIGKILLed itself, if any."""
    crashes = [
        e for e in read_events(path).events
        if e["kind"] == "crash" and e["incarnation"] == incarnation
    ]
    return crashes[-1] if crashes else None


@dataclass(slots=True)
class EventTotals:
    faults: Counter[str] = field(default_factory=Counter)  # faults fired, by kind
    dropped: Counter[str] = field(default_factory=Counter)  # datagrams dropped, by reason
    unreadable: int = 0  # event lines no node could have written, skipped
    problem: str | None = None  # why the first of them was skipped

    def add(self, path: Path) -> None:
        """Add one node's events."""
        read = read_events(path)
        self.unreadable += read.unreadable
        self.problem = self.problem or read.problem
        last_counts: dict[int, dict[str, int]] = {}
        for event in read.events:
            kind = event["kind"]
            if kind == "dropped":
                last_counts[event["incarnation"]] = event["counts"]
            elif kind in FAULT_KINDS:
                self.faults[kind] += 1
        for counts in last_counts.values():
            self.dropped.update(counts)
