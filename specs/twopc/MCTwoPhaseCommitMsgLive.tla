---------------------- MODULE MCTwoPhaseCommitMsgLive ----------------------
(***************************************************************************)
(* Liveness of TwoPhaseCommitMsg: once faults stop, every transaction is   *)
(* decided and every RM ends up holding the TM's decision.                 *)
(*                                                                         *)
(* What this model adds to, or takes from, TwoPhaseCommitMsg:              *)
(*  - a fault budget: crashes, losses and duplicates together happen at    *)
(*    most FaultBudget times.  Faults that never stop can starve any       *)
(*    protocol, so liveness is a property of runs whose faults heal, as in *)
(*    tlasim's liveness phase;                                             *)
(*  - retransmission is a send taken only while no copy of the message is  *)
(*    in flight.  That bounds the network without a state constraint       *)
(*    (constraints make TLC's liveness checking unsound), and it still     *)
(*    lets every lost message be sent again.  Every behaviour here is a    *)
(*    behaviour of Spec;                                                   *)
(*  - weak fairness on every protocol step except RMChooseToAbort, which   *)
(*    an RM may or may not take.  TMAbort is fair: it stands for the TM's  *)
(*    timeout, without which a No vote would leave the TM waiting for      *)
(*    ever.  Faults are never fair, recoveries always are.                 *)
(* No symmetry: TLC's symmetry reduction is unsound for liveness.          *)
(***************************************************************************)
EXTENDS TwoPhaseCommitMsg

CONSTANT FaultBudget   \* how many faults a behaviour may suffer in all

VARIABLE faults        \* how many faults are still allowed

(* A fault, while the budget lasts.                                        *)
Fault ==
    /\ faults > 0
    /\ faults' = faults - 1
    /\ \/ TMCrash
       \/ \E r \in RM : RMCrash(r)
       \/ \E m \in DOMAIN msgs : NetLose(m) \/ NetDuplicate(m)

(* A send, when no copy of its message is already in flight.               *)
Resend(type, t, r, A) == ~InFlight(M(type, t, r)) /\ A

LTMSendPrepare(t, r)  == Resend("Prepare", t, r, TMSendPrepare(t, r))
LTMSendCommit(t, r)   == Resend("Commit", t, r, TMSendCommit(t, r))
LTMSendAbort(t, r)    == Resend("Abort", t, r, TMSendAbort(t, r))
LRMSendPrepared(t, r) == Resend("Prepared", t, r, RMSendPrepared(t, r))
LRMSendAborted(t, r)  == Resend("Aborted", t, r, RMSendAborted(t, r))

(* Every protocol step; the sends go through Resend.                       *)
Protocol ==
    \/ \E t \in Tx :
          \/ TMBegin(t)
          \/ TMCommit(t)
          \/ TMAbort(t)
    \/ \E t \in Tx, r \in RM :
          \/ LTMSendPrepare(t, r)
          \/ TMRcvPrepared(t, r)
          \/ TMRcvAborted(t, r)
          \/ LTMSendCommit(t, r)
          \/ LTMSendAbort(t, r)
          \/ RMRcvPrepare(t, r)
          \/ LRMSendPrepared(t, r)
          \/ LRMSendAborted(t, r)
          \/ RMChooseToAbort(t, r)
          \/ RMRcvCommit(t, r)
          \/ RMRcvAbort(t, r)
    \/ TMRecover
    \/ \E r \in RM : RMRecover(r)

LiveInit == Init /\ faults = FaultBudget

(* TLC labels every protocol step of a counterexample "LiveNext": the      *)
(* variables that changed tell which action it was.                        *)
LiveNext == Fault \/ (Protocol /\ UNCHANGED faults)

(* Fairness is stated over vars, not <<vars, faults>>: a protocol action   *)
(* alone leaves faults' undetermined, and TLC can evaluate ENABLED only    *)
(* for an action that determines every primed variable of its subscript.   *)
Fairness ==
    /\ WF_vars(TMRecover)
    /\ \A r \in RM : WF_vars(RMRecover(r))
    /\ \A t \in Tx :
          /\ WF_vars(TMBegin(t))
          /\ WF_vars(TMCommit(t))
          /\ WF_vars(TMAbort(t))
    /\ \A t \in Tx, r \in RM :
          /\ WF_vars(LTMSendPrepare(t, r))
          /\ WF_vars(TMRcvPrepared(t, r))
          /\ WF_vars(TMRcvAborted(t, r))
          /\ WF_vars(LTMSendCommit(t, r))
          /\ WF_vars(LTMSendAbort(t, r))
          /\ WF_vars(RMRcvPrepare(t, r))
          /\ WF_vars(LRMSendPrepared(t, r))
          /\ WF_vars(LRMSendAborted(t, r))
          /\ WF_vars(RMRcvCommit(t, r))
          /\ WF_vars(RMRcvAbort(t, r))

LiveSpec == LiveInit /\ [][LiveNext]_<<vars, faults>> /\ Fairness

---------------------------------------------------------------------------
(* Every transaction is eventually decided for good.                       *)
EventuallyDecided ==
    \A t \in Tx : <>[](tmState[t] \in {"committed", "aborted"})

(* Every RM eventually holds the TM's decision for good.                   *)
EventuallyAllLearn ==
    \A t \in Tx, r \in RM : <>[](rmState[t][r] = tmState[t])
=============================================================================
