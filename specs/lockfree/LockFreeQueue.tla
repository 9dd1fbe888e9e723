---------------------------- MODULE LockFreeQueue ----------------------------
(***************************************************************************)
(* A linked queue whose producers publish a node by exchanging the tail,   *)
(* then link the previous tail to it (or set head when there was none),    *)
(* the queue of seed 000 ("Formal specs as differential tests").  Workers  *)
(* repeatedly append, remove or ask whether the queue is empty; each label *)
(* is ONE atomic load, store, exchange or compare-exchange of the C++      *)
(* below, quoted beside it, and TLC interleaves the labels of all workers. *)
(*                                                                         *)
(*   void append(Node* node) {                                             *)
(*     node->next.store(nullptr);                                          *)
(*     Node* previous = tail.exchange(node);                               *)
(*     if (previous) previous->next.store(node); else head.store(node);    *)
(*   }                                                                     *)
(*   Node* remove() {                  // removers take turns: consumer    *)
(*     while (!consumer.compare_exchange_weak(nobody, self)) {}            *)
(*     Node* h;                                                            *)
(*     for (;;) {                                                          *)
(*       h = head.load();                                                  *)
(*       if (h) break;                                                     *)
(*       if (tail.load() == nullptr) { consumer.store(nobody); return 0; } *)
(*     }                                // else a push is half done: wait  *)
(*     for (;;) {                                                          *)
(*       Node* n = h->next.load();                                         *)
(*       if (n) { head.store(n); break; }                                  *)
(*       if (tail.compare_exchange_strong(h, nullptr)) {                   *)
(*         head.compare_exchange_strong(h, nullptr); break;                *)
(*       }                              // else a producer will link h     *)
(*     }                                                                   *)
(*     free(h); consumer.store(nobody); return h;                          *)
(*   }                                                                     *)
(*   bool empty() { return tail.load() == nullptr; }                       *)
(*                                                                         *)
(* Oracle: `expected`, the queue as a sequential reference would hold it,  *)
(* changes in the very step that linearizes an operation: an append at its *)
(* tail exchange (the exchange fixes the FIFO order), a remove at the      *)
(* store or compare-exchange that takes its node out of the structure, an  *)
(* "empty" answer at the load it is read from.  Each of those steps        *)
(* compares the structure's answer with the reference's, as the seed's     *)
(* `assert` did, and records a disagreement in `mismatch`; the invariant   *)
(* OracleAgrees then fails, so TLC prints the schedule that led there.     *)
(* (This TLC, 2.15, prints no schedule for a failed assert.)               *)
(*                                                                         *)
(* Bug selects one of the races of docs/lockfree-model.md, or none:        *)
(*  - "last_node": remove takes the last node with a load of tail and a    *)
(*    later store of nullptr instead of one compare-exchange;              *)
(*  - "half_visible": empty() and remove() decide "empty" from head alone, *)
(*    so they can see a push that has exchanged the tail but not yet set   *)
(*    head.                                                                *)
(*                                                                         *)
(* Models: the C++ above (seed 000 quotes append; remove and empty are     *)
(* ours).  No code in this repository implements it, so there is no        *)
(* modelled.json: docs/lockfree-model.md holds the algorithm, and a change *)
(* to it there needs the same change here.                                 *)
(*                                                                         *)
(* What this model simplifies or leaves out:                               *)
(*  - memory is sequentially consistent: every step is immediately         *)
(*    visible to every worker; the memory_order of each atomic is not      *)
(*    modelled, so a weakly ordered CPU may run executions TLC never saw;  *)
(*  - removers take turns through the consumer flag (the queue is          *)
(*    multi-producer, single-consumer at a time), so head needs no version *)
(*    counter; the seed's "sequenced front index" is not modelled, and the *)
(*    bound is Limit operations per worker instead;                        *)
(*  - the allocator is the set free: alloc() returns any free address,     *)
(*    free() returns one at once, so an address is reused as soon as the   *)
(*    model allows (this is what makes ABA reachable); nodes carry no      *)
(*    payload, a node's address is the element;                            *)
(*  - a spin that fails changes nothing, so the consumer flag's spin is an *)
(*    await, and a waiting remover's reloads are steps that loop;          *)
(*  - choosing the next operation and the alloc() of an append are one     *)
(*    fixture step (run) that touches no shared word but free.             *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Procs,  \* the worker threads
    Nodes,  \* the node addresses the allocator hands out
    None,   \* nullptr, and "nobody" for the consumer flag
    Limit,  \* the operations each worker runs
    Bug     \* "none", "last_node" or "half_visible"

ASSUME
    /\ None \notin Nodes \cup Procs
    /\ Limit \in Nat
    /\ Bug \in {"none", "last_node", "half_visible"}

(* --algorithm LockFreeQueue
variables
    free     = Nodes,                    \* the allocator's free addresses
    next     = [x \in Nodes |-> None],   \* node->next
    head     = None,
    tail     = None,
    consumer = None,                     \* the remover holding the consumer flag
    expected = <<>>,                     \* the sequential reference (oracle)
    mismatch = None,                     \* the oracle's first disagreement
    steps    = [p \in Procs |-> 0];      \* operations each worker has begun

define
    Ptr == Nodes \cup {None}

    TypeOK ==
        /\ free \subseteq Nodes
        /\ next \in [Nodes -> Ptr]
        /\ head \in Ptr
        /\ tail \in Ptr
        /\ consumer \in Procs \cup {None}
        /\ expected \in Seq(Nodes)
        /\ steps \in [Procs -> 0..Limit]
        /\ mismatch = None \/ mismatch.check \in {"RemovedIsFront", "EmptyAnswerMatches"}

    (* Structural invariants: an element still queued is never free memory, *)
    (* and neither end of the queue points to free memory.                  *)
    QueuedNotFree == \A i \in 1..Len(expected) : expected[i] \notin free
    EndsNotFree == head \notin free /\ tail \notin free

    (* The linearization points make the tail the emptiness flag: the      *)
    (* reference is empty exactly when tail is null.  It is why empty()    *)
    (* may read tail alone; head is null also while a push is half done.   *)
    TailNullIffEmpty == (tail = None) = (expected = <<>>)

    (* The oracle's checks, made in the step that linearizes an operation, *)
    (* so `expected` is the reference's state at that instant.             *)
    RemovedIsFront(x) == expected # <<>> /\ x = Head(expected)
    EmptyAnswerMatches(answer) == answer = (expected = <<>>)

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
variables node = None, previous = None, h = None, n = None;
begin
run:
    if steps[self] = Limit then
        goto Done;
    else
        steps[self] := steps[self] + 1;
        either
            \* Node* node = alloc();   (then append(node))
            with x \in free do
                node := x;
                free := free \ {x};
            end with;
            goto a_clear;
        or
            goto r_lock;
        or
            goto e_load;
        end either;
    end if;

a_clear:  \* node->next.store(nullptr);
    next[node] := None;
a_exchange:  \* Node* previous = tail.exchange(node);
    previous := tail;
    tail := node;
    expected := Append(expected, node);
a_link:  \* if (previous) previous->next.store(node); else head.store(node);
    if previous # None then
        next[previous] := node;
    else
        head := node;
    end if;
    node := None;
    previous := None;
    goto run;

r_lock:  \* while (!consumer.compare_exchange_weak(nobody, self)) {}
    await consumer = None;
    consumer := self;
r_head:  \* h = head.load();
    h := head;
    if head # None then
        goto r_next;
    elsif Bug = "half_visible" then
        \* if (!h) { consumer.store(nobody); return 0; }   (the race: no tail check)
        oracle("EmptyAnswerMatches", EmptyAnswerMatches(TRUE), None);
        goto r_release;
    end if;
r_empty:  \* if (tail.load() == nullptr) { consumer.store(nobody); return 0; }
    if tail = None then
        oracle("EmptyAnswerMatches", EmptyAnswerMatches(TRUE), None);
        goto r_release;
    else
        goto r_head;
    end if;
r_next:  \* Node* n = h->next.load();
    n := next[h];
    if next[h] = None then
        goto r_last;
    end if;
r_advance:  \* if (n) { head.store(n); break; }
    head := n;
    oracle("RemovedIsFront", RemovedIsFront(h), h);
    expected := Tail(expected);
    goto r_free;
r_last:
    if Bug = "last_node" then
        \* if (tail.load() == h) {   (the race: a load here, a store later)
        if tail = h then
            goto r_store_tail;
        else
            goto r_next;
        end if;
    elsif tail = h then
        \* if (tail.compare_exchange_strong(h, nullptr)) {
        tail := None;
        oracle("RemovedIsFront", RemovedIsFront(h), h);
        expected := Tail(expected);
        goto r_clear_head;
    else
        goto r_next;
    end if;
r_store_tail:  \* tail.store(nullptr);   (only with Bug = "last_node")
    tail := None;
    oracle("RemovedIsFront", RemovedIsFront(h), h);
    expected := Tail(expected);
r_clear_head:  \* head.compare_exchange_strong(h, nullptr); break;
    if head = h then
        head := None;
    end if;
r_free:  \* free(h);
    free := free \cup {h};
    h := None;
    n := None;
r_release:  \* consumer.store(nobody); return h;
    consumer := None;
    goto run;

e_load:
    if Bug = "half_visible" then
        \* return head.load() == nullptr;   (the race)
        oracle("EmptyAnswerMatches", EmptyAnswerMatches(head = None), head = None);
    else
        \* return tail.load() == nullptr;
        oracle("EmptyAnswerMatches", EmptyAnswerMatches(tail = None), tail = None);
    end if;
    goto run;
end process;
end algorithm; *)
\* BEGIN TRANSLATION - the hash of the PCal code: PCal-6b0afbe17f077ca337a245e898007492
VARIABLES free, next, head, tail, consumer, expected, mismatch, steps, pc

(* define statement *)
Ptr == Nodes \cup {None}

TypeOK ==
    /\ free \subseteq Nodes
    /\ next \in [Nodes -> Ptr]
    /\ head \in Ptr
    /\ tail \in Ptr
    /\ consumer \in Procs \cup {None}
    /\ expected \in Seq(Nodes)
    /\ steps \in [Procs -> 0..Limit]
    /\ mismatch = None \/ mismatch.check \in {"RemovedIsFront", "EmptyAnswerMatches"}



QueuedNotFree == \A i \in 1..Len(expected) : expected[i] \notin free
EndsNotFree == head \notin free /\ tail \notin free




TailNullIffEmpty == (tail = None) = (expected = <<>>)



RemovedIsFront(x) == expected # <<>> /\ x = Head(expected)
EmptyAnswerMatches(answer) == answer = (expected = <<>>)


OracleAgrees == mismatch = None

Symmetry == Permutations(Nodes) \cup Permutations(Procs)

VARIABLES node, previous, h, n

vars == << free, next, head, tail, consumer, expected, mismatch, steps, pc, 
           node, previous, h, n >>

ProcSet == (Procs)

Init == (* Global variables *)
        /\ free = Nodes
        /\ next = [x \in Nodes |-> None]
        /\ head = None
        /\ tail = None
        /\ consumer = None
        /\ expected = <<>>
        /\ mismatch = None
        /\ steps = [p \in Procs |-> 0]
        (* Process Worker *)
        /\ node = [self \in Procs |-> None]
        /\ previous = [self \in Procs |-> None]
        /\ h = [self \in Procs |-> None]
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
                              /\ pc' = [pc EXCEPT ![self] = "a_clear"]
                           \/ /\ pc' = [pc EXCEPT ![self] = "r_lock"]
                              /\ UNCHANGED <<free, node>>
                           \/ /\ pc' = [pc EXCEPT ![self] = "e_load"]
                              /\ UNCHANGED <<free, node>>
             /\ UNCHANGED << next, head, tail, consumer, expected, mismatch, 
                             previous, h, n >>

a_clear(self) == /\ pc[self] = "a_clear"
                 /\ next' = [next EXCEPT ![node[self]] = None]
                 /\ pc' = [pc EXCEPT ![self] = "a_exchange"]
                 /\ UNCHANGED << free, head, tail, consumer, expected, 
                                 mismatch, steps, node, previous, h, n >>

a_exchange(self) == /\ pc[self] = "a_exchange"
                    /\ previous' = [previous EXCEPT ![self] = tail]
                    /\ tail' = node[self]
                    /\ expected' = Append(expected, node[self])
                    /\ pc' = [pc EXCEPT ![self] = "a_link"]
                    /\ UNCHANGED << free, next, head, consumer, mismatch, 
                                    steps, node, h, n >>

a_link(self) == /\ pc[self] = "a_link"
                /\ IF previous[self] # None
                      THEN /\ next' = [next EXCEPT ![previous[self]] = node[self]]
                           /\ head' = head
                      ELSE /\ head' = node[self]
                           /\ next' = next
                /\ node' = [node EXCEPT ![self] = None]
                /\ previous' = [previous EXCEPT ![self] = None]
                /\ pc' = [pc EXCEPT ![self] = "run"]
                /\ UNCHANGED << free, tail, consumer, expected, mismatch, 
                                steps, h, n >>

r_lock(self) == /\ pc[self] = "r_lock"
                /\ consumer = None
                /\ consumer' = self
                /\ pc' = [pc EXCEPT ![self] = "r_head"]
                /\ UNCHANGED << free, next, head, tail, expected, mismatch, 
                                steps, node, previous, h, n >>

r_head(self) == /\ pc[self] = "r_head"
                /\ h' = [h EXCEPT ![self] = head]
                /\ IF head # None
                      THEN /\ pc' = [pc EXCEPT ![self] = "r_next"]
                           /\ UNCHANGED mismatch
                      ELSE /\ IF Bug = "half_visible"
                                 THEN /\ IF ~(EmptyAnswerMatches(TRUE))
                                            THEN /\ mismatch' = [worker |-> self, check |-> "EmptyAnswerMatches",
                                                                 answer |-> None, expected |-> expected]
                                            ELSE /\ TRUE
                                                 /\ UNCHANGED mismatch
                                      /\ pc' = [pc EXCEPT ![self] = "r_release"]
                                 ELSE /\ pc' = [pc EXCEPT ![self] = "r_empty"]
                                      /\ UNCHANGED mismatch
                /\ UNCHANGED << free, next, head, tail, consumer, expected, 
                                steps, node, previous, n >>

r_empty(self) == /\ pc[self] = "r_empty"
                 /\ IF tail = None
                       THEN /\ IF ~(EmptyAnswerMatches(TRUE))
                                  THEN /\ mismatch' = [worker |-> self, check |-> "EmptyAnswerMatches",
                                                       answer |-> None, expected |-> expected]
                                  ELSE /\ TRUE
                                       /\ UNCHANGED mismatch
                            /\ pc' = [pc EXCEPT ![self] = "r_release"]
                       ELSE /\ pc' = [pc EXCEPT ![self] = "r_head"]
                            /\ UNCHANGED mismatch
                 /\ UNCHANGED << free, next, head, tail, consumer, expected, 
                                 steps, node, previous, h, n >>

r_next(self) == /\ pc[self] = "r_next"
                /\ n' = [n EXCEPT ![self] = next[h[self]]]
                /\ IF next[h[self]] = None
                      THEN /\ pc' = [pc EXCEPT ![self] = "r_last"]
                      ELSE /\ pc' = [pc EXCEPT ![self] = "r_advance"]
                /\ UNCHANGED << free, next, head, tail, consumer, expected, 
                                mismatch, steps, node, previous, h >>

r_advance(self) == /\ pc[self] = "r_advance"
                   /\ head' = n[self]
                   /\ IF ~(RemovedIsFront(h[self]))
                         THEN /\ mismatch' = [worker |-> self, check |-> "RemovedIsFront",
                                              answer |-> h[self], expected |-> expected]
                         ELSE /\ TRUE
                              /\ UNCHANGED mismatch
                   /\ expected' = Tail(expected)
                   /\ pc' = [pc EXCEPT ![self] = "r_free"]
                   /\ UNCHANGED << free, next, tail, consumer, steps, node, 
                                   previous, h, n >>

r_last(self) == /\ pc[self] = "r_last"
                /\ IF Bug = "last_node"
                      THEN /\ IF tail = h[self]
                                 THEN /\ pc' = [pc EXCEPT ![self] = "r_store_tail"]
                                 ELSE /\ pc' = [pc EXCEPT ![self] = "r_next"]
                           /\ UNCHANGED << tail, expected, mismatch >>
                      ELSE /\ IF tail = h[self]
                                 THEN /\ tail' = None
                                      /\ IF ~(RemovedIsFront(h[self]))
                                            THEN /\ mismatch' = [worker |-> self, check |-> "RemovedIsFront",
                                                                 answer |-> h[self], expected |-> expected]
                                            ELSE /\ TRUE
                                                 /\ UNCHANGED mismatch
                                      /\ expected' = Tail(expected)
                                      /\ pc' = [pc EXCEPT ![self] = "r_clear_head"]
                                 ELSE /\ pc' = [pc EXCEPT ![self] = "r_next"]
                                      /\ UNCHANGED << tail, expected, mismatch >>
                /\ UNCHANGED << free, next, head, consumer, steps, node, 
                                previous, h, n >>

r_store_tail(self) == /\ pc[self] = "r_store_tail"
                      /\ tail' = None
                      /\ IF ~(RemovedIsFront(h[self]))
                            THEN /\ mismatch' = [worker |-> self, check |-> "RemovedIsFront",
                                                 answer |-> h[self], expected |-> expected]
                            ELSE /\ TRUE
                                 /\ UNCHANGED mismatch
                      /\ expected' = Tail(expected)
                      /\ pc' = [pc EXCEPT ![self] = "r_clear_head"]
                      /\ UNCHANGED << free, next, head, consumer, steps, node, 
                                      previous, h, n >>

r_clear_head(self) == /\ pc[self] = "r_clear_head"
                      /\ IF head = h[self]
                            THEN /\ head' = None
                            ELSE /\ TRUE
                                 /\ head' = head
                      /\ pc' = [pc EXCEPT ![self] = "r_free"]
                      /\ UNCHANGED << free, next, tail, consumer, expected, 
                                      mismatch, steps, node, previous, h, n >>

r_free(self) == /\ pc[self] = "r_free"
                /\ free' = (free \cup {h[self]})
                /\ h' = [h EXCEPT ![self] = None]
                /\ n' = [n EXCEPT ![self] = None]
                /\ pc' = [pc EXCEPT ![self] = "r_release"]
                /\ UNCHANGED << next, head, tail, consumer, expected, mismatch, 
                                steps, node, previous >>

r_release(self) == /\ pc[self] = "r_release"
                   /\ consumer' = None
                   /\ pc' = [pc EXCEPT ![self] = "run"]
                   /\ UNCHANGED << free, next, head, tail, expected, mismatch, 
                                   steps, node, previous, h, n >>

e_load(self) == /\ pc[self] = "e_load"
                /\ IF Bug = "half_visible"
                      THEN /\ IF ~(EmptyAnswerMatches(head = None))
                                 THEN /\ mismatch' = [worker |-> self, check |-> "EmptyAnswerMatches",
                                                      answer |-> (head = None), expected |-> expected]
                                 ELSE /\ TRUE
                                      /\ UNCHANGED mismatch
                      ELSE /\ IF ~(EmptyAnswerMatches(tail = None))
                                 THEN /\ mismatch' = [worker |-> self, check |-> "EmptyAnswerMatches",
                                                      answer |-> (tail = None), expected |-> expected]
                                 ELSE /\ TRUE
                                      /\ UNCHANGED mismatch
                /\ pc' = [pc EXCEPT ![self] = "run"]
                /\ UNCHANGED << free, next, head, tail, consumer, expected, 
                                steps, node, previous, h, n >>

Worker(self) == run(self) \/ a_clear(self) \/ a_exchange(self)
                   \/ a_link(self) \/ r_lock(self) \/ r_head(self)
                   \/ r_empty(self) \/ r_next(self) \/ r_advance(self)
                   \/ r_last(self) \/ r_store_tail(self)
                   \/ r_clear_head(self) \/ r_free(self) \/ r_release(self)
                   \/ e_load(self)

(* Allow infinite stuttering to prevent deadlock on termination. *)
Terminating == /\ \A self \in ProcSet: pc[self] = "Done"
               /\ UNCHANGED vars

Next == (\E self \in Procs: Worker(self))
           \/ Terminating

Spec == Init /\ [][Next]_vars

Termination == <>(\A self \in ProcSet: pc[self] = "Done")

\* END TRANSLATION - the hash of the generated TLA code (remove to silence divergence warnings): TLA-52cb8fdaf768172fec722a76dc10d3b0
=============================================================================
