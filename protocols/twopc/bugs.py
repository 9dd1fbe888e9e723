"""The two-phase commit bug zoo (see protocols/zoo.py for what a variant promises)."""

from __future__ import annotations

from tlasim.protocols.zoo import BugVariant

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
