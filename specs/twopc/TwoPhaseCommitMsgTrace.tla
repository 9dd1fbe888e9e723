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
(* Parameters: a line's params (tx, rm, msg) must be the ones the step     *)
(* uses, so a line that names the wrong transaction or RM is rejected even *)
(* when its post-state is right.  A parameter the line leaves out is       *)
(* quantified over, so traces from loggers that omit params still work.    *)
(*                                                                         *)
(* What this template leaves out, on purpose: ts, seq and node are not     *)
(* checked here.                                                           *)
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

(* A parameter the line logged must be the one the step uses.            *)
P(e, key, value) == key \in DOMAIN e.params => e.params[key] = value

(* The values of parameter key a step may use: the one the line logged, if *)
(* it is in S, else all of S.  \E x \in Param(e, k, S) : A(x) is           *)
(* \E x \in S : P(e, k, x) /\ A(x), but TLC evaluates the line's params    *)
(* once rather than for every x.                                          *)
Param(e, key, S) == IF key \in DOMAIN e.params THEN {e.params[key]} \cap S ELSE S

(* The step that trace line e claims to be.  A message that can be lost or *)
(* duplicated is one in flight before the step, hence DOMAIN msgs.         *)
TraceAction(e) ==
    CASE e.action = "TMBegin"         -> \E t \in Param(e, "tx", Tx) : TMBegin(t)
      [] e.action = "TMSendPrepare"   -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : TMSendPrepare(t, r)
      [] e.action = "TMRcvPrepared"   -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : TMRcvPrepared(t, r)
      [] e.action = "TMRcvAborted"    -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : TMRcvAborted(t, r)
      [] e.action = "TMCommit"        -> \E t \in Param(e, "tx", Tx) : TMCommit(t)
      [] e.action = "TMAbort"         -> \E t \in Param(e, "tx", Tx) : TMAbort(t)
      [] e.action = "TMSendCommit"    -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : TMSendCommit(t, r)
      [] e.action = "TMSendAbort"     -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : TMSendAbort(t, r)
      [] e.action = "TMCrash"         -> TMCrash
      [] e.action = "TMRecover"       -> TMRecover
      [] e.action = "RMRcvPrepare"    -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : RMRcvPrepare(t, r)
      [] e.action = "RMSendPrepared"  -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : RMSendPrepared(t, r)
      [] e.action = "RMSendAborted"   -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : RMSendAborted(t, r)
      [] e.action = "RMChooseToAbort" -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : RMChooseToAbort(t, r)
      [] e.action = "RMRcvCommit"     -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : RMRcvCommit(t, r)
      [] e.action = "RMRcvAbort"      -> \E t \in Param(e, "tx", Tx), r \in Param(e, "rm", RM) : RMRcvAbort(t, r)
      [] e.action = "RMCrash"         -> \E r \in Param(e, "rm", RM) : RMCrash(r)
      [] e.action = "RMRecover"       -> \E r \in Param(e, "rm", RM) : RMRecover(r)
      [] e.action = "NetLose"         -> \E m \in Param(e, "msg", DOMAIN msgs) : NetLose(m)
      [] e.action = "NetDuplicate"    -> \E m \in Param(e, "msg", DOMAIN msgs) : NetDuplicate(m)
      [] OTHER                        -> FALSE
=============================================================================
