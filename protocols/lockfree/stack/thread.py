"""A worker thread of Treiber's tagged stack (specs/lockfree/TreiberStack.tla).

Theory of operation: as in protocols/lockfree/queue/thread.py, each method
`_<label>` is the PlusCal label of that name, one atomic operation on the
shared memory (its C++ line quoted beside it), and a linearizing step
advances the reference and checks the answer in the same step. `top` is a
`TaggedPtr`, one atomic word: every successful compare-exchange advances
its tag, so a top that left and came back compares unequal.

The ABA race is `config.bug == "aba"`, read only in `_compare_exchange_top`: the
compare-exchange compares the address bits alone. The tag still counts
(the code below keeps its struct), so until the race the run is a run of
the correct algorithm, and the race is the one step that is not: a
compare-exchange that succeeds on a top whose tag has moved on. (The
spec's Bug = "aba" keeps the tag at 0 instead; both lose the same element.)

This module knows its own locals, the shared memory and the reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.base import Trace
from tlasim.protocols.lockfree import bugs
from tlasim.protocols.lockfree.config import LockFreeConfig
from tlasim.protocols.lockfree.memory import NULL_TAGGED, TaggedPtr
from tlasim.protocols.lockfree.thread import DONE, RUN, ThreadCore, spec_ptr, spec_tagged

PUSH, POP = "push", "pop"


def _address(word: TaggedPtr) -> str | None:
    return word.ptr


class StackThread(ThreadCore):
    CHOICES = (PUSH, POP)
    LABELS = ("s_load", "s_link", "s_cas", "p_load", "p_next", "p_cas", "p_free")

    def __init__(self, node_id: str, config: LockFreeConfig) -> None:
        super().__init__(node_id, config)
        self.node: str | None = None  # the node being pushed
        self.t = NULL_TAGGED  # the top this thread last read
        self.n: str | None = None  # the popped top's next

    def view(self) -> Mapping[str, Any]:
        return {
            "pc": self.pc,
            "steps": self.steps,
            "node": spec_ptr(self.node),
            "t": spec_tagged(self.t),
            "n": spec_ptr(self.n),
        }

    def _trace(self, action: str) -> Trace:
        return Trace(action, self._params(), self.view())

    def _compare_exchange_top(self, desired: str | None) -> tuple[bool, TaggedPtr]:
        """top.compare_exchange_weak(t, {desired, t.tag + 1}), without spurious
        failures: (True, t) or (False, the top found). With the ABA bug it
        compares the address bits alone."""
        compared = _address if self.config.bug == bugs.ABA else None
        won, found = self.config.memory.compare_exchange(
            "top", self.t, TaggedPtr(desired, self.t.tag + 1), compared
        )
        return won, found

    # ---- run ----

    def _choose(self, operation: str) -> Trace | None:
        if operation == PUSH:
            node = self.config.memory.alloc()  # Node* node = alloc();
            if node is None:
                return None
            self.node = node
            self.pc = "s_load"
        else:
            self.pc = "p_load"
        self.steps += 1
        return self._trace("run")

    def _finish(self) -> Trace:
        self.pc = DONE
        return self._trace("run")

    # ---- push ----

    def _s_load(self) -> Trace:
        self.t = self.config.memory.load("top")  # TaggedPtr t = top.load();
        self.pc = "s_link"
        return self._trace("s_load")

    def _s_link(self) -> Trace:
        assert self.node is not None
        self.config.memory.store_next(self.node, self.t.ptr)  # do node->next.store(t.ptr);
        self.pc = "s_cas"
        return self._trace("s_link")

    def _s_cas(self) -> Trace:
        assert self.node is not None
        # while (!top.compare_exchange_weak(t, {node, t.tag + 1}));
        won, found = self._compare_exchange_top(self.node)
        if won:
            # The push's linearization point: its node is the new top.
            self.config.reference.expected.insert(0, self.node)
            self.node = None
            self.t = NULL_TAGGED
            self.pc = RUN
        else:
            self.t = found
            self.pc = "s_link"
        return self._trace("s_cas")

    # ---- pop ----

    def _p_load(self) -> Trace:
        top: TaggedPtr = self.config.memory.load("top")  # TaggedPtr t = top.load();
        if top.ptr is None:
            # while (t.ptr) {...} return nullptr;   A null pop linearizes at this load.
            self._answer_empty()
            self.pc = RUN
        else:
            self.t = top
            self.pc = "p_next"
        return self._trace("p_load")

    def _answer_empty(self) -> None:
        reference = self.config.reference
        reference.check(
            self.node_id, "EmptyAnswerMatches", reference.empty_answer_matches(True), None
        )

    def _p_next(self) -> Trace:
        assert self.t.ptr is not None
        # Node* n = t.ptr->next.load();   (perhaps of a node freed since: memory stays mapped)
        self.n = self.config.memory.load_next(self.t.ptr)
        self.pc = "p_cas"
        return self._trace("p_next")

    def _p_cas(self) -> Trace:
        # if (top.compare_exchange_weak(t, {n, t.tag + 1})) {
        won, found = self._compare_exchange_top(self.n)
        reference = self.config.reference
        if won:
            # The pop's linearization point: t.ptr leaves the reference.
            popped = self.t.ptr
            assert popped is not None
            reference.check(
                self.node_id, "PoppedIsTop", reference.removed_is_front(popped), popped
            )
            del reference.expected[:1]
            self.pc = "p_free"
        elif found.ptr is None:
            # The failure reloaded t and found the stack empty: return nullptr;
            self._answer_empty()
            self.t = NULL_TAGGED
            self.n = None
            self.pc = RUN
        else:
            self.t = found
            self.pc = "p_next"
        return self._trace("p_cas")

    def _p_free(self) -> Trace:
        assert self.t.ptr is not None
        self.config.memory.free_node(self.t.ptr)  # free(t.ptr); return t.ptr;
        self.t = NULL_TAGGED
        self.n = None
        self.pc = RUN
        return self._trace("p_free")
