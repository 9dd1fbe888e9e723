---------------------------- MODULE MCShardSplit ----------------------------
(***************************************************************************)
(* Model checking ShardSplit: what only TLC needs.                         *)
(*                                                                         *)
(* Keys, shards and clients are model values and each set is               *)
(* interchangeable: Init lets owner be any function, and no action or      *)
(* checked property names a particular key, shard or client.  So states    *)
(* that differ only by renaming within those sets are checked once.  p @@  *)
(* q @@ r acts as p on Keys, q on Shards and r on Clients, so Symmetry is  *)
(* the whole product group, not just its parts.                            *)
(*                                                                         *)
(* No deadlock to work around: some key can always move to another shard.  *)
(***************************************************************************)
EXTENDS ShardSplit, TLC

Symmetry ==
    {p @@ q @@ r : p \in Permutations(Keys),
                   q \in Permutations(Shards),
                   r \in Permutations(Clients)}
=============================================================================
