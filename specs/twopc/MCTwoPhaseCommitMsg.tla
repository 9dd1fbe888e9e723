------------------------ MODULE MCTwoPhaseCommitMsg ------------------------
(***************************************************************************)
(* Model checking the safety of TwoPhaseCommitMsg: what only TLC needs.    *)
(*                                                                         *)
(*  - Sends are always enabled (that is how retransmission is modelled),   *)
(*    so the bag of messages is unbounded.  MsgBound keeps at most         *)
(*    MaxCopies copies of one message and MaxInFlight messages in all in   *)
(*    flight; every state within the bound is explored, with every loss,   *)
(*    duplicate, reordering and crash.  Crashes need no bound: a crash     *)
(*    only flips tmUp or rmUp.                                             *)
(*  - A state cut off by MsgBound still counts as a successor, so TLC      *)
(*    reports as deadlocked only a state where no action at all is         *)
(*    enabled.  There is none: a decided transaction can always resend its *)
(*    decision, and a crashed node can always recover.                     *)
(*  - RMs are interchangeable, and so are transactions, so states that     *)
(*    differ only by renaming RMs and transactions are checked once.  That *)
(*    is sound because every checked invariant and TCRefinement are        *)
(*    symmetric in RM and in Tx.  p @@ q is the permutation of RM \cup Tx  *)
(*    that acts as p on RM and as q on Tx, so Symmetry is the whole group, *)
(*    not just its two halves.                                             *)
(***************************************************************************)
EXTENDS TwoPhaseCommitMsg, TLC

CONSTANTS
    MaxCopies,    \* at most this many copies of one message in flight
    MaxInFlight   \* at most this many messages in flight, copies included

MsgBound ==
    /\ \A m \in DOMAIN msgs : msgs[m] <= MaxCopies
    /\ BagCardinality(msgs) <= MaxInFlight

Symmetry ==
    {p @@ q : p \in Permutations(RM), q \in Permutations(Tx)}
=============================================================================
