"""Hypothesis strategies for fault plans and workloads, for users' own tests.

    from tlasim.faults.strategies import fault_plans

    @given(plan=fault_plans(["tm", "r1", "r2"]))
    def test_commit_survives(plan): ...

Every plan drawn is well-formed and passes the atlas (`check_wellformed()`
and `check_recoverable(nodes)`), so a test never has to filter.

Theory of shrinking. Each plan is built so that hypothesis' own shrinking
(integers toward their lower bound, lists toward fewer elements,
`sampled_from` and `one_of` toward their first choice, booleans toward
False) moves it toward a *simpler* plan, meaning one that is deterministic
and hits as few messages and steps as possible, so that what is left of a
failing plan says precisely what the failure needs:

- fewer faults of each kind;
- earlier crash ticks, `after_steps=1`, `restart_ticks=1`;
- windows that start earlier and are shorter;
- probability 1.0: a fault that always fires does not depend on its seed's
  draws, so the report can be read without replaying it; the seed shrinks
  to 0;
- a window on one link, the first pair of `nodes`, rather than several
  links, and several links rather than every link (`links=None`): a
  narrower fault names the culprit link;
- a one-way partition rather than a both-ways one, for the same reason: it
  cuts a subset of the messages the both-ways one cuts; sides shrink toward
  one node each, toward the front of `nodes`;
- `delay_ticks_max` toward 1.

So the order of `nodes` matters: put the node a minimal failure most likely
involves (the coordinator, say) first.

`heal_tick` is always `horizon_ticks`, not the last fault's end. A fixed
fault phase keeps the liveness deadline the same for every example, so
moving one fault while shrinking never moves the heal under the others, and
it is what swarm mode's `fault_phase_ticks` means. `faults.shrink` lowers
`heal_tick` afterwards, where it can check that the plan still fails.

Workloads: `faults/` may import only `protocols.errors` (docs/architecture.md),
so it cannot read a protocol's options class. `workloads(ranges)` is generic:
the caller names each option and its range. Each protocol definition carries
its own ranges as plain data (`workload_ranges`), so
`workloads(get_protocol("twopc").workload_ranges)` draws two-phase commit
workloads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from hypothesis import strategies as st

from tlasim.faults.plan import WINDOW_KINDS, Crash, FaultPlan, Link, Partition, Window, WindowKind
from tlasim.protocols.errors import ConfigError

FaultKind: TypeAlias = Literal["crash", "loss", "duplicate", "delay", "partition"]
FAULT_KINDS: tuple[FaultKind, ...] = ("crash", "loss", "duplicate", "delay", "partition")

# Probabilities are drawn as thousandths below 1.0, so they shrink toward 1.0
# and print as short decimals in a report.
_PROBABILITY_STEPS = 1000
# A float range in `workloads` is drawn on this grid, so it shrinks toward its
# lower bound (hypothesis' own floats shrink toward the "simplest" float in
# range, which is usually the middle) and the values print short.
_FLOAT_STEPS = 1000

Range: TypeAlias = "tuple[int, int] | tuple[float, float] | st.SearchStrategy[Any]"



def fault_plans(
    nodes: Sequence[str],
    *,
    horizon_ticks: int = 600,
    max_crashes: int = 4,
    max_windows: int = 4,
    max_partitions: int = 2,
    kinds: Collection[FaultKind] = FAULT_KINDS,
    restart_ticks_max: int = 150,
    after_steps_max: int = 5,
    delay_ticks_max: int = 100,
    crash_nodes: Sequence[str] | None = None,
) -> st.SearchStrategy[FaultPlan]:
    """Well-formed, recoverable fault plans over `nodes` that heal at `horizon_ticks`.

    `kinds` switches kinds of fault on: "crash", "loss", "duplicate",
    "delay" and "partition". Crashes strike only `crash_nodes` (default:
    every node). Bad arguments raise ConfigError at once, not when the
    strategy is drawn from.
    """
    nodes = tuple(nodes)
    crashable = nodes if crash_nodes is None else tuple(crash_nodes)
    _check_args(nodes, kinds, horizon_ticks=horizon_ticks, max_crashes=max_crashes,
                max_windows=max_windows, max_partitions=max_partitions,
                restart_ticks_max=restart_ticks_max, after_steps_max=after_steps_max,
                delay_ticks_max=delay_ticks_max)
    # Keep the order of FAULT_KINDS, not of `kinds`, so the strategy (and so
    # what hypothesis draws from a given database entry) is the same for any
    # order the caller lists kinds in.
    window_kinds = tuple(k for k in WINDOW_KINDS if k in kinds)
    crashes = (
        st.lists(_crashes(crashable, horizon_ticks, restart_ticks_max, after_steps_max),
                 max_size=max_crashes)
        if "crash" in kinds and crashable else st.just([])
    )
    windows = (
        st.lists(_windows(nodes, window_kinds, horizon_ticks, delay_ticks_max),
                 max_size=max_windows)
        if window_kinds else st.just([])
    )
    partitions = (
        st.lists(_partitions(nodes, horizon_ticks), max_size=max_partitions)
        if "partition" in kinds and len(nodes) >= 2 else st.just([])
    )
    return st.builds(
        lambda c, w, p: FaultPlan(crashes=tuple(c), windows=tuple(w), partitions=tuple(p),
                                  heal_tick=horizon_ticks),
        crashes, windows, partitions,
    )


def workloads(ranges: Mapping[str, Range]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts of option overrides, one key per entry of `ranges`, in its order.

    A value of `ranges` is an inclusive `(low, high)` pair of ints, an
    inclusive pair of floats (drawn on a grid of thousandths of the range),
    or any strategy. Pairs shrink toward `low`, so write the simpler bound
    first. Use it with a protocol's `workload_ranges`, or with ranges of your own.
    """
    return st.fixed_dictionaries({name: _option(name, spec) for name, spec in ranges.items()})


# ---- the parts of a plan ----


def _crashes(
    nodes: tuple[str, ...], horizon: int, restart_max: int, after_max: int
) -> st.SearchStrategy[Crash]:
    return st.builds(
        Crash,
        node=st.sampled_from(nodes),
        tick=st.integers(0, horizon - 1),
        restart_ticks=st.integers(1, restart_max),
        after_steps=st.integers(1, after_max),
    )


@st.composite
def _span(draw: st.DrawFn, horizon: int) -> tuple[int, int]:
    # Draw the length after the start, both from their lower bound up, so a
    # span shrinks toward starting at 0 and lasting one tick.
    start = draw(st.integers(0, horizon - 1))
    length = draw(st.integers(1, horizon - start))
    return start, start + length


def _links(nodes: tuple[str, ...]) -> st.SearchStrategy[tuple[Link, ...] | None]:
    pairs = [(a, b) for a in nodes for b in nodes if a != b]
    if not pairs:
        return st.none()
    # A list first, so one_of shrinks toward explicit links; sorted into the
    # order of `pairs`, so two draws of the same set give equal plans.
    explicit = st.lists(st.sampled_from(pairs), min_size=1, unique=True).map(
        lambda chosen: tuple(sorted(chosen, key=pairs.index))
    )
    return st.one_of(explicit, st.none())


@st.composite
def _windows(
    draw: st.DrawFn,
    nodes: tuple[str, ...],
    kinds: tuple[WindowKind, ...],
    horizon: int,
    delay_max: int,
) -> Window:
    kind = draw(st.sampled_from(kinds))
    start, end = draw(_span(horizon))
    probability = (_PROBABILITY_STEPS - draw(st.integers(0, _PROBABILITY_STEPS - 1))) / (
        _PROBABILITY_STEPS
    )
    links = draw(_links(nodes))
    # Only delay windows carry delay_ticks_max: plan JSON omits it for the
    # other kinds, and a nonzero value there would not round-trip.
    delay = draw(st.integers(1, delay_max)) if kind == "delay" else 0
    seed = draw(st.integers(0, 2**32 - 1))
    return Window(kind=kind, start=start, end=end, probability=probability, links=links,
                  delay_ticks_max=delay, seed=seed)


@st.composite
def _partitions(draw: st.DrawFn, nodes: tuple[str, ...], horizon: int) -> Partition:
    start, end = draw(_span(horizon))
    src = draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=len(nodes) - 1,
                        unique=True))
    rest = [n for n in nodes if n not in src]
    dst = draw(st.lists(st.sampled_from(rest), min_size=1, unique=True))
    # Sides in the order of `nodes`, so equal cuts are equal plans.
    return Partition(start=start, end=end, src=tuple(n for n in nodes if n in src),
                     dst=tuple(n for n in nodes if n in dst), both_ways=draw(st.booleans()))


def _option(name: str, spec: Range) -> st.SearchStrategy[Any]:
    if isinstance(spec, st.SearchStrategy):
        return spec
    if not (isinstance(spec, tuple) and len(spec) == 2) or any(
        isinstance(v, bool) or not isinstance(v, int | float) for v in spec
    ):
        raise ConfigError(f"workload range {name}={spec!r}: expected a (low, high) pair of "
                          f"numbers or a strategy")
    low, high = spec
    if low > high:
        raise ConfigError(f"workload range {name}={spec!r}: low exceeds high")
    if isinstance(low, int) and isinstance(high, int):
        return st.integers(low, high)
    # Rounding keeps the drawn values short in a report; clamping keeps them
    # inside the range when rounding would step past a bound.
    return st.integers(0, _FLOAT_STEPS).map(
        lambda k: min(high, max(low, round(low + (high - low) * k / _FLOAT_STEPS, 9)))
    )


def _check_args(nodes: tuple[str, ...], kinds: Collection[str], **limits: int) -> None:
    if not nodes or not all(isinstance(n, str) and n for n in nodes):
        raise ConfigError(f"fault_plans: nodes={list(nodes)!r}: need one or more node names")
    if len(set(nodes)) != len(nodes):
        raise ConfigError(f"fault_plans: nodes={list(nodes)!r}: names must be distinct")
    if isinstance(kinds, str):
        # A lone string is a collection of letters; say so rather than list them.
        raise ConfigError(f"fault_plans: kinds={kinds!r}: expected a collection of kinds, "
                          f"such as {{{kinds!r}}}")
    unknown = sorted(set(kinds) - set(FAULT_KINDS))
    if unknown:
        raise ConfigError(f"fault_plans: unknown kind(s) {', '.join(unknown)}; expected some of "
                          f"{', '.join(FAULT_KINDS)}")
    for name, value in limits.items():
        least = 0 if name.startswith("max_") else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigError(f"fault_plans: {name}={value!r}: must be an integer >= {least}")
