----------------------------- MODULE TreiberStack -----------------------------
(***************************************************************************)
(* Treiber's lock-free stack over reusable nodes, the stack of seed 000    *)
(* ("Formal specs as differential tests").  Workers repeatedly push or     *)
(* pop; each label is ONE atomic load, store or compare-exchange of the    *)
(* C++ below, quoted beside it, and TLC interleaves the labels of all      *)
(* workers.  top is a tagged pointer: an address and a version counter     *)
(* that every successful compare-exchange advances.                        *)
(*                                                                         *)
(*   struct TaggedPtr { Node* ptr; unsigned tag; };                        *)
(*   void push(Node* node) {                                               *)
(*     TaggedPtr t = top.load();                                           *)
(*     do node->next.store(t.ptr);                                         *)
(*     while (!top.compare_exchange_weak(t, {node, t.tag + 1}));           *)
(*   }                                                                     *)
(*   Node* pop() {                                                         *)
(*     TaggedPtr t = top.load();                                           *)
(*     while (t.ptr) {                                                     *)
(*       Node* n = t.ptr->next.load();                                     *)
(*       if (top.compare_exchange_weak(t, {n, t.tag + 1})) {               *)
(*         free(t.ptr); return t.ptr;                                      *)
(*       }                                                                 *)
(*     }                                                                   *)
(*     return nullptr;                                                     *)
(*   }                                                                     *)
(*                                                                         *)
(* A failed compare_exchange_weak writes the current top into t, in the    *)
(* same atomic step; the model does the same.                              *)
(*                                                                         *)
(* Oracle: `expected`, the stack as a sequential reference would hold it   *)
(* (its head is the top), changes in the step that linearizes an           *)
(* operation: a push or a pop at its successful compare-exchange, a pop    *)
(* that returns nullptr at the load (or failed compare-exchange) that      *)
(* read an empty top.  Each of those steps compares the structure's        *)
(* answer with the reference's, as the seed's `assert` did, and records a  *)
(* disagreement in `mismatch`; the invariant OracleAgrees then fails, so   *)
(* TLC prints the schedule that led there.  (This TLC, 2.15, prints no     *)
(* schedule for a failed assert.)                                          *)
(*                                                                         *)
(* Bug = "aba" compares the address bits alone (a plain Node* top; the     *)
(* tag stays 0), so a pop whose address was freed and reused in the        *)
(* meantime still succeeds: the ABA race of docs/lockfree-model.md.        *)
(*                                                                         *)
(* Models: the C++ above (the textbook algorithm the seed describes).  No  *)
(* code in this repository implements it, so there is no modelled.json:    *)
(* docs/lockfree-model.md holds the algorithm, and a change to it there    *)
(* needs the same change here.                                             *)
(*                                                                         *)
(* What this model simplifies or leaves out:                               *)
(*  - memory is sequentially consistent: every step is immediately         *)
(*    visible to every worker; the memory_order of each atomic is not      *)
(*    modelled, so a weakly ordered CPU may run executions TLC never saw;  *)
(*  - the tag never wraps: Limit operations per worker bound it, below     *)
(*    Limit * Cardinality(Procs) + 1 (7 for the seed's 2 workers, 3        *)
(*    operations each);                                                    *)
(*  - the allocator is the set free: alloc() returns any free address,     *)
(*    free() returns one at once, so an address is reused as soon as the   *)
(*    model allows (this is what makes ABA reachable); reading the next    *)
(*    field of a freed node is allowed and returns what it holds (memory   *)
(*    is never unmapped, as with a type-stable free list); nodes carry no  *)
(*    payload, a node's address is the element;                            *)
(*  - choosing the next operation and the alloc() of a push are one        *)
(*    fixture step (run) that touches no shared word but free, and the     *)
(*    free() of a pop is a fixture step of its own.                        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Procs,  \* the worker threads
    Nodes,  \* the node addresses the allocator hands out
    None,   \* nullptr
    Limit,  \* the operations each worker runs
    Bug     \* "none" or "aba"

ASSUME
    /\ None \notin Nodes
    /\ Limit \in Nat
    /\ Bug \in {"none", "aba"}

(* --algorithm TreiberStack
variables
    free     = Nodes,                      \* the allocator's free addresses
    next     = [x \in Nodes |-> None],     \* node->next
    top      = [ptr |-> None, tag |-> 0],
    expected = <<>>,                       \* the sequential reference (oracle)
    mismatch = None,                       \* the oracle's first disagreement
    steps    = [p \in Procs |-> 0];        \* operations each worker has begun

define
    Ptr == Nodes \cup {None}
    Null == [ptr |-> None, tag |-> 0]
    MaxTag == Limit * Cardinality(Procs)

    TypeOK ==
        /\ free \subseteq Nodes
        /\ next \in [Nodes -> Ptr]
        /\ top \in [ptr : Ptr, tag : 0..MaxTag]
        /\ expected \in Seq(Nodes)
        /\ steps \in [Procs -> 0..Limit]
        /\ mismatch = None \/ mismatch.check \in {"PoppedIsTop", "EmptyAnswerMatches"}

    (* Structural invariants: the top is never free memory, nor is any     *)
    (* element still on the stack.                                         *)
    TopNotFree == top.ptr \notin free
    StackedNotFree == \A i \in 1..Len(expected) : expected[i] \notin free

    (* The compare of compare_exchange: the whole tagged word, or with the *)
    (* ABA bug the address bits alone.                                     *)
    Matches(current, old) ==
        IF Bug = "aba" THEN current.ptr = old.ptr ELSE current = old
    Tagged(ptr, tag) == [ptr |-> ptr, tag |-> IF Bug = "aba" THEN 0 ELSE tag]

    (* The oracle's checks, made in the step that linearizes an operation, *)
    (* so `expected` is the reference's state at that instant.             *)
    PoppedIsTop(x) == expected # <<>> /\ x = Head(expected)
    EmptyAnswerMatches == expected = <<>>

    (* The oracle: no operation's answer has disagreed with the reference. *)
    OracleAgrees == mismatch = None

    Symmetry == Permutations(Nodes) \cup Permutations(Procs)
end define;

(* The oracle's check in a linearizing step: on a disagreement, record     *)
(* who disagreed, which check failed, the structure's answer and the       *)
(* reference then.  OracleAgrees is then violated, so TLC prints the       *)
(* schedule (it prints none for a failed Assert inside a step).            *)
macro oracle(name, ok, answer) begin
    if ~ok then
        mismatch := [worker |-> self, check |-> name,
                     answer |-> answer, expected |-> expected];
    end if;
end macro;

process Worker \in Procs
variables node = None, t = [ptr |-> None, tag |-> 0], n = None;
begin
run:
    if steps[self] = Limit then
        goto Done;
    else
        steps[self] := steps[self] + 1;
        either
            \* Node* node = alloc();   (then push(node))
            with x \in free do
                node := x;
                free := free \ {x};
            end with;
            goto s_load;
        or
            goto p_load;
        end either;
    end if;

s_load:  \* TaggedPtr t = top.load();
    t := top;
s_link:  \* do node->next.store(t.ptr);
    next[node] := t.ptr;
s_cas:  \* while (!top.compare_exchange_weak(t, {node, t.tag + 1}));
    if Matches(top, t) then
        top := Tagged(node, t.tag + 1);
        expected := <<node>> \o expected;
        node := None;
        t := Null;
        goto run;
    else
        t := top;
        goto s_link;
    end if;

p_load:  \* TaggedPtr t = top.load(); while (t.ptr) {
    if top.ptr = None then
        \* return nullptr;
        oracle("EmptyAnswerMatches", EmptyAnswerMatches, None);
        goto run;
    else
        t := top;
    end if;
p_next:  \* Node* n = t.ptr->next.load();
    n := next[t.ptr];
p_cas:  \* if (top.compare_exchange_weak(t, {n, t.tag + 1})) {
    if Matches(top, t) then
        top := Tagged(n, t.tag + 1);
        oracle("PoppedIsTop", PoppedIsTop(t.ptr), t.ptr);
        expected := Tail(expected);
    elsif top.ptr = None then
        \* the failure reloaded t and found the stack empty: return nullptr;
        oracle("EmptyAnswerMatches", EmptyAnswerMatches, None);
        t := Null;
        n := None;
        goto run;
    else
        t := top;
        goto p_next;
    end if;
p_free:  \* free(t.ptr); return t.ptr;
    free := free \cup {t.ptr};
    t := Null;
    n := None;
    goto run;
end process;
end algorithm; *)
\* BEGIN TRANSLATION - the hash of the PCal code: PCal-517811ba559d68b50f3a3735c6460ad0
VARIABLES free, next, top, expected, mismatch, steps, pc

(* define statement *)
Ptr == Nodes \cup {None}
Null == [ptr |-> None, tag |-> 0]
MaxTag == Limit * Cardinality(Procs)

TypeOK ==
    /\ free \subseteq Nodes
    /\ next \in [Nodes -> Ptr]
    /\ top \in [ptr : Ptr, tag : 0..MaxTag]
    /\ expected \in Seq(Nodes)
    /\ steps \in [Procs -> 0..Limit]
    /\ mismatch = None \/ mismatch.check \in {"PoppedIsTop", "EmptyAnswerMatches"}



TopNotFree == top.ptr \notin free
StackedNotFree == \A i \in 1..Len(expected) : expected[i] \notin free



Matches(current, old) ==
    IF Bug = "aba" THEN current.ptr = old.ptr ELSE current = old
Tagged(ptr, tag) == [ptr |-> ptr, tag |-> IF Bug = "aba" THEN 0 ELSE tag]



PoppedIsTop(x) == expected # <<>> /\ x = Head(expected)
EmptyAnswerMatches == expected = <<>>


OracleAgrees == mismatch = None

Symmetry == Permutations(Nodes) \cup Permutations(Procs)

VARIABLES node, t, n

vars == << free, next, top, expected, mismatch, steps, pc, node, t, n >>

ProcSet == (Procs)

Init == (* Global variables *)
        /\ free = Nodes
        /\ next = [x \in Nodes |-> None]
        /\ top = [ptr |-> None, tag |-> 0]
        /\ expected = <<>>
        /\ mismatch = None
        /\ steps = [p \in Procs |-> 0]
        (* Process Worker *)
        /\ node = [self \in Procs |-> None]
        /\ t = [self \in Procs |-> [ptr |-> None, tag |-> 0]]
        /\ n = [self \in Procs |-> None]
        /\ pc = [self \in ProcSet |-> "run"]

run(self) == /\ pc[self] = "run"
             /\ IF steps[self] = Limit
                   THEN /\ pc' = [pc EXCEPT ![self] = "Done"]
                        /\ UNCHANGED << free, steps, node >>
                   ELSE /\ steps' = [steps EXCEPT ![self] = steps[self] + 1]
                        /\ \/ /\ \E x \in free:
                                   /\ node' = [node EXCEPT ![self] = x]
                                   /\ free' = free \ {x}
                              /\ pc' = [pc EXCEPT ![self] = "s_load"]
                           \/ /\ pc' = [pc EXCEPT ![self] = "p_load"]
                              /\ UNCHANGED <<free, node>>
             /\ UNCHANGED << next, top, expected, mismatch, t, n >>

s_load(self) == /\ pc[self] = "s_load"
                /\ t' = [t EXCEPT ![self] = top]
                /\ pc' = [pc EXCEPT ![self] = "s_link"]
                /\ UNCHANGED << free, next, top, expected, mismatch, steps, 
                                node, n >>

s_link(self) == /\ pc[self] = "s_link"
                /\ next' = [next EXCEPT ![node[self]] = t[self].ptr]
                /\ pc' = [pc EXCEPT ![self] = "s_cas"]
                /\ UNCHANGED << free, top, expected, mismatch, steps, node, t, 
                                n >>

s_cas(self) == /\ pc[self] = "s_cas"
               /\ IF Matches(top, t[self])
                     THEN /\ top' = Tagged(node[self], t[self].tag + 1)
                          /\ expected' = <<node[self]>> \o expected
                          /\ node' = [node EXCEPT ![self] = None]
                          /\ t' = [t EXCEPT ![self] = Null]
                          /\ pc' = [pc EXCEPT ![self] = "run"]
                     ELSE /\ t' = [t EXCEPT ![self] = top]
                          /\ pc' = [pc EXCEPT ![self] = "s_link"]
                          /\ UNCHANGED << top, expected, node >>
               /\ UNCHANGED << free, next, mismatch, steps, n >>

p_load(self) == /\ pc[self] = "p_load"
                /\ IF top.ptr = None
                      THEN /\ IF ~EmptyAnswerMatches
                                 THEN /\ mismatch' = [worker |-> self, check |-> "EmptyAnswerMatches",
                                                      answer |-> None, expected |-> expected]
                                 ELSE /\ TRUE
                                      /\ UNCHANGED mismatch
                           /\ pc' = [pc EXCEPT ![self] = "run"]
                           /\ t' = t
                      ELSE /\ t' = [t EXCEPT ![self] = top]
                           /\ pc' = [pc EXCEPT ![self] = "p_next"]
                           /\ UNCHANGED mismatch
                /\ UNCHANGED << free, next, top, expected, steps, node, n >>

p_next(self) == /\ pc[self] = "p_next"
                /\ n' = [n EXCEPT ![self] = next[t[self].ptr]]
                /\ pc' = [pc EXCEPT ![self] = "p_cas"]
                /\ UNCHANGED << free, next, top, expected, mismatch, steps, 
                                node, t >>

p_cas(self) == /\ pc[self] = "p_cas"
               /\ IF Matches(top, t[self])
                     THEN /\ top' = Tagged(n[self], t[self].tag + 1)
                          /\ IF ~(PoppedIsTop(t[self].ptr))
                                THEN /\ mismatch' = [worker |-> self, check |-> "PoppedIsTop",
                                                     answer |-> (t[self].ptr), expected |-> expected]
                                ELSE /\ TRUE
                                     /\ UNCHANGED mismatch
                          /\ expected' = Tail(expected)
                          /\ pc' = [pc EXCEPT ![self] = "p_free"]
                          /\ UNCHANGED << t, n >>
                     ELSE /\ IF top.ptr = None
                                THEN /\ IF ~EmptyAnswerMatches
                                           THEN /\ mismatch' = [worker |-> self, check |-> "EmptyAnswerMatches",
                                                                answer |-> None, expected |-> expected]
                                           ELSE /\ TRUE
                                                /\ UNCHANGED mismatch
                                     /\ t' = [t EXCEPT ![self] = Null]
                                     /\ n' = [n EXCEPT ![self] = None]
                                     /\ pc' = [pc EXCEPT ![self] = "run"]
                                ELSE /\ t' = [t EXCEPT ![self] = top]
                                     /\ pc' = [pc EXCEPT ![self] = "p_next"]
                                     /\ UNCHANGED << mismatch, n >>
                          /\ UNCHANGED << top, expected >>
               /\ UNCHANGED << free, next, steps, node >>

p_free(self) == /\ pc[self] = "p_free"
                /\ free' = (free \cup {t[self].ptr})
                /\ t' = [t EXCEPT ![self] = Null]
                /\ n' = [n EXCEPT ![self] = None]
                /\ pc' = [pc EXCEPT ![self] = "run"]
                /\ UNCHANGED << next, top, expected, mismatch, steps, node >>

Worker(self) == run(self) \/ s_load(self) \/ s_link(self) \/ s_cas(self)
                   \/ p_load(self) \/ p_next(self) \/ p_cas(self)
                   \/ p_free(self)

(* Allow infinite stuttering to prevent deadlock on termination. *)
Terminating == /\ \A self \in ProcSet: pc[self] = "Done"
               /\ UNCHANGED vars

Next == (\E self \in Procs: Worker(self))
           \/ Terminating

Spec == Init /\ [][Next]_vars

Termination == <>(\A self \in ProcSet: pc[self] = "Done")

\* END TRANSLATION - the hash of the generated TLA code (remove to silence divergence warnings): TLA-2868103293ae98ad97323af37af0f8fa
=============================================================================
