"""Two-phase commit messages: one flat frozen class per message type.

Every message names one transaction and one RM: the destination of a TM to
RM message, the sender of an RM to TM message. That is also the shape of the
spec's message records, so the refinement mapping of a message is its fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from tlasim.protocols.errors import ProtocolViolation


@dataclass(frozen=True, slots=True)
class Prepare:
    """TM to RM: vote on `tx`."""

    tx: str
    rm: str


@dataclass(frozen=True, slots=True)
class Commit:
    """TM to RM: `tx` committed."""

    tx: str
    rm: str


@dataclass(frozen=True, slots=True)
class Abort:
    """TM to RM: `tx` aborted."""

    tx: str
    rm: str


@dataclass(frozen=True, slots=True)
class Prepared:
    """RM to TM: a Yes vote, also resent to ask for the decision."""

    tx: str
    rm: str


@dataclass(frozen=True, slots=True)
class Aborted:
    """RM to TM: a No vote (the RM has aborted `tx`)."""

    tx: str
    rm: str


Message: TypeAlias = Prepare | Commit | Abort | Prepared | Aborted

MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.__name__: cls for cls in (Prepare, Commit, Abort, Prepared, Aborted)
}


def to_wire(msg: Message) -> dict[str, Any]:
    """The plain dict a message travels as (msgpack-encoded by the runtime)."""
    return {"type": type(msg).__name__, "tx": msg.tx, "rm": msg.rm}


def from_wire(data: Any) -> Message:
    try:
        cls = MESSAGE_TYPES[data["type"]]
        return cls(tx=data["tx"], rm=data["rm"])
    except (KeyError, TypeError) as exc:
        raise ProtocolViolation(
            f"cannot decode two-phase commit message {data!r}: expected a map with "
            f"type in {sorted(MESSAGE_TYPES)}, tx and rm"
        ) from exc
