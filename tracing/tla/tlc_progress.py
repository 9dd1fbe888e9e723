"""TLC's search figures while it runs, for a user sizing a model.

TLC 2.15 prints its own Progress report once a minute, an interval fixed
when the jar was compiled. So `run_tlc(..., on_progress=...)` starts TLC
through tlasim's `tlasim.ProgressTLC` (tracing/tla/java), which prints the
model checker's figures to standard error every second, and this module
reads them as they come, while the -tool messages on standard output are
captured and parsed as ever.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

PROGRESS_CLASS = "tlasim.ProgressTLC"
PROGRESS_PREFIX = "@tlasim-progress "
# How often ProgressTLC reports: often enough for a live line, rare enough
# to cost nothing beside the search.
PROGRESS_INTERVAL_MS = 1000


@dataclass(frozen=True)
class TLCProgress:
    """One report of a running TLC: what it has generated and found so far,
    how many states wait on its queue, and the depth it has reached."""

    seconds: float
    generated: int
    distinct: int
    queue: int
    depth: int

    def text(self, *, rate_per_s: float | None = None) -> str:
        return figures_text(distinct=self.distinct, generated=self.generated, queue=self.queue,
                            depth=self.depth, rate_per_s=rate_per_s)


def figures_text(*, distinct: int, generated: int, queue: int, depth: int | None,
                 rate_per_s: float | None = None) -> str:
    """TLC's search figures as one line: the same words for the launcher's
    reports and for TLC's own Progress report (tlc.last_figures)."""
    rate = f" ({rate_per_s:,.0f}/s)" if rate_per_s is not None else ""
    text = f"{distinct:,} distinct states{rate}, {generated:,} generated, queue {queue:,}"
    return text + (f", depth {depth}" if depth is not None else "")


def parse_progress_line(line: str) -> TLCProgress | None:
    """A ProgressTLC report, or None for any other line (TLC's own stderr)."""
    if not line.startswith(PROGRESS_PREFIX):
        return None
    fields = line[len(PROGRESS_PREFIX):].split()
    if len(fields) != 5 or not all(f.lstrip("-").isdigit() for f in fields):
        return None
    elapsed_ms, generated, distinct, queue, depth = (int(f) for f in fields)
    return TLCProgress(seconds=elapsed_ms / 1000, generated=generated, distinct=distinct,
                       queue=queue, depth=depth)


def run_streaming(
    command: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float | None,
    on_stderr_line: Callable[[str], None],
) -> subprocess.CompletedProcess[bytes]:
    """Run `command` as subprocess.run(capture_output=True) would, and hand
    each line of its standard error to `on_stderr_line` as it arrives.

    The timeout means what it means to subprocess.run: the process is killed
    and subprocess.TimeoutExpired carries what it printed until then.
    Standard error's lines are kept too, so the result holds all of it.
    """
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out_chunks: list[bytes] = []
    err_lines: list[bytes] = []

    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None

    def read_stdout() -> None:
        while chunk := stdout.read(65536):
            out_chunks.append(chunk)

    def read_stderr() -> None:
        for raw in stderr:
            err_lines.append(raw)
            # A callback that fails must not stop the draining, or TLC
            # would block on a full pipe.
            with contextlib.suppress(Exception):
                on_stderr_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"))

    readers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=read_stderr, daemon=True)]
    for reader in readers:
        reader.start()
    try:
        returncode = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        for reader in readers:
            reader.join()
        raise subprocess.TimeoutExpired(command, timeout_s or 0.0, output=b"".join(out_chunks),
                                        stderr=b"".join(err_lines)) from None
    except BaseException:
        # Interrupted (Ctrl-C): TLC must not outlive the command.
        proc.kill()
        proc.wait()
        raise
    for reader in readers:
        reader.join()
    return subprocess.CompletedProcess(command, returncode, b"".join(out_chunks),
                                       b"".join(err_lines))


def without_progress_lines(stderr: str) -> str:
    """Standard error as TLC wrote it, without ProgressTLC's reports."""
    return "".join(line for line in stderr.splitlines(keepends=True)
                   if not line.startswith(PROGRESS_PREFIX))
