"""The lock-free queue as the simulator sees it (docs/lockfree-model.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tlasim.protocols.lockfree import bugs
from tlasim.protocols.lockfree.config import LockFreeConfig, LockFreeOptions
from tlasim.protocols.lockfree.definition import MISMATCH, PTR, LockFreeDefinition
from tlasim.protocols.lockfree.oracles import QueueOracle
from tlasim.protocols.lockfree.queue.thread import QueueThread
from tlasim.protocols.lockfree.thread import spec_ptr


class LockFreeQueue(LockFreeDefinition):
    name = "lockfree-queue"
    summary = "lock-free queue: producers publish by exchanging the tail, removers take turns"
    spec_module = "LockFreeQueue"
    variable_types: Mapping[str, str] = {
        "free": "SUBSET Nodes",
        "next": f"[Nodes -> {PTR}]",
        "head": PTR,
        "tail": PTR,
        "consumer": "Procs \\cup {None}",
        "expected": "Seq(Nodes)",
        "mismatch": MISMATCH,
        "steps": "[Procs -> 0..Limit]",
        "pc": "[Procs -> STRING]",
        "node": f"[Procs -> {PTR}]",
        "previous": f"[Procs -> {PTR}]",
        "h": f"[Procs -> {PTR}]",
        "n": f"[Procs -> {PTR}]",
    }
    source_files: Sequence[str] = (
        "protocols/lockfree/memory.py",
        "protocols/lockfree/thread.py",
        "protocols/lockfree/queue/thread.py",
        "protocols/lockfree/definition.py",
        "protocols/lockfree/queue/definition.py",
    )
    LOCALS = ("node", "previous", "h", "n")
    THREAD = QueueThread
    OPTIONS = LockFreeOptions
    BUGS = bugs.QUEUE_BUGS

    def initial_words(self) -> dict[str, Any]:
        return {"head": None, "tail": None, "consumer": None}

    def shared_vars(self, config: LockFreeConfig) -> dict[str, Any]:
        words = config.memory.words
        return {name: spec_ptr(words[name]) for name in ("head", "tail", "consumer")}

    def make_oracle(self, config: LockFreeConfig) -> QueueOracle:
        return QueueOracle(config.threads, config.limit)


DEFINITION = LockFreeQueue()
