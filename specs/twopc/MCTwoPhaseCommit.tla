------------------------- MODULE MCTwoPhaseCommit --------------------------
(***************************************************************************)
(* Model checking TwoPhaseCommit: what only TLC needs.                     *)
(*                                                                         *)
(* The RMs are model values and interchangeable, so states that differ     *)
(* only by renaming RMs are checked once.  Symmetry is sound here because  *)
(* every checked property (TypeOK, Consistent) is symmetric in RM.         *)
(*                                                                         *)
(* The abstract spec halts once everyone knows the decision.  TLC 2.15     *)
(* has no CHECK_DEADLOCK setting, so instead of switching deadlock         *)
(* checking off we let the finished system stutter: any other state        *)
(* without a successor is still reported as a deadlock.                    *)
(***************************************************************************)
EXTENDS TwoPhaseCommit, TLC

Terminated ==
    /\ tmState \in {"committed", "aborted"}
    /\ \A r \in RM : rmState[r] = tmState
    /\ UNCHANGED vars

MCSpec == Init /\ [][Next \/ Terminated]_vars

RMSymmetry == Permutations(RM)
=============================================================================
