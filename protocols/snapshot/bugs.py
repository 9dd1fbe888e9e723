"""The snapshot transfer bug zoo (see protocols/zoo.py for what a variant promises)."""

from __future__ import annotations

from tlasim.protocols.zoo import BugVariant

READ_BEFORE_CHUNK = "read-before-chunk"
REPLAY_FROM_WRONG_POSITION = "replay-from-wrong-position"
DUPLICATE_CHUNK_REAPPLIED = "duplicate-chunk-reapplied"
ACK_BEFORE_PERSIST = "ack-before-persist"
FUZZY_SNAPSHOT = "fuzzy-snapshot"

BUGS: dict[str, BugVariant] = {
    bug.name: bug
    for bug in (
        BugVariant(
            READ_BEFORE_CHUNK,
            "ReadSafe, linearizability",
            "the receiver answers a read as soon as it has joined, from whatever data it "
            "holds, before the key's chunk (or the replay) has arrived",
            1,
            "none on most seeds (a read during the transfer); at most one delay",
        ),
        BugVariant(
            REPLAY_FROM_WRONG_POSITION,
            "ReplicaMatchesSource, liveness",
            "with every chunk in, the receiver takes its position to be one past the "
            "snapshot, so the first record after the snapshot is never replayed: a write "
            "made during the transfer is in neither the snapshot nor the replay (and with "
            "no such write, the receiver waits forever for a record past the log's end)",
            1,
            "none when a write lands right after the snapshot; at most one delay",
        ),
        BugVariant(
            DUPLICATE_CHUNK_REAPPLIED,
            "ReplicaMatchesSource, linearizability",
            "the receiver applies a chunk it already has again; a duplicated or resent "
            "chunk that arrives after the replay began rolls its keys back to the snapshot",
            1,
            "one fault that duplicates or delays a chunk",
        ),
        BugVariant(
            ACK_BEFORE_PERSIST,
            "AckedIsDurable",
            "the receiver acknowledges a chunk before the chunk is synced; a crash then "
            "loses a chunk the source counts as delivered",
            1,
            "one receiver crash after a chunk acknowledgement",
        ),
        BugVariant(
            FUZZY_SNAPSHOT,
            "ReplicaMatchesSource",
            "the source sends each chunk from its current data instead of the log prefix "
            "at the snapshot position, so a write made during the transfer is in the "
            "snapshot and in the replay, and the chunks disagree about the position",
            1,
            "none on most seeds (a write during the transfer); at most one delay",
        ),
    )
}
