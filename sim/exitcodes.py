"""Exit codes: each kind of outcome has its own, so scripts can tell them apart."""

from __future__ import annotations

OK = 0  # every run passed, every trace was accepted
SAFETY = 1  # an oracle found a safety violation (atomicity, agreement, durability)
USAGE = 2  # bad input: an unknown option, protocol or bug, a malformed trace or manifest
LIVENESS = 3  # the protocol did not finish within the liveness bound after healing
TRACE_REJECTED = 4  # TLC rejected a trace: the run is not a behaviour of the spec
TOOL_MISSING = 5  # Java or tla2tools.jar could not be found
SPEC_MISMATCH = 6  # check-specs: a TLC result differs from specs/manifest.json
DRIFT = 7  # drift: modelled code changed since its spec's record, or spec and code disagree
# (conformance: the spec allows steps the correct code never takes, unexplained)
INCOMPLETE = 8  # explore: no failure found, but a limit ended the search before the bound did
INTERNAL = 70  # a bug in tlasim itself
INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT), as shells report it

TABLE = (
    (OK, "success"),
    (SAFETY, "safety violation"),
    (USAGE, "bad input or usage"),
    (LIVENESS, "liveness violation"),
    (TRACE_REJECTED, "trace rejected by TLC"),
    (TOOL_MISSING, "Java or TLC not found"),
    (SPEC_MISMATCH, "check-specs result differs from the manifest"),
    (DRIFT, "drift: modelled code changed since the spec's record, or spec and code disagree; "
            "conformance: spec steps the code never takes, unexplained"),
    (INCOMPLETE, "explore: no failure found, but the bound was not exhausted"),
    (INTERNAL, "internal error (a bug in tlasim)"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
)
