"""The text of the TLA+ modules and config the validator generates for a trace.

Theory of operation. `TraceData` holds the trace as `TraceLog`, one
`[action |-> ..., params |-> ..., vars |-> ...]` record per step line, and
the trace's constants as `TraceConst_<name>`. `TraceCheck` walks the log with
the line counter `LINE_VAR`; `TraceExplain` takes one step of the named
action from a given line's state with the primed variables left free, marked
by `STEP_VAR`. `tracing.validate` says why the modules are built this way.

Safety: a trace's values reach TLA+ text only through `tla_literal.to_tla`,
and its names (variables, constants) only after the validator has checked
them to be the spec's own identifiers, so no trace can change what the
generated modules mean. Nothing from a trace is written into a comment. This
module only builds text; writing files and running TLC are the validator's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocols.errors import TraceFormatError
from tracing.codec import Trace
from tracing.speccheck import TraceSpec
from tracing.tla_literal import to_tla
from tracing.values import Record

__all__ = [
    "GENERATED",
    "LINE_VAR",
    "STEP_VAR",
    "config",
    "trace_check",
    "trace_data",
    "trace_explain",
]

# Names the generated modules define; a spec that defines one too cannot be checked.
LINE_VAR, STEP_VAR = "tlasimLine", "tlasimStep"
GENERATED = ("TraceData", "TraceCheck", "TraceExplain")


def _module(name: str, extends: Sequence[str], body: Sequence[str]) -> str:
    rule = "-" * 20
    return "\n".join(
        [f"{rule} MODULE {name} {rule}", f"EXTENDS {', '.join(extends)}", "", *body, "=" * 60, ""]
    )


def trace_data(trace: Trace, constants: Mapping[str, Any]) -> str:
    """The module TraceData: the trace's step lines and its constants."""
    entries = []
    for step in trace.steps:
        try:
            entries.append(
                to_tla(Record({"action": step.action, "params": step.params, "vars": step.vars}))
            )
        except TraceFormatError as exc:
            raise TraceFormatError(f"{trace.path}:{step.line}: {exc}") from None
    body = ["TraceLog == <<", ",\n".join(entries), ">>", ""]
    body.append(f"tlasimLength == {len(entries)}")
    body.extend(f"TraceConst_{name} == {to_tla(value)}" for name, value in constants.items())
    # TLC is extended for `:>` and `@@`, Integers for negative numbers.
    return _module("TraceData", ["Integers", "TLC"], body)


def _bind(variables: Sequence[str], line: str, primed: bool) -> list[str]:
    prime = "'" if primed else ""
    return [f"    /\\ {v}{prime} = TraceLog[{line}].vars[{to_tla(v)}]" for v in variables]


def trace_check(spec: TraceSpec) -> str:
    """The module TraceCheck, whose behaviours follow the trace line by line."""
    variables = spec.decls.variables
    all_vars = ", ".join([LINE_VAR, *variables])
    body = [
        f"VARIABLE {LINE_VAR}",
        "",
        "tlasimInit ==",
        f"    /\\ {LINE_VAR} = 1",
        *_bind(variables, "1", primed=False),
        "    /\\ Init",
        "",
        "tlasimStep ==",
        f"    /\\ {LINE_VAR} < tlasimLength",
        f"    /\\ {LINE_VAR}' = {LINE_VAR} + 1",
        *_bind(variables, f"{LINE_VAR} + 1", primed=True),
        f"    /\\ TraceAction(TraceLog[{LINE_VAR} + 1])",
        "",
        "(* Once the last line is matched the behaviour stutters, so only a line",
        "   that cannot be explained leaves TLC without a successor. *)",
        "tlasimDone ==",
        f"    /\\ {LINE_VAR} = tlasimLength",
        f"    /\\ UNCHANGED <<{all_vars}>>",
        "",
        "tlasimNext == tlasimStep \\/ tlasimDone",
    ]
    return _module("TraceCheck", [spec.template.stem, "TraceData"], body)


def trace_explain(spec: TraceSpec, step: int) -> str:
    """The module TraceExplain: one step of step line `step`'s action, values left free."""
    variables = spec.decls.variables
    if step == 1:
        body = [
            f"VARIABLE {STEP_VAR}",
            "",
            f"tlasimInit == {STEP_VAR} = 1 /\\ Init",
            f"tlasimNext == UNCHANGED <<{', '.join([STEP_VAR, *variables])}>>",
        ]
    else:
        body = [
            f"VARIABLE {STEP_VAR}",
            "",
            "tlasimInit ==",
            f"    /\\ {STEP_VAR} = 0",
            *_bind(variables, str(step - 1), primed=False),
            "",
            "tlasimNext ==",
            f"    /\\ {STEP_VAR} = 0",
            f"    /\\ {STEP_VAR}' = 1",
            f"    /\\ TraceAction(TraceLog[{step}])",
        ]
    return _module("TraceExplain", [spec.template.stem, "TraceData"], body)


def config(constants: Mapping[str, Any]) -> str:
    """The TLC config shared by TraceCheck and TraceExplain."""
    rows = [f"CONSTANT {name} <- TraceConst_{name}" for name in constants]
    return "\n".join([*rows, "INIT tlasimInit", "NEXT tlasimNext", ""])
