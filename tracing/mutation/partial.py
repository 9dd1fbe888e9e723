"""Partial logs made from whole ones: the shapes real systems log in.

Theory of operation. A real system seldom logs every variable on every
line: it logs what the acting node changed, or leaves out what it cannot see
(the network), or omits the action name. The validator leaves what a line
omits to the spec. These functions strip a complete trace into such shapes,
so the validator's handling of partial logs is tested on real traces (and
corpora can hold them). Each returns a new `Trace`; the first line always
keeps its action, since a behaviour starts with Init.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import replace

from tlasim.tracing.codec import Trace, TraceStep
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.values import Record

__all__ = ["STRIPPINGS", "only_changed", "strip", "without_actions", "without_variables"]


def _with_vars(step: TraceStep, names: Collection[str]) -> TraceStep:
    return replace(step, vars=Record({k: v for k, v in step.vars.items() if k in names}))


def without_variables(trace: Trace, names: Collection[str]) -> Trace:
    """Every line but the first without `names` (e.g. the network, which no node sees)."""
    steps = [trace.steps[0]] + [
        _with_vars(s, [k for k in s.vars if k not in names]) for s in trace.steps[1:]
    ]
    return replace(trace, steps=tuple(steps))


def only_changed(trace: Trace) -> Trace:
    """Each line with only the variables its step changed, as a delta log has."""
    steps = [trace.steps[0]]
    for before, step in zip(trace.steps, trace.steps[1:], strict=False):
        changed = [k for k, v in step.vars.items() if _changed(before.vars.get(k, _NONE), v)]
        steps.append(_with_vars(step, changed))
    return replace(trace, steps=tuple(steps))


_NONE = object()


def _changed(before: object, after: object) -> bool:
    # By TLA+ text: Python would hold TRUE equal to 1.
    return before is _NONE or (before is not after and to_tla(before) != to_tla(after))


def without_actions(trace: Trace, share: float = 0.3, seed: int = 0) -> Trace:
    """A `share` of the lines after the first without their action name."""
    rng = random.Random(seed)
    steps = [trace.steps[0]] + [
        replace(s, action=None) if rng.random() < share else s for s in trace.steps[1:]
    ]
    return replace(trace, steps=tuple(steps))


# The strippings by name, as tests and corpora ask for them.
STRIPPINGS = ("only-changed", "no-network", "no-actions")


def strip(trace: Trace, how: str, *, network: Collection[str] = ("msgs",), seed: int = 0) -> Trace:
    """The trace stripped the way `how` (one of STRIPPINGS) names."""
    if how == "only-changed":
        return only_changed(trace)
    if how == "no-network":
        return without_variables(trace, network)
    if how == "no-actions":
        return without_actions(trace, seed=seed)
    raise ValueError(f"unknown stripping {how!r}; known: {', '.join(STRIPPINGS)}")
