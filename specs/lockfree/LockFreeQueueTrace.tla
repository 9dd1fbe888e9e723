------------------------- MODULE LockFreeQueueTrace -------------------------
(***************************************************************************)
(* The trace spec template for LockFreeQueue.                              *)
(*                                                                         *)
(* tlasim's validator generates a module that extends this one and a data  *)
(* module holding the trace.  Each step of that module binds the primed    *)
(* variables to the values a trace line logged, and conjoins               *)
(* TraceAction(line), so TLC accepts the trace exactly when every line is  *)
(* a step of the label it names, taken by the worker it names, from the    *)
(* state logged on the line before.  The first line, action "Init", is     *)
(* checked against Init by the generated module itself; TraceAction        *)
(* rejects an "Init" line anywhere else.                                   *)
(*                                                                         *)
(* An action is a PlusCal label, and its one parameter is the worker       *)
(* ("self").  A line that leaves the parameter out is quantified over, so  *)
(* traces from loggers that omit params still work.                        *)
(*                                                                         *)
(* What this template leaves out, on purpose: ts, seq and node are not     *)
(* checked here; Terminating, the stuttering step PlusCal adds once every  *)
(* worker is done, changes nothing and so is never a line of a trace.      *)
(***************************************************************************)
EXTENDS LockFreeQueue, Naturals, Sequences, TLC

(* Every action name a trace line may carry: exactly the contract's.       *)
TraceActionNames ==
    { "Init", "run",
      "a_clear", "a_exchange", "a_link",
      "r_lock", "r_head", "r_empty", "r_next", "r_advance", "r_last",
      "r_store_tail", "r_clear_head", "r_free", "r_release",
      "e_load" }

(* A parameter the line logged must be the one the step uses.            *)
P(e, key, value) == key \in DOMAIN e.params => e.params[key] = value

(* The step that trace line e claims to be: label e.action of a worker.   *)
TraceAction(e) ==
    \E self \in Procs :
        /\ P(e, "self", self)
        /\ CASE e.action = "run"          -> run(self)
             [] e.action = "a_clear"      -> a_clear(self)
             [] e.action = "a_exchange"   -> a_exchange(self)
             [] e.action = "a_link"       -> a_link(self)
             [] e.action = "r_lock"       -> r_lock(self)
             [] e.action = "r_head"       -> r_head(self)
             [] e.action = "r_empty"      -> r_empty(self)
             [] e.action = "r_next"       -> r_next(self)
             [] e.action = "r_advance"    -> r_advance(self)
             [] e.action = "r_last"       -> r_last(self)
             [] e.action = "r_store_tail" -> r_store_tail(self)
             [] e.action = "r_clear_head" -> r_clear_head(self)
             [] e.action = "r_free"       -> r_free(self)
             [] e.action = "r_release"    -> r_release(self)
             [] e.action = "e_load"       -> e_load(self)
             [] OTHER                     -> FALSE
=============================================================================
