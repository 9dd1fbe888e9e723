"""Lock-free oracles: the models' invariants. They read the spec variables only.

After every step:
- the sequential reference agrees with every answer so far: the step that
  linearized an operation recorded any disagreement in `mismatch` (the
  models' OracleAgrees), and the violation names the check that failed
  (RemovedIsFront, PoppedIsTop or EmptyAnswerMatches);
- the structural invariants: no element still in the structure is free
  memory, and no end of it points to free memory (the queue's QueuedNotFree
  and EndsNotFree, the stack's StackedNotFree and TopNotFree).

Liveness, at the end of the run: every thread has finished (pc = "Done").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import InvariantViolation
from tlasim.protocols.lockfree.thread import DONE, NULL


def _answer(answer: Any) -> str:
    """An operation's answer as the mismatch records it, in words."""
    if answer is True:
        return '"empty"'
    if answer is False:
        return '"not empty"'
    return "nullptr" if answer == NULL else str(answer)


class LockFreeOracle:
    """What the queue's and the stack's oracles share: the reference and liveness."""

    def __init__(self, threads: tuple[str, ...], limit: int) -> None:
        self.threads = threads
        self.limit = limit

    def check_step(self, spec_vars: Mapping[str, Any], step: StepInfo | None = None) -> None:
        mismatch = spec_vars["mismatch"]
        if mismatch != NULL:
            expected = ", ".join(mismatch["expected"]) or "nothing"
            raise InvariantViolation(
                f"{mismatch['check']}: {mismatch['worker']} answered "
                f"{_answer(mismatch['answer'])}, but the sequential reference held <<{expected}>>"
            )
        free = spec_vars["free"]
        stranded = [x for x in spec_vars["expected"] if x in free]
        if stranded:
            raise InvariantViolation(
                f"{self.ELEMENTS_NOT_FREE}: {', '.join(stranded)} is free memory "
                "but still an element"
            )
        for end in self.ENDS:
            ptr = self.pointer(spec_vars, end)
            if ptr in free:
                raise InvariantViolation(
                    f"{self.ENDS_NOT_FREE}: {end} points to {ptr}, which is free memory"
                )

    ELEMENTS_NOT_FREE: str
    ENDS_NOT_FREE: str
    ENDS: tuple[str, ...]

    def pointer(self, spec_vars: Mapping[str, Any], end: str) -> str:
        return str(spec_vars[end])

    def check_liveness(self, spec_vars: Mapping[str, Any]) -> str | None:
        """None when every thread has run its operations and ended."""
        for thread in self.threads:
            pc = spec_vars["pc"][thread]
            if pc != DONE:
                begun = spec_vars["steps"][thread]
                return (
                    f"liveness: {thread} is still at {pc} "
                    f"(operation {begun} of {self.limit})"
                )
        return None


class QueueOracle(LockFreeOracle):
    ELEMENTS_NOT_FREE = "QueuedNotFree"
    ENDS_NOT_FREE = "EndsNotFree"
    ENDS = ("head", "tail")


class StackOracle(LockFreeOracle):
    ELEMENTS_NOT_FREE = "StackedNotFree"
    ENDS_NOT_FREE = "TopNotFree"
    ENDS = ("top",)

    def pointer(self, spec_vars: Mapping[str, Any], end: str) -> str:
        return str(spec_vars[end]["ptr"])
