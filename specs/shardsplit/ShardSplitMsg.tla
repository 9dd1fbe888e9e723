--------------------------- MODULE ShardSplitMsg ----------------------------
(***************************************************************************)
(* Shard split as tlasim implements it: a coordinator splits shards of a   *)
(* key-value store, one split at a time, while clients read and write      *)
(* through cached copies of its routing table, over a network that loses,  *)
(* duplicates and reorders messages, and the coordinator and every shard   *)
(* may crash and recover.  This module is the contract of                  *)
(* docs/shardsplit-model.md: every action there is defined here under the  *)
(* same name, with the node first and the message it receives last, so     *)
(* that a trace line names the action that explains it.                    *)
(*                                                                         *)
(* Models: protocols/shardsplit/coordinator.py, shard.py, client.py        *)
(* Models source revision: recorded in modelled.json beside this spec;     *)
(* `tlasim drift` names the modelled code changed since (docs/drift.md).   *)
(*                                                                         *)
(* A split of parent p, in phases (splitPhase[p] at the coordinator):      *)
(*   freezing:   Freeze -> p stops accepting writes; once its pending      *)
(*               writes have applied it ships each child its half of the   *)
(*               data (Install), and each child answers Installed;         *)
(*   retiring:   the coordinator switched routing to the children, in one  *)
(*               durable step, and asks p to retire (Retire / Retired);    *)
(*   activating: the children start serving (Activate / Activated);        *)
(*   done.                                                                 *)
(* A child serves only after its parent retired, so no key is ever served  *)
(* by two shards, and the data moves while nobody can change it.           *)
(*                                                                         *)
(* What this model simplifies or leaves out:                               *)
(*  - one coordinator, never replaced; the splits, their key ranges and    *)
(*    their order are fixed up front (ShardKeys, Children, SplitOrder);    *)
(*  - the network is a bag, so any message in flight may be delivered      *)
(*    next (reordering), lost or duplicated; partitions and delay are not  *)
(*    distinguished from loss and reordering;                              *)
(*  - timers are not modelled: a resend, a client's timeout, a parent's    *)
(*    transfer and a shard's apply may happen at any time their state      *)
(*    allows, which covers every choice of timer lengths;                  *)
(*  - every durable change is synced in the step that makes it, so a       *)
(*    crashed node's durable variables already show what it recovers to;   *)
(*    a crash clears exactly the volatile ones (coordAcks, pending).  That *)
(*    is a rule of the code, so it is checked, not assumed: coordSynced    *)
(*    and shardSynced say whether a node's durable variables are what its  *)
(*    synced log recovers to, and no step may make one FALSE;              *)
(*  - clients never crash: they are the load, not the system under test;   *)
(*  - no fairness here; MCShardSplitMsgLive adds it to check liveness.     *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, Bags

CONSTANTS
    Keys,           \* the keys
    Shards,         \* every shard, including children not yet created
    Clients,        \* the clients
    InitialShards,  \* the shards active at the start
    ShardKeys,      \* ShardKeys[s]: the keys shard s owns once it is active
    Children,       \* Children[p]: the two children of parent p's split
    SplitOrder,     \* the parents, in the order the coordinator splits them
    MaxOps          \* the number of operations each client invokes

VARIABLES
    routing,      \* routing[k]: the shard that owns key k (durable)
    splitPhase,   \* splitPhase[p]: how far the split of p has got (durable)
    coordAcks,    \* coordAcks[p]: children that answered in this phase
    coordUp,      \* the coordinator is running
    coordSynced,  \* routing, splitPhase: what the coordinator's log recovers to
    shardState,   \* shardState[s]: where shard s stands (durable)
    kv,           \* kv[s][k]: shard s's value of key k (durable)
    applied,      \* applied[s]: ids of the writes s applied or installed (durable)
    pending,      \* pending[s]: writes s accepted and has not applied yet
    shardUp,      \* shardUp[s]: shard s is running
    shardSynced,  \* shardSynced[s]: s's durable variables: what its log recovers to
    clientRoute,  \* clientRoute[c]: client c's copy of the routing table
    clientOp,     \* clientOp[c]: c's outstanding operation, or its last one
    msgs          \* the messages in flight: a bag, message -> number of copies

vars == <<routing, splitPhase, coordAcks, coordUp, coordSynced, shardState, kv,
          applied, pending, shardUp, shardSynced, clientRoute, clientOp, msgs>>
coordVars == <<routing, splitPhase, coordAcks, coordUp, coordSynced>>
shardVars == <<shardState, kv, applied, pending, shardUp, shardSynced>>
clientVars == <<clientRoute, clientOp>>

Parents == DOMAIN Children

(* The value of a key nobody wrote, and the id of a client's absent        *)
(* operation 0 has the same shape: a client name and a number.             *)
NoValue == [c |-> "-", n |-> 0]
WriteId == [c : Clients, n : 1..MaxOps]
Value == {NoValue} \cup WriteId
OpId == [c : Clients, n : 0..MaxOps]

(* Writes a shard accepted: the key, and the id that is also the value.    *)
Write == [key : Keys, val : WriteId]

ShardStates == {"absent", "splitting", "active", "frozen", "retired"}
Phases == {"idle", "freezing", "retiring", "activating", "done"}

(* Shard s answers requests for key k.  A frozen shard still serves: its   *)
(* data can change only through writes it accepted before the freeze.      *)
Serves(s, k) == k \in ShardKeys[s] /\ shardState[s] \in {"active", "frozen"}

(* The child of p whose range holds k.                                     *)
ChildFor(p, k) == CHOOSE ch \in Children[p] : k \in ShardKeys[ch]

---------------------------------------------------------------------------
(***************************************************************************)
(* Messages.  Each is a record with a type field and exactly the fields    *)
(* of the contract's table.  Records of different types have different     *)
(* fields, which TLC compares without complaint (they are simply unequal), *)
(* so one bag holds them all.                                              *)
(***************************************************************************)
GetMsg(s, k, id)       == [type |-> "Get", dst |-> s, key |-> k, id |-> id]
PutMsg(s, k, id)       == [type |-> "Put", dst |-> s, key |-> k, id |-> id]
GetOkMsg(id, v)        == [type |-> "GetOk", id |-> id, val |-> v]
PutOkMsg(id)           == [type |-> "PutOk", id |-> id]
RetryMsg(id, why)      == [type |-> "Retry", id |-> id, why |-> why]
RouteReqMsg(c)         == [type |-> "RouteReq", c |-> c]
RouteMsg(c, r)         == [type |-> "Route", c |-> c, routing |-> r]
FreezeMsg(p)           == [type |-> "Freeze", parent |-> p]
InstallMsg(p, ch, d, a) ==
    [type |-> "Install", parent |-> p, child |-> ch, data |-> d, applied |-> a]
InstalledMsg(p, ch)    == [type |-> "Installed", parent |-> p, child |-> ch]
RetireMsg(p)           == [type |-> "Retire", parent |-> p]
RetiredMsg(p)          == [type |-> "Retired", parent |-> p]
ActivateMsg(p, ch)     == [type |-> "Activate", parent |-> p, child |-> ch]
ActivatedMsg(p, ch)    == [type |-> "Activated", parent |-> p, child |-> ch]

(* A client's request for its operation op, sent to shard s.               *)
OpMsg(op, s) ==
    IF op.kind = "get" THEN GetMsg(s, op.key, op.id) ELSE PutMsg(s, op.key, op.id)

(* What a message may be.  A predicate, not a set, so that TLC never       *)
(* enumerates the Install messages (every data map and applied set).       *)
IsMsg(m) ==
    \/ m \in [type : {"Get", "Put"}, dst : Shards, key : Keys, id : WriteId]
    \/ m \in [type : {"GetOk"}, id : WriteId, val : Value]
    \/ m \in [type : {"PutOk"}, id : WriteId]
    \/ m \in [type : {"Retry"}, id : WriteId, why : {"moved", "frozen", "notready"}]
    \/ m \in [type : {"RouteReq"}, c : Clients]
    \/ m \in [type : {"Route"}, c : Clients, routing : [Keys -> Shards]]
    \/ m \in [type : {"Freeze", "Retire", "Retired"}, parent : Parents]
    \/ \E p \in Parents : \E ch \in Children[p] :
          m \in [type : {"Install"}, parent : {p}, child : {ch},
                 data : [ShardKeys[ch] -> Value], applied : SUBSET WriteId]
    \/ \E p \in Parents :
          m \in [type : {"Installed", "Activate", "Activated"},
                 parent : {p}, child : Children[p]]

TypeOK ==
    /\ routing \in [Keys -> Shards]
    /\ splitPhase \in [Parents -> Phases]
    /\ coordAcks \in [Parents -> SUBSET Shards]
    /\ coordUp \in BOOLEAN
    /\ coordSynced \in BOOLEAN
    /\ shardState \in [Shards -> ShardStates]
    /\ kv \in [Shards -> [Keys -> Value]]
    /\ applied \in [Shards -> SUBSET WriteId]
    /\ pending \in [Shards -> SUBSET Write]
    /\ shardUp \in [Shards -> BOOLEAN]
    /\ shardSynced \in [Shards -> BOOLEAN]
    /\ clientRoute \in [Clients -> [Keys -> Shards]]
    /\ clientOp \in [Clients -> [kind : {"idle", "get", "put"},
                                 key : Keys \cup {"-"}, id : OpId]]
    /\ \A c \in Clients : clientOp[c].id.c = c
    /\ IsABag(msgs)
    /\ \A m \in DOMAIN msgs : IsMsg(m)

---------------------------------------------------------------------------
(***************************************************************************)
(* The bag.  A message whose last copy leaves the bag leaves its domain    *)
(* too, so a bag has one representation and a trace can log it exactly.    *)
(***************************************************************************)
InFlight(m) == BagIn(m, msgs)

(* One more copy of each message of S.                                     *)
Send(S) == msgs' = msgs (+) SetToBag(S)

(* Receive m, which removes one copy, and send one copy of each of S.      *)
Reply(m, S) == msgs' = (msgs (-) SetToBag({m})) (+) SetToBag(S)

InitRouting == [k \in Keys |-> CHOOSE s \in InitialShards : k \in ShardKeys[s]]

Init ==
    /\ routing = InitRouting
    /\ splitPhase = [p \in Parents |-> "idle"]
    /\ coordAcks = [p \in Parents |-> {}]
    /\ coordUp = TRUE
    /\ coordSynced = TRUE
    /\ shardState = [s \in Shards |-> IF s \in InitialShards THEN "active"
                                                               ELSE "absent"]
    /\ kv = [s \in Shards |-> [k \in Keys |-> NoValue]]
    /\ applied = [s \in Shards |-> {}]
    /\ pending = [s \in Shards |-> {}]
    /\ shardUp = [s \in Shards |-> TRUE]
    /\ shardSynced = [s \in Shards |-> TRUE]
    /\ clientRoute = [cl \in Clients |-> InitRouting]
    /\ clientOp = [cl \in Clients |->
                      [kind |-> "idle", key |-> "-", id |-> [c |-> cl, n |-> 0]]]
    /\ msgs = [m \in {} |-> 0]

---------------------------------------------------------------------------
(***************************************************************************)
(* The coordinator.  routing and splitPhase are synced in the step that    *)
(* changes them, so no step leaves coordSynced FALSE; which children       *)
(* answered (coordAcks) is volatile, and a recovered coordinator collects  *)
(* the answers again by resending.                                         *)
(***************************************************************************)

(* The coordinator takes the answer that completes a phase's acks and     *)
(* moves on in the same handler: CoordInstalled then CoordSwitch,          *)
(* CoordActivated then CoordFinish.  A node runs one handler at a time, so  *)
(* nothing of the coordinator's own runs between those two steps but its   *)
(* crash.  While CoordMovePending holds, every coordinator action but      *)
(* CoordSwitch, CoordFinish and CoordCrash is disabled: a coordinator that *)
(* holds both answers and does anything else first (resends, answers a     *)
(* RouteReq, takes another message) is rejected at that step.  Other nodes *)
(* are not held back: a merged log of a real cluster may place their steps *)
(* inside the coordinator's handler.                                       *)
CoordMovePending ==
    /\ coordUp
    /\ \E p \in Parents : /\ splitPhase[p] \in {"freezing", "activating"}
                          /\ coordAcks[p] = Children[p]

(* Splits run one at a time, in SplitOrder: a child may be split only      *)
(* once it is active, which its own split finishing guarantees.            *)
CoordStartSplit(p) ==
    /\ ~CoordMovePending
    /\ coordUp
    /\ splitPhase[p] = "idle"
    /\ \E i \in 1..Len(SplitOrder) :
          /\ SplitOrder[i] = p
          /\ \A j \in 1..(i - 1) : splitPhase[SplitOrder[j]] = "done"
    /\ splitPhase' = [splitPhase EXCEPT ![p] = "freezing"]
    /\ coordAcks' = [coordAcks EXCEPT ![p] = {}]
    /\ Send({FreezeMsg(p)})
    /\ UNCHANGED <<routing, coordUp, coordSynced, shardVars, clientVars>>

(* The current phase's message again, to whoever has not answered yet.  A  *)
(* lost message, a crash on either side, or an answer the coordinator      *)
(* forgot in a crash is survived this way.                                 *)
CoordResend(p) ==
    /\ ~CoordMovePending
    /\ coordUp
    /\ splitPhase[p] \in {"freezing", "retiring", "activating"}
    /\ Send(CASE splitPhase[p] = "freezing" -> {FreezeMsg(p)}
              [] splitPhase[p] = "retiring" -> {RetireMsg(p)}
              [] splitPhase[p] = "activating" ->
                    {ActivateMsg(p, ch) : ch \in Children[p] \ coordAcks[p]})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

(* An Installed counts only while freezing; a late or duplicated one is    *)
(* consumed and ignored.  coordAcks is a set, so it counts once.           *)
CoordInstalled(p, m) ==
    /\ ~CoordMovePending
    /\ coordUp
    /\ InFlight(m)
    /\ m.type = "Installed"
    /\ m.parent = p
    /\ Reply(m, {})
    /\ coordAcks' = IF splitPhase[p] = "freezing"
                      THEN [coordAcks EXCEPT ![p] = @ \cup {m.child}]
                      ELSE coordAcks
    /\ UNCHANGED <<routing, splitPhase, coordUp, coordSynced, shardVars,
                   clientVars>>

(* Both children hold the parent's data, which can no longer change: the   *)
(* switch point.  routing moves every key of p in one durable step, so no  *)
(* client is ever told of a half-done switch.                              *)
CoordSwitch(p) ==
    /\ coordUp
    /\ splitPhase[p] = "freezing"
    /\ coordAcks[p] = Children[p]
    /\ routing' = [k \in Keys |-> IF k \in ShardKeys[p] THEN ChildFor(p, k)
                                                        ELSE routing[k]]
    /\ splitPhase' = [splitPhase EXCEPT ![p] = "retiring"]
    /\ coordAcks' = [coordAcks EXCEPT ![p] = {}]
    /\ Send({RetireMsg(p)})
    /\ UNCHANGED <<coordUp, coordSynced, shardVars, clientVars>>

(* Only once the parent has retired may a child serve.                     *)
CoordRetired(p, m) ==
    /\ ~CoordMovePending
    /\ coordUp
    /\ InFlight(m)
    /\ m.type = "Retired"
    /\ m.parent = p
    /\ IF splitPhase[p] = "retiring"
         THEN /\ splitPhase' = [splitPhase EXCEPT ![p] = "activating"]
              /\ Reply(m, {ActivateMsg(p, ch) : ch \in Children[p]})
         ELSE /\ Reply(m, {})
              /\ UNCHANGED splitPhase
    /\ UNCHANGED <<routing, coordAcks, coordUp, coordSynced, shardVars,
                   clientVars>>

CoordActivated(p, m) ==
    /\ ~CoordMovePending
    /\ coordUp
    /\ InFlight(m)
    /\ m.type = "Activated"
    /\ m.parent = p
    /\ Reply(m, {})
    /\ coordAcks' = IF splitPhase[p] = "activating"
                      THEN [coordAcks EXCEPT ![p] = @ \cup {m.child}]
                      ELSE coordAcks
    /\ UNCHANGED <<routing, splitPhase, coordUp, coordSynced, shardVars,
                   clientVars>>

CoordFinish(p) ==
    /\ coordUp
    /\ splitPhase[p] = "activating"
    /\ coordAcks[p] = Children[p]
    /\ splitPhase' = [splitPhase EXCEPT ![p] = "done"]
    /\ coordAcks' = [coordAcks EXCEPT ![p] = {}]
    /\ UNCHANGED <<routing, coordUp, coordSynced, shardVars, clientVars, msgs>>

(* A client asks for the routing table and gets the current one.           *)
CoordRoute(m) ==
    /\ ~CoordMovePending
    /\ coordUp
    /\ InFlight(m)
    /\ m.type = "RouteReq"
    /\ Reply(m, {RouteMsg(m.c, routing)})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

CoordCrash ==
    /\ coordUp
    /\ coordUp' = FALSE
    /\ coordAcks' = [p \in Parents |-> {}]
    /\ UNCHANGED <<routing, splitPhase, coordSynced, shardVars, clientVars,
                   msgs>>

CoordRecover ==
    /\ ~coordUp
    /\ coordUp' = TRUE
    /\ UNCHANGED <<routing, splitPhase, coordAcks, coordSynced, shardVars,
                   clientVars, msgs>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The shards.  Every change but pending is synced in the step that makes  *)
(* it (no step leaves shardSynced FALSE), so a write is durable before its *)
(* PutOk leaves.  Each request is handled by exactly one of ShardGet,      *)
(* ShardAccept, ShardAckApplied and ShardRedirect, so a trace line's       *)
(* action is never ambiguous.                                              *)
(***************************************************************************)

(* A request addressed to s, which s is up to receive.                     *)
Request(s, m) ==
    /\ shardUp[s]
    /\ InFlight(m)
    /\ m.type \in {"Get", "Put"}
    /\ m.dst = s

(* The requests ShardGet, ShardAccept and ShardAckApplied handle.          *)
Handled(s, m) ==
    /\ Serves(s, m.key)
    /\ \/ m.type = "Get"
       \/ shardState[s] = "active"
       \/ m.id \in applied[s]

(* Why s turns a request for key k away.  "frozen": a write s cannot take  *)
(* until the split is over; "notready": s has not started serving yet;     *)
(* "moved": s no longer owns k, or never did.                              *)
Why(s, k) ==
    IF shardState[s] = "frozen" /\ k \in ShardKeys[s] THEN "frozen"
    ELSE IF shardState[s] \in {"absent", "splitting"} THEN "notready"
    ELSE "moved"

ShardGet(s, m) ==
    /\ Request(s, m)
    /\ m.type = "Get"
    /\ Serves(s, m.key)
    /\ Reply(m, {GetOkMsg(m.id, kv[s][m.key])})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

(* Only an active shard takes new writes: a frozen one has promised its    *)
(* data will not change except by the writes it already holds.  A write    *)
(* accepted twice is pending once, and answered when it applies.           *)
ShardAccept(s, m) ==
    /\ Request(s, m)
    /\ m.type = "Put"
    /\ Serves(s, m.key)
    /\ shardState[s] = "active"
    /\ m.id \notin applied[s]
    /\ pending' = [pending EXCEPT ![s] = @ \cup {[key |-> m.key, val |-> m.id]}]
    /\ Reply(m, {})
    /\ UNCHANGED <<coordVars, shardState, kv, applied, shardUp, shardSynced,
                   clientVars>>

(* A write already applied here, or by the parent this shard installed     *)
(* from, is acknowledged again and never applied twice.                    *)
ShardAckApplied(s, m) ==
    /\ Request(s, m)
    /\ m.type = "Put"
    /\ Serves(s, m.key)
    /\ m.id \in applied[s]
    /\ Reply(m, {PutOkMsg(m.id)})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

ShardRedirect(s, m) ==
    /\ Request(s, m)
    /\ ~Handled(s, m)
    /\ Reply(m, {RetryMsg(m.id, Why(s, m.key))})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

(* The write [key |-> k, val |-> id] takes effect: synced, then answered.  *)
(* A frozen shard still applies the writes it accepted before the freeze.  *)
ShardApply(s, k, id) ==
    /\ shardUp[s]
    /\ [key |-> k, val |-> id] \in pending[s]
    /\ shardState[s] \in {"active", "frozen"}
    /\ kv' = [kv EXCEPT ![s][k] = id]
    /\ applied' = [applied EXCEPT ![s] = @ \cup {id}]
    /\ pending' = [pending EXCEPT ![s] = @ \ {[key |-> k, val |-> id]}]
    /\ Send({PutOkMsg(id)})
    /\ UNCHANGED <<coordVars, shardState, shardUp, shardSynced, clientVars>>

ShardFreeze(s, m) ==
    /\ shardUp[s]
    /\ InFlight(m)
    /\ m.type = "Freeze"
    /\ m.parent = s
    /\ shardState' = IF shardState[s] = "active"
                       THEN [shardState EXCEPT ![s] = "frozen"]
                       ELSE shardState
    /\ Reply(m, {})
    /\ UNCHANGED <<coordVars, kv, applied, pending, shardUp, shardSynced,
                   clientVars>>

(* A frozen parent with nothing pending holds its final data: it ships     *)
(* each child its half, with every applied id so that the children         *)
(* recognise a resent write.  It may do so any number of times, and sends  *)
(* the same thing each time.                                               *)
ShardTransfer(s) ==
    /\ shardUp[s]
    /\ shardState[s] = "frozen"
    /\ pending[s] = {}
    /\ s \in Parents
    /\ Send({InstallMsg(s, ch, [k \in ShardKeys[ch] |-> kv[s][k]], applied[s]) :
               ch \in Children[s]})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

(* A child installs once; a repeated Install is only answered again.       *)
ShardInstall(s, m) ==
    /\ shardUp[s]
    /\ InFlight(m)
    /\ m.type = "Install"
    /\ m.child = s
    /\ IF shardState[s] = "absent"
         THEN /\ shardState' = [shardState EXCEPT ![s] = "splitting"]
              /\ kv' = [kv EXCEPT ![s] = [k \in Keys |->
                           IF k \in ShardKeys[s] THEN m.data[k] ELSE kv[s][k]]]
              /\ applied' = [applied EXCEPT ![s] = m.applied]
         ELSE UNCHANGED <<shardState, kv, applied>>
    /\ Reply(m, {InstalledMsg(m.parent, s)})
    /\ UNCHANGED <<coordVars, pending, shardUp, shardSynced, clientVars>>

(* A parent retires only frozen and drained; a retired one answers every   *)
(* Retire again, since the coordinator may have lost the first answer.     *)
ShardRetire(s, m) ==
    /\ shardUp[s]
    /\ InFlight(m)
    /\ m.type = "Retire"
    /\ m.parent = s
    /\ shardState' = IF shardState[s] = "frozen" /\ pending[s] = {}
                       THEN [shardState EXCEPT ![s] = "retired"]
                       ELSE shardState
    /\ Reply(m, IF shardState'[s] = "retired" THEN {RetiredMsg(s)} ELSE {})
    /\ UNCHANGED <<coordVars, kv, applied, pending, shardUp, shardSynced,
                   clientVars>>

ShardActivate(s, m) ==
    /\ shardUp[s]
    /\ InFlight(m)
    /\ m.type = "Activate"
    /\ m.child = s
    /\ shardState' = IF shardState[s] = "splitting"
                       THEN [shardState EXCEPT ![s] = "active"]
                       ELSE shardState
    /\ Reply(m, IF shardState'[s] = "active" THEN {ActivatedMsg(m.parent, s)}
                                             ELSE {})
    /\ UNCHANGED <<coordVars, kv, applied, pending, shardUp, shardSynced,
                   clientVars>>

(* A crash loses the writes accepted and not yet applied, which nobody was *)
(* told about; everything else a shard holds is durable.                   *)
ShardCrash(s) ==
    /\ shardUp[s]
    /\ shardUp' = [shardUp EXCEPT ![s] = FALSE]
    /\ pending' = [pending EXCEPT ![s] = {}]
    /\ UNCHANGED <<coordVars, shardState, kv, applied, shardSynced, clientVars,
                   msgs>>

ShardRecover(s) ==
    /\ ~shardUp[s]
    /\ shardUp' = [shardUp EXCEPT ![s] = TRUE]
    /\ UNCHANGED <<coordVars, shardState, kv, applied, pending, shardSynced,
                   clientVars, msgs>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The clients: one operation at a time.  A write's value is its id, so a  *)
(* client may resend it anywhere any number of times.                      *)
(***************************************************************************)

Outstanding(c) == clientOp[c].kind # "idle"

ClientInvoke(c, kind, k) ==
    /\ ~Outstanding(c)
    /\ clientOp[c].id.n < MaxOps
    /\ LET op == [kind |-> kind, key |-> k,
                  id |-> [c |-> c, n |-> clientOp[c].id.n + 1]]
       IN  /\ clientOp' = [clientOp EXCEPT ![c] = op]
           /\ Send({OpMsg(op, clientRoute[c][k])})
    /\ UNCHANGED <<coordVars, shardVars, clientRoute>>

(* The client heard nothing in time, or backed off after a Retry: it asks  *)
(* the coordinator where its key lives now.                                *)
ClientTimeout(c) ==
    /\ Outstanding(c)
    /\ Send({RouteReqMsg(c)})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

(* A Route may be older than the copy it replaces (messages reorder); the  *)
(* client then learns the new route again later, after a Retry.            *)
ClientRoute(c, m) ==
    /\ InFlight(m)
    /\ m.type = "Route"
    /\ m.c = c
    /\ clientRoute' = [clientRoute EXCEPT ![c] = m.routing]
    /\ Reply(m, IF Outstanding(c) THEN {OpMsg(clientOp[c], m.routing[clientOp[c].key])}
                                  ELSE {})
    /\ UNCHANGED <<coordVars, shardVars, clientOp>>

(* An answer about the operation outstanding at c.                         *)
Current(c, m) == Outstanding(c) /\ m.id = clientOp[c].id

ClientRedirected(c, m) ==
    /\ InFlight(m)
    /\ m.type = "Retry"
    /\ Current(c, m)
    /\ Reply(m, {})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

ClientReturn(c, m) ==
    /\ InFlight(m)
    /\ m.type \in {"GetOk", "PutOk"}
    /\ Current(c, m)
    /\ clientOp' = [clientOp EXCEPT ![c].kind = "idle"]
    /\ Reply(m, {})
    /\ UNCHANGED <<coordVars, shardVars, clientRoute>>

(* An answer to an operation that already ended, or to a duplicate.        *)
ClientIgnore(c, m) ==
    /\ InFlight(m)
    /\ m.type \in {"GetOk", "PutOk", "Retry"}
    /\ m.id.c = c
    /\ ~Current(c, m)
    /\ Reply(m, {})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The network.  Reordering needs no action: any message in the bag may be *)
(* received next.                                                          *)
(***************************************************************************)

NetLose(m) ==
    /\ InFlight(m)
    /\ msgs' = msgs (-) SetToBag({m})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

NetDuplicate(m) ==
    /\ InFlight(m)
    /\ Send({m})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

---------------------------------------------------------------------------
Next ==
    \/ \E p \in Parents :
          \/ CoordStartSplit(p)
          \/ CoordResend(p)
          \/ CoordSwitch(p)
          \/ CoordFinish(p)
          \/ ShardTransfer(p)
    \/ CoordCrash
    \/ CoordRecover
    \/ \E s \in Shards :
          \/ ShardCrash(s)
          \/ ShardRecover(s)
          \/ \E w \in pending[s] : ShardApply(s, w.key, w.val)
    \/ \E c \in Clients, kind \in {"get", "put"}, k \in Keys :
          ClientInvoke(c, kind, k)
    \/ \E c \in Clients : ClientTimeout(c)
    \/ \E m \in DOMAIN msgs :
          \/ NetLose(m)
          \/ NetDuplicate(m)
          \/ CoordRoute(m)
          \/ \E p \in Parents :
                \/ CoordInstalled(p, m)
                \/ CoordRetired(p, m)
                \/ CoordActivated(p, m)
          \/ \E s \in Shards :
                \/ ShardGet(s, m)
                \/ ShardAccept(s, m)
                \/ ShardAckApplied(s, m)
                \/ ShardRedirect(s, m)
                \/ ShardFreeze(s, m)
                \/ ShardInstall(s, m)
                \/ ShardRetire(s, m)
                \/ ShardActivate(s, m)
          \/ \E c \in Clients :
                \/ ClientRoute(c, m)
                \/ ClientRedirected(c, m)
                \/ ClientReturn(c, m)
                \/ ClientIgnore(c, m)

Spec == Init /\ [][Next]_vars

---------------------------------------------------------------------------
(***************************************************************************)
(* Safety: the contract's invariants.                                      *)
(***************************************************************************)

(* No key is served by two shards.                                         *)
SingleOwner ==
    \A k \in Keys : Cardinality({s \in Shards : Serves(s, k)}) <= 1

(* No shard is retired with writes pending: they would never apply.        *)
SafeRetire ==
    \A s \in Shards : shardState[s] = "retired" => pending[s] = {}

(* The routing table never sends a key to a retired shard.                 *)
RouteLive ==
    \A k \in Keys : shardState[routing[k]] # "retired"

(***************************************************************************)
(* Safety: further invariants, the reasons the refinement holds.           *)
(***************************************************************************)

(* Routing only ever names a shard whose range holds the key, so a request *)
(* never reaches a shard that does not own its key in some split.          *)
RoutingInRange ==
    /\ \A k \in Keys : k \in ShardKeys[routing[k]]
    /\ \A c \in Clients, k \in Keys : k \in ShardKeys[clientRoute[c][k]]

(* Every key is always held by a shard that serves it, or by a child that  *)
(* installed it and waits for its parent to retire.                        *)
KeyHeld ==
    \A k \in Keys : \E s \in Shards :
        /\ k \in ShardKeys[s]
        /\ shardState[s] \in {"active", "frozen", "splitting"}

(* A child that installed holds exactly its frozen parent's data: the      *)
(* parent shipped it drained and has changed nothing since.                *)
ChildrenMatchParent ==
    \A p \in Parents : \A ch \in Children[p] :
        shardState[ch] = "splitting" /\ shardState[p] = "frozen" =>
            \A k \in ShardKeys[ch] : kv[ch][k] = kv[p][k]

(* The ids of the writes applied anywhere so far.                          *)
Written == {NoValue} \cup UNION {applied[s] : s \in Shards}

(* A pending write has taken effect nowhere, so applying it is a fresh     *)
(* abstract Write.                                                         *)
PendingIsFresh ==
    \A s \in Shards : \A w \in pending[s] : w.val \notin Written

---------------------------------------------------------------------------
(***************************************************************************)
(* Refinement: the concrete system, seen through this mapping, is a        *)
(* behaviour of ShardSplit.  The abstract value of k is the one at the     *)
(* shard that serves k; between its parent's retirement and its            *)
(* activation the child that installed k holds it without serving it.  So  *)
(* a write takes effect at the step it applies at the shard serving its    *)
(* key, and a read returns the abstract map's value at the step it is      *)
(* served.                                                                 *)
(***************************************************************************)
Holder(k) ==
    IF \E s \in Shards : Serves(s, k)
      THEN CHOOSE s \in Shards : Serves(s, k)
      ELSE CHOOSE s \in Shards : shardState[s] = "splitting" /\ k \in ShardKeys[s]

AbstractMap ==
    [k \in Keys |->
        IF \E s \in Shards : \/ Serves(s, k)
                             \/ shardState[s] = "splitting" /\ k \in ShardKeys[s]
          THEN kv[Holder(k)][k]
          ELSE NoValue]

Abs == INSTANCE ShardSplit WITH
    map     <- AbstractMap,
    owner   <- routing,
    written <- Written

(* Abs!Spec, stated as an initial predicate and an action property, the    *)
(* form TLC 2.15 checks on every step (as TwoPhaseCommitMsg does).  The    *)
(* step formula is [Abs!Next]_(Abs!vars) with its disjuncts swapped: most  *)
(* concrete steps are abstract stutters, and TLC tries disjuncts in order, *)
(* so checking UNCHANGED first saves computing every abstract Write.       *)
Refinement ==
    /\ Abs!Init
    /\ [][UNCHANGED Abs!vars \/ Abs!Next]_vars

THEOREM Spec => Abs!Spec
=============================================================================
