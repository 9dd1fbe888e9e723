"""Treiber's stack as the simulator sees it (docs/lockfree-model.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tlasim.protocols.lockfree import bugs
from tlasim.protocols.lockfree.config import LockFreeConfig, StackOptions
from tlasim.protocols.lockfree.definition import MISMATCH, PTR, LockFreeDefinition
from tlasim.protocols.lockfree.memory import NULL_TAGGED
from tlasim.protocols.lockfree.oracles import StackOracle
from tlasim.protocols.lockfree.stack.thread import StackThread
from tlasim.protocols.lockfree.thread import spec_tagged


class TreiberStack(LockFreeDefinition):
    name = "lockfree-stack"
    summary = "Treiber's lock-free stack with a tagged top, over reusable nodes"
    spec_module = "TreiberStack"
    variable_types: Mapping[str, str] = {
        "free": "SUBSET Nodes",
        "next": f"[Nodes -> {PTR}]",
        "top": f"[ptr: {PTR}, tag: Nat]",
        "expected": "Seq(Nodes)",
        "mismatch": MISMATCH,
        "steps": "[Procs -> 0..Limit]",
        "pc": "[Procs -> STRING]",
        "node": f"[Procs -> {PTR}]",
        "t": f"[Procs -> [ptr: {PTR}, tag: Nat]]",
        "n": f"[Procs -> {PTR}]",
    }
    # Three threads at least: with two, the allocator's reuse makes the ABA
    # race harmless (see StackOptions), so a search drawing two would look
    # where the race cannot show.
    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]] = {
        **LockFreeDefinition.workload_ranges,
        "thread_count": (3, 3),
        "node_count": (3, 4),
        "ops_per_thread": (3, 4),
    }
    source_files: Sequence[str] = (
        "protocols/lockfree/memory.py",
        "protocols/lockfree/thread.py",
        "protocols/lockfree/stack/thread.py",
        "protocols/lockfree/definition.py",
        "protocols/lockfree/stack/definition.py",
    )
    LOCALS = ("node", "t", "n")
    THREAD = StackThread
    OPTIONS = StackOptions
    BUGS = bugs.STACK_BUGS

    def initial_words(self) -> dict[str, Any]:
        return {"top": NULL_TAGGED}

    def shared_vars(self, config: LockFreeConfig) -> dict[str, Any]:
        return {"top": spec_tagged(config.memory.words["top"])}

    def make_oracle(self, config: LockFreeConfig) -> StackOracle:
        return StackOracle(config.threads, config.limit)


DEFINITION = TreiberStack()
