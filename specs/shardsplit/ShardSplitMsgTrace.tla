------------------------- MODULE ShardSplitMsgTrace -------------------------
(***************************************************************************)
(* The trace spec template for ShardSplitMsg.                              *)
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
(* Parameters: a line's params (parent, shard, client, msg, kind, key, id) *)
(* must be the ones the step uses, so a line that names the wrong node or  *)
(* message is rejected even when its post-state is right.  A parameter the *)
(* line leaves out is quantified over, so traces from loggers that omit    *)
(* params still work.  A received message is one in flight before the      *)
(* step, hence DOMAIN msgs.                                                *)
(*                                                                         *)
(* What this template leaves out, on purpose: ts, seq and node are not     *)
(* checked here.                                                           *)
(***************************************************************************)
EXTENDS ShardSplitMsg, Naturals, Sequences, TLC

(* Every action name a trace line may carry: exactly the contract's.       *)
TraceActionNames ==
    { "Init",
      "CoordStartSplit", "CoordResend", "CoordInstalled", "CoordSwitch",
      "CoordRetired", "CoordActivated", "CoordFinish", "CoordRoute",
      "CoordCrash", "CoordRecover",
      "ShardGet", "ShardAccept", "ShardAckApplied", "ShardRedirect",
      "ShardApply", "ShardFreeze", "ShardTransfer", "ShardInstall",
      "ShardRetire", "ShardActivate", "ShardCrash", "ShardRecover",
      "ClientInvoke", "ClientTimeout", "ClientRoute", "ClientRedirected",
      "ClientReturn", "ClientIgnore",
      "NetLose", "NetDuplicate" }

(* A parameter the line logged must be the one the step uses.              *)
P(e, key, value) == key \in DOMAIN e.params => e.params[key] = value

(* The step that trace line e claims to be.                                *)
TraceAction(e) ==
    LET Pa(p)    == P(e, "parent", p)
        Sh(s)    == P(e, "shard", s)
        Cl(c)    == P(e, "client", c)
        Msg(m)   == P(e, "msg", m)
    IN
    CASE e.action = "CoordStartSplit"  -> \E p \in Parents : Pa(p) /\ CoordStartSplit(p)
      [] e.action = "CoordResend"      -> \E p \in Parents : Pa(p) /\ CoordResend(p)
      [] e.action = "CoordInstalled"   -> \E p \in Parents, m \in DOMAIN msgs :
                                             Pa(p) /\ Msg(m) /\ CoordInstalled(p, m)
      [] e.action = "CoordSwitch"      -> \E p \in Parents : Pa(p) /\ CoordSwitch(p)
      [] e.action = "CoordRetired"     -> \E p \in Parents, m \in DOMAIN msgs :
                                             Pa(p) /\ Msg(m) /\ CoordRetired(p, m)
      [] e.action = "CoordActivated"   -> \E p \in Parents, m \in DOMAIN msgs :
                                             Pa(p) /\ Msg(m) /\ CoordActivated(p, m)
      [] e.action = "CoordFinish"      -> \E p \in Parents : Pa(p) /\ CoordFinish(p)
      [] e.action = "CoordRoute"       -> \E m \in DOMAIN msgs : Msg(m) /\ CoordRoute(m)
      [] e.action = "CoordCrash"       -> CoordCrash
      [] e.action = "CoordRecover"     -> CoordRecover
      [] e.action = "ShardGet"         -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardGet(s, m)
      [] e.action = "ShardAccept"      -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardAccept(s, m)
      [] e.action = "ShardAckApplied"  -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardAckApplied(s, m)
      [] e.action = "ShardRedirect"    -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardRedirect(s, m)
      [] e.action = "ShardApply"       -> \E s \in Shards : \E w \in pending[s] :
                                             /\ Sh(s) /\ P(e, "key", w.key) /\ P(e, "id", w.val)
                                             /\ ShardApply(s, w.key, w.val)
      [] e.action = "ShardFreeze"      -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardFreeze(s, m)
      [] e.action = "ShardTransfer"    -> \E s \in Shards : Sh(s) /\ ShardTransfer(s)
      [] e.action = "ShardInstall"     -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardInstall(s, m)
      [] e.action = "ShardRetire"      -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardRetire(s, m)
      [] e.action = "ShardActivate"    -> \E s \in Shards, m \in DOMAIN msgs :
                                             Sh(s) /\ Msg(m) /\ ShardActivate(s, m)
      [] e.action = "ShardCrash"       -> \E s \in Shards : Sh(s) /\ ShardCrash(s)
      [] e.action = "ShardRecover"     -> \E s \in Shards : Sh(s) /\ ShardRecover(s)
      [] e.action = "ClientInvoke"     -> \E c \in Clients, kind \in {"get", "put"}, k \in Keys :
                                             /\ Cl(c) /\ P(e, "kind", kind) /\ P(e, "key", k)
                                             /\ ClientInvoke(c, kind, k)
      [] e.action = "ClientTimeout"    -> \E c \in Clients : Cl(c) /\ ClientTimeout(c)
      [] e.action = "ClientRoute"      -> \E c \in Clients, m \in DOMAIN msgs :
                                             Cl(c) /\ Msg(m) /\ ClientRoute(c, m)
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
