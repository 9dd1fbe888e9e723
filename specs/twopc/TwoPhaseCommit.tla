-------------------------- MODULE TwoPhaseCommit ---------------------------
(***************************************************************************)
(* What two-phase commit guarantees, for ONE transaction.                  *)
(*                                                                         *)
(* A transaction manager (TM) and a set RM of resource managers decide     *)
(* together whether the transaction commits.  An RM may prepare (vote      *)
(* yes) or abort on its own while it is still working; the TM may commit   *)
(* only once every RM has prepared, and may abort at any time before it    *)
(* commits.  An RM learns the decision only from the TM.  The property     *)
(* that matters is Consistent: no RM commits while another aborts.         *)
(*                                                                         *)
(* What this spec simplifies or leaves out, on purpose:                    *)
(*  - one transaction; the concrete spec TwoPhaseCommitMsg runs several    *)
(*    and refines this spec once per transaction;                          *)
(*  - no messages: tmPrepared is the set of RMs that have voted yes, known *)
(*    to everyone at once, and the decision reaches an RM in one step;     *)
(*  - no crashes, no logs, no message loss or duplication: every state     *)
(*    here is already the durable state;                                   *)
(*  - no fairness: this spec says only what may happen, never what must.   *)
(***************************************************************************)
CONSTANT RM   \* the resource managers

VARIABLES
    rmState,      \* rmState[r]: where RM r stands
    tmState,      \* the TM's decision, "init" until it makes one
    tmPrepared    \* the RMs that have voted yes

vars == <<rmState, tmState, tmPrepared>>

TypeOK ==
    /\ rmState \in [RM -> {"working", "prepared", "committed", "aborted"}]
    /\ tmState \in {"init", "committed", "aborted"}
    /\ tmPrepared \subseteq RM

Init ==
    /\ rmState = [r \in RM |-> "working"]
    /\ tmState = "init"
    /\ tmPrepared = {}

---------------------------------------------------------------------------
(* RM r votes yes.  From now on it may not abort unless the TM aborts.     *)
RMPrepare(r) ==
    /\ rmState[r] = "working"
    /\ rmState' = [rmState EXCEPT ![r] = "prepared"]
    /\ tmPrepared' = tmPrepared \cup {r}
    /\ UNCHANGED tmState

(* RM r aborts on its own, which it may do only before it has voted yes.   *)
RMChooseToAbort(r) ==
    /\ rmState[r] = "working"
    /\ rmState' = [rmState EXCEPT ![r] = "aborted"]
    /\ UNCHANGED <<tmState, tmPrepared>>

(* The TM commits once every RM has voted yes.                             *)
TMCommit ==
    /\ tmState = "init"
    /\ tmPrepared = RM
    /\ tmState' = "committed"
    /\ UNCHANGED <<rmState, tmPrepared>>

(* The TM may abort at any time before it has committed.                   *)
TMAbort ==
    /\ tmState = "init"
    /\ tmState' = "aborted"
    /\ UNCHANGED <<rmState, tmPrepared>>

(* A prepared RM learns that the TM committed.                             *)
RMCommit(r) ==
    /\ tmState = "committed"
    /\ rmState[r] = "prepared"
    /\ rmState' = [rmState EXCEPT ![r] = "committed"]
    /\ UNCHANGED <<tmState, tmPrepared>>

(* An RM that has not yet aborted learns that the TM aborted.              *)
RMAbort(r) ==
    /\ tmState = "aborted"
    /\ rmState[r] \in {"working", "prepared"}
    /\ rmState' = [rmState EXCEPT ![r] = "aborted"]
    /\ UNCHANGED <<tmState, tmPrepared>>

Next ==
    \/ TMCommit
    \/ TMAbort
    \/ \E r \in RM :
          \/ RMPrepare(r)
          \/ RMChooseToAbort(r)
          \/ RMCommit(r)
          \/ RMAbort(r)

Spec == Init /\ [][Next]_vars

---------------------------------------------------------------------------
(* No RM has committed while another has aborted.                          *)
Consistent ==
    \A r1, r2 \in RM : ~ /\ rmState[r1] = "aborted"
                         /\ rmState[r2] = "committed"

THEOREM Spec => [](TypeOK /\ Consistent)
=============================================================================
