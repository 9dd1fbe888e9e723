--------------------- MODULE SnapshotTransferMsgBuggy -----------------------
(***************************************************************************)
(* A deliberately wrong SnapshotTransferMsg, kept to show that the checks  *)
(* bite.  Bug picks one of the bug variants of protocols/snapshot/bugs.py; *)
(* each adds to Next a step the protocol must not take:                    *)
(*                                                                         *)
(*  "fuzzy-snapshot": the source sends a chunk from its current data, not  *)
(*    the log prefix at the snapshot position.  A write made during the    *)
(*    transfer is then in the snapshot and in the replay, and the chunks   *)
(*    disagree about the position (ReplicaMatchesSource fails).            *)
(*  "duplicate-chunk-reapplied": the receiver applies a chunk it already   *)
(*    has again.  A duplicated or resent chunk arriving after the replay   *)
(*    began rolls its keys back to the snapshot (ReplicaMatchesSource).    *)
(*  "replay-from-wrong-position": with every chunk in, the receiver takes  *)
(*    its position to be one past the snapshot, so the first record after *)
(*    it is never replayed (ReplicaMatchesSource fails), and a position    *)
(*    past the log's end is no abstract CatchUp (Refinement fails).        *)
(*  "ack-before-persist": the receiver acknowledges a chunk before it is   *)
(*    synced, so a crash loses a chunk the source counts as delivered      *)
(*    (AckedIsDurable fails).  Modelled as a crash that also loses a chunk *)
(*    of a receiver still receiving.  A trace of the code shows it sooner: *)
(*    the step that acknowledges the unsynced chunk leaves rcvSynced FALSE *)
(*    (what its synced log recovers to lacks the chunk).                   *)
(*  "read-before-chunk": the receiver answers a read as soon as it has     *)
(*    joined, from whatever data it holds (ReadFresh fails: a client reads *)
(*    an older value than its own acknowledged write).                     *)
(*                                                                         *)
(* Each configuration names the check TLC must report violated.  It        *)
(* extends the model-checking module for Bound and the model's constants.  *)
(***************************************************************************)
EXTENDS MCSnapshotTransferMsg

CONSTANT Bug   \* which bug variant is switched on

(* SrcResend, with the data of the log's current end.                      *)
SrcResendFuzzy ==
    /\ srcUp
    /\ srcSnap # -1
    /\ srcAcked # Chunks
    /\ LET ch == FirstMissing(srcAcked)
       IN  Send({[type |-> "Chunk", snap |-> srcSnap, chunk |-> ch,
                  data |-> ChunkData(Len(srcLog), ch)]})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

(* RcvChunk's apply, for a chunk the receiver already has, once it holds   *)
(* the whole snapshot.                                                     *)
RcvChunkReapply(m) ==
    /\ RcvReceives(m, "Chunk")
    /\ Whole
    /\ rcvSnap = m.snap
    /\ m.chunk \in rcvChunks
    /\ rcvKv' = [k \in Keys |-> IF k \in ChunkKeys[m.chunk] THEN m.data[k] ELSE rcvKv[k]]
    /\ Reply(m, {ChunkAckMsg(m.snap, m.chunk)})
    /\ UNCHANGED <<srcVars, rcvState, rcvSnap, rcvChunks, rcvPos, rcvReads, rcvUp,
                   rcvSynced, clientVars>>

(* RcvChunk for the last chunk, with the position one too far.             *)
RcvChunkWrongPos(m) ==
    /\ RcvReceives(m, "Chunk")
    /\ rcvState = "receiving"
    /\ rcvSnap \in {-1, m.snap}
    /\ m.chunk \notin rcvChunks
    /\ rcvChunks \cup {m.chunk} = Chunks
    /\ rcvSnap' = m.snap
    /\ rcvChunks' = Chunks
    /\ rcvKv' = [k \in Keys |-> IF k \in ChunkKeys[m.chunk] THEN m.data[k] ELSE rcvKv[k]]
    /\ rcvState' = "replaying"
    /\ rcvPos' = m.snap + 1
    /\ Reply(m, {ChunkAckMsg(m.snap, m.chunk)})
    /\ UNCHANGED <<srcVars, rcvReads, rcvUp, rcvSynced, clientVars>>

(* RcvCrash, losing a chunk that was acknowledged but never synced.        *)
RcvCrashLosingChunk(ch) ==
    /\ rcvUp
    /\ rcvState = "receiving"
    /\ ch \in rcvChunks
    /\ rcvUp' = FALSE
    /\ rcvReads' = {}
    /\ rcvChunks' = rcvChunks \ {ch}
    /\ rcvSnap' = IF rcvChunks' = {} THEN -1 ELSE rcvSnap
    /\ rcvKv' = [k \in Keys |-> IF k \in ChunkKeys[ch] THEN NoValue ELSE rcvKv[k]]
    /\ UNCHANGED <<srcVars, rcvState, rcvPos, rcvSynced, clientVars, msgs>>

(* RcvGet, answering at once from whatever the receiver holds.             *)
RcvGetEarly(m) ==
    /\ RcvReceives(m, "Get")
    /\ rcvState # "empty"
    /\ Reply(m, {GetOkMsg(m.id, rcvKv[m.key])})
    /\ UNCHANGED <<srcVars, rcvVars, clientVars>>

BuggyNext ==
    \/ Next
    \/ Bug = "fuzzy-snapshot" /\ SrcResendFuzzy
    \/ Bug = "duplicate-chunk-reapplied" /\ \E m \in DOMAIN msgs : RcvChunkReapply(m)
    \/ Bug = "replay-from-wrong-position" /\ \E m \in DOMAIN msgs : RcvChunkWrongPos(m)
    \/ Bug = "ack-before-persist" /\ \E ch \in Chunks : RcvCrashLosingChunk(ch)
    \/ Bug = "read-before-chunk" /\ \E m \in DOMAIN msgs : RcvGetEarly(m)

BuggySpec == Init /\ [][BuggyNext]_vars
=============================================================================
