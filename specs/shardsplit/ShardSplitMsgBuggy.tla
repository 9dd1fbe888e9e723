------------------------- MODULE ShardSplitMsgBuggy -------------------------
(***************************************************************************)
(* A deliberately wrong ShardSplitMsg, kept to show that the checks bite.  *)
(* Bug picks one of three bug variants of protocols/shardsplit/bugs.py;    *)
(* each adds to Next a step the protocol must not take:                    *)
(*                                                                         *)
(*  "frozen-accepts-writes": a frozen parent still accepts writes.  One    *)
(*    accepted after the parent shipped its data applies at the parent     *)
(*    only, so the children hold older data (ChildrenMatchParent fails),   *)
(*    and the write is lost when the parent retires: at that step the      *)
(*    abstract map changes with no Write (Refinement fails).               *)
(*  "switch-before-transfer": the coordinator switches routing once the    *)
(*    first child has installed, not both.  The parent may then retire     *)
(*    while the other child has no data yet, and the keys of that child    *)
(*    are held by no shard at all (KeyHeld fails).                         *)
(*  "retire-with-pending": a frozen parent ships its data and retires      *)
(*    without waiting for the writes it accepted before the freeze, which  *)
(*    then never apply anywhere (SafeRetire fails).                        *)
(*                                                                         *)
(* Each configuration names the check TLC must report violated.  It        *)
(* extends the model-checking module for Bound and the model's constants.  *)
(***************************************************************************)
EXTENDS MCShardSplitMsg

CONSTANT Bug   \* which bug variant is switched on

(* ShardAccept, with the guard that makes it safe weakened.                *)
ShardAcceptFrozen(s, m) ==
    /\ Request(s, m)
    /\ m.type = "Put"
    /\ Serves(s, m.key)
    /\ shardState[s] = "frozen"
    /\ m.id \notin applied[s]
    /\ pending' = [pending EXCEPT ![s] = @ \cup {[key |-> m.key, val |-> m.id]}]
    /\ Reply(m, {})
    /\ UNCHANGED <<coordVars, shardState, kv, applied, shardUp, shardSynced,
                   clientVars>>

(* CoordSwitch, with one Installed taken for both.                         *)
CoordSwitchEarly(p) ==
    /\ coordUp
    /\ splitPhase[p] = "freezing"
    /\ coordAcks[p] # {}
    /\ routing' = [k \in Keys |-> IF k \in ShardKeys[p] THEN ChildFor(p, k)
                                                        ELSE routing[k]]
    /\ splitPhase' = [splitPhase EXCEPT ![p] = "retiring"]
    /\ coordAcks' = [coordAcks EXCEPT ![p] = {}]
    /\ Send({RetireMsg(p)})
    /\ UNCHANGED <<coordUp, coordSynced, shardVars, clientVars>>

(* ShardTransfer and ShardRetire, without waiting for pending writes.      *)
ShardTransferUndrained(s) ==
    /\ shardUp[s]
    /\ shardState[s] = "frozen"
    /\ s \in Parents
    /\ Send({InstallMsg(s, ch, [k \in ShardKeys[ch] |-> kv[s][k]], applied[s]) :
               ch \in Children[s]})
    /\ UNCHANGED <<coordVars, shardVars, clientVars>>

ShardRetireUndrained(s, m) ==
    /\ shardUp[s]
    /\ InFlight(m)
    /\ m.type = "Retire"
    /\ m.parent = s
    /\ shardState[s] = "frozen"
    /\ shardState' = [shardState EXCEPT ![s] = "retired"]
    /\ Reply(m, {RetiredMsg(s)})
    /\ UNCHANGED <<coordVars, kv, applied, pending, shardUp, shardSynced,
                   clientVars>>

BuggyNext ==
    \/ Next
    \/ Bug = "frozen-accepts-writes" /\
          \E m \in DOMAIN msgs, s \in Shards : ShardAcceptFrozen(s, m)
    \/ Bug = "switch-before-transfer" /\
          \E p \in Parents : CoordSwitchEarly(p)
    \/ Bug = "retire-with-pending" /\
          \/ \E p \in Parents : ShardTransferUndrained(p)
          \/ \E m \in DOMAIN msgs, s \in Shards : ShardRetireUndrained(s, m)

BuggySpec == Init /\ [][BuggyNext]_vars
=============================================================================
