"""Shrinking a failing fault plan to a minimal one, by delta debugging.

`shrink_plan` knows nothing about how a plan is run: the caller's
`still_fails(plan)` runs it (one simulation, tens of milliseconds) and says
whether the failure is still there. The shrinker only proposes smaller plans
and keeps those that still fail, so every plan it returns has failed.

Order of work, repeated until a whole round changes nothing or the budget of
predicate calls is spent:

1. Remove faults: the empty plan first (a failure that needs no fault at all
   is common, for a bug variant, and cheapest to report), then ddmin over
   `plan.faults()`.
2. Simplify each remaining fault, field by field, toward what
   `faults.strategies` calls simpler (deterministic, narrow, early):
   - a crash: earlier `tick`, `after_steps` toward 1, `restart_ticks` toward 1;
   - a window: slide it earlier, then end it sooner, then start it later
     (so the span ends as early as it can, then is as short as it can be),
     probability 1.0, seed 0, fewer links (ddmin, at least one; `links=None`
     is opened into every link when `nodes` is given), `delay_ticks_max`
     toward 1;
   - a partition: the same span moves, then one-way in either direction,
     then fewer nodes on each side (ddmin, at least one).
3. Lower `heal_tick` toward the least well-formed value: every crash's
   tick + 1 and every span's end.

An integer field is lowered by trying one less first (so a field that is
already minimal costs one run on later rounds), then its lower bound, then
bisection. Bisection assumes the failure is monotone in the field; where it
is not, the result is still a failing plan, only perhaps not the least one.

Runs are cached by plan (FaultPlan is frozen and hashable), so no plan is
run twice. Nothing here draws a random number or iterates a set: the same
plan and predicate give the same result, runs and steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias, TypeVar

from tlasim.faults.plan import Crash, FaultPlan, Link, Partition, Window
from tlasim.protocols.errors import ConfigError

Fault: TypeAlias = Crash | Window | Partition
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ShrinkResult:
    plan: FaultPlan  # the smallest plan found; it failed (or is the input)
    runs: int  # calls of `still_fails`, never more than max_runs
    steps: tuple[str, ...]  # one line per simplification kept, in order
    exhausted: bool  # the budget ran out, so `plan` may not be locally minimal


def shrink_plan(
    plan: FaultPlan,
    still_fails: Callable[[FaultPlan], bool],
    *,
    max_runs: int = 200,
    nodes: Sequence[str] | None = None,
) -> ShrinkResult:
    """Shrink `plan`, which the caller has seen fail, keeping only plans that still fail.

    `plan` itself is not run again. `nodes`, when given, lets a window on
    every link (`links=None`) be narrowed to the links the failure needs.
    Unless `exhausted`, the result is a fixed point: shrinking it again
    with the same predicate changes nothing.
    """
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 0:
        raise ConfigError(f"max_runs={max_runs!r}: must be a non-negative integer")
    plan.check_wellformed("plan to shrink")
    shrinker = _Shrinker(plan, still_fails, max_runs, tuple(nodes) if nodes is not None else None)
    shrinker.run()
    return ShrinkResult(plan=shrinker.plan, runs=shrinker.runs, steps=tuple(shrinker.steps),
                        exhausted=shrinker.exhausted)


class _Shrinker:
    def __init__(
        self,
        plan: FaultPlan,
        still_fails: Callable[[FaultPlan], bool],
        max_runs: int,
        nodes: tuple[str, ...] | None,
    ) -> None:
        self.plan = plan
        self.still_fails = still_fails
        self.max_runs = max_runs
        self.nodes = nodes
        self.runs = 0
        self.exhausted = False
        self.steps: list[str] = []
        self.cache: dict[FaultPlan, bool] = {plan: True}

    # ---- the predicate, cached and on a budget ----

    def fails(self, candidate: FaultPlan) -> bool:
        known = self.cache.get(candidate)
        if known is not None:
            return known
        if self.runs >= self.max_runs:
            # Out of budget: reject every new candidate, so each search below
            # ends at once and keeps what it has.
            self.exhausted = True
            return False
        self.runs += 1
        result = bool(self.still_fails(candidate))
        self.cache[candidate] = result
        return result

    def accept(self, candidate: FaultPlan, step: str) -> bool:
        """Make `candidate` the plan if it still fails (and is new)."""
        if candidate == self.plan or not self.fails(candidate):
            return False
        self.plan = candidate
        self.steps.append(step)
        return True

    # ---- the rounds ----

    def run(self) -> None:
        while not self.exhausted:
            before = self.plan
            self.remove_faults()
            for index in range(self.plan.size):
                self.simplify(index)
            self.lower_heal()
            if self.plan == before:
                break

    def remove_faults(self) -> None:
        # The empty plan first, on every round: lowering heal_tick makes it a
        # new plan, and ddmin never tries removing the last fault.
        if self.accept(self.plan.with_faults([]), f"removed all {self.plan.size} faults"):
            return
        faults = self.plan.faults()
        kept = _ddmin(faults, lambda subset: self.fails(self.plan.with_faults(subset)), 1)
        if len(kept) < len(faults):
            self.accept(self.plan.with_faults(kept),
                        f"removed {len(faults) - len(kept)} of {len(faults)} faults, kept "
                        f"{'; '.join(_label(f) for f in kept)}")

    def with_fault(self, index: int, fault: Fault) -> FaultPlan:
        faults = self.plan.faults()
        faults[index] = fault
        return self.plan.with_faults(faults)

    def fault(self, index: int) -> Fault:
        return self.plan.faults()[index]

    def lower(
        self,
        index: int,
        least: int,
        current: int,
        build: Callable[[int], Fault],
        shown: Callable[[int], str],
    ) -> None:
        """Lower an int that `build` turns into fault `index` to the least that still fails."""
        label = _label(self.fault(index))
        best = _least(least, current, lambda v: self.fails(self.with_fault(index, build(v))))
        if best != current:
            self.accept(self.with_fault(index, build(best)),
                        f"{label}: {shown(current)} -> {shown(best)}")

    def lower_field(self, index: int, name: str, least: int) -> None:
        fault = self.fault(index)
        self.lower(index, least, getattr(fault, name),
                   lambda v: _with(fault, name, v), lambda v: f"{name}={v}")

    def try_fault(self, index: int, new: Fault, what: str) -> bool:
        return self.accept(self.with_fault(index, new), f"{_label(self.fault(index))}: {what}")

    def simplify(self, index: int) -> None:
        fault = self.fault(index)
        if isinstance(fault, Crash):
            self.lower_field(index, "tick", 0)
            self.lower_field(index, "after_steps", 1)
            self.lower_field(index, "restart_ticks", 1)
            return
        self.shrink_span(index)
        if isinstance(fault, Window):
            self.simplify_window(index)
        else:
            self.simplify_partition(index)

    def span(self, index: int) -> Window | Partition:
        fault = self.fault(index)
        assert isinstance(fault, Window | Partition)
        return fault

    def shrink_span(self, index: int) -> None:
        # Slide the span earlier, keeping its length.
        s = self.span(index)
        length = s.end - s.start
        self.lower(index, 0, s.start, lambda v: replace(s, start=v, end=v + length),
                   lambda v: f"span [{v}, {v + length})")
        # End it sooner.
        self.lower_field(index, "end", self.span(index).start + 1)
        # Start it later, by lowering its length with its end fixed.
        s = self.span(index)
        self.lower(index, 1, s.end - s.start, lambda n: replace(s, start=s.end - n),
                   lambda n: f"start={s.end - n}")

    def simplify_window(self, index: int) -> None:
        w = self.window(index)
        if w.probability != 1.0:
            self.try_fault(index, replace(w, probability=1.0),
                           f"probability={w.probability:g} -> 1")
        w = self.window(index)
        if w.seed != 0:
            self.try_fault(index, replace(w, seed=0), f"seed={w.seed} -> 0")
        self.narrow_links(index)
        if self.window(index).kind == "delay":
            self.lower_field(index, "delay_ticks_max", 1)

    def window(self, index: int) -> Window:
        fault = self.fault(index)
        assert isinstance(fault, Window)
        return fault

    def narrow_links(self, index: int) -> None:
        w = self.window(index)
        links: list[Link]
        if w.links is not None:
            links = list(w.links)
        elif self.nodes is not None:
            links = [(a, b) for a in self.nodes for b in self.nodes if a != b]
            # Spelling out every link changes nothing about the run.
            self.cache[self.with_fault(index, replace(w, links=tuple(links)))] = True
        else:
            return
        kept = _ddmin(
            links,
            lambda subset: self.fails(self.with_fault(index, replace(w, links=tuple(subset)))),
            1,
        )
        if len(kept) < len(links):
            self.try_fault(index, replace(w, links=tuple(kept)),
                           f"links -> {', '.join(f'{a}->{b}' for a, b in kept)}")

    def partition(self, index: int) -> Partition:
        fault = self.fault(index)
        assert isinstance(fault, Partition)
        return fault

    def simplify_partition(self, index: int) -> None:
        p = self.partition(index)
        if p.both_ways:
            one_way = replace(p, both_ways=False)
            reverse = replace(p, src=p.dst, dst=p.src, both_ways=False)
            if not self.try_fault(index, one_way, f"one way, {_label(one_way)}"):
                self.try_fault(index, reverse, f"one way, {_label(reverse)}")
        self.narrow_side(index, "src")
        self.narrow_side(index, "dst")

    def narrow_side(self, index: int, side: str) -> None:
        p = self.partition(index)

        def build(nodes: Sequence[str]) -> Partition:
            return replace(p, src=tuple(nodes)) if side == "src" else replace(p, dst=tuple(nodes))

        nodes = list(p.src if side == "src" else p.dst)
        kept = _ddmin(nodes, lambda subset: self.fails(self.with_fault(index, build(subset))), 1)
        if len(kept) < len(nodes):
            self.try_fault(index, build(kept), f"{side} -> {','.join(kept)}")

    def lower_heal(self) -> None:
        plan = self.plan
        least = max([0, *(c.tick + 1 for c in plan.crashes),
                     *(w.end for w in plan.windows), *(p.end for p in plan.partitions)])
        best = _least(least, plan.heal_tick,
                      lambda v: self.fails(replace(plan, heal_tick=v)))
        if best != plan.heal_tick:
            self.accept(replace(plan, heal_tick=best), f"heal_tick {plan.heal_tick} -> {best}")


def _with(fault: Fault, name: str, value: int) -> Fault:
    # `replace` on the union cannot be checked field by field; the names
    # passed here are the int fields each caller knows the fault has.
    changes: dict[str, Any] = {name: value}
    return replace(fault, **changes)


def _least(low: int, current: int, fails: Callable[[int], bool]) -> int:
    """The least value in [low, current] that fails, given that `current` fails.

    One less is tried first, so a value that is already least costs one
    call; then `low`; then bisection between the two.
    """
    if current <= low or not fails(current - 1):
        return current
    good = current - 1
    if good == low or fails(low):
        return low
    bad = low
    while good - bad > 1:
        mid = (bad + good) // 2
        if fails(mid):
            good = mid
        else:
            bad = mid
    return good


def _ddmin(items: list[T], fails: Callable[[list[T]], bool], least: int) -> list[T]:
    """Zeller's ddmin: a sublist of `items` that fails and loses no single chunk.

    `fails(items)` is taken as known; no sublist shorter than `least` is tried.
    """
    n = 2
    while len(items) >= 2 and len(items) > least:
        chunks = _split(items, n)
        for chunk in chunks:
            if len(chunk) >= least and fails(chunk):
                items, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                rest = [x for j, c in enumerate(chunks) if j != i for x in c]
                if len(rest) >= least and fails(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
    return items


def _split(items: list[T], n: int) -> list[list[T]]:
    size, extra = divmod(len(items), n)
    chunks = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        chunks.append(items[start:end])
        start = end
    return chunks


def _label(fault: Fault) -> str:
    if isinstance(fault, Crash):
        return f"crash {fault.node}"
    if isinstance(fault, Window):
        return f"{fault.kind} window"
    arrow = "<->" if fault.both_ways else "->"
    return f"partition {','.join(fault.src)}{arrow}{','.join(fault.dst)}"
