---------------------- MODULE SnapshotTransferMsgTrace ----------------------
(***************************************************************************)
(* The trace spec template for SnapshotTransferMsg.                        *)
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
(* Parameters: a line's params (msg for every receive; id, the parked      *)
(* read's, for RcvServe; client, and kind and key, for the clients'        *)
(* actions) must be the ones the step uses, so a line that names the wrong *)
(* message or read is rejected even when its post-state is right.  A       *)
(* parameter the line leaves out is quantified over, so traces from        *)
(* loggers that omit params still work.  A received message is one in      *)
(* flight before the step, hence DOMAIN msgs; a served read is one parked  *)
(* before the step, hence rcvReads.  SrcShip, SrcResend, RcvJoin and the   *)
(* crashes and recoveries take no parameter.                               *)
(*                                                                         *)
(* What this template leaves out, on purpose: ts, seq and node are not     *)
(* checked here.                                                           *)
(***************************************************************************)
EXTENDS SnapshotTransferMsg, Integers, Sequences, TLC

(* Every action name a trace line may carry: exactly the contract's.       *)
TraceActionNames ==
    { "Init",
      "SrcWrite", "SrcJoin", "SrcChunkAck", "SrcShip", "SrcRecordsAck",
      "SrcReadIndex", "SrcResend", "SrcCrash", "SrcRecover",
      "RcvJoin", "RcvChunk", "RcvRecords", "RcvGet", "RcvReadIndex",
      "RcvServe", "RcvCrash", "RcvRecover",
      "ClientInvoke", "ClientTimeout", "ClientRedirected", "ClientReturn",
      "ClientIgnore",
      "NetLose", "NetDuplicate" }

(* A parameter the line logged must be the one the step uses.              *)
P(e, key, value) == key \in DOMAIN e.params => e.params[key] = value

(* The step that trace line e claims to be.                                *)
TraceAction(e) ==
    LET Cl(c)  == P(e, "client", c)
        Msg(m) == P(e, "msg", m)
    IN
    CASE e.action = "SrcWrite"         -> \E m \in DOMAIN msgs : Msg(m) /\ SrcWrite(m)
      [] e.action = "SrcJoin"          -> \E m \in DOMAIN msgs : Msg(m) /\ SrcJoin(m)
      [] e.action = "SrcChunkAck"      -> \E m \in DOMAIN msgs : Msg(m) /\ SrcChunkAck(m)
      [] e.action = "SrcShip"          -> SrcShip
      [] e.action = "SrcRecordsAck"    -> \E m \in DOMAIN msgs : Msg(m) /\ SrcRecordsAck(m)
      [] e.action = "SrcReadIndex"     -> \E m \in DOMAIN msgs : Msg(m) /\ SrcReadIndex(m)
      [] e.action = "SrcResend"        -> SrcResend
      [] e.action = "SrcCrash"         -> SrcCrash
      [] e.action = "SrcRecover"       -> SrcRecover
      [] e.action = "RcvJoin"          -> RcvJoin
      [] e.action = "RcvChunk"         -> \E m \in DOMAIN msgs : Msg(m) /\ RcvChunk(m)
      [] e.action = "RcvRecords"       -> \E m \in DOMAIN msgs : Msg(m) /\ RcvRecords(m)
      [] e.action = "RcvGet"           -> \E m \in DOMAIN msgs : Msg(m) /\ RcvGet(m)
      [] e.action = "RcvReadIndex"     -> \E m \in DOMAIN msgs : Msg(m) /\ RcvReadIndex(m)
      [] e.action = "RcvServe"         -> \E r \in rcvReads : P(e, "id", r.id) /\ RcvServe(r)
      [] e.action = "RcvCrash"         -> RcvCrash
      [] e.action = "RcvRecover"       -> RcvRecover
      [] e.action = "ClientInvoke"     -> \E c \in Clients, kind \in {"get", "put"}, k \in Keys :
                                             /\ Cl(c) /\ P(e, "kind", kind) /\ P(e, "key", k)
                                             /\ ClientInvoke(c, kind, k)
      [] e.action = "ClientTimeout"    -> \E c \in Clients : Cl(c) /\ ClientTimeout(c)
      [] e.action = "ClientRedirected" -> \E c \in Clients, m \in DOMAIN msgs :
                                             Cl(c) /\ Msg(m) /\ ClientRedirected(c, m)
      [] e.action = "ClientReturn"     -> \E c \in Clients, m \in DOMAIN msgs :
                                             Cl(c) /\ Msg(m) /\ ClientReturn(c, m)
      [] e.action = "ClientIgnore"     -> \E c \in Clients, m \in DOMAIN msgs :
                                             Cl(c) /\ Msg(m) /\ ClientIgnore(c, m)
      [] e.action = "NetLose"          -> \E m \in DOMAIN msgs : Msg(m) /\ NetLose(m)
      [] e.action = "NetDuplicate"     -> \E m \in DOMAIN msgs : Msg(m) /\ NetDuplicate(m)
      [] OTHER                         -> FALSE
=============================================================================
