--------------------- MODULE MCSnapshotTransferMsgLive ----------------------
(***************************************************************************)
(* Liveness of SnapshotTransferMsg: once faults stop, the receiver becomes *)
(* ready, for good, and every client finishes all MaxOps of its            *)
(* operations (its reads included, which need the receiver ready and the   *)
(* log shipped up to their read index).                                    *)
(*                                                                         *)
(* What this model adds to, or takes from, SnapshotTransferMsg:            *)
(*  - a fault budget: crashes, losses and duplicates together happen at    *)
(*    most FaultBudget times.  Faults that never stop can starve any       *)
(*    protocol, so liveness is a property of runs whose faults heal, as in *)
(*    tlasim's liveness phase;                                             *)
(*  - the sends that model timers are taken only while nothing they would  *)
(*    cause is in flight: a Join while no transfer message (Join, Chunk,   *)
(*    ChunkAck, Records, RecordsAck) is, a chunk resend while no Chunk or  *)
(*    ChunkAck is, a shipment while no Records or RecordsAck is, a         *)
(*    client's timeout while no message about its operation is and its     *)
(*    read is not parked with an index.  As in the implementation, a ready *)
(*    receiver joins again only while reads are parked.  That bounds the   *)
(*    network without a state constraint (constraints make TLC's liveness  *)
(*    checking unsound), and still lets every lost message be sent again.  *)
(*    Every behaviour here is a behaviour of Spec;                         *)
(*  - clients invoke operations on OpKeys only;                            *)
(*  - weak fairness on every protocol step; for receives, per receiving    *)
(*    node and message type (see Fairness).  The receiver's Join is        *)
(*    strongly fair: its timer fires every rcv_join_ticks whatever else    *)
(*    happens, but the gate above closes it whenever the source resends a  *)
(*    chunk, so it is enabled only again and again, not continuously (a    *)
(*    source that took a stale Join resends chunks of a snapshot the       *)
(*    receiver does not have until the receiver joins again).  Faults are  *)
(*    never fair, recoveries always are.                                   *)
(* No symmetry: TLC's symmetry reduction is unsound for liveness.          *)
(***************************************************************************)
EXTENDS SnapshotTransferMsg

CONSTANTS
    FaultBudget,  \* how many faults a behaviour may suffer in all
    FaultKinds,   \* which faults: a subset of {"crash", "lose", "duplicate"}
    OpKeys        \* the keys the clients' operations use

VARIABLE faults   \* how many faults are still allowed

MCKeys == {"k1", "k2"}
MCChunkOrder2 == <<"ch1", "ch2">>
MCChunkKeys2 == [ch \in {"ch1", "ch2"} |-> IF ch = "ch1" THEN {"k1"} ELSE {"k2"}]
MCOpKeys1 == {"k1"}

(* A fault, while the budget lasts.                                        *)
Fault ==
    /\ faults > 0
    /\ faults' = faults - 1
    /\ \/ "crash" \in FaultKinds /\ SrcCrash
       \/ "crash" \in FaultKinds /\ RcvCrash
       \/ "lose" \in FaultKinds /\ \E m \in DOMAIN msgs : NetLose(m)
       \/ "duplicate" \in FaultKinds /\ \E m \in DOMAIN msgs : NetDuplicate(m)

NoneOfType(T) == \A m \in DOMAIN msgs : m.type \notin T

TransferTypes == {"Join", "Chunk", "ChunkAck", "Records", "RecordsAck"}

LRcvJoin ==
    /\ rcvState # "ready" \/ rcvReads # {}
    /\ NoneOfType(TransferTypes)
    /\ RcvJoin

LSrcResend ==
    /\ NoneOfType({"Chunk", "ChunkAck"})
    /\ SrcResend

LSrcShip ==
    /\ NoneOfType({"Records", "RecordsAck"})
    /\ SrcShip

(* Whether m is about client c's current operation.                        *)
About(c, m) ==
    /\ m.type \in {"Put", "Get", "PutOk", "GetOk", "Retry", "ReadIndexReq", "ReadIndex"}
    /\ m.id = clientOp[c].id

LClientTimeout(c) ==
    /\ \A m \in DOMAIN msgs : ~About(c, m)
    /\ \A r \in rcvReads : r.id = clientOp[c].id => r.idx = -1
    /\ ClientTimeout(c)

LClientInvoke(c) == \E kind \in {"get", "put"}, k \in OpKeys : ClientInvoke(c, kind, k)

SrcMsgTypes == {"Put", "Join", "ChunkAck", "RecordsAck", "ReadIndexReq"}
RcvMsgTypes == {"Chunk", "Records", "Get", "ReadIndex"}
ClientMsgTypes == {"GetOk", "PutOk", "Retry"}

SrcReceive(t) ==
    \E m \in DOMAIN msgs :
        /\ m.type = t
        /\ \/ SrcWrite(m)
           \/ SrcJoin(m)
           \/ SrcChunkAck(m)
           \/ SrcRecordsAck(m)
           \/ SrcReadIndex(m)

RcvReceive(t) ==
    \E m \in DOMAIN msgs :
        /\ m.type = t
        /\ \/ RcvChunk(m)
           \/ RcvRecords(m)
           \/ RcvGet(m)
           \/ RcvReadIndex(m)

ClientReceive(c, t) ==
    \E m \in DOMAIN msgs :
        /\ m.type = t
        /\ \/ ClientRedirected(c, m)
           \/ ClientReturn(c, m)
           \/ ClientIgnore(c, m)

RcvServeAny == \E r \in rcvReads : RcvServe(r)

(* Every protocol step; the timer-driven sends go through the gates above. *)
Protocol ==
    \/ LSrcShip
    \/ LSrcResend
    \/ SrcRecover
    \/ LRcvJoin
    \/ RcvServeAny
    \/ RcvRecover
    \/ \E t \in SrcMsgTypes : SrcReceive(t)
    \/ \E t \in RcvMsgTypes : RcvReceive(t)
    \/ \E c \in Clients :
          \/ LClientInvoke(c)
          \/ LClientTimeout(c)
          \/ \E t \in ClientMsgTypes : ClientReceive(c, t)

LiveInit == Init /\ faults = FaultBudget

(* Once the receiver is ready and every client has finished, the work is   *)
(* done.  The finished system stutters, so that TLC reports as a deadlock  *)
(* only a state that is stuck before the work is done.                     *)
Finished ==
    /\ rcvState = "ready"
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
Fairness ==
    /\ WF_vars(SrcRecover)
    /\ WF_vars(RcvRecover)
    /\ WF_vars(LSrcShip)
    /\ WF_vars(LSrcResend)
    /\ SF_vars(LRcvJoin)
    /\ WF_vars(RcvServeAny)
    /\ \A t \in SrcMsgTypes : WF_vars(SrcReceive(t))
    /\ \A t \in RcvMsgTypes : WF_vars(RcvReceive(t))
    /\ \A c \in Clients :
          /\ WF_vars(LClientInvoke(c))
          /\ WF_vars(LClientTimeout(c))
          /\ \A t \in ClientMsgTypes : WF_vars(ClientReceive(c, t))

LiveSpec == LiveInit /\ [][LiveNext]_<<vars, faults>> /\ Fairness

---------------------------------------------------------------------------
(* The receiver eventually is ready, for good.                             *)
RcvReady == <>[](rcvState = "ready")

(* Every client eventually has finished all its operations.                *)
ClientsFinish ==
    \A c \in Clients :
        <>[](clientOp[c].kind = "idle" /\ clientOp[c].id.n = MaxOps)
=============================================================================
