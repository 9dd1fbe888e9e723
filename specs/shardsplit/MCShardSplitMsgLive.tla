------------------------- MODULE MCShardSplitMsgLive ------------------------
(***************************************************************************)
(* Liveness of ShardSplitMsg: once faults stop, every split reaches "done" *)
(* and every client finishes all MaxOps of its operations.  A split is     *)
(* never rolled back, so this is the promise that interrupted splits       *)
(* complete.                                                               *)
(*                                                                         *)
(* What this model adds to, or takes from, ShardSplitMsg:                  *)
(*  - a fault budget: crashes, losses and duplicates together happen at    *)
(*    most FaultBudget times.  Faults that never stop can starve any       *)
(*    protocol, so liveness is a property of runs whose faults heal, as in *)
(*    tlasim's liveness phase;                                             *)
(*  - the sends that model timers are taken only while nothing they would  *)
(*    cause is in flight: a resend while neither the message nor its       *)
(*    answer is, a transfer while no Install or Installed of the split     *)
(*    is, a client's timeout while no message about its operation or its   *)
(*    route is.  That bounds the network without a state constraint        *)
(*    (constraints make TLC's liveness checking unsound), and still lets   *)
(*    every lost message be sent again.  Every behaviour here is a         *)
(*    behaviour of Spec;                                                   *)
(*  - clients invoke operations on OpKeys only (k1: k2 is its mirror       *)
(*    image, with s3 for s2);                                              *)
(*  - weak fairness on every protocol step; for receives, per receiving    *)
(*    node and message type (see Fairness);                                *)
(*    Faults are never fair, recoveries always are.                        *)
(* No symmetry: TLC's symmetry reduction is unsound for liveness.          *)
(***************************************************************************)
EXTENDS ShardSplitMsg, TLC

CONSTANTS
    FaultBudget,  \* how many faults a behaviour may suffer in all
    FaultKinds,   \* which faults: a subset of {"crash", "lose", "duplicate"}
    OpKeys        \* the keys the clients' operations use

VARIABLE faults   \* how many faults are still allowed

MCKeys == {"k1", "k2"}
MCShards == {"s1", "s2", "s3"}
MCInitialShards == {"s1"}
MCShardKeys == [s \in MCShards |-> CASE s = "s1" -> {"k1", "k2"}
                                     [] s = "s2" -> {"k1"}
                                     [] s = "s3" -> {"k2"}]
MCChildren == [p \in {"s1"} |-> {"s2", "s3"}]
MCSplitOrder == <<"s1">>
MCOpKeys == {"k1"}

(* A fault, while the budget lasts.                                        *)
Fault ==
    /\ faults > 0
    /\ faults' = faults - 1
    /\ \/ "crash" \in FaultKinds /\ CoordCrash
       \/ "crash" \in FaultKinds /\ \E s \in Shards : ShardCrash(s)
       \/ "lose" \in FaultKinds /\ \E m \in DOMAIN msgs : NetLose(m)
       \/ "duplicate" \in FaultKinds /\ \E m \in DOMAIN msgs : NetDuplicate(m)

NoneInFlight(S) == \A m \in S : ~InFlight(m)

(* The phase's message, and the answer it asks for, are both gone.         *)
LCoordResend(p) ==
    /\ CASE splitPhase[p] = "freezing" -> NoneInFlight({FreezeMsg(p)})
         [] splitPhase[p] = "retiring" -> NoneInFlight({RetireMsg(p), RetiredMsg(p)})
         [] OTHER -> NoneInFlight(UNION {{ActivateMsg(p, ch), ActivatedMsg(p, ch)} :
                                           ch \in Children[p]})
    /\ CoordResend(p)

LShardTransfer(s) ==
    /\ \A m \in DOMAIN msgs : m.type \in {"Install", "Installed"} => m.parent # s
    /\ ShardTransfer(s)

(* Whether m is about client c: its route, or its current operation.       *)
About(c, m) ==
    \/ m.type \in {"RouteReq", "Route"} /\ m.c = c
    \/ m.type \in {"Get", "Put", "GetOk", "PutOk", "Retry"} /\ m.id = clientOp[c].id

LClientTimeout(c) ==
    /\ \A m \in DOMAIN msgs : ~About(c, m)
    /\ ClientTimeout(c)

LClientInvoke(c) == \E kind \in {"get", "put"}, k \in OpKeys : ClientInvoke(c, kind, k)

(* Every protocol step; the timer-driven sends go through the gates above. *)
(* Each disjunct is one fairness class below.                              *)
CoordStep(p) ==
    \/ CoordStartSplit(p)
    \/ LCoordResend(p)
    \/ CoordSwitch(p)
    \/ CoordFinish(p)
    \/ \E m \in DOMAIN msgs : CoordInstalled(p, m)
    \/ \E m \in DOMAIN msgs : CoordRetired(p, m)
    \/ \E m \in DOMAIN msgs : CoordActivated(p, m)

(* Receives are fair per receiving node and message type: a node that      *)
(* keeps getting requests must still, some time, take the Activate that    *)
(* waits for it.                                                           *)
ShardMsgTypes == {"Get", "Put", "Freeze", "Install", "Retire", "Activate"}
ClientMsgTypes == {"Route", "GetOk", "PutOk", "Retry"}

ShardReceive(s, t) ==
    \E m \in DOMAIN msgs :
        /\ m.type = t
        /\ \/ ShardGet(s, m)
           \/ ShardAccept(s, m)
           \/ ShardAckApplied(s, m)
           \/ ShardRedirect(s, m)
           \/ ShardFreeze(s, m)
           \/ ShardInstall(s, m)
           \/ ShardRetire(s, m)
           \/ ShardActivate(s, m)

ShardApplyAny(s) == \E w \in pending[s] : ShardApply(s, w.key, w.val)

ClientReceive(c, t) ==
    \E m \in DOMAIN msgs :
        /\ m.type = t
        /\ \/ ClientRoute(c, m)
           \/ ClientRedirected(c, m)
           \/ ClientReturn(c, m)
           \/ ClientIgnore(c, m)

CoordRouteAny == \E m \in DOMAIN msgs : CoordRoute(m)

Protocol ==
    \/ \E p \in Parents : CoordStep(p) \/ LShardTransfer(p)
    \/ CoordRouteAny
    \/ CoordRecover
    \/ \E s \in Shards :
          \/ \E t \in ShardMsgTypes : ShardReceive(s, t)
          \/ ShardApplyAny(s)
          \/ ShardRecover(s)
    \/ \E c \in Clients :
          \/ LClientInvoke(c)
          \/ LClientTimeout(c)
          \/ \E t \in ClientMsgTypes : ClientReceive(c, t)

LiveInit == Init /\ faults = FaultBudget

(* Once every split is done and every client has finished, nothing is left *)
(* to do but fault, and the budget may be spent.  The finished system      *)
(* stutters, so that TLC reports as a deadlock only a state that is stuck  *)
(* before the work is done.                                                *)
Finished ==
    /\ \A p \in Parents : splitPhase[p] = "done"
    /\ \A c \in Clients : clientOp[c].kind = "idle" /\ clientOp[c].id.n = MaxOps

(* TLC labels every protocol step of a counterexample "LiveNext": the      *)
(* variables that changed tell which action it was.                        *)
LiveNext ==
    \/ Fault
    \/ Protocol /\ UNCHANGED faults
    \/ Finished /\ UNCHANGED <<vars, faults>>

(* Fairness is stated over vars, not <<vars, faults>>: a protocol action   *)
(* alone leaves faults' undetermined, and TLC can evaluate ENABLED only    *)
(* for an action that determines every primed variable of its subscript.   *)
(* A receive class (node and message type) is weakly fair as a whole;      *)
(* that is enough here because the gates let at most one message of a      *)
(* class wait at a time, but for the odd duplicate.                        *)
Fairness ==
    /\ WF_vars(CoordRecover)
    /\ WF_vars(CoordRouteAny)
    /\ \A p \in Parents :
          /\ WF_vars(CoordStartSplit(p))
          /\ WF_vars(LCoordResend(p))
          /\ WF_vars(CoordSwitch(p))
          /\ WF_vars(CoordFinish(p))
          /\ WF_vars(\E m \in DOMAIN msgs : CoordInstalled(p, m))
          /\ WF_vars(\E m \in DOMAIN msgs : CoordRetired(p, m))
          /\ WF_vars(\E m \in DOMAIN msgs : CoordActivated(p, m))
          /\ WF_vars(LShardTransfer(p))
    /\ \A s \in Shards :
          /\ WF_vars(ShardRecover(s))
          /\ WF_vars(ShardApplyAny(s))
          /\ \A t \in ShardMsgTypes : WF_vars(ShardReceive(s, t))
    /\ \A c \in Clients :
          /\ WF_vars(LClientInvoke(c))
          /\ WF_vars(LClientTimeout(c))
          /\ \A t \in ClientMsgTypes : WF_vars(ClientReceive(c, t))

LiveSpec == LiveInit /\ [][LiveNext]_<<vars, faults>> /\ Fairness

---------------------------------------------------------------------------
(* Every split eventually completes, for good.                             *)
SplitsComplete ==
    \A p \in Parents : <>[](splitPhase[p] = "done")

(* Every client eventually has finished all its operations.                *)
ClientsFinish ==
    \A c \in Clients :
        <>[](clientOp[c].kind = "idle" /\ clientOp[c].id.n = MaxOps)
=============================================================================
