---------------------------- MODULE {{Module}}Msg ----------------------------
(***************************************************************************)
(* {{name}} as its code runs: a primary sends each value to every backup;  *)
(* a backup appends it to its log, syncs, and acknowledges; the primary    *)
(* commits the value (a synced record of its own) once every backup has    *)
(* acknowledged it.                                                        *)
(*                                                                         *)
(* Faults: any node crashes and recovers.  A crash keeps the synced log    *)
(* and loses the rest: the primary forgets which backups acknowledged.     *)
(* The network loses, duplicates and reorders messages (any message in the *)
(* bag may be received next), so the primary sends again to every backup   *)
(* that has not acknowledged an uncommitted value, and a backup            *)
(* acknowledges again each time a value reaches it.                        *)
(*                                                                         *)
(* Every trace line of the code is a step of Next: tlasim derives the      *)
(* trace spec from Next, and the code logs each action's parameters under  *)
(* the names of its formal parameters (PrimarySend(v, b) logs v and b).    *)
(***************************************************************************)
EXTENDS Naturals, Bags

CONSTANTS
    Backups,  \* the backup nodes ("b1", "b2", ...)
    Values    \* the values the primary replicates (1, 2, ...)

VARIABLES
    primaryAcked,  \* primaryAcked[v]: the backups the primary knows hold v (volatile)
    primaryLog,    \* the primary's synced log: a record [v |-> v] per committed value
    primaryUp,     \* whether the primary is up
    backupLog,     \* backupLog[b]: backup b's synced log, a record [v |-> v] per value
    backupUp,      \* backupUp[b]: whether backup b is up
    msgs           \* the messages in flight: a bag, message -> number of copies

vars == <<primaryAcked, primaryLog, primaryUp, backupLog, backupUp, msgs>>
primaryVars == <<primaryAcked, primaryLog, primaryUp>>
backupVars == <<backupLog, backupUp>>

Rec(v) == [v |-> v]
Replicate(b, v) == [type |-> "Replicate", backup |-> b, v |-> v]
Ack(b, v) == [type |-> "Ack", backup |-> b, v |-> v]
Msg == {Replicate(b, v) : b \in Backups, v \in Values} \cup {Ack(b, v) : b \in Backups, v \in Values}

TypeOK ==
    /\ primaryAcked \in [Values -> SUBSET Backups]
    /\ primaryLog \subseteq {Rec(v) : v \in Values}
    /\ primaryUp \in BOOLEAN
    /\ backupLog \in [Backups -> SUBSET {Rec(v) : v \in Values}]
    /\ backupUp \in [Backups -> BOOLEAN]
    /\ IsABag(msgs)
    /\ BagToSet(msgs) \subseteq Msg

Send(m) == msgs' = msgs (+) SetToBag({m})
Discard(m) == msgs' = msgs (-) SetToBag({m})
InFlight(m) == BagIn(m, msgs)

Init ==
    /\ primaryAcked = [v \in Values |-> {}]
    /\ primaryLog = {}
    /\ primaryUp = TRUE
    /\ backupLog = [b \in Backups |-> {}]
    /\ backupUp = [b \in Backups |-> TRUE]
    /\ msgs = EmptyBag

---------------------------------------------------------------------------
(* The primary.                                                            *)

(* Sent at start, and again on a timer, to each backup not known to hold   *)
(* an uncommitted value.                                                   *)
PrimarySend(v, b) ==
    /\ primaryUp
    /\ Rec(v) \notin primaryLog
    /\ b \notin primaryAcked[v]
    /\ Send(Replicate(b, v))
    /\ UNCHANGED <<primaryVars, backupVars>>

PrimaryRcvAck(v, b) ==
    /\ primaryUp
    /\ InFlight(Ack(b, v))
    /\ Discard(Ack(b, v))
    /\ primaryAcked' = [primaryAcked EXCEPT ![v] = @ \cup {b}]
    /\ UNCHANGED <<primaryLog, primaryUp, backupVars>>

PrimaryCommit(v) ==
    /\ primaryUp
    /\ Rec(v) \notin primaryLog
    /\ primaryAcked[v] = Backups
    /\ primaryLog' = primaryLog \cup {Rec(v)}
    /\ UNCHANGED <<primaryAcked, primaryUp, backupVars, msgs>>

(* A crash keeps the synced log and forgets every acknowledgement.         *)
PrimaryCrash ==
    /\ primaryUp
    /\ primaryUp' = FALSE
    /\ primaryAcked' = [v \in Values |-> {}]
    /\ UNCHANGED <<primaryLog, backupVars, msgs>>

PrimaryRecover ==
    /\ ~primaryUp
    /\ primaryUp' = TRUE
    /\ UNCHANGED <<primaryAcked, primaryLog, backupVars, msgs>>

---------------------------------------------------------------------------
(* The backups.                                                            *)

(* A value that reaches a backup is appended to its log and synced (a     *)
(* value it already holds leaves the log as it is).                        *)
BackupStore(b, v) ==
    /\ backupUp[b]
    /\ InFlight(Replicate(b, v))
    /\ Discard(Replicate(b, v))
    /\ backupLog' = [backupLog EXCEPT ![b] = @ \cup {Rec(v)}]
    /\ UNCHANGED <<primaryVars, backupUp>>

(* The rule the code must keep: a backup acknowledges only what its synced *)
(* log holds.                                                              *)
BackupAck(b, v) ==
    /\ backupUp[b]
    /\ Rec(v) \in backupLog[b]
    /\ Send(Ack(b, v))
    /\ UNCHANGED <<primaryVars, backupVars>>

BackupCrash(b) ==
    /\ backupUp[b]
    /\ backupUp' = [backupUp EXCEPT ![b] = FALSE]
    /\ UNCHANGED <<primaryVars, backupLog, msgs>>

BackupRecover(b) ==
    /\ ~backupUp[b]
    /\ backupUp' = [backupUp EXCEPT ![b] = TRUE]
    /\ UNCHANGED <<primaryVars, backupLog, msgs>>

---------------------------------------------------------------------------
(* The network: a message to a node that is down is lost too.             *)

NetLose(m) ==
    /\ InFlight(m)
    /\ Discard(m)
    /\ UNCHANGED <<primaryVars, backupVars>>

NetDuplicate(m) ==
    /\ InFlight(m)
    /\ Send(m)
    /\ UNCHANGED <<primaryVars, backupVars>>

---------------------------------------------------------------------------
Next ==
    \/ \E v \in Values, b \in Backups :
          \/ PrimarySend(v, b)
          \/ PrimaryRcvAck(v, b)
          \/ BackupStore(b, v)
          \/ BackupAck(b, v)
    \/ \E v \in Values : PrimaryCommit(v)
    \/ PrimaryCrash
    \/ PrimaryRecover
    \/ \E b \in Backups : BackupCrash(b) \/ BackupRecover(b)
    \/ \E m \in DOMAIN msgs : NetLose(m) \/ NetDuplicate(m)

Spec == Init /\ [][Next]_vars

---------------------------------------------------------------------------
(* Safety.                                                                 *)

(* Every backup's synced log holds every committed value.                  *)
Durable ==
    \A r \in primaryLog : \A b \in Backups : r \in backupLog[b]

(* An acknowledgement, counted or in flight, is backed by the backup's log. *)
AckedIsStored ==
    \A v \in Values, b \in Backups :
        b \in primaryAcked[v] \/ InFlight(Ack(b, v)) => Rec(v) \in backupLog[b]

(* A crashed primary knows of no acknowledgement.                          *)
CrashedPrimaryKnowsNoAcks ==
    ~primaryUp => \A v \in Values : primaryAcked[v] = {}

(* Refinement: seen through this mapping, every behaviour is one of        *)
(* {{Module}}'s.                                                           *)
Abstract == INSTANCE {{Module}} WITH
    committed <- {r.v : r \in primaryLog},
    stored <- [b \in Backups |-> {r.v : r \in backupLog[b]}]

Refinement == Abstract!Spec
=============================================================================
