"""Carries out a FaultPlan: the one place the simulator decides a fault.

The network and the node hosts ask the injector at their hook points; they
never decide a fault themselves. Each probabilistic window draws from its own
stream, seeded by the window's `seed`, so a plan and a seed fix every
decision, and removing one fault (while shrinking) leaves the others' draws
alone. After the plan's `heal_tick` nothing goes wrong.

Every fault that strikes is noted by its place in the plan (`crashes/0`,
`windows/3`, `partitions/1`) until the step machine writes the next trace
line, which carries the notes in its `faults` field: a reader then knows which
of the plan's faults fired, and at which step (docs/trace-format.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tlasim.faults.plan import Crash, FaultPlan, Window


@dataclass(slots=True)
class ArmedCrash:
    crash: Crash
    steps_left: int


class FaultInjector:
    __slots__ = ("_by_kind", "_crash_names", "armed", "fired", "plan")

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        # Each window with its own stream, grouped by kind: every send and
        # delivery asks about one kind, and a window of another kind never
        # draws, so a hook looks only at the windows that may fire.
        self._by_kind: dict[str, list[tuple[str, Window, random.Random]]] = {}
        for index, window in enumerate(plan.windows):
            self._by_kind.setdefault(window.kind, []).append(
                (f"windows/{index}", window, random.Random(window.seed))
            )
        # By identity: a plan may hold two equal crashes, and each is its own fault.
        self._crash_names = {id(crash): f"crashes/{i}" for i, crash in enumerate(plan.crashes)}
        # The faults that struck since the last trace line (see `take_fired`).
        self.fired: list[str] = []
        # node -> crashes that strike after that node's next steps
        self.armed: dict[str, list[ArmedCrash]] = {}

    def arm(self, crash: Crash) -> None:
        self.armed.setdefault(crash.node, []).append(ArmedCrash(crash, crash.after_steps))

    def crash_after_step(self, node: str, now: int) -> Crash | None:
        """Count one step of `node`; return the crash that strikes now, if any.

        A crash still waiting for its step at `heal_tick` is dropped: nothing
        goes wrong after the plan heals, which the liveness deadline relies on.
        """
        armed = self.armed.get(node)
        if not armed:
            return None
        if now >= self.plan.heal_tick:
            del self.armed[node]
            return None
        for entry in armed:
            entry.steps_left -= 1
        for entry in armed:
            if entry.steps_left <= 0:
                # A node crashes once; crashes armed against this life are spent.
                del self.armed[node]
                self.fired.append(self._crash_names[id(entry.crash)])
                return entry.crash
        return None

    def disarm(self, node: str) -> None:
        """A crashed node loses the crashes armed against it."""
        self.armed.pop(node, None)

    def take_fired(self) -> list[str]:
        """The faults noted since the last call, in the order they struck."""
        fired, self.fired = self.fired, []
        return fired

    def _hits(self, kind: str, now: int, src: str, dst: str) -> list[tuple[Window, random.Random]]:
        hits = []
        for name, window, stream in self._by_kind.get(kind, ()):
            if (
                window.start <= now < window.end
                and window.covers(src, dst)
                and stream.random() < window.probability
            ):
                hits.append((window, stream))
                self.fired.append(name)
        return hits

    def duplicate_on_send(self, now: int, src: str, dst: str) -> bool:
        return bool(self._hits("duplicate", now, src, dst))

    def extra_delay_on_send(self, now: int, src: str, dst: str) -> int:
        extra = 0
        for window, stream in self._hits("delay", now, src, dst):
            extra = max(extra, stream.randint(1, window.delay_ticks_max))
        return extra

    def lose_on_delivery(self, now: int, src: str, dst: str) -> bool:
        for index, partition in enumerate(self.plan.partitions):
            if partition.start <= now < partition.end and partition.cuts(src, dst):
                self.fired.append(f"partitions/{index}")
                return True
        return bool(self._hits("loss", now, src, dst))
