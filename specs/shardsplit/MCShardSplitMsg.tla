--------------------------- MODULE MCShardSplitMsg --------------------------
(***************************************************************************)
(* Model checking the safety of ShardSplitMsg: what only TLC needs.        *)
(*                                                                         *)
(*  - One split: shard s1 holds k1 and k2 and splits into s2 (k1) and s3   *)
(*    (k2).  The functions and the sequence among the constants are        *)
(*    defined here and substituted with <- in the .cfg.                    *)
(*  - Sends are always enabled (that is how resending and timeouts are     *)
(*    modelled), so the bag of messages is unbounded.  MsgBound keeps at   *)
(*    most MaxCopies copies of one message and MaxInFlight messages in all *)
(*    in flight; every state within the bound is explored, with every      *)
(*    loss, duplicate, reordering and crash.                               *)
(*  - DownBound keeps at most MaxDown nodes down at once (the coordinator  *)
(*    counts as one).  Crashes need no other bound: a crash only flips an  *)
(*    up flag and forgets volatile state, so they repeat within the model. *)
(*  - OpBound lets clients invoke operations on OpKeys only.  With OpKeys  *)
(*    = {"k1"} nothing is lost but a mirror image: swapping k1 with k2 and *)
(*    s2 with s3 maps the constants, and so every behaviour, onto itself.  *)
(*  - A state cut off by Bound still counts as a successor, so TLC reports *)
(*    as deadlocked only a state where no action at all is enabled.  There *)
(*    is none: a running node can always crash, and a crashed one recover. *)
(*  - Clients are model values and interchangeable: nothing in the spec    *)
(*    names one, and a client's identity only makes its write ids unique   *)
(*    and addresses its answers, both of which a renaming preserves.  So   *)
(*    states that differ only by renaming clients are checked once.  That  *)
(*    is sound for the invariants and for Refinement, which are symmetric  *)
(*    in Clients (ShardSplit's Write picks any fresh id).  Keys and shards *)
(*    are strings and not permuted: ShardKeys tells them apart.            *)
(***************************************************************************)
EXTENDS ShardSplitMsg, TLC

CONSTANTS
    MaxCopies,    \* at most this many copies of one message in flight
    MaxInFlight,  \* at most this many messages in flight, copies included
    MaxDown,      \* at most this many nodes down at once
    OpKeys        \* the keys the clients' operations use

MCKeys == {"k1", "k2"}
MCShards == {"s1", "s2", "s3"}
MCInitialShards == {"s1"}
MCShardKeys == [s \in MCShards |-> CASE s = "s1" -> {"k1", "k2"}
                                     [] s = "s2" -> {"k1"}
                                     [] s = "s3" -> {"k2"}]
MCChildren == [p \in {"s1"} |-> {"s2", "s3"}]
MCSplitOrder == <<"s1">>
MCOpKeys == {"k1"}

MsgBound ==
    /\ \A m \in DOMAIN msgs : msgs[m] <= MaxCopies
    /\ BagCardinality(msgs) <= MaxInFlight

DownBound ==
    Cardinality({s \in Shards : ~shardUp[s]}) + (IF coordUp THEN 0 ELSE 1) <= MaxDown

OpBound == \A c \in Clients : clientOp[c].key \in OpKeys \cup {"-"}

Bound == MsgBound /\ DownBound /\ OpBound

Symmetry == Permutations(Clients)
=============================================================================
