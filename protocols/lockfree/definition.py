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
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, ClassVar

from protocols.base import Core
from protocols.definition import build_options
from protocols.errors import InternalError
from protocols.lockfree.config import LockFreeConfig, LockFreeOptions, build_config
from protocols.lockfree.oracles import LockFreeOracle
from protocols.lockfree.thread import NULL, RUN, ThreadCore, spec_ptr
from protocols.zoo import BugVariant

PTR = "Nodes \\cup {None}"
MISMATCH = "None \\cup [worker: Procs, check: STRING, answer: ANY, expected: Seq(Nodes)]"


class LockFreeDefinition:
    """What both structures share; a subclass names its spec, threads and words."""

    name: str
    summary: str
    spec_module: str
    # No messages: the kernel never writes a network action for these.
    net_lose_action: str | None = None
    net_duplicate_action: str | None = None
    variable_types: Mapping[str, str]
    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]] = {
        "thread_count": (2, 3),
        "node_count": (2, 4),
        "ops_per_thread": (2, 4),
        "stall_probability": (0.05, 0.3),
    }
    source_files: Sequence[str]
    trace_actions: frozenset[str]
    # The spec's process-local variables, in its order.
    LOCALS: ClassVar[tuple[str, ...]]
    THREAD: ClassVar[type[ThreadCore]]
    OPTIONS: ClassVar[type[LockFreeOptions]]
    BUGS: ClassVar[Mapping[str, BugVariant]]

    @property
    def bugs(self) -> Mapping[str, BugVariant]:
        return self.BUGS

    def default_options(self) -> LockFreeOptions:
        return self.OPTIONS()

    def make_options(self, overrides: Mapping[str, Any]) -> LockFreeOptions:
        return build_options(self.OPTIONS, self.name, overrides)

    def check_bug(self, bug: str | None) -> str | None:
        raise NotImplementedError

    def initial_words(self) -> dict[str, Any]:
        raise NotImplementedError

    def configure(
        self, options: LockFreeOptions, bug: str | None, workload_rng: random.Random
    ) -> LockFreeConfig:
        timers = (*self.THREAD.CHOICES, RUN, *self.THREAD.LABELS)
        bug = self.check_bug(bug)
        return build_config(options, bug, timers, self.initial_words(), workload_rng)

    def node_ids(self, config: LockFreeConfig) -> tuple[str, ...]:
        return config.threads

    def crash_nodes(self, config: LockFreeConfig) -> tuple[str, ...]:
        return ()

    def make_core(self, config: LockFreeConfig, node_id: str) -> Core:
        return self.THREAD(node_id, config)

    def crash_step(self, node_id: str) -> tuple[str, Mapping[str, Any]]:
        raise InternalError(f"{self.name} threads never crash, but {node_id} did")

    def encode_message(self, msg: Any) -> dict[str, Any]:
        raise InternalError(f"{self.name} threads send no messages")

    def decode_message(self, data: Any) -> Any:
        raise InternalError(f"{self.name} threads send no messages")

    def message_record(self, msg: Any) -> Mapping[str, Any]:
        raise InternalError(f"{self.name} threads send no messages")

    def spec_constants(self, config: LockFreeConfig) -> Mapping[str, Any]:
        return {
            "Procs": frozenset(config.threads),
            "Nodes": frozenset(config.nodes),
            "None": NULL,
            "Limit": config.limit,
            # Always the correct algorithm: a buggy run's race is a step it lacks.
            "Bug": "none",
        }

    def shared_vars(self, config: LockFreeConfig) -> dict[str, Any]:
        raise NotImplementedError

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

    def make_oracle(self, config: LockFreeConfig) -> LockFreeOracle:
        raise NotImplementedError

    def settle_tick(self, config: LockFreeConfig) -> int:
        """Every thread has begun all its operations by the sum of its delays,
        unless it waits for another (the liveness bound covers that)."""
        return max(
            sum(sum(delays.values()) for delays in per_op) for per_op in config.schedule.values()
        )


def _spec_answer(answer: Any) -> Any:
    return NULL if answer is None else answer
