"""A linearizability checker for key-value register histories.

Theory of operation
-------------------
A history is a list of client operations on a key-value store, each a read or
a write of one key, recorded with the tick it was invoked and the tick it
responded. The history is linearizable when every operation can be given a
single instant between its invocation and its response such that, taken in
that order, the operations behave like a plain map: each read returns the
value of the latest write to its key, or the initial value (None when the key
is absent) if no write came before it.

Linearizability is local, a result of Herlihy and Wing: a history of many
objects is linearizable exactly when the sub-history of each object is. So the
checker partitions the history by key and checks one register per key, in
sorted key order, stopping at the first key that fails.

For one register the checker runs the search of Wing and Gong (1993) with the
memoization Lowe describes in "Testing for linearizability" (2017). The search
builds a linearization one operation at a time. An operation may come next
only if no operation still waiting to be linearized responded strictly before
it was invoked (real-time order: `a` precedes `b` iff `a.respond < b.invoke`;
equal ticks count as concurrent). A write sets the register; a read may come
next only if it returns what the register holds. When no operation may come
next the search backtracks. Lowe's improvement is a cache of the
configurations already explored, each the pair (set of operations linearized,
as a bitmask; register value): the future of a configuration depends only on
that pair, so reaching it a second time by another order is pruned. One
further pruning is sound for registers: when a read that may come next returns
the value the register holds, linearizing it at once loses no linearization
(it changes nothing, and moving it to the front of any valid completion keeps
that completion valid), so the search takes it without trying alternatives.
This keeps the many orders of concurrent reads out of the search.

The search is a depth-first walk with an explicit stack, so a history of
10,000 operations on one key does not hit Python's recursion limit. The
operations not yet linearized sit in a doubly linked list ordered by
invocation; linearizing an operation unlinks it and backtracking links it back
in place, so finding the candidates of a configuration walks only the current
window of concurrent operations, not the whole history.

Operations that never completed (`respond is None`) follow Wing and Gong and
Jepsen's Knossos: a pending write may take effect at any instant after its
invocation, or never, so the search may linearize it or leave it out, and it
never stops another operation from being linearized. A pending read constrains
nothing and is dropped before the search.

What the checker promises: `ok` is True exactly when a linearization exists.
On failure it names the key and an operation that could not be linearized:
the search keeps the deepest configuration it reached (the most completed
operations linearized) and blames the operation that had to come next there,
the unlinearized completed one with the earliest response. For that operation
it reports every register value it was tried against anywhere in the search,
which for a read are the values it "could have returned". This explanation is
a pointer for a human, not a minimal witness.

Complexity: checking linearizability is NP-complete (Gibbons and Korach,
1997), and the search is exponential in the worst case in the number of
mutually concurrent operations on one key (memory too: the cache holds every
configuration explored). In the histories a simulator produces, where each key
sees a few concurrent clients at a time, the number of configurations explored
stays within a small multiple of the number of operations; with a dozen or more
clients hammering one key at once it grows steeply.

`brute_force_linearizable` is an independent, deliberately naive oracle for
cross-checking: it tries every order of every subset of the pending writes
together with all completed operations, and is limited to small histories.

This module knows only the history; it never sees a protocol, a trace or the
simulator, and imports only the standard library and `protocols.errors`.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tlasim.protocols.errors import ConfigError

Kind = Literal["read", "write"]
KINDS: frozenset[str] = frozenset({"read", "write"})

# The brute-force oracle enumerates up to n! orders per key, so it refuses
# more than this many operations on one key (pending reads excluded).
BRUTE_FORCE_MAX_OPS_PER_KEY = 8

# A response tick later than any real one, used for pending operations so that
# they never bound which operations may be linearized next.
_NEVER = float("inf")


@dataclass(frozen=True, slots=True)
class Op:
    """One client operation on one key, as the history recorded it."""

    client: str
    kind: Kind
    key: str
    value: Any  # the value written, or the value the read returned; None = absent
    invoke: int  # ticks
    respond: int | None  # ticks; None = the operation never completed
    op_id: Hashable | None = None


History = Sequence[Op]


@dataclass(frozen=True, slots=True)
class Violation:
    """Why one key's history is not linearizable."""

    key: str
    op: Op  # the operation that could not be linearized
    possible_values: tuple[Any, ...]  # the register values `op` was tried against
    linearized: int  # completed operations in the longest partial linearization

    def describe(self) -> str:
        op = self.op
        name = f"op {op.op_id!r} " if op.op_id is not None else ""
        values = ", ".join(repr(v) for v in self.possible_values) or "none"
        if op.kind == "read":
            what = f"read returned {op.value!r}"
            could = f"the register could only hold {{{values}}} when it could be linearized"
        else:
            what = f"write of {op.value!r}"
            could = f"it was tried with the register holding {{{values}}}"
        return (
            f"key {self.key!r}: {name}{what} by client {op.client!r} "
            f"(invoke={op.invoke}, respond={op.respond}) cannot be linearized "
            f"after {self.linearized} completed operation(s); {could}"
        )


@dataclass(frozen=True, slots=True)
class LinearizabilityResult:
    """The verdict on a history, with counts and, on failure, the violation."""

    ok: bool
    violation: Violation | None
    ops: int  # operations in the history, pending reads included
    keys: int  # keys whose history was checked
    states_explored: int  # distinct (linearized set, register value) pairs

    @property
    def key(self) -> str | None:
        return None if self.violation is None else self.violation.key

    @property
    def explanation(self) -> str:
        return "linearizable" if self.violation is None else self.violation.describe()


def check_linearizable(
    history: History, *, initial: Mapping[str, Any] | None = None
) -> LinearizabilityResult:
    """Decide whether `history` is linearizable for a map starting at `initial`."""
    by_key = _partition(history)
    start = dict(initial or {})
    explored = 0
    checked = 0
    for key in sorted(by_key):
        checked += 1
        search = _RegisterSearch(key, by_key[key], start.get(key))
        violation = search.run()
        explored += search.states_explored
        if violation is not None:
            return LinearizabilityResult(False, violation, len(history), checked, explored)
    return LinearizabilityResult(True, None, len(history), checked, explored)


def brute_force_linearizable(history: History, initial: Mapping[str, Any] | None = None) -> bool:
    """Decide linearizability by trying every order; only for tiny histories."""
    by_key = _partition(history)
    start = dict(initial or {})
    for key in sorted(by_key):
        ops = [op for op in by_key[key] if not (op.kind == "read" and op.respond is None)]
        if len(ops) > BRUTE_FORCE_MAX_OPS_PER_KEY:
            raise ConfigError(
                f"brute_force_linearizable: key {key!r} has {len(ops)} operations; "
                f"at most {BRUTE_FORCE_MAX_OPS_PER_KEY} per key are allowed"
            )
        if not _brute_force_register(ops, start.get(key)):
            return False
    return True


def _partition(history: History) -> dict[str, list[Op]]:
    by_key: dict[str, list[Op]] = {}
    for index, op in enumerate(history):
        _validate(index, op)
        by_key.setdefault(op.key, []).append(op)
    return by_key


def _validate(index: int, op: object) -> None:
    where = f"history[{index}]"
    if not isinstance(op, Op):
        raise ConfigError(f"{where}: expected an Op, got {type(op).__name__}")
    if op.kind not in KINDS:
        raise ConfigError(f"{where}: kind {op.kind!r} is not one of 'read', 'write'")
    if not isinstance(op.key, str):
        raise ConfigError(f"{where}: key {op.key!r} must be a str")
    if not isinstance(op.client, str):
        raise ConfigError(f"{where}: client {op.client!r} must be a str")
    # bool is a subclass of int, but True is not a tick.
    if not isinstance(op.invoke, int) or isinstance(op.invoke, bool):
        raise ConfigError(f"{where}: invoke {op.invoke!r} must be an int tick")
    if op.respond is not None:
        if not isinstance(op.respond, int) or isinstance(op.respond, bool):
            raise ConfigError(f"{where}: respond {op.respond!r} must be an int tick or None")
        if op.respond < op.invoke:
            raise ConfigError(
                f"{where}: respond={op.respond} is before invoke={op.invoke}; "
                "a response cannot precede its invocation"
            )


class _RegisterSearch:
    """The Wing & Gong search with Lowe's cache over one key's operations."""

    def __init__(self, key: str, ops: list[Op], initial: Any) -> None:
        self.key = key
        # Pending reads constrain nothing: drop them. Sorting by invocation is
        # what lets the candidate walk stop early (see `run`).
        kept = [op for op in ops if not (op.kind == "read" and op.respond is None)]
        self.ops = sorted(kept, key=lambda op: (op.invoke, _respond(op)))
        # Values are interned to small ints so that register states compare and
        # hash cheaply, and values equal under == share one state.
        self.values: list[Any] = []
        self._ids: dict[Any, int] = {}
        self.initial_state = self._intern(initial, "initial value")
        self.val = [self._intern(op.value, f"value of {op!r}") for op in self.ops]
        self.states_explored = 0

    def _intern(self, value: Any, what: str) -> int:
        try:
            found = self._ids.get(value)
        except TypeError:
            raise ConfigError(
                f"key {self.key!r}: {what} is unhashable ({type(value).__name__}); "
                "register values must be hashable"
            ) from None
        if found is None:
            found = len(self.values)
            self._ids[value] = found
            self.values.append(value)
        return found

    def run(self) -> Violation | None:
        ops = self.ops
        n = len(ops)
        inv = [op.invoke for op in ops]
        resp = [_respond(op) for op in ops]
        is_write = [op.kind == "write" for op in ops]
        val = self.val
        completed = sum(1 for op in ops if op.respond is not None)

        # Doubly linked list of unlinearized operations in invocation order;
        # index n is the head sentinel and -1 ends the list.
        head = n
        nxt = [*range(1, n), -1, 0 if n else -1]
        prv = [head, *range(0, n - 1), -1]

        state = self.initial_state
        mask = 0  # bit i set = ops[i] is linearized
        done = 0  # completed operations linearized
        cache: set[tuple[int, int]] = {(0, state)}
        # One frame per linearized op: (op index, register state before it,
        # response bound in force when it was chosen, whether it was forced).
        stack: list[tuple[int, int, float, bool]] = []
        tried: dict[int, set[int]] = {}  # op index -> register states tried

        deepest = -1
        deepest_mask = 0
        cand = nxt[head]
        bound = _NEVER
        fresh = True  # the configuration was just entered: look for a forced read
        while True:
            if done == completed:
                self.states_explored = len(cache)
                return None
            if done > deepest:
                deepest, deepest_mask = done, mask
            chosen, forced = -1, False
            # `bound` is the earliest response among the unlinearized ops before
            # `cand` in the list. An op invoked after it cannot come next, and
            # neither can any later op, since the list is sorted by invocation
            # and ops after `cand` respond no earlier than they are invoked.
            if fresh:
                fresh = False
                # A read that may come next and returns the current value can be
                # linearized first without loss: it changes nothing, and moving it
                # to the front of any completion keeps that completion valid. So
                # take it and try no alternative here; this keeps the subsets of
                # concurrent reads out of the search.
                i, b = cand, bound
                while i != -1 and inv[i] <= b:
                    if not is_write[i] and val[i] == state:
                        tried.setdefault(i, set()).add(state)
                        if (mask | (1 << i), state) in cache:
                            cand = -1  # explored before and failed: this node fails
                        else:
                            chosen, forced, cand, bound = i, True, i, b
                        break
                    b = min(b, resp[i])
                    i = nxt[i]
            while chosen == -1 and cand != -1 and inv[cand] <= bound:
                tried.setdefault(cand, set()).add(state)
                if is_write[cand] or val[cand] == state:
                    new_state = val[cand] if is_write[cand] else state
                    if (mask | (1 << cand), new_state) not in cache:
                        chosen = cand
                        break
                bound = min(bound, resp[cand])
                cand = nxt[cand]
            if chosen != -1:
                stack.append((chosen, state, bound, forced))
                if is_write[chosen]:
                    state = val[chosen]
                mask |= 1 << chosen
                cache.add((mask, state))
                nxt[prv[chosen]] = nxt[chosen]
                if nxt[chosen] != -1:
                    prv[nxt[chosen]] = prv[chosen]
                if resp[chosen] != _NEVER:
                    done += 1
                cand, bound, fresh = nxt[head], _NEVER, True
                continue
            if not stack:
                self.states_explored = len(cache)
                # At the deepest configuration, the unlinearized completed op
                # that responded first had to come next: blame it.
                blamed = min(
                    (i for i in range(n) if resp[i] != _NEVER and not deepest_mask >> i & 1),
                    key=lambda i: resp[i],
                )
                op = ops[blamed]
                possible = sorted((self.values[s] for s in tried.get(blamed, ())), key=repr)
                return Violation(self.key, op, tuple(possible), deepest)
            # Backtrack: relink the last op where it was and try the ops after
            # it, unless it was forced, in which case its parent has failed too.
            last, state, bound, was_forced = stack.pop()
            nxt[prv[last]] = last
            if nxt[last] != -1:
                prv[nxt[last]] = last
            mask ^= 1 << last
            if resp[last] != _NEVER:
                done -= 1
            bound = min(bound, resp[last])
            cand = -1 if was_forced else nxt[last]


def _respond(op: Op) -> float:
    return _NEVER if op.respond is None else op.respond


def _brute_force_register(ops: list[Op], initial: Any) -> bool:
    completed = [op for op in ops if op.respond is not None]
    pending = [op for op in ops if op.respond is None]
    for size in range(len(pending) + 1):
        for chosen in itertools.combinations(pending, size):
            for order in itertools.permutations([*completed, *chosen]):
                if _respects_real_time(order) and _is_legal_register(order, initial):
                    return True
    return False


def _respects_real_time(order: Sequence[Op]) -> bool:
    for i, earlier in enumerate(order):
        for later in order[i + 1 :]:
            if later.respond is not None and later.respond < earlier.invoke:
                return False
    return True


def _is_legal_register(order: Sequence[Op], initial: Any) -> bool:
    current = initial
    for op in order:
        if op.kind == "write":
            current = op.value
        elif op.value != current:
            return False
    return True
