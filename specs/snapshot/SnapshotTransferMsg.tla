------------------------ MODULE SnapshotTransferMsg -------------------------
(***************************************************************************)
(* Snapshot transfer as tlasim implements it: a receiving node that joins  *)
(* with nothing is brought up from a source whose clients keep writing,    *)
(* over a network that loses, duplicates and reorders messages, while the  *)
(* source and the receiver crash and recover.  This module is the contract *)
(* of docs/snapshot-model.md: every action there is defined here under the *)
(* same name, with the node's message last, so that a trace line names     *)
(* the action that explains it.                                            *)
(*                                                                         *)
(* Models: protocols/snapshot/source.py, receiver.py, client.py            *)
(* Models source revision: recorded in modelled.json beside this spec;     *)
(* `tlasim drift` names the modelled code changed since (docs/drift.md).   *)
(*                                                                         *)
(* The transfer, in the receiver's states (rcvState):                      *)
(*   empty:     it has nothing; RcvJoin sends Join(-1, {}, -1) and the     *)
(*              source snapshots at its log length P;                      *)
(*   receiving: it persists the chunks of the snapshot, each the log       *)
(*              prefix 1..P restricted to the chunk's keys, and            *)
(*              acknowledges each only once it is persisted;               *)
(*   replaying: it has every chunk, so its data is the prefix 1..P; the    *)
(*              source ships the log records from P + 1 on;                *)
(*   ready:     it applied a batch of records, and serves reads by the     *)
(*              read-index method.                                         *)
(* The log is append-only, so the prefix 1..P, and so the snapshot, never  *)
(* changes: the source keeps no copy and recomputes a chunk (KvAt) when it *)
(* sends it.  A write at a position <= P is in the snapshot, any other in  *)
(* the replay, which starts at P + 1: it is captured exactly once.         *)
(*                                                                         *)
(* What this model simplifies or leaves out:                               *)
(*  - one source and one receiver, never replaced: message types tell the  *)
(*    destination, so messages carry no dst field;                         *)
(*  - the network is a bag, so any message in flight may be delivered      *)
(*    next (reordering), lost or duplicated;                               *)
(*  - timers are not modelled: a Join, a resend, a shipment and a client's *)
(*    timeout may happen at any time their state allows, which covers      *)
(*    every choice of timer lengths and every point the implementation     *)
(*    ships at (after a write, an acknowledgement, a Join, a timeout);     *)
(*  - which missing chunk the source sends is left open (the               *)
(*    implementation sends the first in its chunk order): TLC has no order *)
(*    on strings, and any choice is safe;                                  *)
(*  - every durable change is synced in the step that makes it, so a       *)
(*    crashed node's durable variables already show what it recovers to;   *)
(*    a crash clears exactly the volatile ones (the source's transfer      *)
(*    state, the receiver's parked reads).  That is a rule of the code, so *)
(*    it is checked, not assumed: srcSynced and rcvSynced say whether a    *)
(*    node's durable variables are what its synced log recovers to, and    *)
(*    no step may make either FALSE;                                       *)
(*  - clients never crash: they are the load, not the system under test;   *)
(*  - no fairness here; MCSnapshotTransferMsgLive adds it.                 *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, Bags, TLC

CONSTANTS
    Keys,       \* the keys
    Clients,    \* the clients
    ChunkOrder, \* the chunk ids, in the order the source sends them
    ChunkKeys,  \* ChunkKeys[ch]: the keys of chunk ch, a partition of Keys
    MaxOps      \* the number of operations each client invokes

VARIABLES
    srcLog,      \* the source's log, a sequence of writes [key, val] (durable)
    srcSnap,     \* the snapshot position being transferred, -1 for none
    srcAcked,    \* the chunks the receiver acknowledged
    srcShipped,  \* the receiver's acknowledged log position, -1 before any
    srcUp,       \* the source is running
    srcSynced,   \* srcLog is what the source's synced log recovers to
    rcvState,    \* where the receiver stands (durable)
    rcvSnap,     \* the receiver's snapshot position, -1 for none (durable)
    rcvChunks,   \* the chunks it has persisted (durable)
    rcvKv,       \* rcvKv[k]: its value of key k (durable)
    rcvPos,      \* the log position its data reflects, -1 for none (durable)
    rcvReads,    \* the reads it parked, waiting for their read index
    rcvUp,       \* the receiver is running
    rcvSynced,   \* its durable variables are what its synced log recovers to
    clientOp,    \* clientOp[c]: c's outstanding operation, or its last one
    msgs         \* the messages in flight: a bag, message -> number of copies

vars == <<srcLog, srcSnap, srcAcked, srcShipped, srcUp, srcSynced, rcvState,
          rcvSnap, rcvChunks, rcvKv, rcvPos, rcvReads, rcvUp, rcvSynced,
          clientOp, msgs>>
srcVars == <<srcLog, srcSnap, srcAcked, srcShipped, srcUp, srcSynced>>
rcvVars == <<rcvState, rcvSnap, rcvChunks, rcvKv, rcvPos, rcvReads, rcvUp,
             rcvSynced>>
clientVars == <<clientOp>>

(* The value of a key nobody wrote, and the id of a client's absent        *)
(* operation 0 have the same shape: a client name and a number.            *)
NoValue == [c |-> "-", n |-> 0]
WriteId == [c : Clients, n : 1..MaxOps]
Value == {NoValue} \cup WriteId
OpId == [c : Clients, n : 0..MaxOps]

(* A log entry: the key, and the id that is also the value.                *)
Entry == [key : Keys, val : WriteId]

RcvStates == {"empty", "receiving", "replaying", "ready"}

(* The receiver holds a whole snapshot.                                    *)
Whole == rcvState \in {"replaying", "ready"}

Max(S) == CHOOSE x \in S : \A y \in S : y <= x

(* kv with the entries of the sequence es applied in order.                *)
ApplyEntries(kv, es) ==
    [k \in Keys |->
        LET I == {i \in DOMAIN es : es[i].key = k}
        IN  IF I = {} THEN kv[k] ELSE es[Max(I)].val]

(* The map the log prefix 1..p gives.  Positions past the log's end count  *)
(* as its end, so that a wrong position is reported by an invariant, not   *)
(* by an evaluation error.                                                 *)
KvAt(p) ==
    ApplyEntries([k \in Keys |-> NoValue],
                 SubSeq(srcLog, 1, IF p < Len(srcLog) THEN Max({p, 0}) ELSE Len(srcLog)))

(* The chunk ids.                                                          *)
Chunks == {ChunkOrder[i] : i \in DOMAIN ChunkOrder}

(* The chunk of key k.                                                     *)
ChunkOf(k) == CHOOSE ch \in Chunks : k \in ChunkKeys[ch]

(* The receiver holds key k's chunk.                                       *)
KeyHeld(k) == ChunkOf(k) \in rcvChunks

---------------------------------------------------------------------------
(***************************************************************************)
(* Messages.  Each is a record with a type field and exactly the fields    *)
(* of the contract's table.  Records of different types may have           *)
(* different fields; TLC compares them without complaint (they are simply  *)
(* unequal), so one bag holds them all.                                    *)
(***************************************************************************)
PutMsg(k, id)          == [type |-> "Put", key |-> k, id |-> id]
PutOkMsg(id)           == [type |-> "PutOk", id |-> id]
GetMsg(k, id)          == [type |-> "Get", key |-> k, id |-> id]
GetOkMsg(id, v)        == [type |-> "GetOk", id |-> id, val |-> v]
RetryMsg(id)           == [type |-> "Retry", id |-> id]
JoinMsg(s, h, p)       == [type |-> "Join", snap |-> s, have |-> h, pos |-> p]
ChunkAckMsg(s, ch)     == [type |-> "ChunkAck", snap |-> s, chunk |-> ch]
RecordsMsg(f, es)      == [type |-> "Records", from |-> f, entries |-> es]
RecordsAckMsg(p)       == [type |-> "RecordsAck", pos |-> p]
ReadIndexReqMsg(id)    == [type |-> "ReadIndexReq", id |-> id]
ReadIndexMsg(id, p)    == [type |-> "ReadIndex", id |-> id, pos |-> p]

(* Chunk ch of the snapshot at position s: its keys' values in 1..s.       *)
ChunkData(s, ch) == [k \in ChunkKeys[ch] |-> KvAt(s)[k]]
ChunkMsg(s, ch) == [type |-> "Chunk", snap |-> s, chunk |-> ch, data |-> ChunkData(s, ch)]

(* A client's request for its operation op.                                *)
OpMsg(op) == IF op.kind = "get" THEN GetMsg(op.key, op.id) ELSE PutMsg(op.key, op.id)

(* What a message may be.  A predicate, not a set, so that TLC never       *)
(* enumerates the Records messages (every sequence of entries).            *)
IsMsg(m) ==
    LET L == Len(srcLog) IN
    \/ m \in [type : {"Put", "Get"}, key : Keys, id : WriteId]
    \/ m \in [type : {"PutOk", "Retry", "ReadIndexReq"}, id : WriteId]
    \/ m \in [type : {"GetOk"}, id : WriteId, val : Value]
    \/ m \in [type : {"Join"}, snap : -1..L, have : SUBSET Chunks, pos : -1..L]
    \/ \E ch \in Chunks :
          m \in [type : {"Chunk"}, snap : 0..L, chunk : {ch},
                 data : [ChunkKeys[ch] -> Value]]
    \/ m \in [type : {"ChunkAck"}, snap : 0..L, chunk : Chunks]
    \/ /\ m \in [type : {"Records"}, from : 1..(L + 1), entries : Seq(Entry)]
       /\ m.from + Len(m.entries) - 1 <= L
    \/ m \in [type : {"RecordsAck"}, pos : 0..L]
    \/ m \in [type : {"ReadIndex"}, id : WriteId, pos : 0..L]

TypeOK ==
    /\ srcLog \in Seq(Entry)
    /\ srcSnap \in -1..Len(srcLog)
    /\ srcAcked \subseteq Chunks
    /\ srcShipped \in -1..Len(srcLog)
    /\ srcUp \in BOOLEAN
    /\ srcSynced \in BOOLEAN
    /\ rcvState \in RcvStates
    /\ rcvSnap \in -1..Len(srcLog)
    /\ rcvChunks \subseteq Chunks
    /\ rcvKv \in [Keys -> Value]
    /\ rcvPos \in -1..Len(srcLog)
    /\ rcvReads \subseteq [id : WriteId, key : Keys, idx : -1..Len(srcLog)]
    /\ rcvUp \in BOOLEAN
    /\ rcvSynced \in BOOLEAN
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

Init ==
    /\ srcLog = <<>>
    /\ srcSnap = -1
    /\ srcAcked = {}
    /\ srcShipped = -1
    /\ srcUp = TRUE
    /\ srcSynced = TRUE
    /\ rcvState = "empty"
    /\ rcvSnap = -1
    /\ rcvChunks = {}
    /\ rcvKv = [k \in Keys |-> NoValue]
    /\ rcvPos = -1
    /\ rcvReads = {}
    /\ rcvUp = TRUE
    /\ rcvSynced = TRUE
    /\ clientOp = [cl \in Clients |->
                      [kind |-> "idle", key |-> "-", id |-> [c |-> cl, n |-> 0]]]
    /\ msgs = [m \in {} |-> 0]

---------------------------------------------------------------------------
(***************************************************************************)
(* The source.  srcLog is synced in the step that appends to it, so a      *)
(* write is durable before its PutOk leaves, and no step leaves srcSynced  *)
(* FALSE; the transfer state (srcSnap, srcAcked, srcShipped) is volatile   *)
(* and comes from the receiver's Join.                                     *)
(***************************************************************************)

(* A message m the source is up to receive.                                *)
SrcReceives(m, t) == srcUp /\ InFlight(m) /\ m.type = t

(* The first chunk, in ChunkOrder, that is not in acked.                  *)
FirstMissing(acked) ==
    ChunkOrder[CHOOSE i \in DOMAIN ChunkOrder :
                   /\ ChunkOrder[i] \notin acked
                   /\ \A j \in 1..(i - 1) : ChunkOrder[j] \in acked]

(* The chunk messages the source sends for snapshot s when the receiver    *)
(* has acknowledged acked: the first chunk it lacks, if any.  One chunk is *)
(* in flight at a time and they go in order, as the code's rule says; a    *)
(* set of choices (here one), each a set of messages to send.              *)
ChunkChoices(s, acked) ==
    IF Chunks \subseteq acked THEN {{}}
                              ELSE {{ChunkMsg(s, FirstMissing(acked))}}

(* Where shipping starts: after what the receiver acknowledged, or after   *)
(* the snapshot.                                                           *)
ShipFrom == IF srcShipped = -1 THEN srcSnap + 1 ELSE srcShipped + 1

SrcWrite(m) ==
    /\ SrcReceives(m, "Put")
    /\ srcLog' = IF \E i \in DOMAIN srcLog : srcLog[i].val = m.id
                   THEN srcLog
                   ELSE Append(srcLog, [key |-> m.key, val |-> m.id])
    /\ Reply(m, {PutOkMsg(m.id)})
    /\ UNCHANGED <<srcSnap, srcAcked, srcShipped, srcUp, srcSynced, rcvVars, clientVars>>

(* A Join resumes exactly what the receiver holds, or starts a snapshot at *)
(* the log's current end.                                                  *)
SrcJoin(m) ==
    /\ SrcReceives(m, "Join")
    /\ LET s == IF m.snap = -1 THEN Len(srcLog) ELSE m.snap
       IN  /\ srcSnap' = s
           /\ srcAcked' = m.have
           /\ srcShipped' = m.pos
           /\ \E S \in ChunkChoices(s, m.have) : Reply(m, S)
    /\ UNCHANGED <<srcLog, srcUp, srcSynced, rcvVars, clientVars>>

(* An acknowledgement of this snapshot's chunk counts once and releases    *)
(* the next chunk; any other is consumed and ignored.                      *)
SrcChunkAck(m) ==
    /\ SrcReceives(m, "ChunkAck")
    /\ IF m.snap = srcSnap /\ m.chunk \notin srcAcked
         THEN /\ srcAcked' = srcAcked \cup {m.chunk}
              /\ \E S \in ChunkChoices(srcSnap, srcAcked') : Reply(m, S)
         ELSE /\ Reply(m, {})
              /\ UNCHANGED srcAcked
    /\ UNCHANGED <<srcLog, srcSnap, srcShipped, srcUp, srcSynced, rcvVars, clientVars>>

(* The log records after what the receiver has; possibly none, which says  *)
(* "you are caught up".  Also the resend of records.                       *)
SrcShip ==
    /\ srcUp
    /\ srcSnap # -1
    /\ srcAcked = Chunks
    /\ ShipFrom <= Len(srcLog) + 1
    /\ Send({RecordsMsg(ShipFrom, SubSeq(srcLog, ShipFrom, Len(srcLog)))})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

SrcRecordsAck(m) ==
    /\ SrcReceives(m, "RecordsAck")
    /\ srcShipped' = IF srcSnap # -1 /\ m.pos > srcShipped THEN m.pos ELSE srcShipped
    /\ Reply(m, {})
    /\ UNCHANGED <<srcLog, srcSnap, srcAcked, srcUp, srcSynced, rcvVars, clientVars>>

SrcReadIndex(m) ==
    /\ SrcReceives(m, "ReadIndexReq")
    /\ Reply(m, {ReadIndexMsg(m.id, Len(srcLog))})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

SrcResend ==
    /\ srcUp
    /\ srcSnap # -1
    /\ srcAcked # Chunks
    /\ \E S \in ChunkChoices(srcSnap, srcAcked) : Send(S)
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

(* A crash forgets the transfer; the log is durable.                       *)
SrcCrash ==
    /\ srcUp
    /\ srcUp' = FALSE
    /\ srcSnap' = -1
    /\ srcAcked' = {}
    /\ srcShipped' = -1
    /\ UNCHANGED <<srcLog, srcSynced, rcvVars, clientVars, msgs>>

SrcRecover ==
    /\ ~srcUp
    /\ srcUp' = TRUE
    /\ UNCHANGED <<srcLog, srcSnap, srcAcked, srcShipped, srcSynced, rcvVars, clientVars,
                   msgs>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The receiver.  Every change but rcvReads is synced in the step that     *)
(* makes it (no step leaves rcvSynced FALSE), and a chunk is acknowledged  *)
(* only in the step that persists it (or later, again).                    *)
(***************************************************************************)

(* A parked read the receiver can serve now: it has its index, and the    *)
(* replay has reached it.  The code serves every such read in the handler *)
(* of the step that made it servable (the ReadIndex, or the Records that  *)
(* moved rcvPos), so no other step of the receiver comes between; only a  *)
(* crash can, and it drops the read.                                       *)
ServePending ==
    \E r \in rcvReads : r.idx # -1 /\ rcvPos >= r.idx

RcvReceives(m, t) == rcvUp /\ ~ServePending /\ InFlight(m) /\ m.type = t

(* What the receiver holds durably, sent to the source: until it is       *)
(* ready, and after that only while reads are parked (a source that       *)
(* crashed has forgotten the transfer, and a parked read waits on the log  *)
(* it ships).  A ready receiver with no read waiting has nothing to ask.   *)
RcvJoin ==
    /\ rcvUp
    /\ ~ServePending
    /\ rcvState # "ready" \/ rcvReads # {}
    /\ rcvState' = IF rcvState = "empty" THEN "receiving" ELSE rcvState
    /\ Send({JoinMsg(rcvSnap, rcvChunks, rcvPos)})
    /\ UNCHANGED <<srcVars, rcvSnap, rcvChunks, rcvKv, rcvPos, rcvReads, rcvUp,
                   rcvSynced, clientVars>>

(* A chunk of its snapshot that it lacks is persisted; a chunk it already  *)
(* has is acknowledged again and never applied again, since by then the    *)
(* replay may have moved its keys past the snapshot.                       *)
RcvChunk(m) ==
    /\ RcvReceives(m, "Chunk")
    /\ LET fresh  == /\ rcvState = "receiving"
                     /\ rcvSnap \in {-1, m.snap}
                     /\ m.chunk \notin rcvChunks
           snap   == IF fresh THEN m.snap ELSE rcvSnap
           chunks == IF fresh THEN rcvChunks \cup {m.chunk} ELSE rcvChunks
           whole  == fresh /\ chunks = Chunks
       IN  /\ rcvSnap' = snap
           /\ rcvChunks' = chunks
           /\ rcvKv' = IF fresh
                         THEN [k \in Keys |-> IF k \in ChunkKeys[m.chunk]
                                                THEN m.data[k] ELSE rcvKv[k]]
                         ELSE rcvKv
           /\ rcvState' = IF whole THEN "replaying" ELSE rcvState
           /\ rcvPos' = IF whole THEN m.snap ELSE rcvPos
           /\ Reply(m, IF snap = m.snap /\ m.chunk \in chunks
                         THEN {ChunkAckMsg(m.snap, m.chunk)} ELSE {})
    /\ UNCHANGED <<srcVars, rcvReads, rcvUp, rcvSynced, clientVars>>

(* Records apply only in order, right after the receiver's position; the   *)
(* first batch applied, even an empty one, makes it ready.                 *)
RcvRecords(m) ==
    /\ RcvReceives(m, "Records")
    /\ LET apply == Whole /\ m.from = rcvPos + 1
           pos   == IF apply THEN m.from + Len(m.entries) - 1 ELSE rcvPos
       IN  /\ rcvKv' = IF apply THEN ApplyEntries(rcvKv, m.entries) ELSE rcvKv
           /\ rcvPos' = pos
           /\ rcvState' = IF apply THEN "ready" ELSE rcvState
           /\ Reply(m, IF Whole THEN {RecordsAckMsg(pos)} ELSE {})
    /\ UNCHANGED <<srcVars, rcvSnap, rcvChunks, rcvReads, rcvUp, rcvSynced, clientVars>>

(* A ready receiver parks the read and asks for the read index; one that   *)
(* is not ready turns it away.  A read is parked once: a resent Get of a   *)
(* read already parked keeps the parked one, and its index if it has one,  *)
(* and only asks for the index again.  So there is at most one parked read *)
(* per id, which RcvReadIndex and RcvServe's trace parameter rely on.      *)
RcvGet(m) ==
    /\ RcvReceives(m, "Get")
    /\ IF rcvState = "ready"
         THEN /\ rcvReads' = IF \E r \in rcvReads : r.id = m.id
                               THEN rcvReads
                               ELSE rcvReads \cup {[id |-> m.id, key |-> m.key, idx |-> -1]}
              /\ Reply(m, {ReadIndexReqMsg(m.id)})
         ELSE /\ Reply(m, {RetryMsg(m.id)})
              /\ UNCHANGED rcvReads
    /\ UNCHANGED <<srcVars, rcvState, rcvSnap, rcvChunks, rcvKv, rcvPos, rcvUp,
                   rcvSynced, clientVars>>

RcvReadIndex(m) ==
    /\ RcvReceives(m, "ReadIndex")
    /\ rcvReads' = {IF r.id = m.id /\ r.idx = -1 THEN [r EXCEPT !.idx = m.pos] ELSE r :
                       r \in rcvReads}
    /\ Reply(m, {})
    /\ UNCHANGED <<srcVars, rcvState, rcvSnap, rcvChunks, rcvKv, rcvPos, rcvUp,
                   rcvSynced, clientVars>>

(* A parked read whose index the replay has reached.  rcvState = "ready"   *)
(* and the key's chunk are ReadSafe's guard: both always hold of a parked  *)
(* read (ReadSafe below), so they only make the promise explicit.          *)
RcvServe(r) ==
    /\ rcvUp
    /\ r \in rcvReads
    /\ r.idx # -1
    /\ rcvPos >= r.idx
    /\ rcvState = "ready"
    /\ KeyHeld(r.key)
    /\ rcvReads' = rcvReads \ {r}
    /\ Send({GetOkMsg(r.id, rcvKv[r.key])})
    /\ UNCHANGED <<srcVars, rcvState, rcvSnap, rcvChunks, rcvKv, rcvPos, rcvUp,
                   rcvSynced, clientVars>>

(* A crash drops the parked reads; their clients retry.                    *)
RcvCrash ==
    /\ rcvUp
    /\ rcvUp' = FALSE
    /\ rcvReads' = {}
    /\ UNCHANGED <<srcVars, rcvState, rcvSnap, rcvChunks, rcvKv, rcvPos, rcvSynced,
                   clientVars, msgs>>

RcvRecover ==
    /\ ~rcvUp
    /\ rcvUp' = TRUE
    /\ UNCHANGED <<srcVars, rcvState, rcvSnap, rcvChunks, rcvKv, rcvPos, rcvReads,
                   rcvSynced, clientVars, msgs>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The clients: one operation at a time, writes to the source, reads from  *)
(* the receiver.  A write's value is its id, so a client may resend it any *)
(* number of times.                                                        *)
(***************************************************************************)

Outstanding(c) == clientOp[c].kind # "idle"

ClientInvoke(c, kind, k) ==
    /\ ~Outstanding(c)
    /\ clientOp[c].id.n < MaxOps
    /\ LET op == [kind |-> kind, key |-> k,
                  id |-> [c |-> c, n |-> clientOp[c].id.n + 1]]
       IN  /\ clientOp' = [clientOp EXCEPT ![c] = op]
           /\ Send({OpMsg(op)})
    /\ UNCHANGED <<srcVars, rcvVars>>

(* No answer in time, or backing off after a Retry: the same request again, *)
(* to the same node.                                                       *)
ClientTimeout(c) ==
    /\ Outstanding(c)
    /\ Send({OpMsg(clientOp[c])})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

(* An answer about the operation outstanding at c.                         *)
Current(c, m) == Outstanding(c) /\ m.id = clientOp[c].id

ClientRedirected(c, m) ==
    /\ InFlight(m)
    /\ m.type = "Retry"
    /\ Current(c, m)
    /\ Reply(m, {})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

ClientReturn(c, m) ==
    /\ InFlight(m)
    /\ m.type \in {"GetOk", "PutOk"}
    /\ Current(c, m)
    /\ clientOp' = [clientOp EXCEPT ![c].kind = "idle"]
    /\ Reply(m, {})
    /\ UNCHANGED <<srcVars, rcvVars>>

(* An answer to an operation that already ended, or to a duplicate.        *)
ClientIgnore(c, m) ==
    /\ InFlight(m)
    /\ m.type \in {"GetOk", "PutOk", "Retry"}
    /\ m.id.c = c
    /\ ~Current(c, m)
    /\ Reply(m, {})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

---------------------------------------------------------------------------
(***************************************************************************)
(* The network.  Reordering needs no action: any message in the bag may be *)
(* received next.                                                          *)
(***************************************************************************)

NetLose(m) ==
    /\ InFlight(m)
    /\ msgs' = msgs (-) SetToBag({m})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

NetDuplicate(m) ==
    /\ InFlight(m)
    /\ Send({m})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

---------------------------------------------------------------------------
Next ==
    \/ SrcShip
    \/ SrcResend
    \/ SrcCrash
    \/ SrcRecover
    \/ RcvJoin
    \/ RcvCrash
    \/ RcvRecover
    \/ \E r \in rcvReads : RcvServe(r)
    \/ \E c \in Clients, kind \in {"get", "put"}, k \in Keys :
          ClientInvoke(c, kind, k)
    \/ \E c \in Clients : ClientTimeout(c)
    \/ \E m \in DOMAIN msgs :
          \/ NetLose(m)
          \/ NetDuplicate(m)
          \/ SrcWrite(m)
          \/ SrcJoin(m)
          \/ SrcChunkAck(m)
          \/ SrcRecordsAck(m)
          \/ SrcReadIndex(m)
          \/ RcvChunk(m)
          \/ RcvRecords(m)
          \/ RcvGet(m)
          \/ RcvReadIndex(m)
          \/ \E c \in Clients :
                \/ ClientRedirected(c, m)
                \/ ClientReturn(c, m)
                \/ ClientIgnore(c, m)

Spec == Init /\ [][Next]_vars

---------------------------------------------------------------------------
(***************************************************************************)
(* Safety: the contract's invariants.                                      *)
(***************************************************************************)

(* The receiver serves a read only when ready and holding the key's chunk: *)
(* RcvServe requires both, and every parked read, the only kind RcvServe   *)
(* serves, satisfies them at every state.  (The contract's form over       *)
(* GetOk messages would need a history of how each was served.)            *)
ReadSafe ==
    \A r \in rcvReads : rcvState = "ready" /\ KeyHeld(r.key)

SnapshotComplete ==
    Whole => rcvChunks = Chunks

(* The receiver's data is the source's data at its position; while it      *)
(* receives, each chunk it has is the snapshot's.                          *)
ReplicaMatchesSource ==
    /\ Whole => rcvKv = KvAt(rcvPos)
    /\ rcvState = "receiving" =>
          \A ch \in rcvChunks : \A k \in ChunkKeys[ch] : rcvKv[k] = KvAt(rcvSnap)[k]

(* A chunk is acknowledged only once the receiver has it durably, and the  *)
(* receiver never loses it.                                                *)
AckedIsDurable ==
    /\ srcSnap = rcvSnap => srcAcked \subseteq rcvChunks
    /\ \A m \in DOMAIN msgs :
          m.type = "ChunkAck" => rcvSnap = m.snap /\ m.chunk \in rcvChunks

(***************************************************************************)
(* Safety: further invariants, the reasons the above and the refinement    *)
(* hold, and a check of what clients read.                                 *)
(***************************************************************************)

(* Every position anyone holds is a position of the log, and the source    *)
(* never believes the receiver has more than it has.                       *)
PositionsInLog ==
    /\ rcvPos <= Len(srcLog)
    /\ Whole => rcvPos >= rcvSnap /\ rcvSnap >= 0
    /\ srcShipped <= rcvPos

(* The source appends a write at most once.                                *)
WritesUnique ==
    \A i, j \in DOMAIN srcLog : i # j => srcLog[i].val # srcLog[j].val

(* The position of client c's last write before its operation n, 0 if none *)
(* is in the log.                                                          *)
OwnWritePos(c, n) ==
    LET I == {i \in DOMAIN srcLog : srcLog[i].val.c = c /\ srcLog[i].val.n < n}
    IN  IF I = {} THEN 0 ELSE Max(I)

(* A consequence of linearizability that an invariant can state: the      *)
(* answer to a client's current read is the key's value in a log prefix    *)
(* that holds every write the client made before (its earlier operations   *)
(* all ended, and the source acknowledges a write only once logged), and a *)
(* parked read's index covers them too.                                    *)
ReadFresh ==
    \A c \in Clients : clientOp[c].kind = "get" =>
        LET id == clientOp[c].id
            lo == OwnWritePos(c, id.n)
        IN  /\ \A m \in DOMAIN msgs :
                  m.type = "GetOk" /\ m.id = id =>
                      \E p \in lo..Len(srcLog) : KvAt(p)[clientOp[c].key] = m.val
            /\ \A r \in rcvReads : r.id = id /\ r.idx # -1 => r.idx >= lo

---------------------------------------------------------------------------
(***************************************************************************)
(* Refinement: the concrete system, seen through this mapping, is a        *)
(* behaviour of SnapshotTransfer.  The replica's position is rcvPos once   *)
(* it holds a whole snapshot, and none before.                             *)
(***************************************************************************)
Abs == INSTANCE SnapshotTransfer WITH
    log   <- srcLog,
    pos   <- IF Whole THEN rcvPos ELSE -1,
    ready <- rcvState = "ready"

(* Abs!Spec, stated as an initial predicate and an action property, the    *)
(* form TLC 2.15 checks on every step (as ShardSplitMsg does).  The step   *)
(* formula is [Abs!Next]_(Abs!vars) with its disjuncts swapped: most       *)
(* concrete steps are abstract stutters, and TLC tries disjuncts in order. *)
Refinement ==
    /\ Abs!Init
    /\ [][UNCHANGED Abs!vars \/ Abs!Next]_vars

THEOREM Spec => Abs!Spec
=============================================================================
