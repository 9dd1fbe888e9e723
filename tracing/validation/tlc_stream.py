"""One TLC run that checks a campaign's traces as they come.

Theory of operation. A TLC run per batch paid Java's start, SANY's parse of
the spec and the JIT's warm-up every time: on twopc, a batch of 400 traces
cost 18 ms of CPU per trace, where one run of 1,600 cost 7.7 ms. So a
campaign keeps one TLC per spec and constants, warm, and feeds it chunks of
traces while the workers simulate (`trace_module.trace_stream` is the
module, `tlasim.TraceStream` the Java that reads the chunks).

tlasim writes each chunk as a file (`tracing.tla.binary`) and names it on
TLC's standard input; TLC's cursor state starts the chunk's traces when it
comes. A trace is accepted when its last line prints the end mark, exactly
as in `tlc_batch`'s first pass, and rejected once TLC, which explores
breadth first with one worker, has explored every level up to its last
line without that mark: TLC says how far it got each time it polls for
the next chunk ("tlasimStream at L") and where each chunk started
("tlasimStream loaded k L"), and that it explored all it was given
("tlasimStream idle"). Those lines are printed by tlasim's Java, never
by a trace's values, which TLC prints quoted.

A run that ends in any other way than after the end of its input (an
evaluation error, which stops TLC for every trace it holds; a chunk it
could not read; Java gone) leaves its unsettled traces to `check_batch`,
which isolates the trace at fault, and the session starts a new run for
the traces that come after.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tlasim.protocols.errors import InternalError, ToolNotFound
from tlasim.tracing.tla.binary import trace_logs_of
from tlasim.tracing.tla.speccheck import TraceSpec
from tlasim.tracing.tla.tlc import TLASIM_JAR, find_java, find_tla2tools
from tlasim.tracing.tla.trace_module import (
    STREAM_MODULE,
    stream_config,
    trace_data_loaded,
    trace_stream,
)

__all__ = ["STREAM_CHUNK_STEPS", "STREAM_LAG_STEPS", "TraceStream"]

# Step lines per chunk: small, so the last traces wait little for TLC, but
# each chunk costs a file and a poll.
STREAM_CHUNK_STEPS = 3000
# Step lines TLC may hold unsettled before the campaign waits for it.
STREAM_LAG_STEPS = 40000
# One GC thread, and the JIT's quick tier only: the optimizing tier's
# compiling costs more than it saves over a few hundred traces (twopc, 2
# workers: 600 seeds at 111-116 seeds/s with the quick tier alone, 94-102
# with both), and saves more than it costs over thousands (2,000 seeds:
# 111-116 against 125-142), so a long run (`long_run`) has both tiers.
# Parallel GC's threads cost more than they save, competing for the cores.
_JVM_ARGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
_JVM_ARGS_LONG_RUN = ("-XX:+UseSerialGC",)
_AT = re.compile(r"tlasimStream at (\d+)")
_LOADED = re.compile(r"tlasimStream loaded (\d+) (\d+)")
_END = re.compile(r'<<"tlasimEnd", <<(\d+), (\d+)>>, (\d+)>>')
# A level above every trace's last line.
_EVERYTHING = 2**62


@dataclass(slots=True)
class _Chunk:
    entries: list[tuple[Hashable, Any]]  # (tag, tlc_batch.BatchItem)
    open: set[int]  # 1-based indexes of the traces not settled yet
    # (the level of its last line, index) per trace, latest first
    ends: list[tuple[int, int]] = field(default_factory=list)


class TraceStream:
    """A TLC run checking the traces of one spec and constants as they come.

    `report(tag, accepted, seconds)` hears each trace's verdict, from the
    thread that reads TLC; `fallback(entries)` gets the traces a failed run
    left unsettled (the session checks them one batch at a time) and must
    report them itself.
    """

    def __init__(
        self,
        folder: Path,
        spec: TraceSpec,
        constants: dict[str, Any],
        report: Callable[[Hashable, bool, float], None],
        fallback: Callable[[list[tuple[Hashable, Any]]], None],
        *,
        long_run: bool = False,
        jvm_args: Sequence[str] = (),
    ) -> None:
        """`jvm_args` go to Java after tlasim's own (a heap size, say)."""
        from tlasim.tracing.validation.tlc_batch import prepare_folder

        self._folder = folder
        self._jvm_args = (*(_JVM_ARGS_LONG_RUN if long_run else _JVM_ARGS), *jvm_args)
        self._report, self._fallback = report, fallback
        self._chunk_steps = STREAM_CHUNK_STEPS
        self._lock = threading.Lock()
        self._chunks: dict[int, _Chunk] = {}
        self._pending: list[tuple[Hashable, Any]] = []
        self._pending_steps = 0
        self._sent = 0
        self.sent_steps = 0  # step lines handed in, in all
        self._unsettled_steps = 0
        self._ending = False
        self._alive = True
        self._error: BaseException | None = None
        self._settled: list[tuple[Hashable, bool]] = []
        self._since = time.monotonic()
        folder.mkdir(parents=True, exist_ok=True)
        prepare_folder(folder, spec)
        (folder / "TraceData.tla").write_text(trace_data_loaded(constants, None), encoding="utf-8")
        (folder / f"{STREAM_MODULE}.tla").write_text(trace_stream(spec), encoding="utf-8")
        (folder / f"{STREAM_MODULE}.cfg").write_text(stream_config(constants), encoding="utf-8")
        self._process = self._start()
        self._reader = threading.Thread(target=self._read, name="tlasim-stream", daemon=True)
        self._reader.start()

    def _start(self) -> subprocess.Popen[bytes]:
        java, jar = find_java(), find_tla2tools()
        if not TLASIM_JAR.is_file():
            raise ToolNotFound(f"{TLASIM_JAR} is missing: reinstall tlasim (or run `make java`)")
        java_tmp = Path(tempfile.mkdtemp(prefix="tmp-", dir=self._folder))
        command = [
            java, f"-Djava.io.tmpdir={java_tmp}", *self._jvm_args,
            "-cp", os.pathsep.join([str(jar), str(TLASIM_JAR)]),
            "tlc2.TLC", "-tool", "-workers", "1", "-metadir", str(self._folder / "meta"),
            "-deadlock", "-checkpoint", "0",
            "-config", f"{STREAM_MODULE}.cfg", f"{STREAM_MODULE}.tla",
        ]
        try:
            return subprocess.Popen(
                command, cwd=self._folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            raise ToolNotFound(f"cannot start {java}: {exc}") from exc

    # --- the caller's side ----------------------------------------------------

    def add(self, tag: Hashable, item: Any) -> bool:
        """Queue a trace; False (and nothing queued) once the run has failed."""
        with self._lock:
            if not self._alive or self._ending:
                return False
            self._pending.append((tag, item))
            self._pending_steps += item.steps
            self.sent_steps += item.steps
            self._unsettled_steps += item.steps
            if self._pending_steps >= self._chunk_steps:
                self._send()
            return True

    def flush(self) -> None:
        """Send the traces queued so far, however few."""
        with self._lock:
            if self._alive and self._pending:
                self._send()

    @property
    def pid(self) -> int:
        """Its JVM's process id."""
        return self._process.pid

    def retire(self) -> None:
        """Send the rest and the end, and take no more traces: TLC settles
        what it holds and exits on its own, while a new run takes the next
        traces. A long run holds every state it explored; retiring it
        bounds its memory."""
        with self._lock:
            if self._alive and self._pending:
                self._send()
            self._ending = True
            self._close_input()

    def lag(self) -> int:
        """How far TLC is behind, in units of STREAM_LAG_STEPS unsettled lines."""
        return self._unsettled_steps // STREAM_LAG_STEPS

    @property
    def unsettled_steps(self) -> int:
        """Step lines handed in and not yet settled."""
        return self._unsettled_steps

    def finish(self) -> None:
        """Send the rest and the end, and wait for TLC to settle every trace.
        When every trace is settled already, TLC has nothing left to say:
        it is stopped, not waited for (its exit took 0.35 s, the length of
        a small campaign's tail)."""
        with self._lock:
            if self._alive and self._pending:
                self._send()
            self._ending = True
            self._close_input()
            done = not any(c.open for c in self._chunks.values())
        if done and self._process.poll() is None:
            self._process.kill()
        self._reader.join()
        self.raise_error()

    def kill(self) -> None:
        """Stop TLC at once (the campaign was interrupted)."""
        with self._lock:
            self._ending = True
            self._close_input()
        if self._process.poll() is None:
            self._process.kill()
        self._reader.join()

    def finished(self) -> bool:
        """Whether its TLC is gone and every trace it took was reported."""
        return not self._reader.is_alive()

    @property
    def error(self) -> BaseException | None:
        """What stopped its reader, if anything did."""
        return self._error

    def raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _send(self) -> None:
        """Write the pending traces as the next chunk and name it to TLC (lock held)."""
        chunk_id, entries = self._sent, self._pending
        self._pending, self._pending_steps = [], 0
        path = self._folder / f"chunk-{chunk_id}.bin"
        partial = path.with_suffix(".part")
        partial.write_bytes(trace_logs_of([item.data() for _, item in entries]))
        os.replace(partial, path)  # TLC never sees half a chunk
        self._chunks[chunk_id] = _Chunk(entries, set(range(1, len(entries) + 1)))
        self._sent += 1
        try:
            stdin = self._process.stdin
            assert stdin is not None
            stdin.write(f"{chunk_id}\n".encode())
            stdin.flush()
        except (BrokenPipeError, ValueError):
            # TLC is gone; the reader hands every unsettled trace on.
            pass

    def _close_input(self) -> None:
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.write(b"end\n")
                stdin.close()
            except (BrokenPipeError, ValueError):
                pass

    # --- the reader's side ----------------------------------------------------

    def _read(self) -> None:
        stdout: IO[bytes] | None = self._process.stdout
        try:
            assert stdout is not None
            for raw in stdout:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                self._line(line)
            code = self._process.wait()
            self._ended(code)
        except BaseException as exc:  # handed to the session's thread
            self._error = exc
            with self._lock:
                self._alive = False
            if self._process.poll() is None:
                self._process.kill()

    def _line(self, line: str) -> None:
        end = _END.fullmatch(line)
        if end is not None:
            chunk_id, index, last = (int(g) for g in end.groups())
            with self._lock:
                chunk = self._chunks.get(chunk_id)
                if chunk is None or index > len(chunk.entries):
                    raise InternalError(f"TLC printed an end mark for no trace: {line}")
                if index in chunk.open and last == chunk.entries[index - 1][1].steps:
                    self._settle(chunk, index, accepted=True)
                elif index not in chunk.open:
                    raise InternalError(
                        f"TLC printed the end of trace {index} of chunk {chunk_id} after "
                        "it had gone past its last line: its output is not in order"
                    )
            return
        at = _AT.fullmatch(line)
        if at is not None:
            self._reached(int(at.group(1)))
            return
        if line == "tlasimStream idle":
            # TLC explored everything it was given: the last traces a
            # rejection stopped early settle now, not after the next chunk.
            self._reached(_EVERYTHING)
            return
        loaded = _LOADED.fullmatch(line)
        if loaded is not None:
            chunk_id, start = int(loaded.group(1)), int(loaded.group(2))
            with self._lock:
                chunk = self._chunks[chunk_id]
                chunk.ends = sorted(
                    ((start + item.steps, i) for i, (_, item) in enumerate(chunk.entries, 1)),
                    reverse=True,
                )
            return

    def _reached(self, level: int) -> None:
        """TLC explored every level below `level`: a trace that ends below it
        and printed no end mark was rejected."""
        with self._lock:
            for chunk_id in list(self._chunks):
                chunk = self._chunks[chunk_id]
                while chunk.ends and chunk.ends[-1][0] < level:
                    _, index = chunk.ends.pop()
                    if index in chunk.open:
                        self._settle(chunk, index, accepted=False)
                if not chunk.open:
                    del self._chunks[chunk_id]
            settled, self._settled = self._settled, []
            now = time.monotonic()
            share = (now - self._since) / len(settled) if settled else 0.0
            if settled:
                self._since = now
        for tag, accepted in settled:
            self._report(tag, accepted, share)

    def _settle(self, chunk: _Chunk, index: int, *, accepted: bool) -> None:
        chunk.open.discard(index)
        tag, item = chunk.entries[index - 1]
        self._unsettled_steps -= item.steps
        self._settled.append((tag, accepted))

    def _ended(self, code: int) -> None:
        with self._lock:
            clean = code == 0 and self._ending
        if clean:
            # TLC explored everything: a trace that printed no end mark was rejected.
            self._reached(_EVERYTHING)
        else:
            self._reached(0)  # report what was settled before the failure, no more
        with self._lock:
            self._alive = False
            left = [c.entries[i - 1] for c in self._chunks.values() for i in sorted(c.open)]
            left += self._pending
            self._chunks.clear()
            self._pending = []
            self._unsettled_steps = 0
        if clean and left:
            raise InternalError(f"TLC ended its stream with {len(left)} traces it never reached")
        if left:
            # The run failed for all it held: each trace gets a batch's verdict.
            self._fallback(left)
