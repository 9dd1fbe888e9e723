"""A helper that builds a handler's effects as a list of atomic steps."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tlasim.protocols.base import Effect, Trace


class StepList:
    """Collects effects; `step` closes an atomic step with a view snapshot.

    The view is taken when `step` is called, after the caller has changed its
    state for that step and before it changes anything for the next one.
    """

    __slots__ = ("_view", "effects")

    def __init__(self, view: Callable[[], Mapping[str, Any]]) -> None:
        self.effects: list[Effect] = []
        self._view = view

    def step(self, action: str, params: Mapping[str, Any], *effects: Effect) -> None:
        self.effects.extend(effects)
        self.effects.append(Trace(action, params, self._view()))

    def add(self, *effects: Effect) -> None:
        """Add effects that change no spec variable (timers) to the current step."""
        self.effects.extend(effects)
