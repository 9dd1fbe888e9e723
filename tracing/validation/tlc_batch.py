"""One TLC run for a whole batch of traces, and a session that feeds such
runs from a stream of traces (a campaign's).

Theory of operation. A batch is traces of one spec and one set of
constants. `check_batch` writes the generated modules into a folder, runs
TLC once and sets each item's outcome: accepted, rejected (at a named line,
or, when the caller does not need the line, just rejected), or unchecked
(TLC failed before any trace's first state, which is all of the batch's
doing and none of any other batch's).

Two methods, the same verdicts:
- "fast" (the default). The batch's values reach TLC as a file
  (`tracing.tla.binary`) that SANY never parses; a batch whose every line
  logs every variable binds them without testing which it logged; and a
  first run prints only the traces that reach their last line, so TLC
  evaluates each step once (finding the dead ends of the others takes
  `ENABLED`, which evaluates each step again). Only the traces that did not
  reach their end run again, in the full module, to find the line that
  rejects them.
- "reference": the module spells every value as TLA+ text and one run
  finds every trace's furthest line, as the validator did before "fast".
  Tests and `make bench` compare the two.

An evaluation error stops a TLC run for the whole batch. When TLC names the
trace (its error trace starts in that trace's initial state), that trace is
rejected there and the batch runs again without it; when it cannot (an
error in Init), the batch is halved until the culprit is alone.

`CheckSession` takes traces one at a time from where they were made (a
campaign's worker encodes its own traces, `PreparedTrace`), groups them by
spec and constants, and runs a batch on a thread once it holds enough step
lines, so simulation and checking overlap. It reports only accepted or
not: the caller gets the rejecting line, with today's full verdict, from
the validator on the trace's file.
"""

from __future__ import annotations

import dataclasses
import functools
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tlasim.protocols.errors import InternalError, SpecError, TLCError
from tlasim.tracing.codec import Trace
from tlasim.tracing.tla.binary import PreparedTrace, trace_blob, trace_logs_of
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.tla.speccheck import TraceSpec, load_trace_spec
from tlasim.tracing.tla.tlc import EC, JAVA_SOURCES, LOAD_FAILED, TLASIM_JAR, TLCResult, run_tlc
from tlasim.tracing.tla.trace_module import (
    GENERATED,
    LINE_VAR,
    LOADER_MODULE,
    TRACE_VAR,
    config,
    parse_end_marks,
    trace_check,
    trace_data,
    trace_data_loaded,
)
from tlasim.tracing.validation.explain import JVM_ARGS, Reason

if TYPE_CHECKING:
    from tlasim.tracing.validation.tlc_stream import TraceStream

__all__ = [
    "METHODS",
    "SESSION_BATCH_STEPS",
    "UNLOCATED",
    "BatchItem",
    "CheckSession",
    "Method",
    "check_batch",
    "prepare_folder",
]

Method = Literal["fast", "reference"]
METHODS: tuple[Method, ...] = ("fast", "reference")
# An item's `step` when TLC rejected it and the caller did not ask where.
UNLOCATED = -1
# Step lines per TLC run of a session. Each run pays a JVM start, the spec's
# parse and the JIT's warm-up (about 2 s in all); SANY no longer parses the
# values, so a batch can be large: on twopc a run of 1,000 traces (143,000
# lines) took 7 s where 100 traces took 2.8 s.
SESSION_BATCH_STEPS = 60000
_DATA_FILE = "TraceData.bin"
# Long-lived TLC runs a session keeps at once; traces of any other spec and
# constants (a campaign whose workload sets them per seed) go to batches,
# so a campaign never holds a JVM per seed.
MAX_STREAMS = 8
# Step lines a stream takes before it is retired and a new run takes over.
# A run keeps the fingerprint of every state it explored (each line's is
# new), so its memory grows with the lines it checked; a new run costs a
# JVM's start and warm-up, a few seconds, against the minutes of checking
# this many lines takes (about 30,000 lines/s warm).
STREAM_RETIRE_STEPS = 5_000_000


@dataclass(slots=True, eq=False)
class BatchItem:
    """One trace in a batch, and what TLC made of it."""

    spec: TraceSpec
    constants: dict[str, Any]
    steps: int
    trace: Trace | None = None  # the decoded trace: "reference" writes its text
    blob: bytes | None = None  # its element of TraceLogs (tracing.tla.binary)
    full_logs: bool = False  # every line logs every variable of the spec
    step: int = 0  # 0: accepted; else the rejected step, or UNLOCATED
    reason: Reason = "step"
    tlc_error: str | None = None
    seconds: float = 0.0  # its share of its batch's TLC time
    # Why TLC could not check the batch this trace was in (TLC failed before
    # any trace's first state: its constants, a timeout); None when it could.
    unchecked: str | None = None

    def data(self) -> bytes:
        if self.blob is None:
            if self.trace is None:
                raise InternalError("a batch item has neither a trace nor its bytes")
            self.blob = trace_blob(self.trace)
        return self.blob


def logs_every_variable(trace: Trace, spec: TraceSpec) -> bool:
    """Whether every line of the trace logs every variable of the spec."""
    count = len(spec.decls.variables)
    return all(len(step.vars) == count for step in trace.steps)


def prepare_folder(workdir: Path, spec: TraceSpec) -> None:
    """Copy the spec's modules, its template and the loader module into `workdir`."""
    for source in sorted(spec.module.parent.glob("*.tla")):
        if source.stem in GENERATED:
            raise SpecError(f"{source} has the name of a module the validator generates")
        shutil.copyfile(source, workdir / source.name)
    if spec.template.parent != spec.module.parent:
        shutil.copyfile(spec.template, workdir / spec.template.name)
    shutil.copyfile(JAVA_SOURCES / f"{LOADER_MODULE}.tla", workdir / f"{LOADER_MODULE}.tla")


def _last_state_field(result: TLCResult, name: str) -> int | None:
    if not result.error_trace:
        return None
    value = result.error_trace[-1].values().get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_batch(
    workdir: Path,
    batch: list[BatchItem],
    *,
    timeout_s: float | None,
    tlc: Callable[..., TLCResult],
    method: Method,
    locate: bool = True,
    jvm_args: Sequence[str] = (),
) -> None:
    """Run TLC on the batch and set each item's rejected step (0: accepted;
    UNLOCATED: rejected, when `locate` is off), or its `unchecked` reason when
    TLC failed in a way that names no trace. `jvm_args` go to Java after
    tlasim's own (a heap size, say)."""
    if jvm_args:
        tlc = functools.partial(_with_jvm_args, tlc, tuple(jvm_args))
    try:
        _run_batch(workdir, batch, timeout_s, tlc, method, locate, ends_only=method == "fast")
    except TLCError as exc:
        # The batch shares its spec and constants, which is all TLC reads
        # before the traces' first states, so such a failure is all of the
        # batch's and none of any other batch's.
        for item in batch:
            item.unchecked = str(exc)


def _with_jvm_args(
    tlc: Callable[..., TLCResult], extra: tuple[str, ...], *args: Any, **kwargs: Any
) -> TLCResult:
    return tlc(*args, **{**kwargs, "jvm_args": (*kwargs.get("jvm_args", ()), *extra)})


def _run_batch(
    workdir: Path,
    batch: list[BatchItem],
    timeout_s: float | None,
    tlc: Callable[..., TLCResult],
    method: Method,
    locate: bool,
    ends_only: bool,
) -> None:
    spec, constants = batch[0].spec, batch[0].constants
    if method == "fast":
        (workdir / _DATA_FILE).write_bytes(trace_logs_of([item.data() for item in batch]))
        text = trace_data_loaded(constants, _DATA_FILE)
        module = trace_check(
            spec, full_logs=all(item.full_logs for item in batch), ends_only=ends_only
        )
    else:
        traces = [item.trace for item in batch]
        if any(trace is None for trace in traces):
            raise InternalError("the reference method needs every trace decoded")
        text = trace_data([t for t in traces if t is not None], constants)
        module = trace_check(spec)
    (workdir / "TraceData.tla").write_text(text, encoding="utf-8")
    (workdir / "TraceCheck.tla").write_text(module, encoding="utf-8")
    (workdir / "TraceCheck.cfg").write_text(config(constants), encoding="utf-8")
    result = tlc(
        workdir / "TraceCheck.tla",
        workdir / "TraceCheck.cfg",
        workdir=workdir,
        args=["-deadlock"],
        timeout_s=timeout_s,
        jvm_args=JVM_ARGS,
        classpath=[TLASIM_JAR] if method == "fast" else [],
    )
    share = result.seconds / len(batch)
    for item in batch:
        item.seconds += share
    codes = result.codes()
    if result.exit_code == LOAD_FAILED:
        said = [line for line in result.output.splitlines() if line.startswith("tlasim: ")]
        raise TLCError(
            "TLC could not read the batch's trace data: "
            + (said[-1].removeprefix("tlasim: ") if said else result.output[-2000:])
        )
    if result.outcome == "ok":
        furthest = parse_end_marks(result.plain_output)
        if ends_only:
            # Only a state on its trace's last line printed: those traces are
            # accepted; any other was rejected somewhere.
            rest = [item for t, item in enumerate(batch, 1) if furthest.get(t) != item.steps]
            if rest and locate:
                _run_batch(workdir, rest, timeout_s, tlc, method, locate, ends_only=False)
            else:
                for item in rest:
                    item.step, item.reason = UNLOCATED, "step"
            return
        for t, item in enumerate(batch, start=1):
            if t not in furthest:
                item.step, item.reason = 1, "init"
            elif furthest[t] < item.steps:
                item.step, item.reason = furthest[t] + 1, "step"
        return
    if codes & {EC.TLC_PARSING_FAILED, EC.TLC_PARSING_FAILED2}:
        raise TLCError(f"TLC could not parse the generated trace modules:\n{result.error_text()}")
    # A failed Assert (a PlusCal `assert`) in the spec stops TLC as an
    # evaluation error does, and is one: of the trace that reached it.
    if result.outcome not in ("error", "assertion") or EC.TLC_COMPUTING_INIT not in codes:
        raise TLCError(
            f"TLC failed while checking traces ({result.outcome}, exit code "
            f"{result.exit_code}):\n{result.error_text() or result.output[-2000:]}"
        )
    # TLC got past parsing and the config, so this is an evaluation error.
    culprit = _last_state_field(result, TRACE_VAR)
    if culprit is not None and 1 <= culprit <= len(batch):
        item = batch[culprit - 1]
        line = _last_state_field(result, LINE_VAR) or 0
        item.step, item.reason, item.tlc_error = line + 1, "eval_error", result.error_text()
        rest = batch[: culprit - 1] + batch[culprit:]
    elif len(batch) == 1:
        # No state printed: the error was in Init (line 1), or a failed
        # Assert, which TLC reports without the state it was evaluating.
        item = batch[0]
        step, error = 1, result.error_text()
        if result.outcome == "assertion":
            error = f'the spec\'s Assert failed: "{result.violated}"\n{error}'
            if locate and item.trace is not None:
                step = _first_failing_line(workdir, item, item.trace, timeout_s, tlc, method)
        item.step, item.reason, item.tlc_error = step, "eval_error", error
        return
    else:
        half = len(batch) // 2
        _run_batch(workdir, batch[:half], timeout_s, tlc, method, locate, ends_only)
        _run_batch(workdir, batch[half:], timeout_s, tlc, method, locate, ends_only)
        return
    if rest:
        _run_batch(workdir, rest, timeout_s, tlc, method, locate, ends_only)


def _first_failing_line(
    workdir: Path,
    item: BatchItem,
    trace: Trace,
    timeout_s: float | None,
    tlc: Callable[..., TLCResult],
    method: Method,
) -> int:
    """The line whose step failed an Assert, which TLC names no state of: the
    shortest prefix of the trace that fails, found by bisection. Every step
    before that line was one of the spec (TLC got past it), so a prefix
    fails exactly when it holds that line."""
    good, bad = 1, item.steps  # the first line alone is Init: it passed
    while bad - good > 1:
        middle = (good + bad) // 2
        probe = BatchItem(
            item.spec, item.constants, middle,
            trace=dataclasses.replace(trace, steps=trace.steps[:middle]),
            full_logs=item.full_logs,
        )
        _run_batch(workdir, [probe], timeout_s, tlc, method, locate=False, ends_only=True)
        if probe.reason == "eval_error":
            bad = middle
        else:
            good = middle
    return bad


# --- a session: traces as they come -------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What a session found for one trace."""

    tag: Hashable
    accepted: bool
    tlc_seconds: float
    unchecked: str | None = None  # why TLC could not check it (not accepted)


class CheckSession:
    """Checks traces handed in one at a time, in large batches, on threads.

    Results arrive in `results` (a queue of SessionResult) as batches finish.
    `jobs` TLC runs at once. Use as a context manager: leaving it waits for
    every batch, and removes the work folder unless `workdir` was given.
    """

    def __init__(
        self,
        *,
        jobs: int = 1,
        batch_steps: int = SESSION_BATCH_STEPS,
        timeout_s: float | None = None,
        workdir: Path | None = None,
        spec_dirs: list[Path] | None = None,
        stream: bool = False,
        stream_runs: int = 1,
        stream_long: bool = False,
        jvm_args: Sequence[str] = (),
        retire_steps: int = STREAM_RETIRE_STEPS,
    ) -> None:
        """`stream`: check the traces whose every line logs every variable
        in long-lived TLC runs per spec and constants, `stream_runs` of them
        side by side (each explores with one thread), fed as they come
        (`tlc_stream.TraceStream`), rather than in a run per batch.
        `stream_long`: the streams will check many traces, enough to pay for
        Java's optimizing compiler (`TraceStream`'s `long_run`).
        `jvm_args` go to every TLC's Java (a heap size, say); a stream that
        took `retire_steps` step lines is retired for a new one."""
        if jobs < 1:
            raise SpecError(f"jobs={jobs}: must be at least 1")
        self.results: queue.Queue[SessionResult] = queue.Queue()
        self._batch_steps = batch_steps
        self._timeout_s = timeout_s
        self._spec_dirs = spec_dirs
        self._specs: dict[str, TraceSpec] = {}
        self._open: dict[tuple[str, str], tuple[list[tuple[Hashable, BatchItem]], int]] = {}
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="tlasim-tlc")
        self._futures: list[Future[None]] = []
        self._tmp = None if workdir is not None else tempfile.TemporaryDirectory(
            prefix="tlasim-session-"
        )
        self._root = Path(workdir) if workdir is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        self._batches = 0
        self._lock = threading.Lock()
        self._stream = stream
        self._stream_runs = max(1, stream_runs)
        self._stream_long = stream_long
        self._jvm_args = tuple(jvm_args)
        self._retire_steps = retire_steps
        # Per spec and constants, its streams; all of them, the streams that failed too.
        self._streams: dict[tuple[str, str], list[TraceStream]] = {}
        self._every_stream: list[TraceStream] = []

    def __enter__(self) -> CheckSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pending(self) -> int:
        """Batches handed to TLC and not yet finished, and for each stream
        its lag (`TraceStream.lag`)."""
        return sum(1 for f in self._futures if not f.done()) + sum(
            s.lag() for s in self._every_stream
        )

    def submit(self, tag: Hashable, prepared: PreparedTrace) -> None:
        """Add a trace; a result for `tag` arrives in `results` later."""
        spec = self._specs.get(prepared.spec)
        if spec is None:
            spec = self._specs[prepared.spec] = load_trace_spec(prepared.spec, self._spec_dirs)
        if not _passes_prechecks(prepared, spec):
            # The validator rejects it without TLC; the caller asks it where.
            self.results.put(SessionResult(tag, False, 0.0))
            return
        constants = dict(prepared.constants)
        item = BatchItem(
            spec, constants, prepared.steps, blob=prepared.blob, full_logs=prepared.full_logs
        )
        key = (spec.name, to_tla(constants))
        if self._stream and item.full_logs and self._to_stream(key, tag, item):
            return
        batch, steps = self._open.get(key, ([], 0))
        batch.append((tag, item))
        steps += prepared.steps
        if steps >= self._batch_steps:
            self._open.pop(key, None)
            self._dispatch(batch)
        else:
            self._open[key] = (batch, steps)

    def flush(self, parts: int = 1) -> None:
        """Start every batch still open, however small, each cut into up to
        `parts` batches of about equal steps (so that, once nothing else
        needs the cores, `parts` TLC runs share the last traces)."""
        for batch, steps in list(self._open.values()):
            target = max(1, -(-steps // max(1, parts)))
            cut: list[tuple[Hashable, BatchItem]] = []
            size = 0
            for entry in batch:
                cut.append(entry)
                size += entry[1].steps
                if size >= target:
                    self._dispatch(cut)
                    cut, size = [], 0
            if cut:
                self._dispatch(cut)
        self._open.clear()
        for stream in self._every_stream:
            stream.flush()

    def next_result(self, timeout_s: float) -> SessionResult | None:
        """The next result, waiting up to `timeout_s`; None if none came.
        Re-raises the error of a batch that failed (no result will come)."""
        try:
            return self.results.get(timeout=timeout_s)
        except queue.Empty:
            for future in self._futures:
                if future.done() and future.exception() is not None:
                    future.result()
            for stream in self._every_stream:
                stream.raise_error()
            return None

    def wait(self) -> None:
        """Wait for every batch started so far; re-raise the first one's error."""
        for future in self._futures:
            future.result()
        for stream in self._every_stream:
            stream.raise_error()

    def close(self) -> None:
        try:
            self.flush()
            for stream in self._every_stream:
                stream.finish()
            self.wait()
        finally:
            for stream in self._every_stream:
                stream.kill()
            self._pool.shutdown(wait=True, cancel_futures=True)
            if self._tmp is not None:
                self._tmp.cleanup()

    def kill(self) -> None:
        """Stop every TLC at once and remove the work folder; no more results come."""
        for stream in self._every_stream:
            stream.kill()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._tmp is not None:
            self._tmp.cleanup()

    def _to_stream(self, key: tuple[str, str], tag: Hashable, item: BatchItem) -> bool:
        """Hand the trace to the least busy stream of its spec and
        constants, started if need be; False when the session runs as many
        streams as it may (MAX_STREAMS) and none is for these."""
        # Imported here: tlc_stream builds on this module.
        from tlasim.tracing.validation.tlc_stream import TraceStream

        runs = self._streams.get(key, [])
        live = sum(len(r) for r in self._streams.values())
        if len(runs) < self._stream_runs and live < MAX_STREAMS:
            with self._lock:
                self._batches += 1
                folder = self._root / f"stream{self._batches}"

            def report(tag: Hashable, accepted: bool, seconds: float) -> None:
                self.results.put(SessionResult(tag, accepted, seconds))

            stream = TraceStream(
                folder, item.spec, item.constants, report, self._run_now,
                long_run=self._stream_long, jvm_args=self._jvm_args,
            )
            runs.append(stream)
            self._streams[key] = runs
            self._every_stream.append(stream)
        if not runs:
            return False
        stream = min(runs, key=lambda s: s.unsettled_steps)
        if stream.sent_steps >= self._retire_steps:
            stream.retire()
            runs.remove(stream)
            self._forget_finished()
            return self._to_stream(key, tag, item)
        if stream.add(tag, item):
            return True
        # Its run failed (its traces went to batches): a new one takes its place.
        runs.remove(stream)
        return self._to_stream(key, tag, item)
    def _forget_finished(self) -> None:
        """Drop the retired streams whose TLC is gone and settled everything
        (kept when they failed: their error is still to be raised)."""
        live = {id(s) for runs in self._streams.values() for s in runs}
        self._every_stream = [
            s for s in self._every_stream
            if id(s) in live or not s.finished() or s.error is not None
        ]

    def jvm_pids(self) -> list[int]:
        """The process ids of this session's streams' JVMs that still run."""
        return [s.pid for s in self._every_stream if not s.finished()]

    def _run_now(self, batch: list[tuple[Hashable, BatchItem]]) -> None:
        """Check a failed stream's unsettled traces as batches, on the
        stream's own thread (a result for each arrives as for any batch)."""
        for start in range(0, len(batch), 400):
            with self._lock:
                self._batches += 1
                folder = self._root / f"batch{self._batches}"
            self._run(folder, batch[start : start + 400])

    def _dispatch(self, batch: list[tuple[Hashable, BatchItem]]) -> None:
        with self._lock:
            self._batches += 1
            folder = self._root / f"batch{self._batches}"
        self._futures.append(self._pool.submit(self._run, folder, batch))

    def _run(self, folder: Path, batch: list[tuple[Hashable, BatchItem]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        items = [item for _, item in batch]
        prepare_folder(folder, items[0].spec)
        check_batch(folder, items, timeout_s=self._timeout_s, tlc=run_tlc, method="fast",
                    locate=False, jvm_args=self._jvm_args)
        for tag, item in batch:
            self.results.put(
                SessionResult(tag, item.step == 0 and item.unchecked is None, item.seconds,
                              item.unchecked)
            )
        # The batch's files are of no use once its results are out.
        shutil.rmtree(folder, ignore_errors=True)


def _passes_prechecks(prepared: PreparedTrace, spec: TraceSpec) -> bool:
    """The validator's checks that need no TLC (`validator._precheck`, and
    the header's variables), on what a prepared trace says of its lines.
    Stricter than they are: False sends the trace to the validator, which
    gives its verdict or its error."""
    actions = set(spec.actions)
    return (
        prepared.steps > 0
        and prepared.first_action == "Init"
        and prepared.later_actions <= actions - {"Init"}
        and prepared.variables == set(spec.decls.variables)
    )
