------------------------- MODULE TwoPhaseCommitMsg -------------------------
(***************************************************************************)
(* Two-phase commit as tlasim implements it: one transaction manager (TM)  *)
(* and the resource managers RM run the transactions Tx over a network     *)
(* that loses, duplicates and reorders messages, and every node may crash  *)
(* and recover.  This module is the contract of docs/twopc-model.md: every *)
(* action there is defined here under the same name, with the same         *)
(* parameters in the same order, so that a trace line names the action     *)
(* that explains it.                                                       *)
(*                                                                         *)
(* Models: protocols/twopc/tm.py, protocols/twopc/rm.py                    *)
(* Models source revision: recorded in modelled.json beside this spec;     *)
(* `tlasim drift` names the modelled code changed since (docs/drift.md).   *)
(*                                                                         *)
(* What this model simplifies or leaves out:                               *)
(*  - one TM, never replaced, with node id "tm"; the set of transactions   *)
(*    is fixed up front and every transaction involves every RM;           *)
(*  - a message names one transaction and one RM and carries nothing       *)
(*    else; the network is a bag, so any message in flight may be          *)
(*    delivered next (reordering), lost or duplicated; partitions and      *)
(*    delay are not distinguished from loss and reordering;                *)
(*  - timers are not modelled: a send is enabled whenever its state allows *)
(*    it (retransmission), and TMAbort may fire at any time before commit  *)
(*    (a timeout, or the reaction to a No vote);                           *)
(*  - a log is a set of records synced atomically with the step that       *)
(*    writes it; unsynced writes and disk corruption are not modelled, and *)
(*    the TM's abort decision is never logged: abort is presumed;          *)
(*  - a crashed node's variables already show what it will recover to, so  *)
(*    recovery is a single step that sets the node running again (and an   *)
(*    RM's recovery says which transactions' uncommitted work it lost);    *)
(*  - time is not modelled, so the RM's rule "work held in memory from a   *)
(*    transaction's begin tick is lost in a crash" is enforced for the     *)
(*    transactions the TM has begun (which implies the begin tick passed), *)
(*    and left to the RM for any other transaction;                        *)
(*  - each action is one atomic step of the code; the TM's handler of the  *)
(*    last Yes vote is atomic for the TM only where a rule depends on it:  *)
(*    it commits right after counting that vote, or crashes                *)
(*    (TMCommitPending); other nodes' steps may fall between;              *)
(*  - no fairness here; MCTwoPhaseCommitMsgLive adds it to check liveness. *)
(***************************************************************************)
EXTENDS Naturals, Bags

CONSTANTS
    RM,   \* the resource managers
    Tx    \* the transactions of one run

VARIABLES
    tmState,     \* tmState[t]: the TM's view of transaction t
    tmPrepared,  \* tmPrepared[t]: RMs whose Prepared vote the TM has received
    tmLog,       \* the TM's synced log records (durable)
    tmUp,        \* the TM is running
    rmState,     \* rmState[t][r]: RM r's state for t (durable)
    rmLog,       \* rmLog[r]: RM r's synced log records (durable)
    rmUp,        \* rmUp[r]: RM r is running
    rmLostWork,  \* rmLostWork[r]: transactions whose uncommitted work RM r
                 \* lost in its last crash; r may abort them, never vote Yes
    msgs         \* the messages in flight: a bag, message -> number of copies

vars == <<tmState, tmPrepared, tmLog, tmUp, rmState, rmLog, rmUp, rmLostWork, msgs>>
tmVars == <<tmState, tmPrepared, tmLog, tmUp>>
rmVars == <<rmState, rmLog, rmUp, rmLostWork>>

(* A message names one transaction and one RM: the destination of a TM to  *)
(* RM message, the sender of an RM to TM message.  Aborted is a No vote.   *)
Msg == [type : {"Prepare", "Commit", "Abort", "Prepared", "Aborted"},
        tx : Tx, rm : RM]

M(type, t, r) == [type |-> type, tx |-> t, rm |-> r]

(* Log records.                                                            *)
TMRecord == [kind : {"begin", "commit"}, tx : Tx]
RMRecord == [kind : {"prepared", "committed", "aborted"}, tx : Tx]
Rec(kind, t) == [kind |-> kind, tx |-> t]

TypeOK ==
    /\ tmState \in [Tx -> {"init", "preparing", "committed", "aborted"}]
    /\ tmPrepared \in [Tx -> SUBSET RM]
    /\ tmLog \subseteq TMRecord
    /\ tmUp \in BOOLEAN
    /\ rmState \in [Tx -> [RM -> {"working", "prepared", "committed", "aborted"}]]
    /\ rmLog \in [RM -> SUBSET RMRecord]
    /\ rmUp \in [RM -> BOOLEAN]
    /\ rmLostWork \in [RM -> SUBSET Tx]
    /\ IsABag(msgs)
    /\ BagToSet(msgs) \subseteq Msg

(* One copy more, or one copy fewer, of message m in flight.  A message    *)
(* whose last copy leaves the bag leaves its domain too, so a bag has one  *)
(* representation and a trace can log it exactly.                          *)
Send(m)    == msgs' = msgs (+) SetToBag({m})
Discard(m) == msgs' = msgs (-) SetToBag({m})
InFlight(m) == BagIn(m, msgs)

(* What a TM restarted from log l believes about t.  A commit is logged    *)
(* and an abort is not, so a begun transaction without a commit record is  *)
(* presumed aborted.                                                       *)
Recovered(l, t) ==
    IF Rec("commit", t) \in l THEN "committed"
    ELSE IF Rec("begin", t) \in l THEN "aborted"
    ELSE "init"

Init ==
    /\ tmState = [t \in Tx |-> "init"]
    /\ tmPrepared = [t \in Tx |-> {}]
    /\ tmLog = {}
    /\ tmUp = TRUE
    /\ rmState = [t \in Tx |-> [r \in RM |-> "working"]]
    /\ rmLog = [r \in RM |-> {}]
    /\ rmUp = [r \in RM |-> TRUE]
    /\ rmLostWork = [r \in RM |-> {}]
    /\ msgs = [m \in {} |-> 0]

---------------------------------------------------------------------------
(***************************************************************************)
(* The transaction manager.                                                *)
(***************************************************************************)

(* The TM handles the vote that completes tmPrepared[t] by committing in  *)
(* the same handler: TMRcvPrepared, then TMCommit.  A node runs one        *)
(* handler at a time, so nothing of the TM's own runs between those two    *)
(* steps but its crash.  While TMCommitPending holds, every TM action but  *)
(* TMCommit and TMCrash is disabled: a TM that holds every Yes vote and    *)
(* does anything but commit (aborts, resends Prepare, takes another        *)
(* message) is rejected at that step.  Other nodes and the network are not *)
(* held back: they run concurrently with the TM's handler, and a merged    *)
(* log of a real cluster may place their steps inside it.                  *)
TMCommitPending ==
    /\ tmUp
    /\ \E t \in Tx : tmState[t] = "preparing" /\ tmPrepared[t] = RM


(* The begin record is synced before any Prepare leaves, so that a TM      *)
(* that crashes later knows to presume t aborted.                          *)
TMBegin(t) ==
    /\ ~TMCommitPending
    /\ tmUp
    /\ tmState[t] = "init"
    /\ tmState' = [tmState EXCEPT ![t] = "preparing"]
    /\ tmLog' = tmLog \cup {Rec("begin", t)}
    /\ UNCHANGED <<tmPrepared, tmUp, rmVars, msgs>>

TMSendPrepare(t, r) ==
    /\ ~TMCommitPending
    /\ tmUp
    /\ tmState[t] = "preparing"
    /\ Send(M("Prepare", t, r))
    /\ UNCHANGED <<tmVars, rmVars>>

(* A Yes vote counts only while the TM is still collecting votes; a late   *)
(* or duplicated one is consumed and ignored.  tmPrepared is a set, so a   *)
(* vote counts once however often it arrives.                              *)
TMRcvPrepared(t, r) ==
    /\ ~TMCommitPending
    /\ tmUp
    /\ InFlight(M("Prepared", t, r))
    /\ Discard(M("Prepared", t, r))
    /\ tmPrepared' = IF tmState[t] = "preparing"
                       THEN [tmPrepared EXCEPT ![t] = @ \cup {r}]
                       ELSE tmPrepared
    /\ UNCHANGED <<tmState, tmLog, tmUp, rmVars>>

(* A No vote is only consumed: the decision to abort is TMAbort, a step of *)
(* its own, which the TM may take at any time before it commits.           *)
TMRcvAborted(t, r) ==
    /\ ~TMCommitPending
    /\ tmUp
    /\ InFlight(M("Aborted", t, r))
    /\ Discard(M("Aborted", t, r))
    /\ UNCHANGED <<tmVars, rmVars>>

(* The commit point is the sync of the commit record, in the same step.    *)
TMCommit(t) ==
    /\ tmUp
    /\ tmState[t] = "preparing"
    /\ tmPrepared[t] = RM
    /\ tmState' = [tmState EXCEPT ![t] = "committed"]
    /\ tmLog' = tmLog \cup {Rec("commit", t)}
    /\ UNCHANGED <<tmPrepared, tmUp, rmVars, msgs>>

(* Not logged: a TM that crashes now presumes the abort on recovery.       *)
TMAbort(t) ==
    /\ ~TMCommitPending
    /\ tmUp
    /\ tmState[t] = "preparing"
    /\ tmState' = [tmState EXCEPT ![t] = "aborted"]
    /\ UNCHANGED <<tmPrepared, tmLog, tmUp, rmVars, msgs>>

TMSendCommit(t, r) ==
    /\ ~TMCommitPending
    /\ tmUp
    /\ tmState[t] = "committed"
    /\ Send(M("Commit", t, r))
    /\ UNCHANGED <<tmVars, rmVars>>

TMSendAbort(t, r) ==
    /\ ~TMCommitPending
    /\ tmUp
    /\ tmState[t] = "aborted"
    /\ Send(M("Abort", t, r))
    /\ UNCHANGED <<tmVars, rmVars>>

(* The TM loses its volatile state; its variables show what it recovers    *)
(* to: a transaction it was preparing is now presumed aborted.             *)
TMCrash ==
    /\ tmUp
    /\ tmUp' = FALSE
    /\ tmState' = [t \in Tx |-> Recovered(tmLog, t)]
    /\ tmPrepared' = [t \in Tx |-> {}]
    /\ UNCHANGED <<tmLog, rmVars, msgs>>

TMRecover ==
    /\ ~tmUp
    /\ tmUp' = TRUE
    /\ UNCHANGED <<tmState, tmPrepared, tmLog, rmVars, msgs>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The resource managers.  Every RM transition is synced in the step that  *)
(* makes it, so an RM's state is always what its log says.                 *)
(***************************************************************************)

(* Move RM r to state s for transaction t, logging it in the same step.    *)
RMBecome(t, r, s) ==
    /\ rmState' = [rmState EXCEPT ![t][r] = s]
    /\ rmLog' = [rmLog EXCEPT ![r] = @ \cup {Rec(s, t)}]

(* A working RM votes yes or no; any other RM has voted already and only   *)
(* consumes the message (RMSendPrepared / RMSendAborted repeat the vote).  *)
(* An RM that lost t's work in a crash has nothing to vote Yes on: No only.*)
RMRcvPrepare(t, r) ==
    /\ rmUp[r]
    /\ InFlight(M("Prepare", t, r))
    /\ Discard(M("Prepare", t, r))
    /\ IF rmState[t][r] = "working"
         THEN \/ t \notin rmLostWork[r] /\ RMBecome(t, r, "prepared")
              \/ RMBecome(t, r, "aborted")
         ELSE UNCHANGED <<rmState, rmLog>>
    /\ UNCHANGED <<tmVars, rmUp, rmLostWork>>

(* A prepared RM repeats its Yes vote, which also asks for the decision.   *)
RMSendPrepared(t, r) ==
    /\ rmUp[r]
    /\ rmState[t][r] = "prepared"
    /\ Send(M("Prepared", t, r))
    /\ UNCHANGED <<tmVars, rmVars>>

RMSendAborted(t, r) ==
    /\ rmUp[r]
    /\ rmState[t][r] = "aborted"
    /\ Send(M("Aborted", t, r))
    /\ UNCHANGED <<tmVars, rmVars>>

(* An RM may abort on its own only before it has voted yes.                *)
RMChooseToAbort(t, r) ==
    /\ rmUp[r]
    /\ rmState[t][r] = "working"
    /\ RMBecome(t, r, "aborted")
    /\ UNCHANGED <<tmVars, rmUp, rmLostWork, msgs>>

(* A duplicate Commit reaching a committed RM is consumed and ignored.     *)
RMRcvCommit(t, r) ==
    /\ rmUp[r]
    /\ InFlight(M("Commit", t, r))
    /\ rmState[t][r] \in {"prepared", "committed"}
    /\ Discard(M("Commit", t, r))
    /\ IF rmState[t][r] = "prepared"
         THEN RMBecome(t, r, "committed")
         ELSE UNCHANGED <<rmState, rmLog>>
    /\ UNCHANGED <<tmVars, rmUp, rmLostWork>>

(* A duplicate Abort reaching an aborted RM is consumed and ignored.       *)
RMRcvAbort(t, r) ==
    /\ rmUp[r]
    /\ InFlight(M("Abort", t, r))
    /\ rmState[t][r] # "committed"
    /\ Discard(M("Abort", t, r))
    /\ IF rmState[t][r] \in {"working", "prepared"}
         THEN RMBecome(t, r, "aborted")
         ELSE UNCHANGED <<rmState, rmLog>>
    /\ UNCHANGED <<tmVars, rmUp, rmLostWork>>

(* An RM's protocol state is all synced, so a crash keeps it; what a crash *)
(* loses is the uncommitted work the RM held in memory, and the knowledge  *)
(* of which work that was, which recovery works out again.                 *)
RMCrash(r) ==
    /\ rmUp[r]
    /\ rmUp' = [rmUp EXCEPT ![r] = FALSE]
    /\ rmLostWork' = [rmLostWork EXCEPT ![r] = {}]
    /\ UNCHANGED <<tmVars, rmState, rmLog, msgs>>

(* The transactions whose work RM r is sure to have lost: every one it was *)
(* still working on that the TM had begun, since the RM holds a            *)
(* transaction's work from its begin tick and the TM begins no transaction *)
(* before that tick.                                                       *)
SurelyLostWork(r) ==
    {t \in Tx : rmState[t][r] = "working" /\ Rec("begin", t) \in tmLog}

(* A recovered RM names the work it lost: at least SurelyLostWork(r), and  *)
(* only transactions it is still working on (the RM also counts work begun *)
(* by the clock while the TM was down).  Written as a membership and a     *)
(* filter, so that checking a logged value costs nothing; a partial trace  *)
(* that leaves rmLostWork out makes TLC enumerate [RM -> SUBSET Tx].       *)
RMRecover(r) ==
    /\ ~rmUp[r]
    /\ rmUp' = [rmUp EXCEPT ![r] = TRUE]
    /\ rmLostWork' \in [RM -> SUBSET Tx]
    /\ \A s \in RM \ {r} : rmLostWork'[s] = rmLostWork[s]
    /\ SurelyLostWork(r) \subseteq rmLostWork'[r]
    /\ \A t \in rmLostWork'[r] : rmState[t][r] = "working"
    /\ UNCHANGED <<tmVars, rmState, rmLog, msgs>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The network.  Reordering needs no action: any message in the bag may be *)
(* received next.                                                          *)
(***************************************************************************)

NetLose(m) ==
    /\ InFlight(m)
    /\ Discard(m)
    /\ UNCHANGED <<tmVars, rmVars>>

NetDuplicate(m) ==
    /\ InFlight(m)
    /\ Send(m)
    /\ UNCHANGED <<tmVars, rmVars>>

---------------------------------------------------------------------------
Next ==
    \/ \E t \in Tx :
          \/ TMBegin(t)
          \/ TMCommit(t)
          \/ TMAbort(t)
    \/ \E t \in Tx, r \in RM :
          \/ TMSendPrepare(t, r)
          \/ TMRcvPrepared(t, r)
          \/ TMRcvAborted(t, r)
          \/ TMSendCommit(t, r)
          \/ TMSendAbort(t, r)
          \/ RMRcvPrepare(t, r)
          \/ RMSendPrepared(t, r)
          \/ RMSendAborted(t, r)
          \/ RMChooseToAbort(t, r)
          \/ RMRcvCommit(t, r)
          \/ RMRcvAbort(t, r)
    \/ TMCrash
    \/ TMRecover
    \/ \E r \in RM : RMCrash(r) \/ RMRecover(r)
    \/ \E m \in DOMAIN msgs : NetLose(m) \/ NetDuplicate(m)

Spec == Init /\ [][Next]_vars

---------------------------------------------------------------------------
(***************************************************************************)
(* Safety.                                                                 *)
(***************************************************************************)

(* Within a transaction, no RM has committed while another has aborted.    *)
Consistent ==
    \A t \in Tx : \A r1, r2 \in RM :
        ~ /\ rmState[t][r1] = "aborted"
          /\ rmState[t][r2] = "committed"

(* The TM commits only after every RM has durably voted yes.               *)
CommitNeedsAllPrepared ==
    \A t \in Tx : Rec("commit", t) \in tmLog =>
        \A r \in RM : Rec("prepared", t) \in rmLog[r]

(* A vote the TM counted is backed by the voter's log.                     *)
VotesAreLogged ==
    \A t \in Tx, r \in RM :
        \/ r \in tmPrepared[t]
        \/ InFlight(M("Prepared", t, r))
        => Rec("prepared", t) \in rmLog[r]

(* A decision in flight is the TM's decision, which never changes.         *)
DecisionMsgsMatchTM ==
    \A t \in Tx, r \in RM :
        /\ InFlight(M("Commit", t, r)) => tmState[t] = "committed"
        /\ InFlight(M("Abort", t, r)) => tmState[t] = "aborted"
        /\ InFlight(M("Aborted", t, r)) => rmState[t][r] = "aborted"

(* No RM holds an outcome other than the TM's.                             *)
RMsAgreeWithTM ==
    \A t \in Tx, r \in RM :
        /\ rmState[t][r] = "committed" => tmState[t] = "committed"
        /\ tmState[t] = "committed" => rmState[t][r] # "aborted"

(* The TM's view of t is what recovery from its log would make it, except  *)
(* while the TM is up and still preparing t: recovery would presume t      *)
(* aborted.                                                                *)
TMStateMatchesLog ==
    \A t \in Tx :
        \/ tmState[t] = Recovered(tmLog, t)
        \/ tmUp /\ tmState[t] = "preparing" /\ Recovered(tmLog, t) = "aborted"

(* RMs sync every transition, so an RM's state is what its log says.       *)
RMStateFromLog(r, t) ==
    IF Rec("committed", t) \in rmLog[r] THEN "committed"
    ELSE IF Rec("aborted", t) \in rmLog[r] THEN "aborted"
    ELSE IF Rec("prepared", t) \in rmLog[r] THEN "prepared"
    ELSE "working"

RMStateMatchesLog ==
    \A t \in Tx, r \in RM : rmState[t][r] = RMStateFromLog(r, t)

(* A crashed TM has forgotten every vote.                                  *)
CrashedTMHoldsNoVotes ==
    ~tmUp => \A t \in Tx : tmPrepared[t] = {}

(* Work an RM lost is never voted Yes on, and a crashed RM knows of none.  *)
LostWorkNeverPrepared ==
    \A r \in RM :
        /\ \A t \in rmLostWork[r] : rmState[t][r] \in {"working", "aborted"}
        /\ ~rmUp[r] => rmLostWork[r] = {}

---------------------------------------------------------------------------
(***************************************************************************)
(* Refinement: for each transaction t, the concrete system seen through    *)
(* this mapping is a behaviour of TwoPhaseCommit.  A TM that is preparing  *)
(* has not decided, which the abstract spec calls "init"; an RM has        *)
(* voted yes, in the abstract sense, once its prepared record is durable.  *)
(***************************************************************************)
TC(t) == INSTANCE TwoPhaseCommit WITH
    rmState    <- rmState[t],
    tmState    <- IF tmState[t] = "preparing" THEN "init" ELSE tmState[t],
    tmPrepared <- {r \in RM : Rec("prepared", t) \in rmLog[r]}

(* TCRefinement is \A t \in Tx : TC(t)!Spec with the quantifier moved      *)
(* inside [] (sound, since [] distributes over \A and a step that leaves   *)
(* vars unchanged leaves every projection unchanged).  TLC 2.15 rejects    *)
(* the quantified form as a temporal formula it cannot check, but checks   *)
(* this one on every step, as an initial predicate and an action property. *)
TCRefinement ==
    /\ \A t \in Tx : TC(t)!Init
    /\ [][\A t \in Tx : [TC(t)!Next]_(TC(t)!vars)]_vars

THEOREM Spec => \A t \in Tx : TC(t)!Spec
=============================================================================
