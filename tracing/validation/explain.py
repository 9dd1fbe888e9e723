"""Why a trace line was rejected: the states the spec allowed instead.

Theory of operation. Once a batch run has named the first line nothing
explains, a small TLC job on that trace alone follows it to the last
matched line, then takes one step of the rejected line's action with every
variable left free, and dumps its states (-dump). The states marked free are
what the spec allowed; the others at the last matched line are where the
trace was (with partial logs there can be several). The nearest allowed
state, counted in differing variables and then differing sub-values, is set
beside the logged one.

This module runs TLC for one trace and builds a `Divergence`; batching and
verdicts are `tracing.validation.validator`'s, and the modules' text is
`tracing.tla.trace_module`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from tlasim.tracing.codec import Trace
from tlasim.tracing.tla.parse import normalize, tlc_key
from tlasim.tracing.tla.speccheck import TraceSpec
from tlasim.tracing.tla.tlc import TLCResult, parse_dump, run_tlc
from tlasim.tracing.tla.trace_module import (
    FREE_VAR,
    LINE_VAR,
    TRACE_VAR,
    config,
    trace_data,
    trace_explain,
)

__all__ = ["JVM_ARGS", "Divergence", "Reason", "VarDiff", "explain_divergence"]

Reason = Literal["first_action", "unknown_action", "variables", "init", "step", "eval_error"]

_PARSED_SUCCESSORS = 5000  # successors read from the dump in the explain job
# A trace check is a short run, which the JIT's optimising tier only slows
# down: stopping at C1 saves about a quarter of the run (JVM start included).
JVM_ARGS = ("-XX:TieredStopAtLevel=1",)
_MARKERS = (TRACE_VAR, LINE_VAR, FREE_VAR)


@dataclass(frozen=True, slots=True)
class VarDiff:
    """A variable whose logged value no allowed successor state has."""

    name: str
    logged: Any
    allowed: tuple[Any, ...]  # the nearest successor's value first, then other successors'


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first trace line that no step of the spec explains."""

    line: int  # line number in the trace file
    step: int  # 1-based position among the step lines
    action: str
    params: Any
    reason: Reason
    message: str
    known_actions: tuple[str, ...] = ()
    enabled: bool | None = None  # was the action enabled in the previous line's state?
    successors: int | None = None  # how many states the action allowed
    diffs: tuple[VarDiff, ...] = ()
    variables: int = 0  # how many variables the line logged, for "differs in 2 of 8"
    tlc_error: str | None = None
    last_line: int | None = None  # file line of the last matched step, if any
    last_state: Mapping[str, Any] | None = None  # the state the spec was in there
    last_states: int = 0  # how many states matched the last line (partial logs: maybe > 1)


def _free_flag(text: str, flag: bool) -> bool:
    value = "TRUE" if flag else "FALSE"
    return re.search(rf"^/\\ {FREE_VAR} = {value}\s*$", text, re.M) is not None


def _line_is(text: str, line: int) -> bool:
    return re.search(rf"^/\\ {LINE_VAR} = {line}\s*$", text, re.M) is not None


@dataclass(frozen=True, slots=True)
class _Explained:
    allowed: list[dict[str, Any]] | None  # None: TLC failed
    last: list[dict[str, Any]]
    error: str | None
    seconds: float


def _run_explain(
    workdir: Path,
    spec: TraceSpec,
    trace: Trace,
    constants: Mapping[str, Any],
    step: int,
    timeout_s: float | None,
    tlc: Callable[..., TLCResult],
) -> _Explained:
    matched = step - 1
    (workdir / "TraceData.tla").write_text(trace_data([trace], constants), encoding="utf-8")
    (workdir / "TraceExplain.tla").write_text(trace_explain(spec, matched), encoding="utf-8")
    (workdir / "TraceExplain.cfg").write_text(config(constants), encoding="utf-8")
    dump = workdir / "explain"
    dumped = dump.with_name(dump.name + ".dump")  # TLC adds the suffix
    dumped.unlink(missing_ok=True)
    result = tlc(
        workdir / "TraceExplain.tla",
        workdir / "TraceExplain.cfg",
        workdir=workdir,
        args=["-deadlock", "-dump", str(dump)],
        timeout_s=timeout_s,
        jvm_args=JVM_ARGS,
    )
    if result.outcome != "ok":
        return _Explained(None, [], result.error_text() or result.output[-2000:], result.seconds)
    states = parse_dump(dumped.read_text(encoding="utf-8")) if dumped.is_file() else []
    allowed: list[dict[str, Any]] = []
    last: list[dict[str, Any]] = []
    # States are told apart by their text first: parsing every state of a long
    # trace's prefix would cost more than the TLC run.
    for state in states:
        if _free_flag(state.text, True) and len(allowed) < _PARSED_SUCCESSORS:
            allowed.append(_strip(state.values()))
        elif matched and _free_flag(state.text, False) and _line_is(state.text, matched):
            last.append(_strip(state.values()))
    return _Explained(allowed, last, None, result.seconds)


def _strip(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in _MARKERS}


def _leaf_distance(a: Any, b: Any) -> int:
    """How many parts of two values differ: keys of functions with one
    domain are compared one by one, sets element by element."""
    a, b = normalize(a), normalize(b)
    if tlc_key(a) == tlc_key(b):
        return 0
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys_a = {tlc_key(k): k for k in a}
        keys_b = {tlc_key(k): k for k in b}
        if keys_a.keys() == keys_b.keys():
            return sum(_leaf_distance(a[keys_a[k]], b[keys_b[k]]) for k in keys_a)
    if isinstance(a, frozenset) and isinstance(b, frozenset):
        return len({tlc_key(x) for x in a} ^ {tlc_key(x) for x in b})
    return 1


def explain_divergence(
    workdir: Path,
    spec: TraceSpec,
    trace: Trace,
    constants: Mapping[str, Any],
    step: int,
    reason: Reason,
    tlc_error: str | None,
    timeout_s: float | None,
    tlc: Callable[..., TLCResult] = run_tlc,
) -> tuple[Divergence, float]:
    """The divergence at 1-based step `step`, explained by one TLC job (run by
    `tlc`, which takes `run_tlc`'s arguments); and its seconds."""
    explained = _run_explain(workdir, spec, trace, constants, step, timeout_s, tlc)
    # Shown in the spec's order, not TLC's.
    order = {name: i for i, name in enumerate(spec.decls.variables)}
    last = [
        dict(sorted(state.items(), key=lambda kv: order.get(kv[0], len(order))))
        for state in explained.last
    ]
    explained = replace(explained, last=last)
    return _divergence(trace, step, reason, explained, tlc_error), explained.seconds


def _divergence(
    trace: Trace,
    step: int,
    reason: Reason,
    explained: _Explained,
    tlc_error: str | None,
) -> Divergence:
    line = trace.steps[step - 1]
    logged = dict(line.vars)
    where = "the initial state" if step == 1 else f"the state of line {trace.steps[step - 2].line}"
    action = line.action or "(any action)"
    base = Divergence(
        line.line,
        step,
        line.action or "",
        line.params,
        reason,
        "",
        variables=len(logged),
        last_line=trace.steps[step - 2].line if step > 1 else None,
        last_state=explained.last[0] if explained.last else None,
        last_states=len(explained.last),
    )
    allowed = explained.allowed
    if allowed is None:
        # Both jobs usually fail on the same expression; the main one's error is
        # about the logged values, so it comes first and alone when present.
        return replace(
            base,
            message=f"TLC could not evaluate {action} from {where}.",
            tlc_error=tlc_error or explained.error or None,
        )
    if not allowed:
        message = (
            "Init allows no state at all."
            if step == 1
            else f"{action} was not enabled in {where}."
        )
        return replace(base, message=message, enabled=False, successors=0, tlc_error=tlc_error)
    ranked = sorted(allowed, key=lambda state: _distance(state, logged))
    nearest = ranked[0]
    diffs = []
    for name in logged:
        if name in nearest and tlc_key(nearest[name]) != tlc_key(logged[name]):
            values = list({tlc_key(s[name]): s[name] for s in ranked}.values())
            diffs.append(VarDiff(name, logged[name], tuple(values)))
    count = f"{len(allowed)} state" + ("s" if len(allowed) != 1 else "")
    if not diffs:
        message = f"{action} allows the logged state, yet TLC rejected the line."
    elif step == 1:
        message = f"Init allows {count}, none of them the logged one."
    else:
        message = f"{action} was enabled in {where} and allows {count}, none the logged one."
    if reason == "eval_error":
        message = (
            "TLC failed to evaluate the step with the logged values (see what TLC said). "
            f"With the values left free: {message}"
        )
    return replace(
        base,
        message=message,
        enabled=True,
        successors=len(allowed),
        diffs=tuple(diffs),
        tlc_error=tlc_error,
    )


def _distance(state: Mapping[str, Any], logged: Mapping[str, Any]) -> tuple[int, int, str]:
    names: Sequence[str] = [v for v in logged if v in state]
    differing = sum(tlc_key(state[v]) != tlc_key(logged[v]) for v in names)
    leaves = sum(_leaf_distance(state[v], logged[v]) for v in names)
    return differing, leaves, repr(sorted((v, tlc_key(state[v])) for v in names))
