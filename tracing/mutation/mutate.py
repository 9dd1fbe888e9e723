"""Invalid traces made from valid ones: one small, named change per trace.

Theory of operation. A mutation takes a whole trace (every line logs every
variable) and a `random.Random`, and returns a `Mutant`: the changed trace,
the mutation's name, the position of the line it touched and a sentence for
people. The same trace and the same stream always give the same mutant, so
a corpus built from a seed is built again from it. Nothing here iterates a
set without sorting it first (by canonical JSON), so `PYTHONHASHSEED` never
changes a choice.

A mutant is not invalid by construction: dropping or swapping two
independent steps, say, may still be a behaviour of the spec. Only TLC can
say, and this module does not run it (`sim.corpus` does). The line the
mutation touched is not always the first line TLC rejects either: after a
dropped line, the next line is the one nothing explains.

The mutations (MUTATIONS), each at a place drawn from the stream:

- `drop-line`: a step line is removed (never the first or the last).
- `swap-lines`: two adjacent step lines trade places, each whole, as lines
  flushed out of order would: the state jumps two steps and comes back.
- `reorder-steps`: two adjacent steps of one node (or two lines that name
  no node) are done in the other order, as if the node had taken them so.
  The lines keep their `seq` and `ts`;
  `node`, `action` and `params` trade places, and the state between the
  two steps is recomputed as the step that now comes first would have left
  it (`_replay`). Two independent steps (sends to two RMs) reorder into a
  valid behaviour; two dependent ones (a receipt and the vote it causes) do
  not.
- `change-value`: one variable on one line gets another value of the same
  kind: a boolean flipped, an integer plus one, a string replaced by another
  string the variable holds somewhere in the trace, a set with one element
  more (seen in the variable's sets elsewhere) or one fewer. The line is
  drawn here; the change to it is tracing/mutation/values.py's.
- `rename-action`: a step line names another action (one of `actions`, or
  of the trace's own), params and state unchanged.
- `duplicate-line`: a step line is written twice.
- `deliver-before-send`: a step that receives a message is moved, unchanged,
  to just before the step that sent it. A receipt is a step, other than a
  `lose_actions` one, after which the network variable (`network`, a bag or
  a set of messages) holds fewer copies of some message; its send is the
  last earlier step that put that message there when it was absent.

A mutant's `detail` names lines by their number in the source trace.
Every mutant's lines are numbered as `write_trace` will write them (the
header, if any, is line 1), so `Mutant.line` and a verdict's divergence line
both name lines of the written file.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tlasim.tracing.codec import Trace, TraceStep
from tlasim.tracing.mutation.values import change_value
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.values import Record, canonical_json, freeze

__all__ = ["MUTATIONS", "Mutant", "mutate", "renumbered"]

MUTATIONS = (
    "drop-line",
    "swap-lines",
    "reorder-steps",
    "change-value",
    "rename-action",
    "duplicate-line",
    "deliver-before-send",
)


@dataclass(frozen=True, slots=True)
class Mutant:
    """A mutated trace and where it was changed."""

    trace: Trace  # lines numbered as the written file will number them
    mutation: str
    index: int  # 0-based position, among the mutant's steps, of the line the mutation touched
    detail: str  # what was done, for people

    @property
    def line(self) -> int:
        """The file line the mutation touched (for a dropped line: the line now in its place)."""
        return self.trace.steps[self.index].line


def renumbered(trace: Trace) -> Trace:
    """The trace with each step's line set to its line in the file `write_trace` makes."""
    first = 2 if trace.header is not None else 1
    steps = tuple(
        s if s.line == first + i else replace(s, line=first + i) for i, s in enumerate(trace.steps)
    )
    return replace(trace, steps=steps)


def mutate(
    trace: Trace,
    how: str,
    rng: random.Random,
    *,
    network: str = "msgs",
    lose_actions: Collection[str] = ("NetLose",),
    actions: Collection[str] | None = None,
) -> Mutant | None:
    """Apply the mutation `how` (one of MUTATIONS) at a place `rng` draws.

    Returns None when the trace has no place for it (too short, no message
    received, no other action to rename to). `network` names the variable
    holding messages in flight and `lose_actions` the steps that lose one
    (for `deliver-before-send`); `actions` are the names `rename-action`
    draws from (default: the actions the trace itself takes).
    """
    steps = list(trace.steps)
    made: tuple[list[TraceStep], int, str] | None
    if how == "drop-line":
        made = _drop(steps, rng)
    elif how == "swap-lines":
        made = _swap(steps, rng)
    elif how == "reorder-steps":
        made = _reorder(steps, rng)
    elif how == "change-value":
        made = _change_value(steps, rng)
    elif how == "rename-action":
        made = _rename(steps, rng, actions)
    elif how == "duplicate-line":
        made = _duplicate(steps, rng)
    elif how == "deliver-before-send":
        made = _deliver_before_send(steps, rng, network, frozenset(lose_actions))
    else:
        raise ValueError(f"unknown mutation {how!r}; known: {', '.join(MUTATIONS)}")
    if made is None:
        return None
    new_steps, index, detail = made
    mutant = renumbered(replace(trace, steps=tuple(new_steps)))
    return Mutant(mutant, how, index, detail)


def _where(steps: list[TraceStep], i: int) -> str:
    """A source line for people, by its line number in the source trace."""
    return f"line {steps[i].line} ({steps[i].action or 'no action'})"


# --- the line mutations -----------------------------------------------------


def _drop(steps: list[TraceStep], rng: random.Random) -> tuple[list[TraceStep], int, str] | None:
    # Dropping the last line leaves a prefix, which is always valid.
    if len(steps) < 3:
        return None
    i = rng.randrange(1, len(steps) - 1)
    return steps[:i] + steps[i + 1 :], i, f"dropped {_where(steps, i)}"


def _duplicate(
    steps: list[TraceStep], rng: random.Random
) -> tuple[list[TraceStep], int, str] | None:
    if len(steps) < 2:
        return None
    i = rng.randrange(1, len(steps))
    return steps[: i + 1] + steps[i:], i + 1, f"wrote {_where(steps, i)} twice"


def _rename(
    steps: list[TraceStep], rng: random.Random, actions: Collection[str] | None
) -> tuple[list[TraceStep], int, str] | None:
    pool = sorted(
        set(actions) if actions is not None else {s.action for s in steps if s.action is not None}
    )
    places = [i for i in range(1, len(steps)) if steps[i].action not in (None, "Init")]
    if not places:
        return None
    i = rng.choice(places)
    others = [a for a in pool if a not in (steps[i].action, "Init")]
    if not others:
        return None
    new = rng.choice(others)
    out = list(steps)
    out[i] = replace(steps[i], action=new)
    return out, i, f"renamed {_where(steps, i)} to {new}"


def _what(s: TraceStep) -> tuple[Any, ...]:
    return (s.node, s.action, canonical_json(s.params))


def _swap(steps: list[TraceStep], rng: random.Random) -> tuple[list[TraceStep], int, str] | None:
    def line(s: TraceStep) -> tuple[Any, ...]:
        return (s.seq, s.ts, *_what(s), canonical_json(s.vars))

    # Two equal lines would swap into the same trace.
    places = [i for i in range(1, len(steps) - 1) if line(steps[i]) != line(steps[i + 1])]
    if not places:
        return None
    i = rng.choice(places)
    out = [*steps[:i], steps[i + 1], steps[i], *steps[i + 2:]]
    return out, i, f"swapped {_where(steps, i)} with {_where(steps, i + 1)}"


def _reorder(
    steps: list[TraceStep], rng: random.Random
) -> tuple[list[TraceStep], int, str] | None:
    # One node's steps, in the other order: steps of different nodes mostly
    # commute, and two lines that do the same thing would reorder into the
    # same trace.
    places = [
        i
        for i in range(1, len(steps) - 1)
        if steps[i].node == steps[i + 1].node and _what(steps[i]) != _what(steps[i + 1])
    ]
    if not places:
        return None
    i = rng.choice(places)
    before, first, second = steps[i - 1], steps[i], steps[i + 1]
    names = [n for n in second.vars if n in first.vars and n in before.vars]
    middle = Record._trusted(
        {n: _replay(first.vars[n], second.vars[n], before.vars[n]) for n in names}
    )
    out = list(steps)
    out[i] = replace(
        first, node=second.node, action=second.action, params=second.params, vars=middle
    )
    out[i + 1] = replace(second, node=first.node, action=first.action, params=first.params)
    return out, i, f"did {_where(steps, i + 1)} before {_where(steps, i)}"


def _same(a: Any, b: Any) -> bool:
    # By type too: Python holds TRUE equal to 1.
    return a is b or (type(a) is type(b) and a == b)


def _replay(old: Any, new: Any, base: Any) -> Any:
    """`base` with the change from `old` to `new` made to it.

    Functions change key by key; an integer-valued key that appears or
    disappears adds or takes away copies, as in a bag (an absent key counts
    0); sets gain and lose elements; integers move by the same amount; any
    other value is replaced by `new`.
    """
    if _same(old, new):
        return base
    if isinstance(old, Mapping) and isinstance(new, Mapping) and isinstance(base, Mapping):
        out = dict(base.items())
        for key, value in new.items():
            if key not in old:
                present = out.get(key)
                out[key] = present + value if _is_int(present) and _is_int(value) else value
            elif _same(old[key], value):
                continue
            elif key in out:
                out[key] = _replay(old[key], value, out[key])
            elif _is_int(old[key]) and _is_int(value):
                if value > old[key]:
                    out[key] = value - old[key]
            else:
                out[key] = value
        for key, value in old.items():
            if key in new or key not in out:
                continue
            if _is_int(value) and _is_int(out[key]) and out[key] > value:
                out[key] -= value
            else:
                del out[key]
        return freeze(out)
    if type(old) is frozenset and type(new) is frozenset and type(base) is frozenset:
        return (base - (old - new)) | (new - old)
    if _is_int(old) and _is_int(new) and _is_int(base):
        return base + (new - old)
    return new


def _is_int(value: Any) -> bool:
    return type(value) is int


# --- deliver before send ----------------------------------------------------


def _copies(bag: Any, message: Any) -> int:
    if isinstance(bag, Mapping):
        count = bag.get(message, 0)
        return count if _is_int(count) else 1
    if type(bag) is frozenset:
        return 1 if message in bag else 0
    return 0


def _messages(bag: Any) -> list[Any]:
    if isinstance(bag, Mapping):
        return list(bag)
    if type(bag) is frozenset:
        return sorted(bag, key=canonical_json)
    return []


def _deliver_before_send(
    steps: list[TraceStep], rng: random.Random, network: str, lose_actions: frozenset[str]
) -> tuple[list[TraceStep], int, str] | None:
    bags = [s.vars.get(network) for s in steps]
    # (receipt, send, message): every message some step received, with its send.
    places: list[tuple[int, int, Any]] = []
    for r in range(1, len(steps)):
        if steps[r].action in lose_actions or bags[r] is bags[r - 1]:
            continue
        for message in _messages(bags[r - 1]):
            if _copies(bags[r], message) >= _copies(bags[r - 1], message):
                continue
            send = next(
                (
                    j
                    for j in range(r - 1, 0, -1)
                    if _copies(bags[j - 1], message) == 0 and _copies(bags[j], message) > 0
                ),
                None,
            )
            if send is not None:
                places.append((r, send, message))
    if not places:
        return None
    r, send, message = rng.choice(places)
    out = [*steps[:send], steps[r], *steps[send:r], *steps[r + 1:]]
    return (
        out,
        send,
        f"moved {_where(steps, r)}, which receives {to_tla(message)}, before "
        f"{_where(steps, send)}, which sent it",
    )


# --- change a value ---------------------------------------------------------


def _change_value(
    steps: list[TraceStep], rng: random.Random
) -> tuple[list[TraceStep], int, str] | None:
    # This draws the line; tracing/mutation/values.py draws the change to it.
    i = rng.randrange(len(steps))
    change = change_value(steps, i, rng)
    if change is None:
        return None
    out = list(steps)
    out[i] = replace(steps[i], vars=change.vars)
    return out, i, change.detail(_where(steps, i))
