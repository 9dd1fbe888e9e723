----------------------- MODULE MCSnapshotTransferMsg ------------------------
(***************************************************************************)
(* Model checking the safety of SnapshotTransferMsg: what only TLC needs.  *)
(*                                                                         *)
(*  - Two keys, in two chunks of one key each (MCChunkKeys2) or in one     *)
(*    chunk (MCChunkKeys1); the functions among the constants are defined  *)
(*    here and substituted with <- in the .cfg.                            *)
(*  - Sends are always enabled (that is how Joins, resends, shipments and  *)
(*    timeouts are modelled), so the bag of messages is unbounded.         *)
(*    MsgBound keeps at most MaxCopies copies of one message and           *)
(*    MaxInFlight messages in all in flight; every state within the bound  *)
(*    is explored, with every loss, duplicate, reordering and crash.       *)
(*  - DownBound keeps at most MaxDown nodes down at once.  Crashes need no *)
(*    other bound: a crash only flips an up flag and forgets volatile      *)
(*    state, so they repeat within the model.                              *)
(*  - OpBound lets clients invoke operations on OpKeys only.               *)
(*  - A state cut off by Bound still counts as a successor, so TLC reports *)
(*    as deadlocked only a state where no action at all is enabled.  There *)
(*    is none: a running node can always crash, and a crashed one recover. *)
(*  - Clients are model values and interchangeable: nothing in the spec    *)
(*    names one, and a client's identity only makes its write ids unique   *)
(*    and addresses its answers, both of which a renaming preserves.  So   *)
(*    with two clients, states that differ only by renaming clients are    *)
(*    checked once.  That is sound for the invariants and for Refinement,  *)
(*    which are symmetric in Clients (SnapshotTransfer's Write picks any   *)
(*    fresh id).  Keys and chunks are strings and not permuted:            *)
(*    ChunkKeys tells them apart.                                          *)
(***************************************************************************)
EXTENDS SnapshotTransferMsg

CONSTANTS
    MaxCopies,    \* at most this many copies of one message in flight
    MaxInFlight,  \* at most this many messages in flight, copies included
    MaxDown,      \* at most this many nodes down at once
    OpKeys        \* the keys the clients' operations use

MCKeys == {"k1", "k2"}
MCChunkOrder2 == <<"ch1", "ch2">>
MCChunkKeys2 == [ch \in {"ch1", "ch2"} |-> IF ch = "ch1" THEN {"k1"} ELSE {"k2"}]
MCChunkOrder1 == <<"ch1">>
MCChunkKeys1 == [ch \in {"ch1"} |-> {"k1", "k2"}]
MCOpKeys1 == {"k1"}

MsgBound ==
    /\ \A m \in DOMAIN msgs : msgs[m] <= MaxCopies
    /\ BagCardinality(msgs) <= MaxInFlight

DownBound ==
    (IF srcUp THEN 0 ELSE 1) + (IF rcvUp THEN 0 ELSE 1) <= MaxDown

OpBound == \A c \in Clients : clientOp[c].key \in OpKeys \cup {"-"}

Bound == MsgBound /\ DownBound /\ OpBound

Symmetry == Permutations(Clients)
=============================================================================
