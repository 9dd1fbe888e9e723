"""The shared memory the worker threads of one lock-free run operate on.

Theory of operation: `SharedMemory` is what the C++ of docs/lockfree-model.md
keeps in atomics: a few named words (`head`, `tail`, `consumer`, or `top`),
the `next` field of every node, and the allocator. Each method that reads or
writes a word or a `next` field is ONE atomic operation of the C++, and a
thread core calls exactly one of them per traced step; `alloc` and
`free_node` are the allocator, which the models treat as fixture steps.
Memory is sequentially consistent: every operation is at once visible to
every thread (weak orderings are outside the model, as the doc says).

The allocator keeps its free addresses in a list and reuses them last in,
first out, like a free list or a size-class cache: the address freed last is
handed out next, which is exactly what makes ABA reachable. (The spec's
`alloc()` may return any free address; LIFO is one of its choices.)

`Reference` is the oracle's fixture beside the memory: the expected sequence
a sequential reference holds, advanced by the thread in the step that
linearizes its operation, and the first disagreement (`mismatch`).

Both are plain mutable objects of plain values, shared by every thread core
of one run through the run's configuration, so a deep copy of the whole
system copies them once and equal states hold equal objects. nullptr is
Python's None; the refinement mapping writes it as the spec's `None`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TaggedPtr:
    """The stack's `struct TaggedPtr { Node* ptr; unsigned tag; }`, one atomic word."""

    ptr: str | None
    tag: int


NULL_TAGGED = TaggedPtr(None, 0)


class SharedMemory:
    """Atomic words, `next` fields and a LIFO allocator over node addresses."""

    __slots__ = ("free", "next", "words")

    def __init__(self, nodes: Sequence[str], words: dict[str, Any]) -> None:
        # Reversed, so that the first allocations hand out n1, n2, ... in order.
        self.free: list[str] = list(reversed(nodes))
        self.next: dict[str, str | None] = dict.fromkeys(nodes)
        self.words: dict[str, Any] = dict(words)

    # ---- atomic operations: each is one traced step of a thread ----

    def load(self, word: str) -> Any:
        return self.words[word]

    def store(self, word: str, value: Any) -> None:
        self.words[word] = value

    def exchange(self, word: str, value: Any) -> Any:
        old = self.words[word]
        self.words[word] = value
        return old

    def compare_exchange(
        self,
        word: str,
        expected: Any,
        desired: Any,
        compared: Callable[[Any], Any] | None = None,
    ) -> tuple[bool, Any]:
        """Strong compare-exchange: (True, expected) on success, else (False, the
        value found), which C++ writes into its `expected` argument in the same
        atomic step. `compared` picks the bits compared (all of them by default),
        for code that compares less of the word than it writes."""
        found = self.words[word]
        same = found == expected if compared is None else compared(found) == compared(expected)
        if same:
            self.words[word] = desired
            return True, expected
        return False, found

    def load_next(self, node: str) -> str | None:
        return self.next[node]

    def store_next(self, node: str, value: str | None) -> None:
        self.next[node] = value

    # ---- the allocator (fixture steps in the models) ----

    def alloc(self) -> str | None:
        """The address freed last, or None when every node is in use."""
        return self.free.pop() if self.free else None

    def free_node(self, node: str) -> None:
        # The node's fields keep what they hold: memory is never unmapped, so
        # a thread that still has the address may read its stale `next`.
        self.free.append(node)


class Reference:
    """The sequential reference: the oracle's expected sequence and its verdict."""

    __slots__ = ("expected", "mismatch")

    def __init__(self) -> None:
        self.expected: list[str] = []
        # The first disagreement: worker, check, answer and the reference then.
        self.mismatch: dict[str, Any] | None = None

    def check(self, worker: str, check: str, ok: bool, answer: Any) -> None:
        """The models' `oracle(name, ok, answer)` macro: record a disagreement."""
        if not ok:
            self.mismatch = {
                "worker": worker,
                "check": check,
                "answer": answer,
                "expected": tuple(self.expected),
            }

    def removed_is_front(self, node: str) -> bool:
        return bool(self.expected) and self.expected[0] == node

    def empty_answer_matches(self, answer_empty: bool) -> bool:
        return answer_empty == (not self.expected)
