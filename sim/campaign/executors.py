"""Where a campaign's batches run: in this process, on a process pool, or on Dask.

Every executor takes a function and the batches to apply it to, and yields
results as they finish, in any order. Results come back to the caller, which
alone writes them down, so one process writes the results database however
many compute.

At most IN_FLIGHT_PER_WORKER batches per worker are submitted at a time,
never the whole campaign: memory stays flat on a million seeds, and stopping
early (an error, Ctrl-C) leaves little queued work to cancel.

Dask workers import `sim` by name, so on a remote cluster tlasim must be
installed on every worker, at the same version. A worker writes kept traces
to `trace_dir` on its own machine. A LocalCluster starts its workers from
a fork server (spawn where there is none), which, as spawn does, imports
the caller's main module first: a script that runs a campaign on Dask
needs the `if __name__ == "__main__":` guard (the `tlasim` command and
`python -m tlasim.sim` are safe as they are).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import multiprocessing
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from types import TracebackType
from typing import Any, TypeVar

from tlasim.protocols.errors import ConfigError, TlasimError

T = TypeVar("T")
R = TypeVar("R")

IN_FLIGHT_PER_WORKER = 4  # batches queued per worker, so none idles between two
POOL_RESTARTS = 3  # new pools a campaign may start after a worker died
CONNECT_TIMEOUT_SECONDS = 5.0  # how long to try a Dask scheduler before giving up
PARENT_CHECK_SECONDS = 0.5  # how often a pool worker checks that the campaign still runs


class WorkerLost(TlasimError):
    """Worker processes kept dying: the campaign stops, its records kept."""


class BatchExecutor(ABC):
    slots = 1  # how many batches run at once

    @abstractmethod
    def map_unordered(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """Apply `fn` to every item; yield each result as soon as it is ready."""

    @abstractmethod
    def close(self) -> None:
        """Stop every worker; queued items that have not started are dropped."""

    def __enter__(self) -> BatchExecutor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class InlineExecutor(BatchExecutor):
    """Runs every batch here, in order: nothing to start, and nothing to pickle."""

    def map_unordered(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        for item in items:
            yield fn(item)

    def close(self) -> None:
        pass


class ProcessPool(BatchExecutor):
    """`workers` processes. A worker that dies (killed, out of memory) breaks
    the pool: a new pool takes over and the batches that had not come back
    run again (the simulator is deterministic: the same results), at most
    POOL_RESTARTS times in a campaign."""

    def __init__(self, workers: int) -> None:
        self.slots = workers
        self._pool = self._start()
        self._window = workers * IN_FLIGHT_PER_WORKER
        self.restarts = 0

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.slots, initializer=_start_worker, initargs=(os.getpid(),)
        )

    def map_unordered(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        queue = iter(items)
        pending: dict[Future[R], T] = {}

        def submit(item: T) -> None:
            pending[self._pool.submit(fn, item)] = item

        for item in islice(queue, self._window):
            submit(item)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            results = []
            broken = False
            for future in done:
                try:
                    results.append(future.result())
                except BrokenProcessPool:
                    broken = True
                    continue
                del pending[future]
            if broken:
                # Every batch not yet back runs again on a new pool.
                again = list(pending.values())
                pending.clear()
                self._restart()
                for item in again:
                    submit(item)
            # Refill before handing results over, so workers stay busy while
            # the caller writes them down.
            for item in islice(queue, max(0, self._window - len(pending))):
                submit(item)
            yield from results

    def _restart(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.restarts += 1
        if self.restarts > POOL_RESTARTS:
            raise WorkerLost(
                f"a worker process died {self.restarts} times in this campaign (killed, or "
                "out of memory?); what was recorded stays recorded, and --resume runs the rest"
            )
        logging.getLogger(__name__).warning(
            "a worker process died; its batches run again on a new pool (%d of at most %d)",
            self.restarts, POOL_RESTARTS,
        )
        self._pool = self._start()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _start_worker(parent: int) -> None:
    _exit_with_parent(parent)


def _exit_with_parent(parent: int) -> None:
    """In a pool worker: exit as soon as the campaign process is gone.

    A worker blocked on the pool's queue never sees its parent die (every
    worker holds both ends of the queue's pipe), so after a SIGKILL of the
    campaign it would wait forever. Reparenting is the one sign it gets.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        # os._exit runs no finalizer: stop this worker's TLC first.
        from tlasim.sim.campaign.worker_tlc import kill_sessions

        kill_sessions()
        os._exit(1)

    threading.Thread(target=watch, name="tlasim-parent-watch", daemon=True).start()


class DaskExecutor(BatchExecutor):
    """Runs batches on a Dask cluster: the one at `address`, or a new LocalCluster."""

    def __init__(self, address: str | None, workers: int) -> None:
        if address is None:
            start_local_workers_early()
        distributed = _import("distributed")
        self._cluster: Any = None
        self._client: Any
        if address is None:
            # One single-threaded process per worker, like the process pool:
            # a run holds the GIL throughout, so threads would not help.
            # The client too reads its settings as it starts.
            with _local_cluster_settings():
                self._cluster = distributed.LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
                try:
                    self._client = distributed.Client(self._cluster, set_as_default=False)
                except BaseException:
                    self._cluster.close()
                    raise
        else:
            _probe_scheduler(address)
            try:
                self._client = distributed.Client(
                    address, timeout=CONNECT_TIMEOUT_SECONDS, set_as_default=False
                )
            except Exception as exc:  # as in _probe_scheduler: anything can come back
                raise _unreachable(address, exc) from None
        threads = sum(self._client.nthreads().values())
        self.slots = max(threads, workers, 1)
        self._window = self.slots * IN_FLIGHT_PER_WORKER

    def map_unordered(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        queue = iter(items)
        # pure=False: every batch is a new task, never a cached result of another.
        # loop=: the client is not the process-wide default (set_as_default=False,
        # so a user's own Dask client is left alone), so name its event loop.
        running = _import("distributed").as_completed(
            [self._client.submit(fn, item, pure=False) for item in islice(queue, self._window)],
            loop=self._client.loop,
        )
        for future in running:
            result: R = future.result()
            for item in islice(queue, 1):
                running.add(self._client.submit(fn, item, pure=False))
            yield result

    def close(self) -> None:
        # Each worker's TLC first (a shared cluster's workers outlive the
        # campaign); then the client: closing it cancels this campaign's
        # tasks on a shared cluster; then the LocalCluster, which stops its workers.
        from tlasim.sim.campaign.worker_tlc import close_sessions

        with contextlib.suppress(Exception):  # a worker gone already has no TLC left
            self._client.run(close_sessions)
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


# What a LocalCluster's workers import before they start (see
# `start_local_workers_early`): all a batch needs but the protocol itself.
WORKER_PRELOAD = ("distributed", "tlasim.sim.campaign.batch")


def start_local_workers_early() -> None:
    """Start the fork server that a LocalCluster's workers will come from, now.

    Before it forks the first worker it imports Dask and tlasim
    (WORKER_PRELOAD), which is most of a LocalCluster's start-up. Started
    before this process imports Dask for itself (a third of a second), the
    two imports run side by side rather than one after the other; the CLI
    calls this as soon as it knows a LocalCluster is wanted, before its own
    checks. Nothing happens where there is no fork server (Windows: spawn),
    or when this process runs one already (it keeps the modules it started
    with, which costs only time).
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    from multiprocessing import forkserver

    forkserver.set_forkserver_preload(list(WORKER_PRELOAD))
    forkserver.ensure_running()


# Dask's settings for the LocalCluster a campaign starts. Its processes (the
# scheduler, nannies and client in this one; each worker, whose event loop
# takes the GIL from its runs) keep clocks for a dashboard this cluster does
# not have. At their default pace they cost the parent about 0.2 s of CPU
# and each worker 0.1 s in a 1,000-seed twopc campaign, on the cores the
# runs and their TLCs need: the campaign took 0.3 s longer, measured.
LOCAL_CLUSTER_SETTINGS: dict[str, Any] = {
    # Each worker samples its task's stack every 10 ms for the profiler.
    "distributed.worker.profile.enabled": False,
    # A check that the event loop is not blocked, every 20 ms; it warns
    # after 3 s blocked, which a 1 s check still sees.
    "distributed.admin.tick.interval": "1s",
    # CPU, memory, disk and network samples for the dashboard's plots,
    # every 500 ms (the memory limit is watched apart, at its own pace).
    "distributed.admin.system-monitor.interval": "5s",
    # GIL contention sampled every 1 ms, where gilknocker is installed.
    "distributed.admin.system-monitor.gil.enabled": False,
    # The client asks the scheduler for its workers every 2 s, for its repr.
    "distributed.client.scheduler-info-interval": "10s",
    # Tasks moved between workers' queues: a campaign queues no more than
    # IN_FLIGHT_PER_WORKER batches a worker, and the scheduler holds the rest.
    "distributed.scheduler.work-stealing": False,
}


@contextlib.contextmanager
def _local_cluster_settings() -> Iterator[None]:
    """Dask settings for the LocalCluster a campaign starts, and only for it.

    Its workers are started by a fork server that imported Dask and tlasim
    once (`start_local_workers_early`), rather than spawned, so each does
    not import them again (a second of a core apiece). Where a fork server
    is missing (Windows), spawn stays. And its processes keep no clocks for
    a dashboard (LOCAL_CLUSTER_SETTINGS).
    """
    dask = _import("dask")
    settings = dict(LOCAL_CLUSTER_SETTINGS)
    if "forkserver" in multiprocessing.get_all_start_methods():
        settings["distributed.worker.multiprocessing-method"] = "forkserver"
    with dask.config.set(settings):
        yield


def _import(name: str) -> Any:
    """Import a Dask module on first use, typed as Any.

    Dask is imported only when a campaign asks for it, since it takes a
    second to load. Its API is mostly unannotated, which mypy --strict
    would refuse call by call; this one boundary takes it as Any instead.
    """
    return importlib.import_module(name)


def _unreachable(address: str, exc: BaseException) -> ConfigError:
    if isinstance(exc, ValueError):
        return ConfigError(
            f"--dask {address}: not a scheduler address ({exc}); expected one such as "
            "tcp://host:8786, or --dask alone for a local cluster"
        )
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, OSError):  # refused, unresolvable, or silent until the timeout
        return ConfigError(
            f"--dask {address}: no Dask scheduler answered within "
            f"{CONNECT_TIMEOUT_SECONDS:g} s ({detail})"
        )
    return ConfigError(f"--dask {address}: what answered there is not a Dask scheduler ({detail})")


def _probe_scheduler(address: str) -> None:
    """Fail fast, with a ConfigError, unless a Dask scheduler answers at `address`.

    Connecting a Client to something that is not a scheduler can fail with
    any exception (a garbage handshake reads as a huge frame: MemoryError),
    and the half-built Client then blocks for seconds while it is collected.
    A bare connection and handshake, tried first, fails cleanly.
    """
    connect = _import("distributed.comm").connect

    async def handshake() -> None:
        comm = await connect(address, timeout=CONNECT_TIMEOUT_SECONDS)
        await comm.close()

    failure: list[BaseException] = []

    def probe() -> None:
        try:
            asyncio.run(handshake())
        except Exception as exc:  # see the docstring: anything can come back
            failure.append(exc)

    # A thread of its own, so the probe works even where the caller already
    # runs an event loop (a notebook), in which asyncio.run() is refused.
    thread = threading.Thread(target=probe, name="tlasim-dask-probe", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise _unreachable(address, failure[0]) from None


def make_executor(workers: int, dask: str | bool | None) -> BatchExecutor:
    """The executor a campaign asked for: `dask` True means a LocalCluster."""
    if dask is True:
        return DaskExecutor(None, workers)
    if isinstance(dask, str):
        return DaskExecutor(dask, workers)
    if workers == 1:
        return InlineExecutor()
    return ProcessPool(workers)
