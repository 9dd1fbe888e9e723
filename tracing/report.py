"""A trace verdict for a human: one summary line, or the full report.

Theory of operation. A rejection report names the line and action that left
the spec, says why, and sets each logged value beside the nearest allowed
successor's, down to the sub-values where they differ. Values are shown as
canonical JSON and cut when long; an action name that is not an identifier
is quoted, so nothing a trace holds can forge lines of the report. This
module only formats a `Verdict`; it never runs TLC.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocols.errors import InternalError, TraceFormatError
from tracing.tla_literal import is_identifier
from tracing.tla_parse import normalize, tlc_key
from tracing.values import canonical_json

if TYPE_CHECKING:
    from tracing.validate import VarDiff, Verdict

__all__ = ["render_report", "render_summary", "show"]

_SHOWN_CHARS = 400  # a value longer than this is cut in reports
_SHOWN_PATHS = 8  # differing sub-values listed per variable
_SHOWN_ALTERNATIVES = 4  # other allowed values listed per variable
_SHOWN_TLC_LINES = 16  # lines of TLC's error text in a report


def render_summary(verdict: Verdict) -> str:
    """One line: accepted, or where and why the trace was rejected."""
    if verdict.divergence is None:
        return f"accepted by {verdict.spec} ({verdict.steps} steps)"
    d = verdict.divergence
    return (
        f"rejected by {verdict.spec} at line {d.line} (step {d.step} of {verdict.steps}), "
        f"action {_show_name(d.action)}: {d.message}"
    )


def render_report(verdict: Verdict) -> str:
    """The verdict for a human: what was rejected, where, and what the spec allowed."""
    name = str(verdict.path) if verdict.path is not None else "<trace>"
    if verdict.accepted:
        return (
            f"ACCEPTED: {name} is a behaviour of {verdict.spec} "
            f"({verdict.steps} steps, TLC {verdict.tlc_seconds:.1f} s)"
        )
    d = verdict.divergence
    assert d is not None
    lines = [
        f"REJECTED: {name} is not a behaviour of {verdict.spec}",
        f"  line {d.line} (step {d.step} of {verdict.steps}): action {_show_name(d.action)}, "
        f"params {show(d.params)}",
        f"  {d.message}",
    ]
    if d.known_actions:
        lines.append("  known actions: " + ", ".join(d.known_actions))
    if d.diffs:
        lines.append(
            f"  the nearest allowed state differs in {len(d.diffs)} of {d.variables} variables:"
        )
        for diff in d.diffs:
            lines.extend(_report_diff(diff))
    if d.tlc_error:
        rows = d.tlc_error.strip().splitlines()
        lines.append("  TLC said:")
        lines.extend("    " + row for row in rows[:_SHOWN_TLC_LINES])
        if len(rows) > _SHOWN_TLC_LINES:
            lines.append(f"    ... ({len(rows) - _SHOWN_TLC_LINES} more lines)")
    if verdict.tlc_seconds:
        lines.append(f"  TLC time: {verdict.tlc_seconds:.1f} s")
    else:
        lines.append("  (rejected before running TLC)")
    return "\n".join(lines)


def _show_name(name: str) -> str:
    """An action name as is when it is an identifier; quoted otherwise, so an
    unknown action's newlines cannot forge lines of the report."""
    return name if is_identifier(name) else show(name, 120)


def show(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """A value as canonical JSON (a repr when it has none), cut after `limit` characters."""
    try:
        text = canonical_json(value)
    except (TraceFormatError, InternalError):
        # A TLC model value has no JSON form; its repr names it.
        text = repr(value)
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} chars)"
    return text


def _report_diff(diff: VarDiff) -> list[str]:
    nearest = diff.allowed[0]
    lines = [
        f"    {diff.name}",
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
