"""Linearizability checker: one large history, and agreement with brute force on small ones.

Every history here is made the same way. Clients each run one operation at a
time; every operation gets an interval [invoke, respond] and an effect instant
inside it, and the operations are then replayed against a real dict in effect
order, so a read records what the dict held at its instant. Such a history is
linearizable by construction (the effect order is a linearization), which is
what lets the benchmark tell a wrong verdict from a right one.

- Large: `check_linearizable` on 10,000-operation histories, one over many
  keys and one with every client on one key, each with a few writes that
  never complete (some took effect, some never did); then the same history
  with one read changed to a value nobody wrote, which must be rejected. A
  wrong verdict either way raises: it is a checker bug.
- Small: a few hundred random histories of at most 7 operations per key,
  about half with one read changed to another plausible value, so both
  verdicts occur. Each goes to both `check_linearizable` and the naive
  `brute_force_linearizable`; any disagreement raises, never averages out.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from tlasim.protocols.linearizability import (
    BRUTE_FORCE_MAX_OPS_PER_KEY,
    Kind,
    Op,
    brute_force_linearizable,
    check_linearizable,
)

# A value no generated write ever writes (writes are positive integers).
NEVER_WRITTEN = -1


@dataclass(frozen=True, slots=True)
class _Call:
    """One operation as planned: its interval, and the instant it acts on the dict."""

    client: str
    kind: Kind
    key: str
    written: int | None  # the value a write writes; None for a read
    invoke: int  # ticks
    effect: int | None  # ticks; None = a pending write that never took effect
    respond: int | None  # ticks; None = never completed


@dataclass(frozen=True, slots=True)
class Shape:
    """How a generated history looks: who calls, how often, on which keys."""

    clients: int
    ops_per_client: int
    keys: int
    write_ratio: float = 0.4  # chance an operation is a write
    duration_ticks_max: int = 12  # an operation's interval lasts 0..this many ticks
    think_ticks_max: int = 3  # a client waits 1..this many ticks between operations
    pending_writes: int = 0  # clients whose last operation is a write that never completes
    values: int | None = None  # writes draw from 1..values; None = every write unique
    ops_per_key_max: int | None = None  # no key gets more operations than this


def generate(rng: random.Random, shape: Shape) -> list[Op]:
    """A history of `shape`, linearizable by construction (see the module docstring)."""
    return _replay(_plan(rng, shape))


def _plan(rng: random.Random, shape: Shape) -> list[_Call]:
    names = [f"k{i}" for i in range(shape.keys)]
    per_key: Counter[str] = Counter()
    calls: list[_Call] = []
    serial = 0
    for c in range(shape.clients):
        client = f"c{c}"
        tick = rng.randint(0, shape.think_ticks_max)
        last = shape.ops_per_client - 1
        for n in range(shape.ops_per_client):
            open_keys = [
                k for k in names
                if shape.ops_per_key_max is None or per_key[k] < shape.ops_per_key_max
            ]
            if not open_keys:
                break
            key = rng.choice(open_keys)
            per_key[key] += 1
            serial += 1
            written = serial if shape.values is None else rng.randint(1, shape.values)
            if c < shape.pending_writes and n == last:
                # The client gives up on this write (a crash, a lost answer):
                # half the time it reached the store at some later instant.
                effect = tick + rng.randint(0, 4 * shape.duration_ticks_max)
                landed = rng.random() < 0.5
                calls.append(
                    _Call(client, "write", key, written, tick, effect if landed else None, None)
                )
                break
            respond = tick + rng.randint(0, shape.duration_ticks_max)
            effect = rng.randint(tick, respond)
            if rng.random() < shape.write_ratio:
                calls.append(_Call(client, "write", key, written, tick, effect, respond))
            else:
                calls.append(_Call(client, "read", key, None, tick, effect, respond))
            tick = respond + rng.randint(1, shape.think_ticks_max)
    return calls


def _replay(calls: list[_Call]) -> list[Op]:
    """Act on a real dict in effect order; each read returns what the dict held then."""
    store: dict[str, int | None] = {}
    seen: dict[int, int | None] = {}
    acting = sorted(
        (call.effect, index) for index, call in enumerate(calls) if call.effect is not None
    )
    for _, index in acting:
        call = calls[index]
        if call.kind == "write":
            store[call.key] = call.written
        else:
            seen[index] = store.get(call.key)
    return [
        Op(
            call.client, call.kind, call.key,
            call.written if call.kind == "write" else seen[index],
            call.invoke, call.respond, op_id=index,
        )
        for index, call in enumerate(calls)
    ]


def _with_read_value(history: list[Op], index: int, value: Any) -> list[Op]:
    changed = list(history)
    changed[index] = dataclasses.replace(history[index], value=value)
    return changed


# --- One large history ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LargeRun:
    label: str
    corrupted: bool  # one read changed to a value nobody wrote
    ops: int
    keys: int
    clients: int
    pending_writes: int
    overlap: int  # the most completed operations on one key in flight at one tick
    ok: bool
    keys_checked: int  # the checker stops at the first key that fails
    states_explored: int
    seconds: float


# Many keys with a few clients on each, as a simulator's histories look; and
# every client on one key, where the concurrent window is as wide as it gets.
LARGE_SHAPES = {
    "10 keys": Shape(clients=20, ops_per_client=500, keys=10, pending_writes=5),
    "1 key": Shape(clients=8, ops_per_client=1250, keys=1, pending_writes=2),
}


def _timed_check(label: str, shape: Shape, history: list[Op], corrupted: bool) -> LargeRun:
    start = time.perf_counter()
    result = check_linearizable(history)
    seconds = time.perf_counter() - start
    if result.ok == corrupted:
        raise RuntimeError(
            f"check_linearizable got the {label} history "
            f"{'with a corrupted read' if corrupted else 'linearizable by construction'} "
            f"wrong: it said {'linearizable' if result.ok else result.explanation}"
        )
    pending = sum(1 for op in history if op.respond is None)
    return LargeRun(
        label, corrupted, result.ops, shape.keys, shape.clients, pending, widest_overlap(history),
        result.ok, result.keys, result.states_explored, seconds,
    )


def widest_overlap(history: list[Op]) -> int:
    """The most completed operations on one key whose intervals share a tick."""
    # Edge 0 is an invocation and 1 a response, so at equal ticks invocations
    # come first: operations that meet at a tick overlap, as the checker says.
    edges = sorted(
        (op.key, tick, edge)
        for op in history if op.respond is not None
        for tick, edge in ((op.invoke, 0), (op.respond, 1))
    )
    widest = 0
    in_flight: Counter[str] = Counter()
    for key, _, edge in edges:
        in_flight[key] += 1 if edge == 0 else -1
        widest = max(widest, in_flight[key])
    return widest


def large(seed: int = 7) -> list[LargeRun]:
    """Each large shape's history as generated, then with one read corrupted."""
    runs = []
    for label, shape in LARGE_SHAPES.items():
        history = generate(random.Random(seed), shape)
        runs.append(_timed_check(label, shape, history, corrupted=False))
        # Corrupt a completed read halfway through the last key the checker
        # visits, so the rejection comes after every other key passed.
        last_key = max(op.key for op in history)
        reads = sorted(
            (op.invoke, i) for i, op in enumerate(history)
            if op.key == last_key and op.kind == "read" and op.respond is not None
        )
        _, index = reads[len(reads) // 2]
        corrupted = _with_read_value(history, index, NEVER_WRITTEN)
        runs.append(_timed_check(label, shape, corrupted, corrupted=True))
    return runs


# --- Agreement with brute force ------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    histories: int
    altered: int  # histories with one read's value changed
    linearizable: int
    agreed: int
    fast_seconds: float  # check_linearizable, all histories
    brute_seconds: float  # brute_force_linearizable, all histories

    @property
    def not_linearizable(self) -> int:
        return self.histories - self.linearizable

    @property
    def speed_ratio(self) -> float:
        """How many times faster check_linearizable is than brute force."""
        return self.brute_seconds / self.fast_seconds


def small_history(rng: random.Random) -> tuple[list[Op], bool]:
    """A few clients on two keys, at most 7 operations per key; maybe one read altered."""
    shape = Shape(
        clients=rng.randint(1, 4),
        ops_per_client=rng.randint(1, 5),
        keys=2,
        write_ratio=0.5,
        duration_ticks_max=5,
        think_ticks_max=2,
        pending_writes=rng.choice((0, 0, 1, 2)),
        values=3,
        ops_per_key_max=BRUTE_FORCE_MAX_OPS_PER_KEY - 1,
    )
    history = generate(rng, shape)
    reads = [i for i, op in enumerate(history) if op.kind == "read" and op.respond is not None]
    if reads and rng.random() < 0.5:
        # Another value the register could plausibly hold: sometimes still a
        # linearizable answer, often not, so both verdicts come up.
        index = rng.choice(reads)
        return _with_read_value(history, index, rng.choice((None, 1, 2, 3))), True
    return history, False


def agreement(histories: int = 500, seed: int = 11) -> Agreement:
    rng = random.Random(seed)
    drawn = [small_history(rng) for _ in range(histories)]
    cases = [history for history, _ in drawn]
    altered = sum(1 for _, changed in drawn if changed)
    start = time.perf_counter()
    fast = [check_linearizable(history).ok for history in cases]
    fast_seconds = time.perf_counter() - start
    start = time.perf_counter()
    brute = [brute_force_linearizable(history) for history in cases]
    brute_seconds = time.perf_counter() - start
    disagree = [i for i in range(histories) if fast[i] != brute[i]]
    if disagree:
        first = disagree[0]
        raise RuntimeError(
            f"the checkers disagree on {len(disagree)} of {histories} histories; the first: "
            f"check_linearizable says {fast[first]}, brute_force_linearizable says "
            f"{brute[first]}, on {cases[first]!r}"
        )
    return Agreement(
        histories, altered, sum(fast), histories - len(disagree), fast_seconds, brute_seconds
    )
