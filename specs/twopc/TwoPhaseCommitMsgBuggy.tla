---------------------- MODULE TwoPhaseCommitMsgBuggy -----------------------
(***************************************************************************)
(* A deliberately wrong TwoPhaseCommitMsg, kept to show that the checks    *)
(* bite: an RM that has voted yes may still abort on its own.  That is the *)
(* bug variant "abort-after-prepare" of protocols/twopc/bugs.py.  Once the *)
(* TM has counted that RM's vote it may commit, and the other RM then      *)
(* commits while this one has aborted.                                     *)
(*                                                                         *)
(* TLC must report Consistent violated (TwoPhaseCommitMsgBuggy.cfg), and   *)
(* TCRefinement violated at the very step the RM aborts, before any RM     *)
(* commits (TwoPhaseCommitMsgBuggy_refinement.cfg): TwoPhaseCommit lets    *)
(* only a working RM abort on its own.                                     *)
(*                                                                         *)
(* It extends the model-checking module for MsgBound and Symmetry; the     *)
(* symmetry stays sound because the bug is symmetric in RM and Tx too.     *)
(***************************************************************************)
EXTENDS MCTwoPhaseCommitMsg

(* RMChooseToAbort, with the guard that makes it safe weakened.            *)
RMAbortAfterPrepare(t, r) ==
    /\ rmUp[r]
    /\ rmState[t][r] \in {"working", "prepared"}
    /\ RMBecome(t, r, "aborted")
    /\ UNCHANGED <<tmVars, rmUp, rmLostWork, msgs>>

BuggyNext ==
    \/ Next
    \/ \E t \in Tx, r \in RM : RMAbortAfterPrepare(t, r)

BuggySpec == Init /\ [][BuggyNext]_vars
=============================================================================
