"""The explorer's moves: the events it may choose next, and their JSON form.

A move is one event the runtime would otherwise leave to chance: a node
starts, a message is delivered, a timer fires, a crashed node restarts, or
the network loses or duplicates a message. `crash_after` makes the moving
node crash after that many of the move's trace steps, so a crash can fall
between any two atomic steps. A crash move crashes an idle node, between
its steps (before its first one, say), where no move of its own can. A
schedule is the list of moves from the initial state; `tlasim run
--schedule` replays one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgpack

from tlasim.protocols.checked import checked_int
from tlasim.protocols.errors import ConfigError

START = "start"
DELIVER = "deliver"
FIRE = "fire"
RESTART = "restart"
LOSE = "lose"
DUPLICATE = "duplicate"
CRASH = "crash"
KINDS = (START, DELIVER, FIRE, RESTART, LOSE, DUPLICATE, CRASH)
# The moves that are no fault: a schedule of only these (and no crash) is
# what the liveness check looks for.
FAULT_FREE = frozenset({START, DELIVER, FIRE, RESTART})
MESSAGE_KINDS = frozenset({DELIVER, LOSE, DUPLICATE})
# No move takes more trace steps than this; a larger crash_after is no crash point.
MAX_STEPS = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Move:
    kind: str
    node: str  # the node that steps; a message's destination for the network's moves
    src: str | None = None  # a message's sender
    payload: bytes | None = None  # a message, as the network carries it
    timer: str | None = None
    crash_after: int | None = None  # crash the node after this many of its steps

    @property
    def fault_free(self) -> bool:
        return self.kind in FAULT_FREE and self.crash_after is None

    def crashing(self, after: int) -> Move:
        return Move(self.kind, self.node, self.src, self.payload, self.timer, after)

    def describe(self) -> str:
        """One line for people: what happened."""
        if self.kind in MESSAGE_KINDS:
            text = f"{self.kind} {self.src}->{self.node} {_message_text(self.payload)}"
        elif self.kind == FIRE:
            text = f"fire {self.node}.{self.timer}"
        else:
            text = f"{self.kind} {self.node}"
        if self.crash_after is not None:
            text += f", {self.node} crashes after step {self.crash_after}"
        return text

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "node": self.node}
        if self.kind in MESSAGE_KINDS:
            data["src"] = self.src
            data["msg"] = msgpack.unpackb(self.payload or b"", raw=False)
        if self.timer is not None:
            data["timer"] = self.timer
        if self.crash_after is not None:
            data["crash_after"] = self.crash_after
        return data

    @staticmethod
    def from_json(data: Any, where: str) -> Move:
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: a move is a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - {"kind", "node", "src", "msg", "timer", "crash_after"})
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
        kind, node = data.get("kind"), data.get("node")
        if kind not in KINDS:
            raise ConfigError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(node, str):
            raise ConfigError(f"{where}: node must be a string")
        src = payload = None
        if kind in MESSAGE_KINDS:
            src = data.get("src")
            if not isinstance(src, str) or "msg" not in data:
                raise ConfigError(f"{where}: a {kind} move names its message's src and msg")
            try:
                payload = msgpack.packb(data["msg"], use_bin_type=True)
            except (OverflowError, ValueError, TypeError) as exc:
                # msgpack holds integers of 64 bits at most, as the wire does.
                raise ConfigError(f"{where}: msg is no message a network carries: {exc}") from None
        timer = data.get("timer")
        if (kind == FIRE) != isinstance(timer, str):
            raise ConfigError(f"{where}: a fire move, and only one, names its timer")
        crash_after = data.get("crash_after")
        if crash_after is not None:
            crash_after = checked_int(crash_after, f"{where}: crash_after", low=1, high=MAX_STEPS)
        if crash_after is not None and kind not in FAULT_FREE:
            raise ConfigError(f"{where}: only a node's own move can crash it")
        return Move(kind, node, src, payload, timer, crash_after)


def _message_text(payload: bytes | None) -> str:
    return json.dumps(msgpack.unpackb(payload or b"", raw=False), sort_keys=True)
