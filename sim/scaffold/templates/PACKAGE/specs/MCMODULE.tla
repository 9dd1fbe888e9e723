----------------------------- MODULE MC{{Module}} -----------------------------
(* Model checking {{Module}}: the backups are interchangeable.            *)
EXTENDS {{Module}}, TLC

Symmetry == Permutations(Backups)
=============================================================================
