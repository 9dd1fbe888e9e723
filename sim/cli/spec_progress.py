"""`check-specs` progress on stderr: a line as each TLC model starts and ends,
and every TICK_SECONDS a line for each model still running, with TLC's
figures so far (distinct states found, their rate since the last line,
states generated, queue, depth) and the time it has run, so a model too
large to finish is never silent and its growth can be read off as it goes.

The figures come about once a second from tlasim's TLC launcher
(tracing/tla/tlc_progress.py); TLC 2.15's own report comes once a minute.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from tlasim.sim.cli.support import err
from tlasim.tracing.tla.speccheck import ManifestCheck, SpecCheckResult
from tlasim.tracing.tla.tlc_progress import TLCProgress

TICK_SECONDS = 10.0


class SpecProgress:
    def __init__(self, total: int, *, tick_seconds: float = TICK_SECONDS) -> None:
        self.total = total
        self.done = 0
        self.running: dict[str, float] = {}  # check name -> when it started
        self.latest: dict[str, TLCProgress] = {}  # check name -> TLC's last figures
        self.shown: dict[str, TLCProgress] = {}  # check name -> figures of its last line
        self.tick_seconds = tick_seconds
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> SpecProgress:
        self._ticker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._ticker.join()

    def event(self, what: str, check: ManifestCheck, result: SpecCheckResult | None) -> None:
        with self._lock:
            if what == "start":
                self.running[check.name] = time.monotonic()
                self._say(f"{check.name}: TLC started")
                return
            self.running.pop(check.name, None)
            self.latest.pop(check.name, None)
            self.shown.pop(check.name, None)
            self.done += 1
            if result is not None:
                self._say(f"{check.name}: {result.actual} in {result.seconds:.1f} s "
                          f"({self.done} of {self.total} done)")

    def figures(self, check: ManifestCheck, progress: TLCProgress) -> None:
        with self._lock:
            if check.name in self.running:
                self.latest[check.name] = progress

    def lines(self) -> list[str]:
        """One line per running model: what the next tick prints."""
        now = time.monotonic()
        lines = []
        for name, started in self.running.items():
            progress = self.latest.get(name)
            if progress is None:
                lines.append(f"{name}: running {now - started:.0f} s, parsing "
                             f"({self.done} of {self.total} done)")
                continue
            before = self.shown.get(name)
            # The rate since the previous line: what the model does now,
            # not an average that hides a search slowing down.
            since = progress.seconds - (before.seconds if before else 0.0)
            grown = progress.distinct - (before.distinct if before else 0)
            rate = grown / since if since > 0 else None
            self.shown[name] = progress
            lines.append(f"{name}: running {now - started:.0f} s, "
                         f"{progress.text(rate_per_s=rate)} ({self.done} of {self.total} done)")
        return lines

    def _tick(self) -> None:
        while not self._stop.wait(self.tick_seconds):
            with self._lock:
                for line in self.lines():
                    self._say(line)

    @staticmethod
    def _say(text: str) -> None:
        err.print(f"check-specs: {text}", markup=False, highlight=False)
