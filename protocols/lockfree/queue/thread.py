"""A worker thread of the exchange-publish queue (specs/lockfree/LockFreeQueue.tla).

Theory of operation: the thread runs the C++ of docs/lockfree-model.md one
atomic operation per traced step. Each method `_<label>` is the PlusCal
label of that name: it performs the label's one load, store, exchange or
compare-exchange on the shared memory (the C++ line is quoted beside it),
updates the thread's locals and `pc` exactly as the label does, and, at a
linearization point, advances the reference and checks the answer against
it in the same step. A method returns None, changing nothing, when its
label is not enabled (the consumer flag is held).

The two races are `config.bug`, read only at the steps they change:
"last_node" takes the last node with a load of tail and a later store
(`_r_last`, `_r_store_tail`); "half_visible" decides "empty" from head
alone (`_r_head`, `_e_load`).

This module knows its own locals, the shared memory and the reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.base import Trace
from tlasim.protocols.lockfree import bugs
from tlasim.protocols.lockfree.config import LockFreeConfig
from tlasim.protocols.lockfree.thread import DONE, RUN, ThreadCore, spec_ptr

APPEND, REMOVE, EMPTY = "append", "remove", "empty"


class QueueThread(ThreadCore):
    CHOICES = (APPEND, REMOVE, EMPTY)
    LABELS = (
        "a_clear", "a_exchange", "a_link",
        "r_lock", "r_head", "r_empty", "r_next", "r_advance", "r_last", "r_store_tail",
        "r_clear_head", "r_free", "r_release",
        "e_load",
    )  # fmt: skip

    def __init__(self, node_id: str, config: LockFreeConfig) -> None:
        super().__init__(node_id, config)
        self.node: str | None = None  # the node being appended
        self.previous: str | None = None  # the tail the append exchanged out
        self.h: str | None = None  # the remover's head
        self.n: str | None = None  # ... and its next

    def view(self) -> Mapping[str, Any]:
        return {
            "pc": self.pc,
            "steps": self.steps,
            "node": spec_ptr(self.node),
            "previous": spec_ptr(self.previous),
            "h": spec_ptr(self.h),
            "n": spec_ptr(self.n),
        }

    def _trace(self, action: str) -> Trace:
        return Trace(action, self._params(), self.view())

    # ---- run ----

    def _choose(self, operation: str) -> Trace | None:
        if operation == APPEND:
            node = self.config.memory.alloc()  # Node* node = alloc();
            if node is None:
                return None
            self.node = node
            self.pc = "a_clear"
        else:
            self.pc = "r_lock" if operation == REMOVE else "e_load"
        self.steps += 1
        return self._trace("run")

    def _finish(self) -> Trace:
        self.pc = DONE
        return self._trace("run")

    # ---- append ----

    def _a_clear(self) -> Trace:
        assert self.node is not None
        self.config.memory.store_next(self.node, None)  # node->next.store(nullptr);
        self.pc = "a_exchange"
        return self._trace("a_clear")

    def _a_exchange(self) -> Trace:
        assert self.node is not None
        # Node* previous = tail.exchange(node);
        self.previous = self.config.memory.exchange("tail", self.node)
        # The append's linearization point: the exchange fixes the FIFO order.
        self.config.reference.expected.append(self.node)
        self.pc = "a_link"
        return self._trace("a_exchange")

    def _a_link(self) -> Trace:
        assert self.node is not None
        memory = self.config.memory
        # if (previous) previous->next.store(node); else head.store(node);
        if self.previous is not None:
            memory.store_next(self.previous, self.node)
        else:
            memory.store("head", self.node)
        self.node = self.previous = None
        self.pc = RUN
        return self._trace("a_link")

    # ---- remove ----

    def _r_lock(self) -> Trace | None:
        # while (!consumer.compare_exchange_weak(nobody, self)) {}
        won, _found = self.config.memory.compare_exchange("consumer", None, self.node_id)
        if not won:
            return None  # the failed spin changes nothing: retry later
        self.pc = "r_head"
        return self._trace("r_lock")

    def _r_head(self) -> Trace:
        self.h = self.config.memory.load("head")  # h = head.load();
        if self.h is not None:
            self.pc = "r_next"
        elif self.config.bug == bugs.HALF_VISIBLE:
            # if (!h) { consumer.store(nobody); return 0; }   (the race: no tail check)
            self._answer_empty()
            self.pc = "r_release"
        else:
            self.pc = "r_empty"
        return self._trace("r_head")

    def _r_empty(self) -> Trace:
        # if (tail.load() == nullptr) { consumer.store(nobody); return 0; }
        if self.config.memory.load("tail") is None:
            self._answer_empty()
            self.pc = "r_release"
        else:
            self.pc = "r_head"  # a push is half done: wait for its link
        return self._trace("r_empty")

    def _answer_empty(self) -> None:
        """A remove that answers "empty" linearizes at the load it read that from."""
        reference = self.config.reference
        reference.check(
            self.node_id, "EmptyAnswerMatches", reference.empty_answer_matches(True), None
        )

    def _r_next(self) -> Trace:
        assert self.h is not None
        self.n = self.config.memory.load_next(self.h)  # Node* n = h->next.load();
        self.pc = "r_last" if self.n is None else "r_advance"
        return self._trace("r_next")

    def _r_advance(self) -> Trace:
        self.config.memory.store("head", self.n)  # if (n) { head.store(n); break; }
        self._take_front()
        self.pc = "r_free"
        return self._trace("r_advance")

    def _take_front(self) -> None:
        """The remove's linearization point: its node leaves the reference."""
        assert self.h is not None
        reference = self.config.reference
        reference.check(self.node_id, "RemovedIsFront", reference.removed_is_front(self.h), self.h)
        del reference.expected[:1]

    def _r_last(self) -> Trace:
        memory = self.config.memory
        if self.config.bug == bugs.LAST_NODE:
            # if (tail.load() == h) {   (the race: a load here, a store later)
            self.pc = "r_store_tail" if memory.load("tail") == self.h else "r_next"
            return self._trace("r_last")
        # if (tail.compare_exchange_strong(h, nullptr)) {
        won, _found = memory.compare_exchange("tail", self.h, None)
        if won:
            self._take_front()
            self.pc = "r_clear_head"
        else:
            self.pc = "r_next"  # a producer exchanged after h: wait for its link
        return self._trace("r_last")

    def _r_store_tail(self) -> Trace:
        self.config.memory.store("tail", None)  # tail.store(nullptr);   (Bug = "last_node")
        self._take_front()
        self.pc = "r_clear_head"
        return self._trace("r_store_tail")

    def _r_clear_head(self) -> Trace:
        # head.compare_exchange_strong(h, nullptr); break;
        self.config.memory.compare_exchange("head", self.h, None)
        self.pc = "r_free"
        return self._trace("r_clear_head")

    def _r_free(self) -> Trace:
        assert self.h is not None
        self.config.memory.free_node(self.h)  # free(h);
        self.h = self.n = None
        self.pc = "r_release"
        return self._trace("r_free")

    def _r_release(self) -> Trace:
        self.config.memory.store("consumer", None)  # consumer.store(nobody); return h;
        self.pc = RUN
        return self._trace("r_release")

    # ---- empty ----

    def _e_load(self) -> Trace:
        memory = self.config.memory
        if self.config.bug == bugs.HALF_VISIBLE:
            empty = memory.load("head") is None  # return head.load() == nullptr;   (the race)
        else:
            empty = memory.load("tail") is None  # return tail.load() == nullptr;
        reference = self.config.reference
        reference.check(
            self.node_id, "EmptyAnswerMatches", reference.empty_answer_matches(empty), empty
        )
        self.pc = RUN
        return self._trace("e_load")
