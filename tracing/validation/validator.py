"""Check traces against their TLA+ spec with TLC: is each a behaviour of the spec?

Theory of operation. Traces are grouped by spec and constants, and each
group is cut into batches; one TLC run checks a whole batch
(`tracing.tla.trace_module` says how the generated modules give every trace its
own verdict, `tracing.validation.tlc_batch` how a batch is run), so a
thousand traces cost a few JVM starts, not a thousand. Batches run `jobs` at
a time, each TLC with one worker.

Before TLC runs, what can be checked without it is: the first line is Init,
every action is one the template knows, every logged variable is one of the
spec's. Those rejections cost no TLC run. A line may leave variables out
(partial logs) or its action out; the spec decides what they may have been.

One bad trace never costs another its verdict. A value the generated
modules cannot hold (a string TLC cannot hold, an integer past 32 bits,
nesting past `trace_module.MAX_NESTING`) refuses its own trace before
batching, naming the file, line and the value's path. TLC failing before
any trace's first state (the constants, a timeout) fails only the batch it
ran, whose traces share their spec and constants. An evaluation error stops
a TLC run for the whole batch. When TLC names the trace (its error trace
starts in that trace's initial state), that trace is rejected there and the
batch runs again without it; when it cannot (an error in Init), the batch is
halved until the culprit is alone.

A rejected trace is then explained by `tracing.validation.explain` (one small TLC job
per trace), unless the caller only needs the verdict.

Safety: a trace's strings reach TLA+ text only through `tla_literal.to_tla`,
and its names (variables, constants) only after they are checked here to be
the spec's own identifiers, so no trace can change what the generated
modules mean.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tlasim.protocols.errors import (
    InternalError,
    SpecError,
    SpecParseError,
    TLCError,
    TraceFormatError,
)
from tlasim.tracing.codec import Trace, TraceStep, read_trace
from tlasim.tracing.printable import printable
from tlasim.tracing.tla.literal import is_identifier, to_tla
from tlasim.tracing.tla.speccheck import TraceSpec, load_trace_spec
from tlasim.tracing.tla.tlc import TLCResult, run_tlc
from tlasim.tracing.tla.trace_module import WriteCheckMemo, check_writable
from tlasim.tracing.validation.explain import Divergence, Reason, VarDiff, explain_divergence
from tlasim.tracing.validation.report import (
    render_json,
    render_report,
    render_summary,
    show,
)
from tlasim.tracing.validation.tlc_batch import (
    METHODS,
    BatchItem,
    Method,
    check_batch,
    logs_every_variable,
    prepare_folder,
)
from tlasim.tracing.values import freeze

__all__ = ["Divergence", "VarDiff", "Verdict", "validate_trace", "validate_traces"]

# Step lines per TLC run. Each run pays a JVM start and the spec's parse,
# but SANY's parse grows faster than the text: on twopc, 20000 checked 1,000
# traces in 34 s of TLC (6 runs) where 6000 took 45 s (19 runs) and 40000
# was slower again (bench/validation.py). A run this size needs about 1.5 GB.
BATCH_STEPS = 20000



@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a trace is a behaviour of its spec, and if not, where it left it."""

    path: Path | None
    accepted: bool
    steps: int
    divergence: Divergence | None
    tlc_seconds: float  # this trace's share of its batch's TLC time, plus its explain job
    spec: str = ""
    header: Mapping[str, Any] | None = None
    error: str | None = None  # why the trace could not be checked at all (keep_going)

    def summary(self) -> str:
        """One line: accepted, or where and why the trace was rejected."""
        return render_summary(self)

    def report(self) -> str:
        """The verdict for a human: what was rejected, where, and what the spec allowed."""
        return render_report(self)

    def to_json(self) -> dict[str, Any]:
        """The same report for machines (`tlasim validate --format json`)."""
        return render_json(self)


# --- checks that need no TLC ------------------------------------------------


def _constants(trace: Trace, spec: TraceSpec, given: Mapping[str, Any] | None) -> dict[str, Any]:
    if given is not None:
        values = {str(k): freeze(v, f"constant {k}") for k, v in given.items()}
    else:
        header_constants = trace.header.get("constants") if trace.header else None
        if header_constants is not None and not isinstance(header_constants, Mapping):
            raise TraceFormatError(
                f"{_file(trace.path)}: the header's constants must be an object of name: value"
            )
        values = dict(header_constants or {})
    declared = [c for c, _ in spec.decls.constants]
    missing = [c for c in declared if c not in values]
    extra = sorted(set(values) - set(declared))
    if missing or extra:
        raise TraceFormatError(
            f"{_file(trace.path)}: the trace's constants do not match {spec.name}'s CONSTANTS "
            f"{declared}: "
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
            f"{_file(trace.path)}: the header declares variables {names!r}, but {spec.name} has "
            f"{list(spec.decls.variables)}"
        )


def _reject(step: TraceStep, index: int, reason: Reason, message: str) -> Divergence:
    return Divergence(step.line, index, step.action or "", step.params, reason, message)


def _precheck(trace: Trace, spec: TraceSpec) -> Divergence | None:
    """The first line that fails a check TLC is not needed for, if any."""
    variables = set(spec.decls.variables)
    for index, step in enumerate(trace.steps, start=1):
        if index == 1 and step.action not in (None, "Init"):
            return _reject(
                step, index, "first_action", f"the first step must be Init, not {step.action!r}"
            )
        if step.action is not None and step.action not in spec.actions:
            return Divergence(
                step.line,
                index,
                step.action,
                step.params,
                "unknown_action",
                f"{step.action!r} is not an action of {spec.name}'s trace template",
                known_actions=spec.actions,
            )
        if index > 1 and step.action == "Init":
            return _reject(step, index, "step", "Init may only be the first step")
        names = list(step.vars)
        bad = [n for n in names if not isinstance(n, str) or not is_identifier(n)]
        if bad:
            return _reject(step, index, "variables", f"{show(bad)} are not TLA+ identifiers")
        extra = sorted(set(names) - variables)
        if extra:
            return _reject(
                step,
                index,
                "variables",
                f"the line logs {', '.join(extra)}, which are not variables of {spec.name}",
            )
    return None


def _unwritable(trace: Trace, constants: Mapping[str, Any]) -> str | None:
    """Why the generated modules cannot hold this trace's values, naming the
    file, the line and the value's path; None when they can.

    Checked per trace before batching, so a value TLC cannot hold costs only
    its own trace a verdict, never the batch it would have shared.
    """
    seen = WriteCheckMemo()
    try:
        for name, value in constants.items():
            check_writable(value, f"constant {name}", seen)
    except TraceFormatError as exc:
        return f"{_file(trace.path)}: {exc}"
    for step in trace.steps:
        try:
            for name, value in step.vars.items():
                check_writable(value, f"vars.{name}", seen)
            check_writable(step.params, "params", seen)
        except TraceFormatError as exc:
            return f"{_file(trace.path)}:{step.line}: {exc}"
    return None


# --- grouping and batching --------------------------------------------------


@dataclass(slots=True, eq=False)
class _Item(BatchItem):
    """One trace on its way to a verdict."""

    index: int = 0  # position in the caller's list
    verdict: Verdict | None = None

    @property
    def decoded(self) -> Trace:
        if self.trace is None:
            raise InternalError("the validator's items are decoded traces")
        return self.trace


class _Batcher:
    """Cuts the traces into batches as they are read: one open batch per
    spec and constants, closed at about `batch_steps` step lines, or at a
    `jobs`-th of the estimated total when that is less, so no core idles."""

    def __init__(self, traces: Sequence[Trace | Path | str], jobs: int, batch_steps: int) -> None:
        self._jobs, self._limit = jobs, batch_steps
        self._target: int | None = None
        # Files are not read yet: their sizes, with the first file's bytes
        # per step, estimate the total.
        self._bytes = sum(
            os.path.getsize(t) for t in traces if not isinstance(t, Trace) and os.path.isfile(t)
        )
        self._steps = sum(len(t.steps) for t in traces if isinstance(t, Trace))
        self._open: dict[tuple[str, str], tuple[list[_Item], int]] = {}

    def _target_for(self, item: _Item, source: Trace | Path | str) -> int:
        if self._target is None:
            total = self._steps
            if self._bytes and not isinstance(source, Trace) and os.path.isfile(source):
                per_step = max(1, os.path.getsize(source)) / max(1, item.steps)
                total += int(self._bytes / per_step)
            self._target = min(self._limit, max(1, -(-total // self._jobs)))
        return self._target

    def add(self, item: _Item, source: Trace | Path | str) -> list[_Item] | None:
        """Add a trace; return its batch when that is full."""
        key = (item.spec.name, to_tla(item.constants))
        batch, steps = self._open.get(key, ([], 0))
        batch.append(item)
        steps += item.steps
        if steps >= self._target_for(item, source):
            self._open.pop(key, None)
            return batch
        self._open[key] = (batch, steps)
        return None

    def rest(self) -> list[list[_Item]]:
        """The batches still open once every trace is read."""
        return [batch for batch, _ in self._open.values()]


def _verdict(item: _Item, divergence: Divergence | None, error: str | None = None) -> Verdict:
    """The item's verdict: accepted when nothing diverged and nothing kept it from TLC."""
    trace = item.decoded
    return Verdict(
        Path(trace.path) if trace.path else None,
        divergence is None and error is None,
        len(trace.steps),
        divergence,
        item.seconds,
        item.spec.name,
        trace.header,
        error=error,
    )


def _finish(
    item: _Item,
    workdir: Path,
    explain: bool,
    timeout_s: float | None,
    tlc: Callable[..., TLCResult],
) -> Verdict:
    trace = item.decoded
    path = Path(trace.path) if trace.path else None

    if item.unchecked is not None:
        return _verdict(item, None, error=_naming(path, item.unchecked))
    if item.step == 0:
        return _verdict(item, None)
    if not 1 <= item.step <= len(trace.steps):
        raise InternalError(f"TLC stopped at step {item.step} of a {len(trace.steps)}-step trace")
    if not explain:
        line = trace.steps[item.step - 1]
        message = (
            "Init allows no state with the logged values."
            if item.step == 1
            else "no step of the spec explains this line."
        )
        return _verdict(item,
            Divergence(
                line.line,
                item.step,
                line.action or "",
                line.params,
                item.reason,
                message,
                variables=len(line.vars),
                tlc_error=item.tlc_error,
                last_line=trace.steps[item.step - 2].line if item.step > 1 else None,
            )
        )
    try:
        divergence, seconds = explain_divergence(
            workdir, item.spec, trace, item.constants, item.step, item.reason, item.tlc_error,
            timeout_s, tlc,
        )
    except TLCError as exc:
        # The verdict stands without its explanation.
        unexplained = _finish(item, workdir, False, timeout_s, tlc)
        assert unexplained.divergence is not None
        failed = f"the TLC run that explains the line failed: {exc}"
        return replace(
            unexplained,
            divergence=replace(
                unexplained.divergence,
                tlc_error="\n".join(p for p in (item.tlc_error, failed) if p),
            ),
        )
    item.seconds += seconds
    return _verdict(item, divergence)


# --- the entry points -------------------------------------------------------


def _file(path: Path | str | None) -> str:
    """A trace's file name as an error message shows it: escaped, since a
    name may hold a newline or a terminal escape."""
    return printable(str(path))


def _naming(path: Path | str | None, message: str) -> str:
    """The message, led by the trace's file (escaped) when it does not name it
    already."""
    if path is None or message.startswith(_file(path)):
        return message
    if message.startswith(str(path)):
        return _file(path) + message[len(str(path)) :]
    return f"{_file(path)}: {message}"


def _load(
    trace: Trace | Path | str,
    spec_name: str | None,
    spec_dirs: Sequence[Path] | None,
    constants: Mapping[str, Any] | None,
    specs: dict[str, TraceSpec],
) -> tuple[Trace, TraceSpec, dict[str, Any]]:
    if not isinstance(trace, Trace):
        trace = read_trace(Path(trace))
    name = spec_name
    if name is None and trace.header is not None:
        name = trace.header.get("spec")
    if not isinstance(name, str):
        raise TraceFormatError(
            f"{_file(trace.path)}: the trace has no header naming its spec; give the spec module "
            "(tlasim validate --spec NAME)"
        )
    if not trace.steps:
        raise TraceFormatError(f"{_file(trace.path)}: the trace has no step lines")
    if name not in specs:
        specs[name] = load_trace_spec(name, spec_dirs)
    loaded = specs[name]
    _check_header_variables(trace, loaded)
    return trace, loaded, _constants(trace, loaded, constants)


def validate_traces(
    traces: Sequence[Trace | Path | str],
    *,
    spec_dirs: Sequence[Path] | None = None,
    spec: str | None = None,
    constants: Mapping[str, Any] | None = None,
    jobs: int = 1,
    explain: bool = True,
    workdir: Path | None = None,
    timeout_s: float | None = None,
    batch_steps: int = BATCH_STEPS,
    on_verdict: Callable[[int, Verdict], None] | None = None,
    keep_going: bool = False,
    method: Method = "fast",
) -> list[Verdict]:
    """Check many traces with few TLC runs; one verdict per trace, in order.

    `spec` overrides each header's spec name, `constants` each header's
    constants. `explain=False` skips the job that sets a rejected line's
    values beside the allowed ones (the line and reason are still given).
    Files go to `workdir` (kept) or to a temporary folder (removed).
    `on_verdict(index, verdict)` hears each verdict as soon as it is known.

    Traces are read in order while earlier batches are checked. Raises
    TraceFormatError (unreadable trace), SpecError (spec or template missing
    or unreadable), ToolNotFound (no Java or TLC), TLCError (TLC failed in a
    way that says nothing about a trace).
    With `keep_going`, an unreadable trace or a missing spec instead gives
    that trace a verdict whose `error` says why, and the others are checked.
    `method` is how TLC is run (`tlc_batch.METHODS`); the verdicts are the same.
    """
    if method not in METHODS:
        raise SpecError(f"method={method!r}: expected one of {', '.join(METHODS)}")
    if jobs < 1:
        raise SpecError(f"jobs={jobs}: must be at least 1")
    specs: dict[str, TraceSpec] = {}
    items: list[_Item] = []
    unusable: dict[int, Verdict] = {}

    def hear(index: int, verdict: Verdict) -> None:
        if on_verdict is not None:
            on_verdict(index, verdict)

    with tempfile.TemporaryDirectory(prefix="tlasim-validate-") as tmp:
        root = Path(workdir) if workdir is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        # One thread more than TLC slots: while TLC checks one batch, the
        # next is read and its module written. Threads suffice, since the
        # heavy work is TLC, in subprocesses.
        slots = threading.Semaphore(jobs)

        def tlc(*args: Any, **kwargs: Any) -> TLCResult:
            with slots:
                return run_tlc(*args, **kwargs)

        def run(number: int, batch: list[_Item]) -> None:
            folder = root / f"batch{number}"
            folder.mkdir(exist_ok=True)
            prepare_folder(folder, batch[0].spec)
            check_batch(folder, list(batch), timeout_s=timeout_s, tlc=tlc, method=method)
            failed = [item for item in batch if item.unchecked is not None]
            if failed and not keep_going:
                files = ", ".join(_file(item.decoded.path) for item in failed[:5])
                more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
                raise TLCError(f"{files}{more}: {failed[0].unchecked}")
            for item in batch:
                item.verdict = _finish(item, folder, explain, timeout_s, tlc)
                hear(item.index, item.verdict)

        with ThreadPoolExecutor(max_workers=jobs + 1) as pool:
            futures: list[Future[None]] = []
            batcher = _Batcher(traces, jobs, batch_steps)
            for i, trace in enumerate(traces):
                # Traces are read as batches fill, so reading overlaps TLC.
                try:
                    decoded, loaded, values = _load(trace, spec, spec_dirs, constants, specs)
                    item = _Item(
                        loaded, values, len(decoded.steps), trace=decoded,
                        full_logs=logs_every_variable(decoded, loaded), index=i,
                    )
                except SpecParseError:
                    # The spec is wrong, not this trace: no trace can be checked.
                    raise
                except (TraceFormatError, SpecError) as exc:
                    path = Path(trace.path if isinstance(trace, Trace) else trace)
                    if not keep_going:
                        raise type(exc)(_naming(path, str(exc))) from None
                    unusable[i] = Verdict(path, False, 0, None, 0.0, error=_naming(path, str(exc)))
                    hear(i, unusable[i])
                    continue
                early = _precheck(item.decoded, item.spec)
                refused = None if early is not None else _unwritable(item.decoded, item.constants)
                if refused is not None:
                    if not keep_going:
                        raise TraceFormatError(refused)
                    unusable[i] = _verdict(item, None, error=refused)
                    hear(i, unusable[i])
                    continue
                items.append(item)
                if early is not None:
                    item.verdict = _verdict(item, early)
                    hear(i, item.verdict)
                    continue
                full = batcher.add(item, trace)
                if full is not None:
                    futures.append(pool.submit(run, len(futures) + 1, full))
            for batch in batcher.rest():
                futures.append(pool.submit(run, len(futures) + 1, batch))
            for future in futures:
                future.result()  # re-raises a batch's error
    verdicts = {item.index: item.verdict for item in items}
    verdicts.update(unusable)
    if any(verdicts.get(i) is None for i in range(len(traces))):
        raise InternalError("a trace got no verdict")
    return [v for _, v in sorted(verdicts.items()) if v is not None]


def validate_trace(
    trace: Trace | Path | str,
    *,
    spec_dirs: Sequence[Path] | None = None,
    spec: str | None = None,
    constants: Mapping[str, Any] | None = None,
    workdir: Path | None = None,
    timeout_s: float | None = None,
    explain: bool = True,
) -> Verdict:
    """Check that one trace is a behaviour of its spec; see `validate_traces`."""
    return validate_traces(
        [trace],
        spec_dirs=spec_dirs,
        spec=spec,
        constants=constants,
        workdir=workdir,
        timeout_s=timeout_s,
        explain=explain,
    )[0]
