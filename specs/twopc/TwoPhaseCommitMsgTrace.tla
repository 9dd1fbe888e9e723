---------------------- MODULE TwoPhaseCommitMsgTrace -----------------------
(***************************************************************************)
(* The trace spec template for TwoPhaseCommitMsg.                          *)
(*                                                                         *)
(* tlasim's validator generates a module that extends this one and a data  *)
(* module holding the trace.  Each step of that module binds the primed    *)
(* variables to the values a trace line logged, and conjoins               *)
(* TraceAction(line), so TLC accepts the trace exactly when every line is  *)
(* a step of the action it names, from the state logged on the line        *)
(* before.  The first line, action "Init", is checked against Init by the  *)
(* generated module itself; TraceAction rejects an "Init" line anywhere    *)
(* else.                                                                   *)
(*                                                                         *)
(* What this template leaves out, on purpose:                              *)
(*  - a line's params are not read: each action's parameters are           *)
(*    quantified over, which accepts any parameters that explain the       *)
(*    logged step.  A line that logs the wrong transaction, RM or message  *)
(*    but the right post-state is therefore accepted;                      *)
(*  - ts, seq and node are not checked here.                               *)
(***************************************************************************)
EXTENDS TwoPhaseCommitMsg, Naturals, Sequences, TLC

(* Every action name a trace line may carry: exactly the contract's.       *)
TraceActionNames ==
    { "Init",
      "TMBegin", "TMSendPrepare", "TMRcvPrepared", "TMRcvAborted",
      "TMCommit", "TMAbort", "TMSendCommit", "TMSendAbort",
      "TMCrash", "TMRecover",
      "RMRcvPrepare", "RMSendPrepared", "RMSendAborted", "RMChooseToAbort",
      "RMRcvCommit", "RMRcvAbort", "RMCrash", "RMRecover",
      "NetLose", "NetDuplicate" }

(* The step that trace line e claims to be.  A message that can be lost or *)
(* duplicated is one in flight before the step, hence DOMAIN msgs.         *)
TraceAction(e) ==
    CASE e.action = "TMBegin"         -> \E t \in Tx : TMBegin(t)
      [] e.action = "TMSendPrepare"   -> \E t \in Tx, r \in RM : TMSendPrepare(t, r)
      [] e.action = "TMRcvPrepared"   -> \E t \in Tx, r \in RM : TMRcvPrepared(t, r)
      [] e.action = "TMRcvAborted"    -> \E t \in Tx, r \in RM : TMRcvAborted(t, r)
      [] e.action = "TMCommit"        -> \E t \in Tx : TMCommit(t)
      [] e.action = "TMAbort"         -> \E t \in Tx : TMAbort(t)
      [] e.action = "TMSendCommit"    -> \E t \in Tx, r \in RM : TMSendCommit(t, r)
      [] e.action = "TMSendAbort"     -> \E t \in Tx, r \in RM : TMSendAbort(t, r)
      [] e.action = "TMCrash"         -> TMCrash
      [] e.action = "TMRecover"       -> TMRecover
      [] e.action = "RMRcvPrepare"    -> \E t \in Tx, r \in RM : RMRcvPrepare(t, r)
      [] e.action = "RMSendPrepared"  -> \E t \in Tx, r \in RM : RMSendPrepared(t, r)
      [] e.action = "RMSendAborted"   -> \E t \in Tx, r \in RM : RMSendAborted(t, r)
      [] e.action = "RMChooseToAbort" -> \E t \in Tx, r \in RM : RMChooseToAbort(t, r)
      [] e.action = "RMRcvCommit"     -> \E t \in Tx, r \in RM : RMRcvCommit(t, r)
      [] e.action = "RMRcvAbort"      -> \E t \in Tx, r \in RM : RMRcvAbort(t, r)
      [] e.action = "RMCrash"         -> \E r \in RM : RMCrash(r)
      [] e.action = "RMRecover"       -> \E r \in RM : RMRecover(r)
      [] e.action = "NetLose"         -> \E m \in DOMAIN msgs : NetLose(m)
      [] e.action = "NetDuplicate"    -> \E m \in DOMAIN msgs : NetDuplicate(m)
      [] OTHER                        -> FALSE
=============================================================================
