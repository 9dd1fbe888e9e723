----------------------------- MODULE ShardSplit -----------------------------
(***************************************************************************)
(* What a key-value store that splits its shards guarantees: it behaves    *)
(* like ONE map from keys to values, whoever serves each key.              *)
(*                                                                         *)
(* map is that map.  owner[k] is the shard that owns key k; splits move    *)
(* keys between shards, which changes owner and nothing else, so no split  *)
(* can lose, resurrect or invent a value.  A value is the id of the write  *)
(* that wrote it, and written is the set of ids written so far, so every   *)
(* write takes effect exactly once however often a client resends it.  A   *)
(* read returns map[k] at some step between its invocation and its answer; *)
(* reads change nothing here, so they are stuttering steps.                *)
(*                                                                         *)
(* What this spec simplifies or leaves out, on purpose:                    *)
(*  - no clients, messages, crashes or split phases: the concrete spec     *)
(*    ShardSplitMsg adds them and refines this spec;                       *)
(*  - owner is unconstrained: any key may move to any shard at any time.   *)
(*    Which moves happen, and in which order, is the concrete protocol's   *)
(*    business; all this spec promises is that a move leaves map alone;    *)
(*  - no fairness: this spec says only what may happen, never what must.   *)
(***************************************************************************)
EXTENDS Naturals

CONSTANTS
    Keys,     \* the keys
    Shards,   \* the shards that may own keys
    Clients,  \* the clients, whose names make write ids unique
    MaxOps    \* the number of operations each client invokes

VARIABLES
    map,      \* map[k]: the value of key k, the id of the write that wrote it
    owner,    \* owner[k]: the shard that owns key k
    written   \* the ids of every write that has taken effect, and NoValue

vars == <<map, owner, written>>

(* The value of a key nobody wrote.  It is in written from the start, so   *)
(* no write can use it as its id.                                          *)
NoValue == [c |-> "-", n |-> 0]

(* A write id: the client that invoked the write and its operation number. *)
WriteId == [c : Clients, n : 1..MaxOps]

Value == {NoValue} \cup WriteId

TypeOK ==
    /\ map \in [Keys -> Value]
    /\ owner \in [Keys -> Shards]
    /\ written \subseteq Value
    /\ NoValue \in written

Init ==
    /\ map = [k \in Keys |-> NoValue]
    /\ owner \in [Keys -> Shards]
    /\ written = {NoValue}

---------------------------------------------------------------------------
(* Write v to key k.  v must be fresh: a write that already took effect    *)
(* never takes effect again, wherever a client resends it.                 *)
Write(k, v) ==
    /\ v \in WriteId \ written
    /\ map' = [map EXCEPT ![k] = v]
    /\ written' = written \cup {v}
    /\ UNCHANGED owner

(* Some keys change owner; no value changes with them.                     *)
Move ==
    /\ owner' \in [Keys -> Shards]
    /\ owner' # owner
    /\ UNCHANGED <<map, written>>

Next ==
    \/ \E k \in Keys, v \in WriteId : Write(k, v)
    \/ Move

Spec == Init /\ [][Next]_vars

---------------------------------------------------------------------------
(* Every value in the map was written (or is NoValue).                     *)
MapHoldsWritten == \A k \in Keys : map[k] \in written

THEOREM Spec => [](TypeOK /\ MapHoldsWritten)
=============================================================================
