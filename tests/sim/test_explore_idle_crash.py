"""Idle crashes: the explorer crashes a node between its own steps, too.

A crash otherwise strikes only after a step of the crashing node, so a node
that has taken no step yet (an RM holding a transaction's work before any
Prepare reached it) never crashed in any explored schedule: exactly where
the "work held in memory is gone" rule of recovery lives.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import ConfigError
from tlasim.sim.explore.moves import CRASH, Move
from tlasim.sim.explore.schedule import Schedule, replay
from tlasim.sim.explore.search import SearchBounds, explore
from tlasim.sim.explore.system import ExploredSystem, FaultBounds
from tlasim.sim.kernel.rng import split

TWOPC = get_protocol("twopc")
OPTIONS = TWOPC.make_options({"rm_count": 2, "tx_count": 1})


def crashes_before_any_vote(idle_crashes: bool) -> list[tuple[Move, ...]]:
    """Schedules whose RM crashes holding t1 as working, with nothing logged."""
    config = TWOPC.configure(OPTIONS, None, split(0).workload)
    found = []

    def on_step(before: Mapping[str, Any], step: StepInfo, after: Mapping[str, Any],
                path: Any) -> None:
        if step.action == "RMCrash":
            rm = step.params["rm"]
            if before["rmState"]["t1"][rm] == "working" and not before["rmLog"][rm]:
                found.append(path())

    bounds = SearchBounds(FaultBounds(crashes=1, idle_crashes=idle_crashes), max_depth=6)
    explore(TWOPC, config, bounds, on_step=on_step)
    return found


def test_only_idle_crashes_crash_an_rm_before_it_has_voted() -> None:
    assert crashes_before_any_vote(idle_crashes=False) == []
    schedules = crashes_before_any_vote(idle_crashes=True)
    assert schedules
    assert all(schedule[-1].kind == CRASH for schedule in schedules)


def test_a_schedule_with_a_crash_move_replays_and_round_trips() -> None:
    moves = crashes_before_any_vote(idle_crashes=True)[0]
    again = tuple(Move.from_json(m.to_json(), "move") for m in moves)
    assert again == moves
    schedule = Schedule("twopc", 0, None, OPTIONS.as_dict(), FaultBounds(crashes=1), moves)
    stream = io.BytesIO()
    done = replay(schedule, stream=stream, decide_liveness=False)
    assert done.moves_made == len(moves)
    lines = [json.loads(line) for line in stream.getvalue().decode().splitlines()]
    last = [line for line in lines if line["event"] == "tla_trace"][-1]
    assert last["action"] == "RMCrash"
    assert last["vars"]["rmState"]["t1"][last["params"]["rm"]] == "working"


def test_a_crash_move_is_refused_when_no_crash_is_left_or_the_node_is_down() -> None:
    config = TWOPC.configure(OPTIONS, None, split(0).workload)
    system = ExploredSystem(TWOPC, config, FaultBounds(crashes=0, idle_crashes=True))
    system.initial_step()
    system.apply(Move("start", "r1"))
    assert Move(CRASH, "r1") not in set(system.moves())
    with pytest.raises(ConfigError, match="may not crash"):
        system.apply(Move(CRASH, "r1"))
    with pytest.raises(ConfigError, match="only a node's own move can crash it"):
        Move.from_json({"kind": CRASH, "node": "r1", "crash_after": 1}, "move")
