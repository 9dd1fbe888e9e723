"""The shard split bug zoo (see protocols/zoo.py for what a variant promises)."""

from __future__ import annotations

from tlasim.protocols.zoo import BugVariant

FROZEN_ACCEPTS_WRITES = "frozen-accepts-writes"
SWITCH_BEFORE_TRANSFER = "switch-before-transfer"
RETIRE_WITH_PENDING = "retire-with-pending"
RETIRED_SERVES_STALE_ROUTES = "retired-serves-stale-routes"
SPLIT_PROGRESS_NOT_DURABLE = "split-progress-not-durable"

BUGS: dict[str, BugVariant] = {
    bug.name: bug
    for bug in (
        BugVariant(
            FROZEN_ACCEPTS_WRITES,
            "no lost write, linearizability",
            "a frozen parent keeps accepting writes from clients that still route to it; "
            "a write accepted after the parent shipped its data is acknowledged and then "
            "lost when the children take over",
            1,
            "none on most seeds (a client's stale route is enough); at most one delay",
        ),
        BugVariant(
            SWITCH_BEFORE_TRANSFER,
            "no lost write, linearizability",
            "the coordinator switches routing when the first child has installed, not "
            "both, and a child told to activate before its data arrived serves its range "
            "empty",
            1,
            "none on most seeds; at most one fault that delays an Install",
        ),
        BugVariant(
            RETIRE_WITH_PENDING,
            "SafeRetire, no lost write",
            "a frozen parent ships its data and retires without waiting for the writes it "
            "accepted before the freeze; they are applied and acknowledged after the "
            "snapshot, at a shard nobody routes to, so they are lost",
            1,
            "none on most seeds (a write pending when Freeze arrives); at most one delay",
        ),
        BugVariant(
            RETIRED_SERVES_STALE_ROUTES,
            "SafeRetire, no lost write, linearizability",
            "a retired parent still serves its old range to clients whose cached routing "
            "table is stale, instead of answering Retry(moved): their writes are "
            "acknowledged and lost, their reads miss newer writes",
            1,
            "none on most seeds (a client keeps the old route); at most one delay",
        ),
        BugVariant(
            SPLIT_PROGRESS_NOT_DURABLE,
            "RouteLive, liveness",
            "the coordinator records a split's progress without syncing it; a coordinator "
            "crash after the switch forgets the split, and routing points back at a "
            "parent that has retired",
            1,
            "one coordinator crash after a routing switch",
        ),
    )
}
