"""Carries out FaultOptions with the fault stream: the one place faults are drawn.

The network and the node hosts ask the injector at their hook points; they
never decide a fault themselves. Every decision is drawn only while the
fault phase lasts, so after it the run is fault-free and deterministic given
the state.
"""

from __future__ import annotations

import random

from faults.options import FaultOptions


class FaultInjector:
    __slots__ = ("options", "rng")

    def __init__(self, options: FaultOptions, rng: random.Random) -> None:
        self.options = options
        self.rng = rng

    def active(self, now: int) -> bool:
        return now < self.options.fault_phase_ticks

    def crash_after_step(self, now: int) -> bool:
        p = self.options.crash_probability
        return p > 0 and self.active(now) and self.rng.random() < p

    def restart_delay(self) -> int:
        return self.rng.randint(self.options.restart_ticks_min, self.options.restart_ticks_max)

    def duplicate_on_send(self, now: int) -> bool:
        p = self.options.duplicate_probability
        return p > 0 and self.active(now) and self.rng.random() < p

    def extra_delay_on_send(self, now: int) -> int:
        p = self.options.delay_probability
        if p > 0 and self.active(now) and self.rng.random() < p:
            return self.rng.randint(1, self.options.delay_ticks_max)
        return 0

    def lose_on_delivery(self, now: int) -> bool:
        p = self.options.loss_probability
        return p > 0 and self.active(now) and self.rng.random() < p
