"""Each campaign worker's own TLC: checking beside the simulation.

Theory of operation. A campaign that checks its runs used to send every
recorded run to one TLC session in the campaign's process. One warm TLC
checks about as many steps per second as two or three workers simulate, so
beyond that the workers waited on it, and a Dask cluster of many machines
validated no faster than one. Now every worker process (a pool's, a Dask
worker, or the campaign's own process when it is the only worker) owns a
`CheckSession`: started when its first batch needs one, kept across
batches, closed with the worker. A batch's runs go to it as they finish,
and the batch comes back with verdicts, not traces; the campaign's process
only records them. Checking capacity grows with the workers.

Memory. Each worker then holds a JVM. Its heap is set (`-Xmx`) from the
memory the machine has for each worker (`plan_tlc`), so that `--workers N`
fits or is refused before a seed runs; a Dask worker sizes its own from its
memory limit, since the campaign cannot see a remote machine's. A stream
that checked many lines is retired for a new one (`STREAM_RETIRE_STEPS`),
since TLC keeps every state it explored.

A forked worker never touches its parent's sessions (`os.register_at_fork`):
the JVMs belong to the process that started them.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing.util
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tlasim.protocols.errors import ConfigError

if TYPE_CHECKING:
    from tlasim.tracing.validation.tlc_batch import CheckSession

__all__ = [
    "TLCPlan",
    "close_sessions",
    "kill_sessions",
    "plan_tlc",
    "resident_bytes",
    "session",
]

MB = 1024 * 1024
# A worker's memory beside its JVM's heap: the Python process with a
# campaign's protocol loaded (measured: 90-160 MB resident), and the JVM's
# own beyond its heap (TLC's classes, compiled code, threads, and the
# off-heap fingerprints of the states it explored: 150-250 MB resident on
# twopc with a 512 MB heap).
PYTHON_WORKER_MB = 200
JVM_BEYOND_HEAP_MB = 300
# The heap a worker's TLC gets: as much as the machine allows, within these.
# TLC streams hold little on the heap (a chunk of traces, the states of the
# levels it explores), so more than HEAP_MAX_MB buys nothing.
HEAP_MIN_MB = 256
HEAP_MAX_MB = 1024
# Of the memory available when the campaign starts, the share workers may take.
AVAILABLE_SHARE = 0.8


@dataclass(frozen=True, slots=True)
class TLCPlan:
    """How a worker runs its TLC (picklable: it travels with every batch).

    `campaign` tells the sessions of two campaigns apart: a long-lived worker
    (a Dask cluster's) closes the session of an earlier campaign when the
    next one's batches arrive. `heap_mb` None: the worker sizes the heap
    from its own memory (a Dask worker). `long_run`: the worker will check
    enough traces to pay for Java's optimizing compiler."""

    campaign: str
    heap_mb: int | None
    long_run: bool


def plan_tlc(campaign: str, workers: int, *, long_run: bool, local: bool,
             available: int | None = None) -> TLCPlan:
    """The plan for `workers` workers each running a TLC; for workers on
    this machine (`local`), a heap that lets all of them fit in its
    available memory, or a ConfigError that says how many fit."""
    if not local:
        return TLCPlan(campaign, None, long_run)
    if available is None:
        available = _available_bytes()
    heap = _heap_for(available * AVAILABLE_SHARE / max(1, workers))
    if heap is None:
        need = PYTHON_WORKER_MB + JVM_BEYOND_HEAP_MB + HEAP_MIN_MB
        fits = int(available * AVAILABLE_SHARE // (need * MB))
        raise ConfigError(
            f"--workers {workers}: each worker runs a simulation and its own TLC, about "
            f"{need:,} MB with the smallest heap ({HEAP_MIN_MB} MB), and this machine has "
            f"{available // MB:,} MB available: at most {fits} such workers fit "
            "(or --validate failures, which starts TLC only for failing runs)"
        )
    return TLCPlan(campaign, heap, long_run)


def _heap_for(per_worker: float) -> int | None:
    """The heap in MB for a worker that may take `per_worker` bytes; None: too little."""
    heap = int(per_worker // MB) - PYTHON_WORKER_MB - JVM_BEYOND_HEAP_MB
    if heap < HEAP_MIN_MB:
        return None
    return min(heap, HEAP_MAX_MB)


def _psutil() -> Any:
    """psutil (a dependency of Dask's distributed), typed as Any: it ships no annotations."""
    return importlib.import_module("psutil")


def _available_bytes() -> int:
    return int(_psutil().virtual_memory().available)


def _dask_worker_budget() -> float | None:
    """In a Dask worker, the memory it may use; None elsewhere."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    threads = max(1, getattr(getattr(worker, "state", None), "nthreads", 1) or 1)
    if limit:
        return float(limit) / threads  # a session per thread
    return float(_psutil().virtual_memory().total) / max(1, os.cpu_count() or 1)


# --- this process's sessions ------------------------------------------------

_lock = threading.Lock()
# By plan and thread: a Dask worker may run batches on several threads at once.
_sessions: dict[tuple[TLCPlan, int], CheckSession] = {}
_finalizer_registered = False


def session(plan: TLCPlan) -> CheckSession:
    """This process's session for `plan`, started on first use; the sessions
    of another campaign are closed first."""
    from tlasim.tracing.validation.tlc_batch import CheckSession

    global _finalizer_registered
    key = (plan, threading.get_ident())
    with _lock:
        found = _sessions.get(key)
        if found is not None:
            return found
        stale = [k for k in _sessions if k[0].campaign != plan.campaign]
    for old in stale:
        _close(old)
    heap = plan.heap_mb
    if heap is None:
        budget = _dask_worker_budget()
        heap = HEAP_MAX_MB if budget is None else max(HEAP_MIN_MB, _heap_for(budget) or 0)
    # One TLC per worker: its streams run one at a time beside the worker's runs.
    started = CheckSession(
        jobs=1, stream=True, stream_runs=1, stream_long=plan.long_run,
        jvm_args=(f"-Xmx{heap}m",),
    )
    with _lock:
        _sessions[key] = started
        if not _finalizer_registered:
            # Run as the worker process exits (multiprocessing's finalizers
            # run there, where atexit's do not), so its TLC ends with it.
            multiprocessing.util.Finalize(None, close_sessions, exitpriority=10)
            _finalizer_registered = True
    return started


def _close(key: tuple[TLCPlan, int]) -> None:
    with _lock:
        found = _sessions.pop(key, None)
    if found is not None:
        found.close()


def close_sessions() -> None:
    """Close every session of this process: TLC settles what it holds, then exits."""
    for key in list(_sessions):
        _close(key)


def kill_sessions() -> None:
    """Stop every session's TLC at once (the worker is being torn down)."""
    with _lock:
        found = list(_sessions.values())
        _sessions.clear()
    for s in found:
        s.kill()


def resident_bytes() -> int:
    """The resident memory of this process's TLC JVMs, together."""
    psutil = _psutil()
    total = 0
    for s in list(_sessions.values()):
        for pid in s.jvm_pids():
            with contextlib.suppress(psutil.Error):  # it ended meanwhile
                total += int(psutil.Process(pid).memory_info().rss)
    return total


def _forget_after_fork() -> None:
    # The child holds copies of the parent's session objects, whose JVMs and
    # threads are the parent's: drop them without touching them.
    global _finalizer_registered, _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    _sessions.clear()
    _finalizer_registered = False


os.register_at_fork(after_in_child=_forget_after_fork)
