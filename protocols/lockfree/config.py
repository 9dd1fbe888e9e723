"""Options, the schedule and the per-run configuration of a lock-free run.

Theory of operation: a thread core never draws a random number, so every
timing it uses is drawn here, once per run, from the workload stream. The
schedule gives each thread, for each operation it begins (its `steps`
count, 0 to Limit), the delay before each label's step and before each
choice of operation at `run`. A thread looks its delay up by its operation
count and the timer's name, so retrying a failed step costs no extra state
and equal states stay equal (the explorer compares states, and a retry
counter would make every spin a new one).

Most delays are short; now and then a step is preempted for long (a
`stall`), which is what opens the windows the races need: a thread frozen
between two atomic operations while the others run whole operations.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlasim.protocols.defaults import OptionsBase
from tlasim.protocols.definition import check_option_values
from tlasim.protocols.errors import ConfigError
from tlasim.protocols.lockfree.memory import Reference, SharedMemory


@dataclass(frozen=True, slots=True)
class LockFreeOptions(OptionsBase):
    """Bounds and timing of a run; the defaults are the queue's, seed 000's."""

    thread_count: int = 3  # worker threads (the spec's Procs)
    node_count: int = 4  # node addresses the allocator hands out (Nodes)
    ops_per_thread: int = 4  # operations each thread runs (Limit)
    step_ticks_max: int = 8  # an unpreempted step waits 1..this many ticks
    stall_probability: float = 0.15  # chance a step is preempted for long
    stall_ticks_max: int = 80  # ... and then waits step_ticks_max..this many ticks

    def __post_init__(self) -> None:
        check_option_values(self, ("stall_probability",))
        if self.thread_count > 9 or self.node_count > 9 or self.ops_per_thread > 99:
            raise ConfigError("at most 9 threads, 9 nodes and 99 operations per thread")
        if self.stall_ticks_max < self.step_ticks_max:
            raise ConfigError(
                f"stall_ticks_max={self.stall_ticks_max}: must be at least "
                f"step_ticks_max={self.step_ticks_max}"
            )


@dataclass(frozen=True, slots=True)
class StackOptions(LockFreeOptions):
    """The stack's bounds: seed 000's 3 nodes and 3 operations, but 3 threads.

    The seed's model has 2 threads because its `alloc()` may return any free
    address. This allocator reuses the address freed last, and with only one
    other thread at work while a pop is stalled, every reuse rebuilds exactly
    the links the stalled pop read: its stale compare-exchange succeeds (TLC
    rejects that step) but loses nothing an oracle can see. Every schedule of
    2 threads, 3 nodes and 3 or 4 operations was enumerated to be sure
    (19,933 and 101,297 states). A third thread, holding a node it took off
    the free list, breaks that symmetry and the race corrupts the stack.
    """

    thread_count: int = 3
    node_count: int = 3
    ops_per_thread: int = 3


# thread -> per operation count (0..Limit) -> timer name -> delay in ticks
Schedule = Mapping[str, tuple[Mapping[str, int], ...]]


@dataclass(frozen=True, slots=True)
class LockFreeConfig:
    """One run: the cast, the bounds, the schedule, the bug, and the shared state.

    The config is frozen, but `memory` and `reference` are the run's mutable
    shared state: every thread core of the run holds this same config, and a
    new run builds a new one (`configure`).
    """

    threads: tuple[str, ...]
    nodes: tuple[str, ...]
    limit: int
    schedule: Schedule
    options: LockFreeOptions
    bug: str | None
    memory: SharedMemory
    reference: Reference

    def delay(self, thread: str, steps: int, timer: str) -> int:
        return self.schedule[thread][steps][timer]


def thread_ids(count: int) -> tuple[str, ...]:
    return tuple(f"p{i}" for i in range(1, count + 1))


def node_addresses(count: int) -> tuple[str, ...]:
    return tuple(f"n{i}" for i in range(1, count + 1))


def _delay(options: LockFreeOptions, rng: random.Random) -> int:
    if rng.random() < options.stall_probability:
        return rng.randint(options.step_ticks_max, options.stall_ticks_max)
    return rng.randint(1, options.step_ticks_max)


def draw_schedule(
    options: LockFreeOptions, timers: Sequence[str], rng: random.Random
) -> dict[str, tuple[dict[str, int], ...]]:
    """Every thread's delays, from the workload stream only, in a fixed order."""
    return {
        thread: tuple(
            {timer: _delay(options, rng) for timer in timers}
            for _ in range(options.ops_per_thread + 1)
        )
        for thread in thread_ids(options.thread_count)
    }


def build_config(
    options: LockFreeOptions,
    bug: str | None,
    timers: Sequence[str],
    words: dict[str, Any],
    rng: random.Random,
) -> LockFreeConfig:
    nodes = node_addresses(options.node_count)
    return LockFreeConfig(
        threads=thread_ids(options.thread_count),
        nodes=nodes,
        limit=options.ops_per_thread,
        schedule=draw_schedule(options, timers, rng),
        options=options,
        bug=bug,
        memory=SharedMemory(nodes, words),
        reference=Reference(),
    )
