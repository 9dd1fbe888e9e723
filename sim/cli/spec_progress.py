"""`check-specs` progress on stderr: a line as each TLC model starts and ends,
and every TICK_SECONDS a line naming the models still running and for how
long, so a model too large to finish is never silent.

TLC 2.15 itself reports its figures (states found, queue, depth) once a
minute; those reach the table's row when a run is stopped by `--time`.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from tlasim.sim.cli.support import err
from tlasim.tracing.tla.speccheck import ManifestCheck, SpecCheckResult

TICK_SECONDS = 10.0


class SpecProgress:
    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.running: dict[str, float] = {}  # check name -> when it started
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
            self.done += 1
            if result is not None:
                self._say(f"{check.name}: {result.actual} in {result.seconds:.1f} s "
                          f"({self.done} of {self.total} done)")

    def _tick(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            with self._lock:
                now = time.monotonic()
                running = ", ".join(f"{name} {now - started:.0f} s"
                                    for name, started in self.running.items())
                if running:
                    self._say(f"running: {running} ({self.done} of {self.total} done)")

    @staticmethod
    def _say(text: str) -> None:
        err.print(f"check-specs: {text}", markup=False, highlight=False)
