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

(***************************************************************************)
(* A campaign's stream of chunks (tlasim.TraceStream): TlasimPoll(k, p,    *)
(* level, queued) is "ready" once chunk k came, "wait" while it has not    *)
(* and TLC has other states to explore, "end" after the last chunk; and    *)
(* TlasimChunk(k) is chunk k's tuple of traces, once it is ready.          *)
(***************************************************************************)
TlasimPoll(chunk, poll, level, queued) ==
    Assert(FALSE, "tlasim: TlasimPoll has no Java definition; tlasim-tlc.jar is not on TLC's class path")

TlasimChunk(chunk) ==
    Assert(FALSE, "tlasim: TlasimChunk has no Java definition; tlasim-tlc.jar is not on TLC's class path")
=============================================================================
