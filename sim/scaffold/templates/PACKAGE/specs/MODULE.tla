------------------------------ MODULE {{Module}} ------------------------------
(***************************************************************************)
(* What {{name}} promises, with no messages, crashes or logs: a value is   *)
(* committed only once every backup has stored it, so a committed value    *)
(* is never lost.  {{Module}}Msg refines this spec (its Refinement).       *)
(***************************************************************************)
EXTENDS Naturals

CONSTANTS
    Backups,  \* the backup nodes
    Values    \* the values the primary replicates

VARIABLES
    committed,  \* the values the primary has committed
    stored      \* stored[b]: the values backup b holds

vars == <<committed, stored>>

TypeOK ==
    /\ committed \subseteq Values
    /\ stored \in [Backups -> SUBSET Values]

Init ==
    /\ committed = {}
    /\ stored = [b \in Backups |-> {}]

Store(b, v) ==
    /\ v \notin stored[b]
    /\ stored' = [stored EXCEPT ![b] = @ \cup {v}]
    /\ UNCHANGED committed

Commit(v) ==
    /\ v \notin committed
    /\ \A b \in Backups : v \in stored[b]
    /\ committed' = committed \cup {v}
    /\ UNCHANGED stored

(* Once every value is committed the system stays put: not a deadlock.    *)
Done == committed = Values /\ UNCHANGED vars

Next ==
    \/ \E b \in Backups, v \in Values : Store(b, v)
    \/ \E v \in Values : Commit(v)
    \/ Done

Spec == Init /\ [][Next]_vars

(* The promise: every backup holds every committed value.                  *)
Durable == \A v \in committed : \A b \in Backups : v \in stored[b]
=============================================================================
