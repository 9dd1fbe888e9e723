"""Check a trace against its TLA+ spec with TLC: is it a behaviour of the spec?

Theory of operation. The trace becomes a TLA+ module, `TraceData`, whose
`TraceLog` holds one `[action |-> ..., params |-> ..., vars |-> ...]` record
per step line (`params` is the empty function when the line logged none).
`TraceCheck` walks it with a line counter: its Init binds every spec variable
to line 1's values and conjoins the spec's `Init`; its Next binds every primed
variable to the next line's values and conjoins the template's
`TraceAction(line)`, which allows exactly the named action. A trace is one
linear path, so TLC's state graph is that path: when no step explains line
k+1, TLC deadlocks in the state of line k, and that state's counter names the
line. A prefix of a behaviour is a behaviour, so a trace that stops early is
accepted.

Before TLC runs, what can be checked without it is: every action is one the
template knows, every line carries exactly the spec's variables. Those
rejections cost no TLC run.

When a line is rejected, a second small TLC job explains it: from the last
matched state it takes one step of the named action with the primed
variables left free, dumps the successors (-dump), and the report sets the
logged values beside the nearest successor's.

The modules' text is built by `tracing.trace_module`, and the verdict is
rendered for a human by `tracing.report`.

Safety: a trace's strings reach TLA+ text only through `tla_literal.to_tla`,
and its names (variables, constants) only after they are checked here to be
the spec's own identifiers, so no trace can change what the generated
modules mean. Nothing from a trace is written into a comment.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from protocols.errors import InternalError, SpecError, TLCError, TraceFormatError
from tracing.codec import Trace, TraceStep, read_trace
from tracing.report import render_report, render_summary, show
from tracing.speccheck import TraceSpec, load_trace_spec
from tracing.tla_literal import is_identifier
from tracing.tla_parse import normalize, tlc_key
from tracing.tlc import EC, TLCResult, parse_dump, run_tlc
from tracing.trace_module import (
    GENERATED,
    LINE_VAR,
    STEP_VAR,
    config,
    trace_check,
    trace_data,
    trace_explain,
)
from tracing.values import freeze

__all__ = ["Divergence", "VarDiff", "Verdict", "validate_trace"]

Reason = Literal["first_action", "unknown_action", "variables", "init", "step", "eval_error"]

_PARSED_SUCCESSORS = 5000  # successors read from the dump in the explain job
# A trace check is a short run, which the JIT's optimising tier only slows
# down: stopping at C1 saves about a quarter of the run (JVM start included).
_JVM_ARGS = ("-XX:TieredStopAtLevel=1",)


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
    variables: int = 0  # how many variables the spec has, for "differs in 2 of 8"
    tlc_error: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a trace is a behaviour of its spec, and if not, where it left it."""

    path: Path | None
    accepted: bool
    steps: int
    divergence: Divergence | None
    tlc_seconds: float
    spec: str = ""

    def summary(self) -> str:
        """One line: accepted, or where and why the trace was rejected."""
        return render_summary(self)

    def report(self) -> str:
        """The verdict for a human: what was rejected, where, and what the spec allowed."""
        return render_report(self)


# --- checks that need no TLC ------------------------------------------------


def _constants(trace: Trace, spec: TraceSpec, given: Mapping[str, Any] | None) -> dict[str, Any]:
    if given is not None:
        values = {str(k): freeze(v, f"constant {k}") for k, v in given.items()}
    else:
        header_constants = trace.header.get("constants") if trace.header else None
        if header_constants is not None and not isinstance(header_constants, Mapping):
            raise TraceFormatError("the header's constants must be an object of name: value")
        values = dict(header_constants or {})
    declared = [c for c, _ in spec.decls.constants]
    missing = [c for c in declared if c not in values]
    extra = sorted(set(values) - set(declared))
    if missing or extra:
        raise TraceFormatError(
            f"the trace's constants do not match {spec.name}'s CONSTANTS {declared}: "
            + "; ".join(
                part
                for part in (
                    f"no value for {', '.join(missing)} (give them with --constants)"
                    if missing
                    else "",
                    f"{', '.join(map(repr, extra))} not declared" if extra else "",
                )
                if part
            )
        )
    return {c: values[c] for c in declared}


def _check_header_variables(trace: Trace, spec: TraceSpec) -> None:
    declared = trace.header.get("variables") if trace.header else None
    if declared is None:
        return
    names = list(declared) if isinstance(declared, Mapping | tuple) else None
    if names is None or set(names) != set(spec.decls.variables):
        raise TraceFormatError(
            f"the header declares variables {names!r}, but {spec.name} has "
            f"{list(spec.decls.variables)}"
        )


def _reject(step: TraceStep, index: int, reason: Reason, message: str) -> Divergence:
    return Divergence(step.line, index, step.action, step.params, reason, message)


def _precheck(trace: Trace, spec: TraceSpec) -> Divergence | None:
    """The first line that fails a check TLC is not needed for, if any."""
    variables = set(spec.decls.variables)
    for index, step in enumerate(trace.steps, start=1):
        if index == 1 and step.action != "Init":
            return _reject(
                step, index, "first_action", f"the first step must be Init, not {step.action!r}"
            )
        if step.action not in spec.actions:
            return Divergence(
                step.line,
                index,
                step.action,
                step.params,
                "unknown_action",
                f"{step.action!r} is not an action of {spec.name}'s trace template",
                known_actions=spec.actions,
            )
        names = list(step.vars)
        bad = [n for n in names if not isinstance(n, str) or not is_identifier(n)]
        if bad:
            return _reject(step, index, "variables", f"{show(bad)} are not TLA+ identifiers")
        missing = sorted(variables - set(names))
        extra = sorted(set(names) - variables)
        if missing or extra:
            parts = [f"missing {', '.join(missing)}"] if missing else []
            parts += [f"not variables of {spec.name}: {', '.join(extra)}"] if extra else []
            return _reject(
                step, index, "variables", "the line's vars are not the spec's: " + "; ".join(parts)
            )
    return None


# --- the working directory ------------------------------------------------


def _prepare(workdir: Path, spec: TraceSpec, trace: Trace, constants: Mapping[str, Any]) -> None:
    for source in sorted(spec.module.parent.glob("*.tla")):
        if source.stem in GENERATED:
            raise SpecError(f"{source} has the name of a module the validator generates")
        shutil.copyfile(source, workdir / source.name)
    if spec.template.parent != spec.module.parent:
        shutil.copyfile(spec.template, workdir / spec.template.name)
    (workdir / "TraceData.tla").write_text(trace_data(trace, constants), encoding="utf-8")
    (workdir / "TraceCheck.tla").write_text(trace_check(spec), encoding="utf-8")
    (workdir / "TraceCheck.cfg").write_text(config(constants), encoding="utf-8")


# --- reading TLC's answer ---------------------------------------------------


def _last_line(result: TLCResult) -> int:
    """The trace line of the last state in TLC's error trace."""
    last = result.error_trace[-1].values()
    line = last.get(LINE_VAR)
    if not isinstance(line, int) or isinstance(line, bool):
        raise InternalError(f"TLC's error trace has no {LINE_VAR}: {last!r}")
    return line


def _first_unexplained(result: TLCResult, steps: int) -> tuple[int, Reason] | None:
    """The 1-based step TLC could not explain and why, or None if it explained all."""
    codes = result.codes()
    if result.outcome == "ok":
        if result.distinct_states == 0 or EC.TLC_NO_STATES_SATISFYING_INIT in codes:
            # TLC 2.15 reports an Init that no state satisfies as a clean run
            # over zero states (later versions say so with code 2118).
            return 1, "init"
        if result.distinct_states != steps:
            raise InternalError(
                f"TLC found {result.distinct_states} states for a {steps}-line trace"
            )
        return None
    if result.outcome == "deadlock":
        return _last_line(result) + 1, "step"
    if codes & {EC.TLC_PARSING_FAILED, EC.TLC_PARSING_FAILED2}:
        raise TLCError(f"TLC could not parse the generated trace modules:\n{result.error_text()}")
    if result.outcome == "error" and EC.TLC_COMPUTING_INIT in codes:
        # TLC got past parsing and the config, so this is an evaluation error.
        # TLC prints the behaviour up to the state it was expanding, so the
        # line after that state's is the one concerned; with no behaviour, the
        # initial state is.
        if result.error_trace:
            return _last_line(result) + 1, "eval_error"
        return 1, "eval_error"
    raise TLCError(
        f"TLC failed while checking the trace ({result.outcome}, exit code "
        f"{result.exit_code}):\n{result.error_text() or result.output[-2000:]}"
    )


def _explain(
    workdir: Path,
    spec: TraceSpec,
    trace: Trace,
    constants: Mapping[str, Any],
    step: int,
    timeout_s: float | None,
) -> tuple[list[dict[str, Any]] | None, str | None, float]:
    """Run one step of the named action from the last matched state.

    Returns the allowed states (None if TLC failed), TLC's error text, and seconds.
    """
    (workdir / "TraceExplain.tla").write_text(trace_explain(spec, step), encoding="utf-8")
    (workdir / "TraceExplain.cfg").write_text(config(constants), encoding="utf-8")
    dump = workdir / "explain"
    dumped = dump.with_name(dump.name + ".dump")  # TLC adds the suffix
    dumped.unlink(missing_ok=True)
    result = run_tlc(
        workdir / "TraceExplain.tla",
        workdir / "TraceExplain.cfg",
        workdir=workdir,
        args=["-deadlock", "-dump", str(dump)],
        timeout_s=timeout_s,
        jvm_args=_JVM_ARGS,
    )
    if result.outcome != "ok":
        return None, result.error_text() or result.output[-2000:], result.seconds
    states = parse_dump(dumped.read_text(encoding="utf-8")) if dumped.is_file() else []
    allowed = []
    for state in states[:_PARSED_SUCCESSORS]:
        values = state.values()
        if values.pop(STEP_VAR, None) == 1:
            allowed.append(values)
    return allowed, None, result.seconds


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


def _divergence(
    trace: Trace,
    spec: TraceSpec,
    step: int,
    reason: Reason,
    allowed: list[dict[str, Any]] | None,
    explain_error: str | None,
    tlc_error: str | None,
) -> Divergence:
    line = trace.steps[step - 1]
    logged = {name: line.vars[name] for name in spec.decls.variables}
    where = "the initial state" if step == 1 else f"the state of line {trace.steps[step - 2].line}"
    base = Divergence(line.line, step, line.action, line.params, reason, "", variables=len(logged))
    if allowed is None:
        # Both jobs usually fail on the same expression; the main one's error is
        # about the logged values, so it comes first and alone when present.
        error = tlc_error or explain_error
        return replace(
            base,
            message=f"TLC could not evaluate {line.action} from {where}.",
            tlc_error=error or None,
        )
    if not allowed:
        message = (
            "Init allows no state at all."
            if step == 1
            else f"{line.action} was not enabled in {where}."
        )
        return replace(base, message=message, enabled=False, successors=0, tlc_error=tlc_error)

    def distance(state: dict[str, Any]) -> tuple[int, int, str]:
        differing = sum(tlc_key(state[v]) != tlc_key(logged[v]) for v in logged)
        leaves = sum(_leaf_distance(state[v], logged[v]) for v in logged)
        return differing, leaves, repr(sorted((v, tlc_key(state[v])) for v in logged))

    ranked = sorted(allowed, key=distance)
    nearest = ranked[0]
    diffs = []
    for name in logged:
        if tlc_key(nearest[name]) != tlc_key(logged[name]):
            values = list({tlc_key(s[name]): s[name] for s in ranked}.values())
            diffs.append(VarDiff(name, logged[name], tuple(values)))
    count = f"{len(allowed)} state" + ("s" if len(allowed) != 1 else "")
    if not diffs:
        message = f"{line.action} allows the logged state, yet TLC rejected the line."
    elif step == 1:
        message = f"Init allows {count}, none of them the logged one."
    else:
        message = f"{line.action} was enabled in {where} and allows {count}, none the logged one."
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


# --- the entry point --------------------------------------------------------


def validate_trace(
    trace: Trace | Path | str,
    *,
    spec_dirs: Sequence[Path] | None = None,
    spec: str | None = None,
    constants: Mapping[str, Any] | None = None,
    workdir: Path | None = None,
    timeout_s: float | None = None,
) -> Verdict:
    """Check that a trace is a behaviour of its spec; see the module docstring.

    `spec` overrides the header's spec name, `constants` the header's
    constants. Files go to `workdir` (kept) or to a temporary folder (removed).
    Raises TraceFormatError (unreadable trace), SpecError (spec or template
    missing or unreadable), ToolNotFound (no Java or TLC), TLCError (TLC
    failed in a way that says nothing about the trace).
    """
    if not isinstance(trace, Trace):
        trace = read_trace(Path(trace))
    name = spec if spec is not None else trace.header.get("spec") if trace.header else None
    if not isinstance(name, str):
        raise TraceFormatError(
            "the trace has no header naming its spec; give the spec module "
            "(tlasim validate --spec NAME)"
        )
    if not trace.steps:
        raise TraceFormatError(f"{trace.path}: the trace has no step lines")
    loaded = load_trace_spec(name, spec_dirs)
    _check_header_variables(trace, loaded)
    values = _constants(trace, loaded, constants)
    path = Path(trace.path) if trace.path else None

    def verdict(divergence: Divergence | None, seconds: float) -> Verdict:
        return Verdict(path, divergence is None, len(trace.steps), divergence, seconds, name)

    early = _precheck(trace, loaded)
    if early is not None:
        return verdict(early, 0.0)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        return verdict(*_run(Path(workdir), loaded, trace, values, timeout_s))
    with tempfile.TemporaryDirectory(prefix="tlasim-validate-") as tmp:
        return verdict(*_run(Path(tmp), loaded, trace, values, timeout_s))


def _run(
    workdir: Path,
    spec: TraceSpec,
    trace: Trace,
    constants: Mapping[str, Any],
    timeout_s: float | None,
) -> tuple[Divergence | None, float]:
    _prepare(workdir, spec, trace, constants)
    result = run_tlc(
        workdir / "TraceCheck.tla",
        workdir / "TraceCheck.cfg",
        workdir=workdir,
        timeout_s=timeout_s,
        jvm_args=_JVM_ARGS,
    )
    unexplained = _first_unexplained(result, len(trace.steps))
    if unexplained is None:
        return None, result.seconds
    step, reason = unexplained
    if not 1 <= step <= len(trace.steps):
        raise InternalError(f"TLC stopped at step {step} of a {len(trace.steps)}-step trace")
    tlc_error = result.error_text() if reason == "eval_error" else None
    allowed, explain_error, seconds = _explain(workdir, spec, trace, constants, step, timeout_s)
    divergence = _divergence(trace, spec, step, reason, allowed, explain_error, tlc_error)
    return divergence, result.seconds + seconds
