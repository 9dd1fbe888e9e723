-------------------------- MODULE TreiberStackTrace --------------------------
(***************************************************************************)
(* The trace spec template for TreiberStack.                               *)
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
EXTENDS TreiberStack, Naturals, Sequences, TLC

(* Every action name a trace line may carry: exactly the contract's.       *)
TraceActionNames ==
    { "Init", "run",
      "s_load", "s_link", "s_cas",
      "p_load", "p_next", "p_cas", "p_free" }

(* A parameter the line logged must be the one the step uses.            *)
P(e, key, value) == key \in DOMAIN e.params => e.params[key] = value

(* The step that trace line e claims to be: label e.action of a worker.   *)
TraceAction(e) ==
    \E self \in Procs :
        /\ P(e, "self", self)
        /\ CASE e.action = "run"    -> run(self)
             [] e.action = "s_load" -> s_load(self)
             [] e.action = "s_link" -> s_link(self)
             [] e.action = "s_cas"  -> s_cas(self)
             [] e.action = "p_load" -> p_load(self)
             [] e.action = "p_next" -> p_next(self)
             [] e.action = "p_cas"  -> p_cas(self)
             [] e.action = "p_free" -> p_free(self)
             [] OTHER               -> FALSE
=============================================================================
