"""What every worker thread core shares: scheduling by timers.

Theory of operation: a worker thread is a sans-IO core that sends no
message and never crashes. Its program counter `pc` is the PlusCal label it
runs next, and one traced step is one label step of the spec. A thread
whose next label is a step arms the timer STEP; when it fires, the thread
runs that label (one atomic operation on the shared memory) and arms the
timer of its next label. At `run` the thread chooses its next operation,
and the choice is a race of timers: it arms one timer per operation, and
the first to fire decides; the others are cancelled. So whoever fires the
timers decides the schedule and every choice: the simulator by the delays
of the run's schedule, the explorer by trying each armed timer in turn.

A step that is not enabled (a spin whose compare-exchange fails, an
`await` of the model, an append with every node in use) changes nothing and
writes no trace line: the thread arms the same timer again and retries.

Subclasses (the queue's and the stack's threads) hold the labels: each is a
method `_<label>` that performs its step and returns the step's `Trace`, or
None when it is not enabled. This module knows no data structure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from tlasim.protocols.base import (
    CancelTimer,
    Effect,
    Input,
    Receive,
    Recover,
    SetTimer,
    Start,
    Timeout,
    Trace,
)
from tlasim.protocols.errors import ProtocolViolation
from tlasim.protocols.lockfree.config import LockFreeConfig
from tlasim.protocols.lockfree.memory import TaggedPtr

RUN, DONE = "run", "Done"
STEP = "step"  # the timer of every label step but a choice at `run`
NULL = "null"  # nullptr (and "nobody") as the trace writes it: the spec's constant None


def spec_ptr(ptr: str | None) -> str:
    return NULL if ptr is None else ptr


def spec_tagged(tagged: TaggedPtr) -> dict[str, Any]:
    return {"ptr": spec_ptr(tagged.ptr), "tag": tagged.tag}


class ThreadCore:
    """A worker thread: the label it runs next, its operation count, its timers."""

    # The operations a thread chooses between at `run`; each is a timer name.
    CHOICES: ClassVar[tuple[str, ...]]
    # Every label but `run` and Done: each has a step method `_<label>`.
    LABELS: ClassVar[tuple[str, ...]]

    def __init__(self, node_id: str, config: LockFreeConfig) -> None:
        self.node_id = node_id
        self.config = config
        self.pc = RUN
        self.steps = 0  # operations this thread has begun (the spec's steps[self])

    # ---- the core contract ----

    def handle(self, now: int, event: Input) -> list[Effect]:
        if isinstance(event, Start):
            return self._arm()
        if isinstance(event, Receive | Recover):
            raise ProtocolViolation(
                f"thread {self.node_id} got {type(event).__name__}: threads exchange no "
                "messages and never crash"
            )
        assert isinstance(event, Timeout)
        name = event.name
        if self.pc == RUN and name in self.CHOICES:
            trace = self._choose(name)
            if trace is None:
                return [SetTimer(name, self._delay(name))]
            cancelled = [CancelTimer(other) for other in self.CHOICES if other != name]
            return [trace, *cancelled, *self._arm()]
        if name != STEP or self.pc == DONE or (self.pc == RUN and self.steps < self.config.limit):
            raise ProtocolViolation(
                f"thread {self.node_id} cannot handle timer {name!r} at label {self.pc}"
            )
        trace = self._finish() if self.pc == RUN else getattr(self, f"_{self.pc}")()
        if trace is None:
            return [SetTimer(STEP, self._delay(self.pc))]
        return [trace, *self._arm()]

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        """Threads never crash (crash_nodes is empty), so there is nothing to restore."""

    def view(self) -> Mapping[str, Any]:
        raise NotImplementedError

    # ---- scheduling ----

    def _delay(self, timer: str) -> int:
        return self.config.delay(self.node_id, self.steps, timer)

    def _arm(self) -> list[Effect]:
        """The timers of the label the thread runs next."""
        if self.pc == DONE:
            return []
        if self.pc == RUN and self.steps < self.config.limit:
            return [SetTimer(choice, self._delay(choice)) for choice in self.CHOICES]
        return [SetTimer(STEP, self._delay(self.pc))]

    def _params(self) -> dict[str, str]:
        return {"self": self.node_id}

    # ---- the labels every thread has ----

    def _choose(self, operation: str) -> Trace | None:
        """`run` choosing `operation`, or None when it is not enabled now."""
        raise NotImplementedError

    def _finish(self) -> Trace:
        """`run` after Limit operations: the thread ends."""
        raise NotImplementedError
