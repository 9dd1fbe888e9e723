"""Swarm testing, as in TigerBeetle's VOPR: the seed picks the weather.

Each seed switches every kind of fault on or off, draws its rate, and then
draws a concrete fault plan with that weather: one run has heavy loss on a
few links and no crashes, the next crashes nodes often on a reliable network,
a third partitions the TM away for a while. A sweep over many seeds then
covers combinations that one fixed fault mix would starve. The plan is plain
data, so a failing seed's plan can be printed, replayed and shrunk.

The draw uses only the fault stream it is given.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from tlasim.faults.plan import Crash, FaultPlan, Link, Partition, Window, WindowKind

# Menus, so that "rare" and "often" both occur across seeds.
_CRASH_COUNTS = (1, 3, 8)
_RESTART_TICKS_MAX = (20, 60, 150)
_LOSS_RATES = (0.05, 0.2, 0.5)
_DUPLICATE_RATES = (0.05, 0.2, 0.5)
_DELAY_RATES = (0.1, 0.3, 0.7)
_DELAY_TICKS_MAX = (20, 100)
_ON = 0.65  # each kind of fault is on for about two seeds in three
_PARTITION_ON = 0.35


def swarm_plan(
    rng: random.Random,
    nodes: Sequence[str],
    *,
    horizon_ticks: int = 600,
    crash_nodes: Sequence[str] | None = None,
) -> FaultPlan:
    """Draw a fault plan for `nodes` whose faults all fall before `horizon_ticks`.

    Crashes strike only `crash_nodes` (default: every node).
    """
    crashable = nodes if crash_nodes is None else crash_nodes
    crashes: list[Crash] = []
    # A protocol with nothing to crash (threads of one process) draws no crash,
    # and the draws of every other protocol stay as they were.
    if crashable and rng.random() < _ON:
        restart_max = rng.choice(_RESTART_TICKS_MAX)
        for _ in range(rng.choice(_CRASH_COUNTS)):
            crashes.append(
                Crash(
                    node=rng.choice(crashable),
                    tick=rng.randrange(horizon_ticks),
                    restart_ticks=rng.randint(5, restart_max),
                    after_steps=rng.randint(1, 6),
                )
            )
    windows: list[Window] = []
    weather: tuple[tuple[WindowKind, tuple[float, ...]], ...] = (
        ("loss", _LOSS_RATES),
        ("duplicate", _DUPLICATE_RATES),
        ("delay", _DELAY_RATES),
    )
    for kind, rates in weather:
        if rng.random() < _ON:
            rate = rng.choice(rates)
            delay_max = rng.choice(_DELAY_TICKS_MAX) if kind == "delay" else 0
            for _ in range(rng.randint(1, 3)):
                windows.append(_window(rng, nodes, kind, rate, delay_max, horizon_ticks))
    partitions: list[Partition] = []
    if len(nodes) > 1 and rng.random() < _PARTITION_ON:
        for _ in range(rng.randint(1, 2)):
            partitions.append(_partition(rng, nodes, horizon_ticks))
    return FaultPlan(
        crashes=tuple(sorted(crashes, key=lambda c: (c.tick, c.node))),
        windows=tuple(windows),
        partitions=tuple(partitions),
        heal_tick=horizon_ticks,
    )


def _span(rng: random.Random, horizon_ticks: int) -> tuple[int, int]:
    start = rng.randrange(horizon_ticks)
    length = rng.randint(1, horizon_ticks)
    return start, min(horizon_ticks, start + length)


def _window(
    rng: random.Random,
    nodes: Sequence[str],
    kind: WindowKind,
    rate: float,
    delay_max: int,
    horizon_ticks: int,
) -> Window:
    start, end = _span(rng, horizon_ticks)
    links: tuple[Link, ...] | None = None
    if rng.random() < 0.4:
        # A few directed links, so one direction can be flaky while the other is fine.
        pairs = [(a, b) for a in nodes for b in nodes if a != b]
        links = tuple(sorted(rng.sample(pairs, min(len(pairs), rng.randint(1, 3)))))
    return Window(
        kind=kind,
        start=start,
        end=end,
        probability=rate,
        links=links,
        delay_ticks_max=delay_max,
        seed=rng.getrandbits(32),
    )


def _partition(rng: random.Random, nodes: Sequence[str], horizon_ticks: int) -> Partition:
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    cut = rng.randint(1, len(shuffled) - 1)
    start, end = _span(rng, horizon_ticks)
    return Partition(
        start=start,
        end=end,
        src=tuple(sorted(shuffled[:cut])),
        dst=tuple(sorted(shuffled[cut:])),
        both_ways=rng.random() < 0.5,
    )
