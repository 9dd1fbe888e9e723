"""Mutations of a fault plan: a plan near another, for a campaign that
steers toward spec states no run has reached (sim/campaign/guide.py).

A mutant keeps most of its parent, so the run it gives stays near the run
that found something new, and moves one fault at a time: shift a fault in
time, add one (drawn as swarm mode would), drop one, or retarget one (another
node, other links, another cut, another rate). Every mutant is a plan the
kernel accepts: well formed, naming only real nodes, crashing only nodes that
may crash, all faults before the plan's heal tick. The draw uses only the
random stream it is given, so one stream gives one mutant.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from tlasim.faults.plan import Crash, FaultPlan, Partition, Window
from tlasim.faults.swarm import swarm_plan
from tlasim.protocols.errors import ConfigError

__all__ = ["MUTATIONS", "mutate_plan"]

MUTATIONS = ("shift", "add", "drop", "retarget")
SHIFT_TICKS_MAX = 60  # how far in time one shift moves a fault
_ATTEMPTS = 8  # draws before giving up on a mutant the kernel would refuse

Fault = Crash | Window | Partition


def mutate_plan(
    rng: random.Random,
    plan: FaultPlan,
    nodes: Sequence[str],
    crash_nodes: Sequence[str],
    *,
    count: int = 1,
) -> tuple[FaultPlan, list[str]]:
    """`count` mutations of `plan`, stacked; returns the mutant and the
    mutations' names (such as `shift crash r2`).

    A mutation that cannot apply (drop from an empty plan), changes nothing
    or gives a plan the kernel would refuse is drawn again; after a few tries
    it is left out. Mutations that undo each other (add a fault, then drop
    it) are followed by one more, so a mutant is its parent only when no
    mutation of it applies.
    """
    original = plan
    done: list[str] = []
    for _ in range(count):
        plan = _mutated_once(rng, plan, nodes, crash_nodes, done)
    if done and plan == original:
        plan = _mutated_once(rng, plan, nodes, crash_nodes, done)
    return plan, done


def _mutated_once(
    rng: random.Random, plan: FaultPlan, nodes: Sequence[str], crash_nodes: Sequence[str],
    done: list[str],
) -> FaultPlan:
    for _attempt in range(_ATTEMPTS):
        mutant = _apply(rng, rng.choice(MUTATIONS), plan, nodes, crash_nodes)
        if mutant is None or mutant[0] == plan:
            continue
        candidate, what = mutant
        try:
            candidate.check_wellformed()
            candidate.check_recoverable(nodes, crash_nodes=crash_nodes)
        except ConfigError:
            continue
        done.append(what)
        return candidate
    return plan


def _apply(
    rng: random.Random, kind: str, plan: FaultPlan, nodes: Sequence[str],
    crash_nodes: Sequence[str],
) -> tuple[FaultPlan, str] | None:
    faults = plan.faults()
    heal = max(plan.heal_tick, 1)
    if kind == "add":
        # A fault as swarm mode draws one: the kinds and rates it knows.
        drawn = swarm_plan(rng, nodes, horizon_ticks=heal, crash_nodes=crash_nodes).faults()
        if not drawn:
            return None
        fault = rng.choice(drawn)
        return _with(plan, [*faults, fault]), f"add {_name(fault)}"
    if not faults:
        return None
    index = rng.randrange(len(faults))
    fault = faults[index]
    if kind == "drop":
        return _with(plan, faults[:index] + faults[index + 1:]), f"drop {_name(fault)}"
    moved = (_shifted(rng, fault, heal) if kind == "shift"
             else _retargeted(rng, fault, nodes, crash_nodes))
    if moved is None or moved == fault:
        return None
    return _with(plan, [*faults[:index], moved, *faults[index + 1:]]), f"{kind} {_name(fault)}"


def _with(plan: FaultPlan, faults: list[Fault]) -> FaultPlan:
    crashes = sorted((f for f in faults if isinstance(f, Crash)), key=lambda c: (c.tick, c.node))
    return dataclasses.replace(
        plan,
        crashes=tuple(crashes),
        windows=tuple(f for f in faults if isinstance(f, Window)),
        partitions=tuple(f for f in faults if isinstance(f, Partition)),
    )


def _name(fault: Fault) -> str:
    if isinstance(fault, Crash):
        return f"crash {fault.node}"
    if isinstance(fault, Window):
        return f"{fault.kind} window"
    return "partition"


def _shifted(rng: random.Random, fault: Fault, heal: int) -> Fault:
    delta = rng.randint(-SHIFT_TICKS_MAX, SHIFT_TICKS_MAX) or 1
    if isinstance(fault, Crash):
        if rng.random() < 0.3:
            # Another step of the same handler: a crash between other effects.
            return dataclasses.replace(fault, after_steps=rng.randint(1, 6))
        return dataclasses.replace(fault, tick=min(heal - 1, max(0, fault.tick + delta)))
    length = fault.end - fault.start
    start = min(heal - 1, max(0, fault.start + delta))
    return dataclasses.replace(fault, start=start, end=min(heal, max(start + 1, start + length)))


def _retargeted(
    rng: random.Random, fault: Fault, nodes: Sequence[str], crash_nodes: Sequence[str]
) -> Fault | None:
    if isinstance(fault, Crash):
        if not crash_nodes:
            return None
        return dataclasses.replace(fault, node=rng.choice(crash_nodes),
                                   restart_ticks=rng.randint(5, 150))
    if isinstance(fault, Window):
        pairs = [(a, b) for a in nodes for b in nodes if a != b]
        links = None if not pairs or rng.random() < 0.3 else tuple(
            sorted(rng.sample(pairs, min(len(pairs), rng.randint(1, 3)))))
        probability = min(1.0, max(0.01, fault.probability * rng.choice((0.5, 2.0))))
        return dataclasses.replace(fault, links=links, probability=probability,
                                   seed=rng.getrandbits(32))
    if len(nodes) < 2:
        return None
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    cut = rng.randint(1, len(shuffled) - 1)
    return dataclasses.replace(fault, src=tuple(sorted(shuffled[:cut])),
                               dst=tuple(sorted(shuffled[cut:])),
                               both_ways=rng.random() < 0.5)
