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
    # The most faults a shrunk failing plan needs, and what they are: the
    # quality tests hold shrinking to this.
    minimal_faults: int
    minimal_plan: str


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
            1,
            "one TM crash between a Commit send and the commit record",
        ),
        BugVariant(
            ABORT_AFTER_PREPARE,
            "atomicity, agreement",
            "an RM that voted Yes and hears no decision within its inquiry interval aborts "
            "on its own, although only the TM may decide a prepared transaction",
            1,
            "one fault that delays a decision (none when the seed's latencies already do)",
        ),
        BugVariant(
            TM_FORGETS_DECISION,
            "durability, agreement",
            "a recovering TM ignores the commit records in its log and presumes abort "
            "for every transaction it had begun",
            1,
            "one TM crash after a commit record is synced",
        ),
        BugVariant(
            COUNTS_DUPLICATE_VOTES,
            "atomicity, agreement",
            "the TM counts Prepared messages instead of voters, so a duplicated or "
            "resent vote stands in for an RM that never voted Yes (a handler that is "
            "not idempotent)",
            1,
            "one message fault that makes a Yes vote arrive twice (a duplicate or a delay)",
        ),
    )
}


def check_bug(name: str | None) -> str | None:
    if name is not None and name not in BUGS:
        raise ConfigError(f"unknown two-phase commit bug {name!r}; known: {', '.join(BUGS)}")
    return name
