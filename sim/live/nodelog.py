"""Each live node's own trace: structlog `tla_trace` lines with a Lamport clock.

Theory of operation: a node sees only itself, so its line for a step holds
what it knows, not the spec's global state: the action and params, the
node's own spec variables (`view`), its synced log when that changed, whether
it is up, the messages the step sent (`sent`) or consumed (`recv`), and the
Lamport clock that orders the line against the other nodes' lines. The
supervisor merges every node's lines into one trace (sim/live/merge.py).

A line is one `os.write` to a file opened with O_APPEND, so a SIGKILL leaves
whole lines only; a reader still ignores a last line without its newline.
Lines go through a private structlog processor chain, as the simulator's
trace emitter does, so no global logging configuration can change them.
"""

from __future__ import annotations

import json
import os
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from tlasim.protocols.checked import checked_int, load_json
from tlasim.protocols.errors import TraceFormatError
from tlasim.sim.live.config import INCARNATION_MAX
from tlasim.sim.live.files import NODE_FILE_MAX_BYTES, open_node_file
from tlasim.tracing.codec import STEP_EVENT
from tlasim.tracing.inputs import read_regular_file
from tlasim.tracing.values import Record, from_json, to_json

_TAGGED = ("params", "view", "log", "sent", "recv")


def _tag(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    for name in _TAGGED:
        if name in event_dict:
            event_dict[name] = to_json(event_dict[name], name)
    return event_dict


def _render(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> bytes:
    text = json.dumps(event_dict, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii") + b"\n"


class _AppendOnly:
    """The logger structlog wraps: one os.write per line, to an O_APPEND file."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def msg(self, data: bytes) -> None:
        os.write(self.fd, data)


class _LineLogger(structlog.BoundLoggerBase):
    def trace(self, event: str, **fields: Any) -> None:
        self._proxy_to_logger("msg", event, **fields)


class NodeLog:
    """Writes one node's lines; `last_clock` is the clock of its last line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd = open_node_file(path, "trace", os.O_RDWR | os.O_APPEND)
        try:
            lines = read_node_log(path)
        except BaseException:
            os.close(fd)
            raise
        self.last_clock = lines[-1].clock if lines else 0
        self.lines_before = len(lines)
        _cut_torn_line(fd)
        self._fd = fd
        self._log = _LineLogger(_AppendOnly(fd), [_tag, _render], {})

    def write(self, **fields: Any) -> None:
        self._log.trace(STEP_EVENT, **fields)

    def close(self) -> None:
        os.close(self._fd)


def _cut_torn_line(fd: int) -> None:
    """Cut a last line without its newline, so the next line starts a line."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
    if tail.endswith(b"\n"):
        return
    keep = size - len(tail) + tail.rfind(b"\n") + 1
    os.ftruncate(fd, keep)


@dataclass(frozen=True, slots=True)
class NodeLine:
    """One step as a node logged it."""

    owner: str  # the node whose file holds the line
    number: int  # its line number in that file, from 1
    incarnation: int
    clock: int
    ts: int
    node: str  # who took the step: the owner, or "net" for its transport's faults
    action: str
    params: Record
    view: Record
    up: bool
    log: tuple[Record, ...] | None  # the synced log, when it changed
    sent: tuple[Any, ...]
    recv: Any | None
    timer: str | None = None  # the timer the step answers
    faults: tuple[str, ...] = ()  # the plan's faults that struck in the step


# The largest clock or tick a line may hold: a 64-bit integer (a clock stays
# below sim.live.wire.MAX_CLOCK plus the run's lines).
_INT_MAX = 2**63 - 1
_INT_FIELDS = (("incarnation", 0, INCARNATION_MAX), ("clock", 1, _INT_MAX), ("ts", 0, _INT_MAX))


def read_node_log(path: Path) -> list[NodeLine]:
    """Every whole line of a node's trace, checked; a torn last line is left out.

    A trace is read as input from outside, within NODE_FILE_MAX_BYTES; a line
    that is not one a node writes is a TraceFormatError naming it.
    """
    data = read_regular_file(path, "the node trace", NODE_FILE_MAX_BYTES,
                             error=TraceFormatError)
    raw_lines = data.split(b"\n")[:-1]  # what follows the last newline is torn
    owner = path.stem
    return [
        _line(owner, number, raw, f"{path}:{number}")
        for number, raw in enumerate(raw_lines, 1)
    ]


def _line(owner: str, number: int, raw: bytes, where: str) -> NodeLine:
    obj = load_json(raw, where, error=TraceFormatError)
    if type(obj) is not dict or obj.get("event") != STEP_EVENT:
        raise TraceFormatError(f"{where}: not a node trace line")
    for name, low, high in _INT_FIELDS:
        checked_int(obj.get(name), f"{where}: {name}", low=low, high=high,
                    error=TraceFormatError)
    for name in ("node", "action"):
        if type(obj.get(name)) is not str:
            raise TraceFormatError(f"{where}: {name} must be a string")
    if type(obj.get("up")) is not bool:
        raise TraceFormatError(f"{where}: up must be a boolean")
    params = from_json(obj.get("params", {}), f"{where} params")
    view = from_json(obj.get("view", {}), f"{where} view")
    if not isinstance(params, Record) or not isinstance(view, Record):
        raise TraceFormatError(f"{where}: params and view must be records")
    log = obj.get("log")
    sent = obj.get("sent", [])
    if type(sent) is not list or (log is not None and type(log) is not list):
        raise TraceFormatError(f"{where}: sent and log must be lists")
    recv = obj.get("recv")
    timer = obj.get("timer")
    faults = obj.get("faults", [])
    if timer is not None and type(timer) is not str:
        raise TraceFormatError(f"{where}: timer must be a string")
    if type(faults) is not list or not all(type(f) is str for f in faults):
        raise TraceFormatError(f"{where}: faults must be a list of strings")
    return NodeLine(
        owner=owner,
        number=number,
        incarnation=obj["incarnation"],
        clock=obj["clock"],
        ts=obj["ts"],
        node=obj["node"],
        action=obj["action"],
        params=params,
        view=view,
        up=obj["up"],
        log=None if log is None else tuple(_records(log, f"{where} log")),
        sent=tuple(from_json(m, f"{where} sent") for m in sent),
        recv=None if recv is None else from_json(recv, f"{where} recv"),
        timer=timer,
        faults=tuple(faults),
    )


def _records(values: Sequence[Any], where: str) -> list[Record]:
    records = [from_json(v, where) for v in values]
    if not all(isinstance(r, Record) for r in records):
        raise TraceFormatError(f"{where}: every log record must be a record")
    return records
