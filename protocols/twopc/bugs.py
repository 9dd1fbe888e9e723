"""The two-phase commit bug zoo.

Each variant is a promise: a swarm sweep finds it through an oracle, and TLC
rejects the failing trace. The cores read `config.bug` at exactly the place
the variant changes, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.errors import ConfigError


@dataclass(frozen=True, slots=True)
class BugVariant:
    name: str
    breaks: str  # the property or properties that fail
    description: str


COMMIT_BEFORE_DURABLE = "commit-before-durable"
ABORT_AFTER_PREPARE = "abort-after-prepare"
TM_FORGETS_DECISION = "tm-forgets-decision"
COUNTS_DUPLICATE_VOTES = "counts-duplicate-votes"

BUGS: dict[str, BugVariant] = {
    bug.name: bug
    for bug in (
        BugVariant(
            COMMIT_BEFORE_DURABLE,
            "agreement, atomicity",
            "the TM sends Commit before its commit record is synced; a TM crash in that "
            "window makes recovery presume abort while some RM already committed",
        ),
        BugVariant(
            ABORT_AFTER_PREPARE,
            "atomicity, agreement",
            "an RM that voted Yes and hears nothing before its working timeout aborts on "
            "its own, although only the TM may decide a prepared transaction",
        ),
        BugVariant(
            TM_FORGETS_DECISION,
            "durability, agreement",
            "a recovering TM ignores the commit records in its log and presumes abort "
            "for every transaction it had begun",
        ),
        BugVariant(
            COUNTS_DUPLICATE_VOTES,
            "atomicity, agreement",
            "the TM counts Prepared messages instead of voters, so a duplicated or "
            "resent vote stands in for an RM that never voted Yes (a handler that is "
            "not idempotent)",
        ),
    )
}


def check_bug(name: str | None) -> str | None:
    if name is not None and name not in BUGS:
        raise ConfigError(f"unknown two-phase commit bug {name!r}; known: {', '.join(BUGS)}")
    return name
