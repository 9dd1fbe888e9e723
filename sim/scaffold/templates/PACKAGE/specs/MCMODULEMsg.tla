---------------------------- MODULE MC{{Module}}Msg ----------------------------
(***************************************************************************)
(* Model checking {{Module}}Msg: what only TLC needs.                      *)
(*                                                                         *)
(*  - Sends are always enabled (that is how resending is modelled), so the *)
(*    bag of messages is unbounded.  MsgBound keeps at most MaxCopies      *)
(*    copies of one message and MaxInFlight messages in all; every state   *)
(*    within the bound is explored, with every loss, duplicate, reordering *)
(*    and crash.                                                           *)
(*  - The backups are interchangeable (no step reads a backup's name but   *)
(*    to address it, and every invariant treats them alike), so states     *)
(*    that differ by renaming backups are checked once.                    *)
(***************************************************************************)
EXTENDS {{Module}}Msg, TLC

CONSTANTS
    MaxCopies,    \* at most this many copies of one message in flight
    MaxInFlight   \* at most this many messages in flight, copies included

MsgBound ==
    /\ \A m \in DOMAIN msgs : msgs[m] <= MaxCopies
    /\ BagCardinality(msgs) <= MaxInFlight

Symmetry == Permutations(Backups)
=============================================================================
