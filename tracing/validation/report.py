"""A trace verdict for a human: one summary line, or the full report.

Theory of operation. A rejection report names the line and action that left
the spec, says why, and sets each logged value beside the nearest allowed
successor's, down to the sub-values where they differ. Values are shown as
canonical JSON and cut when long.

Nothing a trace holds can forge a line of the report or drive the terminal:
every string that came from a file (its path, header fields, action names,
values, error messages quoting them, TLC's text) passes `printable` as it
is rendered, which writes control characters (C0, DEL, C1), line and
paragraph separators, bidi controls and other invisible characters as
visible escapes. Text with lines of its own (an error, TLC's report) keeps
them, each indented under its heading. `render_json` needs no such step:
JSON escapes control characters, and the CLI writes it as ASCII. This module
only formats a `Verdict`; it never runs TLC.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tlasim.protocols.errors import InternalError, TraceFormatError
from tlasim.tracing.printable import printable
from tlasim.tracing.tla.literal import is_identifier
from tlasim.tracing.tla.parse import normalize, tlc_key
from tlasim.tracing.values import canonical_json, to_json

if TYPE_CHECKING:
    from tlasim.tracing.validation.validator import VarDiff, Verdict

__all__ = [
    "TRACE_PLACEHOLDER",
    "regenerate_command",
    "render_json",
    "render_report",
    "render_summary",
    "show",
]

# Where a header's `reproduce` command names the trace file itself.
TRACE_PLACEHOLDER = "{trace}"

_SHOWN_CHARS = 400  # a value longer than this is cut in reports
_SHOWN_PATHS = 8  # differing sub-values listed per variable
_SHOWN_ALTERNATIVES = 4  # other allowed values listed per variable
_SHOWN_TLC_LINES = 16  # lines of TLC's error text in a report


def _block(text: str, indent: str) -> Iterator[str]:
    """Text with lines of its own (an error, TLC's report): each line escaped,
    and every line but the first indented, so none can pass for a heading."""
    for i, row in enumerate(text.split("\n")):
        yield (indent if i else "") + printable(row.rstrip("\r"))


def _path(verdict: Verdict) -> str:
    return printable(str(verdict.path)) if verdict.path is not None else "<trace>"


def render_summary(verdict: Verdict) -> str:
    """One line: accepted, or where and why the trace was rejected."""
    spec = printable(verdict.spec)
    if verdict.error is not None:
        return f"not checked: {printable(verdict.error)}"
    if verdict.divergence is None:
        return f"accepted by {spec} ({verdict.steps} steps)"
    d = verdict.divergence
    return (
        f"rejected by {spec} at line {d.line} (step {d.step} of {verdict.steps}), "
        f"action {_show_name(d.action)}: {printable(d.message)}"
    )


def render_report(verdict: Verdict) -> str:
    """The verdict for a human: what was rejected, where, and what the spec allowed."""
    name, spec = _path(verdict), printable(verdict.spec)
    if verdict.error is not None:
        return "UNREADABLE: " + "\n".join(_block(verdict.error, "    "))
    if verdict.accepted:
        return (
            f"ACCEPTED: {name} is a behaviour of {spec} "
            f"({verdict.steps} steps, TLC {verdict.tlc_seconds:.1f} s)"
        )
    d = verdict.divergence
    assert d is not None
    lines = [
        f"REJECTED: {name} is not a behaviour of {spec}",
        f"  line {d.line} (step {d.step} of {verdict.steps}): action {_show_name(d.action)}, "
        f"params {show(d.params)}",
        f"  {printable(d.message)}",
    ]
    if d.known_actions:
        lines.append("  known actions: " + ", ".join(map(_show_name, d.known_actions)))
    if d.last_state is not None:
        several = f" (one of {d.last_states} candidates)" if d.last_states > 1 else ""
        lines.append(f"  last matched state, line {d.last_line}{several}:")
        lines.extend(
            f"    {printable(str(var))} = {show(value, 160)}" for var, value in d.last_state.items()
        )
    elif d.step > 1 and d.reason != "unknown_action":
        lines.append(f"  last matched line: {d.last_line}")
    if d.diffs:
        lines.append(
            f"  the nearest allowed state differs in {len(d.diffs)} of {d.variables} variables:"
        )
        for diff in d.diffs:
            lines.extend(_report_diff(diff))
    if d.tlc_error:
        rows = list(_block(d.tlc_error.strip(), ""))
        lines.append("  TLC said:")
        lines.extend("    " + row for row in rows[:_SHOWN_TLC_LINES])
        if len(rows) > _SHOWN_TLC_LINES:
            lines.append(f"    ... ({len(rows) - _SHOWN_TLC_LINES} more lines)")
    lines.extend(_origin(verdict))
    if verdict.tlc_seconds:
        lines.append(f"  TLC time: {verdict.tlc_seconds:.1f} s")
    else:
        lines.append("  (rejected before running TLC)")
    return "\n".join(lines)


def _origin(verdict: Verdict) -> list[str]:
    """Where the trace came from: its seed and the command that regenerates it,
    when its header says (another system's trace has no header)."""
    header = verdict.header or {}
    lines = []
    seed = _seed(header)
    if seed is not None:
        lines.append(f"  seed: {seed}")
    command = regenerate_command(verdict)
    if command is not None:
        lines.append(f"  regenerate: {printable(command)}")
    return lines


def _seed(header: Mapping[str, Any]) -> int | None:
    """The header's seed when it is one: an integer of at most 64 bits (a
    boolean is not one, and Python will not print an integer of thousands
    of digits)."""
    seed = header.get("seed")
    if type(seed) is int and -(2**63) <= seed < 2**64:
        return seed
    return None


def regenerate_command(verdict: Verdict) -> str | None:
    """The header's `reproduce` command, writing the trace to where it was read from."""
    header = verdict.header or {}
    command = header.get("reproduce")
    if not isinstance(command, str):
        return None
    if verdict.path is None:
        return command
    # The header was written before the file had a known home, so the trace's
    # own path is filled in here (it is also the plan file for a --plan run).
    return command.replace(TRACE_PLACEHOLDER, shlex.quote(str(verdict.path)))


def render_json(verdict: Verdict) -> dict[str, Any]:
    """The verdict as plain JSON data: what `render_report` says, for machines."""
    header = verdict.header or {}
    out: dict[str, Any] = {
        "trace": str(verdict.path) if verdict.path is not None else None,
        "spec": verdict.spec,
        "accepted": verdict.accepted,
        "steps": verdict.steps,
        "tlc_seconds": round(verdict.tlc_seconds, 3),
        "seed": _seed(header),
        "regenerate": regenerate_command(verdict),
        "error": verdict.error,
        "divergence": None,
    }
    d = verdict.divergence
    if d is not None:
        out["divergence"] = {
            "line": d.line,
            "step": d.step,
            "action": d.action,
            "params": _json(d.params),
            "reason": d.reason,
            "message": d.message,
            "enabled": d.enabled,
            "successors": d.successors,
            "known_actions": list(d.known_actions),
            "last_line": d.last_line,
            "last_state": None
            if d.last_state is None
            else {k: _json(v) for k, v in d.last_state.items()},
            "last_states": d.last_states,
            "diffs": [
                {
                    "variable": diff.name,
                    "logged": _json(diff.logged),
                    "allowed": _json(diff.allowed[0]),
                    "where": _diff_paths(diff.logged, diff.allowed[0], ""),
                    "other_allowed": [_json(v) for v in diff.allowed[1:_SHOWN_ALTERNATIVES + 1]],
                }
                for diff in d.diffs
            ],
            "tlc_error": d.tlc_error,
        }
    return out


def _json(value: Any) -> Any:
    """A value in the trace's tagged JSON form; a TLC model value by its name."""
    try:
        return to_json(value)
    except (TraceFormatError, InternalError):
        return {"#model": repr(value)}


def _show_name(name: str) -> str:
    """An action name as is when it is an identifier; quoted otherwise, so an
    unknown action's newlines cannot forge lines of the report."""
    return name if is_identifier(name) else show(name, 120)


def show(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """A value as canonical JSON (a repr when it has none), cut after `limit`
    characters, and `printable`: JSON leaves C1 controls, separators and bidi
    controls as they are."""
    try:
        text = canonical_json(value)
    except (TraceFormatError, InternalError):
        # A TLC model value has no JSON form; its repr names it.
        text = repr(value)
    if len(text) > limit:
        return f"{printable(text[:limit])}... ({len(text)} chars)"
    return printable(text)


def _report_diff(diff: VarDiff) -> list[str]:
    nearest = diff.allowed[0]
    lines = [
        f"    {printable(diff.name)}",
        f"      logged:  {show(diff.logged)}",
        f"      allowed: {show(nearest)}",
    ]
    lines.extend(f"      where {p}" for p in _diff_paths(diff.logged, nearest, ""))
    others = diff.allowed[1:]
    for other in others[:_SHOWN_ALTERNATIVES]:
        # A big value is told by where it differs from the logged one.
        text = show(other)
        if len(text) > 120:
            text = "; ".join(_diff_paths(diff.logged, other, "")[:3])
        lines.append(f"      another successor: {text}")
    if len(others) > _SHOWN_ALTERNATIVES:
        lines.append(f"      ... and {len(others) - _SHOWN_ALTERNATIVES} more successors")
    return lines


def _diff_paths(logged: Any, allowed: Any, prefix: str) -> list[str]:
    """Where two values differ, as short `path: logged X, allowed Y` lines."""
    out: list[str] = []
    logged, allowed = normalize(logged), normalize(allowed)
    if (
        isinstance(logged, Mapping)
        and isinstance(allowed, Mapping)
        and set(map(tlc_key, logged)) == set(map(tlc_key, allowed))
    ):
        for key in logged:
            match = next(k for k in allowed if tlc_key(k) == tlc_key(key))
            if tlc_key(logged[key]) != tlc_key(allowed[match]):
                out.extend(_diff_paths(logged[key], allowed[match], f"{prefix}[{show(key, 80)}]"))
    elif isinstance(logged, frozenset) and isinstance(allowed, frozenset):
        theirs = {tlc_key(v) for v in allowed}
        ours = {tlc_key(v) for v in logged}
        extra = sorted(show(v, 160) for v in logged if tlc_key(v) not in theirs)
        missing = sorted(show(v, 160) for v in allowed if tlc_key(v) not in ours)
        where = prefix or "the set"
        out.extend(f"{where}: logged has {v}, allowed lacks it" for v in extra)
        out.extend(f"{where}: allowed has {v}, logged lacks it" for v in missing)
    elif prefix:
        out.append(f"{prefix}: logged {show(logged, 160)}, allowed {show(allowed, 160)}")
    if len(out) > _SHOWN_PATHS:
        out = [*out[:_SHOWN_PATHS], f"... and {len(out) - _SHOWN_PATHS} more differences"]
    return out
