------------------------- MODULE MCSnapshotTransfer -------------------------
(***************************************************************************)
(* Model checking SnapshotTransfer: what only TLC needs.                   *)
(*                                                                         *)
(* Keys and clients are model values and each set is interchangeable: no   *)
(* action or checked property names a particular key or client.  So states *)
(* that differ only by renaming within those sets are checked once; p @@ q *)
(* acts as p on Keys and q on Clients, so Symmetry is the product group.   *)
(*                                                                         *)
(* Once every write is in the log and the replica is ready and caught up,  *)
(* nothing is left to do: MCSpec lets that finished state stutter, so that *)
(* TLC reports as a deadlock only a state stuck before that.               *)
(***************************************************************************)
EXTENDS SnapshotTransfer, TLC

Finished ==
    /\ Written = WriteId
    /\ ready
    /\ pos = Len(log)
    /\ UNCHANGED vars

MCSpec == Init /\ [][Next \/ Finished]_vars

Symmetry ==
    {p @@ q : p \in Permutations(Keys), q \in Permutations(Clients)}
=============================================================================
