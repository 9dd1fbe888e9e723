"""Protocol cores (sans-IO) and their definitions, by name."""

from __future__ import annotations

from protocols.definition import ProtocolDefinition
from protocols.errors import ConfigError
from protocols.lockfree.queue.definition import DEFINITION as LOCKFREE_QUEUE
from protocols.lockfree.stack.definition import DEFINITION as LOCKFREE_STACK
from protocols.shardsplit.definition import DEFINITION as SHARDSPLIT
from protocols.snapshot.definition import DEFINITION as SNAPSHOT
from protocols.twopc.definition import DEFINITION as TWOPC

PROTOCOLS: dict[str, ProtocolDefinition] = {
    p.name: p for p in (TWOPC, SHARDSPLIT, SNAPSHOT, LOCKFREE_QUEUE, LOCKFREE_STACK)
}


def get_protocol(name: str) -> ProtocolDefinition:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ConfigError(
            f"unknown protocol {name!r}; known: {', '.join(sorted(PROTOCOLS))}"
        ) from None
