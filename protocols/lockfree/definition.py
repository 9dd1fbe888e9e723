"""What the lock-free queue's and stack's definitions share (docs/lockfree-model.md).

Each worker thread is a core ("p1", "p2", ...); no message is ever sent and
no thread crashes, so the protocols have no network actions and no crash
step. The shared memory and the sequential reference live in the run's
configuration, which every thread core of the run holds.

The refinement mapping is the identity on the PlusCal variables: the
globals come from the shared memory and the reference, and `pc`, `steps`
and each process-local variable are functions from Procs gathered from the
threads' views. nullptr is the spec's constant None, which a trace writes
as the string NULL; every run's constants say Bug = "none", so the trace
of a buggy run is checked against the correct algorithm.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, ClassVar

from tlasim.protocols.base import Core
from tlasim.protocols.defaults import ProtocolBase
from tlasim.protocols.lockfree.config import LockFreeConfig, LockFreeOptions, build_config
from tlasim.protocols.lockfree.thread import NULL, RUN, ThreadCore, spec_ptr

PTR = "Nodes \\cup {None}"
MISMATCH = "None \\cup [worker: Procs, check: STRING, answer: ANY, expected: Seq(Nodes)]"


class LockFreeDefinition(ProtocolBase):
    """What both structures share; a subclass names its spec, threads and words.

    No messages and no crash step (ProtocolBase's defaults): the kernel never
    writes a network action or a crash for these, and no thread may crash.
    """

    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]] = {
        "thread_count": (2, 3),
        "node_count": (2, 4),
        "ops_per_thread": (2, 4),
        "stall_probability": (0.05, 0.3),
    }
    # The spec's process-local variables, in its order.
    LOCALS: ClassVar[tuple[str, ...]]
    THREAD: ClassVar[type[ThreadCore]]
    OPTIONS: ClassVar[type[LockFreeOptions]]

    @abstractmethod
    def initial_words(self) -> dict[str, Any]:
        """The shared words' values before any thread runs."""

    def configure(
        self, options: LockFreeOptions, bug: str | None, workload_rng: random.Random
    ) -> LockFreeConfig:
        timers = (*self.THREAD.CHOICES, RUN, *self.THREAD.LABELS)
        bug = self.check_bug(bug)
        return build_config(options, bug, timers, self.initial_words(), workload_rng)

    def node_ids(self, config: LockFreeConfig) -> tuple[str, ...]:
        return config.threads

    def make_core(self, config: LockFreeConfig, node_id: str) -> Core:
        return self.THREAD(node_id, config)

    def spec_constants(self, config: LockFreeConfig) -> Mapping[str, Any]:
        return {
            "Procs": frozenset(config.threads),
            "Nodes": frozenset(config.nodes),
            "None": NULL,
            "Limit": config.limit,
            # Always the correct algorithm: a buggy run's race is a step it lacks.
            "Bug": "none",
        }

    @abstractmethod
    def shared_vars(self, config: LockFreeConfig) -> dict[str, Any]:
        """The spec's shared words, from the run's memory."""

    def spec_vars(
        self,
        config: LockFreeConfig,
        views: Mapping[str, Mapping[str, Any]],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        up: Mapping[str, bool],
        in_flight: Mapping[Hashable, int],
    ) -> dict[str, Any]:
        reference = config.reference
        mismatch = reference.mismatch
        spec: dict[str, Any] = {
            "free": frozenset(config.memory.free),
            "next": {node: spec_ptr(ptr) for node, ptr in config.memory.next.items()},
            **self.shared_vars(config),
            "expected": tuple(reference.expected),
            "mismatch": NULL if mismatch is None else {
                **mismatch, "answer": _spec_answer(mismatch["answer"])
            },
        }
        threads = config.threads
        for local in ("steps", "pc", *self.LOCALS):
            spec[local] = {thread: views[thread][local] for thread in threads}
        return spec

    def settle_tick(self, config: LockFreeConfig) -> int:
        """Every thread has begun all its operations by the sum of its delays,
        unless it waits for another (the liveness bound covers that)."""
        return max(
            sum(sum(delays.values()) for delays in per_op) for per_op in config.schedule.values()
        )


def _spec_answer(answer: Any) -> Any:
    return NULL if answer is None else answer
