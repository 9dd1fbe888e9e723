-------------------------- MODULE SnapshotTransfer --------------------------
(***************************************************************************)
(* What bringing up a replica by snapshot transfer guarantees: the         *)
(* replica's data is always the source's data at some position of the      *)
(* source's log, that position only moves forward, and once the replica    *)
(* is ready it stays ready.                                                *)
(*                                                                         *)
(* log is the source's log: writes [key, val] in the order the source      *)
(* took them.  A write's value is its id, and a write takes effect at most *)
(* once however often a client resends it, so every id in log is fresh.   *)
(* pos is the log position the replica's data reflects (-1 until it holds *)
(* a whole snapshot): the data is then the log prefix 1..pos, so pos names *)
(* the data completely and the data itself need not be a variable here.   *)
(* ready says the replica serves reads.                                    *)
(*                                                                         *)
(* What this spec simplifies or leaves out, on purpose:                    *)
(*  - no chunks, messages, reads or crashes: the concrete spec             *)
(*    SnapshotTransferMsg adds them and refines this spec;                 *)
(*  - how far the replica catches up, and when, is free: any position up   *)
(*    to the log's end, in one step or many.  A write missing from both    *)
(*    the snapshot and the replay, or applied twice, shows in the concrete *)
(*    spec as data that is no log prefix (its ReplicaMatchesSource);       *)
(*  - BecomeReady may catch up in the same step: the concrete receiver     *)
(*    becomes ready by applying its first batch of log records, which may  *)
(*    hold writes (see docs/snapshot-model.md; the contract's table lists  *)
(*    the two effects separately);                                         *)
(*  - no fairness: this spec says only what may happen, never what must.   *)
(***************************************************************************)
EXTENDS Integers, Sequences

CONSTANTS
    Keys,     \* the keys
    Clients,  \* the clients, whose names make write ids unique
    MaxOps    \* the number of operations each client invokes

VARIABLES
    log,      \* the source's log: a sequence of writes [key, val]
    pos,      \* the log position the replica's data reflects, -1 for none
    ready     \* the replica serves reads

vars == <<log, pos, ready>>

(* The value of a key nobody wrote.                                        *)
NoValue == [c |-> "-", n |-> 0]

(* A write id: the client that invoked the write and its operation number. *)
WriteId == [c : Clients, n : 1..MaxOps]

Value == {NoValue} \cup WriteId

Entry == [key : Keys, val : WriteId]  \* a log entry

(* The ids of the writes in the log.                                       *)
Written == {log[i].val : i \in DOMAIN log}

TypeOK ==
    /\ log \in Seq(Entry)
    /\ pos \in -1..Len(log)
    /\ ready \in BOOLEAN

Init ==
    /\ log = <<>>
    /\ pos = -1
    /\ ready = FALSE

---------------------------------------------------------------------------
(* The source takes a fresh write: an id already in the log never takes    *)
(* effect again.                                                           *)
Write(k, v) ==
    /\ v \in WriteId \ Written
    /\ log' = Append(log, [key |-> k, val |-> v])
    /\ UNCHANGED <<pos, ready>>

(* The replica's data moves forward to a later prefix of the log: from     *)
(* none to a whole snapshot, or by replaying records.                      *)
CatchUp ==
    /\ pos' \in (pos + 1)..Len(log)
    /\ UNCHANGED <<log, ready>>

(* A replica that holds a whole snapshot becomes ready, possibly catching  *)
(* up further in the same step.                                            *)
BecomeReady ==
    /\ ~ready
    /\ pos >= 0
    /\ ready' = TRUE
    /\ pos' \in pos..Len(log)
    /\ UNCHANGED log

Next ==
    \/ \E k \in Keys, v \in WriteId : Write(k, v)
    \/ CatchUp
    \/ BecomeReady

Spec == Init /\ [][Next]_vars

---------------------------------------------------------------------------
(* A ready replica holds data: a whole snapshot at least.                  *)
ReadyHasData == ready => pos >= 0

(* Every write in the log took effect once.                                *)
WritesUnique ==
    \A i, j \in DOMAIN log : i # j => log[i].val # log[j].val

(* The replica never goes back: neither its position nor its readiness.    *)
Monotonic == [][pos' >= pos /\ (ready => ready')]_vars

THEOREM Spec => [](TypeOK /\ ReadyHasData /\ WritesUnique) /\ Monotonic
=============================================================================
