------------------------------ MODULE TlasimIO ------------------------------
(***************************************************************************)
(* TlasimLoad(name) is the value tlasim wrote to the file `name`, in the   *)
(* folder TLC runs in (tracing/tla/binary.py gives the format).  TLC reads *)
(* it with tlasim's Java definition (tlasim-tlc.jar, built from src/);     *)
(* this TLA+ definition only stands in for it, and stops TLC with a clear  *)
(* error if that jar is not on TLC's class path.                           *)
(***************************************************************************)
LOCAL INSTANCE TLC

TlasimLoad(name) ==
    Assert(FALSE, "tlasim: TlasimLoad has no Java definition; tlasim-tlc.jar is not on TLC's class path")
=============================================================================
