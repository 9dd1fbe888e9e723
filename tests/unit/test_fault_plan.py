"""Fault plans as plain data: JSON round trips, and every malformed plan is a ConfigError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from tlasim.faults.plan import Crash, FaultPlan, Partition, Window
from tlasim.faults.strategies import fault_plans
from tlasim.protocols.errors import ConfigError

NODES = ("tm", "r1", "r2", "r3")


@settings(max_examples=150, deadline=None)
@given(plan=fault_plans(NODES))
def test_plan_json_round_trip_gives_an_equal_plan(plan: FaultPlan) -> None:
    assert FaultPlan.from_json(plan.to_json()) == plan


def test_plan_json_round_trip_keeps_every_field() -> None:
    plan = FaultPlan(
        crashes=(Crash("tm", 10, restart_ticks=5, after_steps=3),),
        windows=(
            Window("loss", 0, 20, 0.25, links=(("tm", "r1"),), seed=7),
            Window("delay", 5, 9, 1.0, delay_ticks_max=40),
        ),
        partitions=(Partition(30, 50, ("tm",), ("r1", "r2"), both_ways=False),),
        heal_tick=60,
    )
    assert FaultPlan.from_json(plan.to_json()) == plan


def good() -> dict[str, Any]:
    """A well-formed plan as JSON data; each malformed case below breaks one thing."""
    return {
        "schema": 1,
        "heal_tick": 100,
        "crashes": [{"node": "tm", "tick": 10, "restart_ticks": 5, "after_steps": 1}],
        "windows": [{"kind": "loss", "start": 0, "end": 20, "probability": 0.5,
                     "links": [["tm", "r1"]], "seed": 3}],
        "partitions": [{"start": 30, "end": 50, "src": ["tm"], "dst": ["r1"],
                        "both_ways": True}],
    }


def broken(path: str, value: Any) -> str:
    """`good()` as JSON with the field at dotted `path` set to `value`, or removed if `...`."""
    data = good()
    *parents, last = path.split(".")
    target: Any = data
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    key: Any = int(last) if last.isdigit() else last
    if value is ...:
        del target[key]
    else:
        target[key] = value
    return json.dumps(data)


def test_the_good_plan_parses() -> None:
    FaultPlan.from_json(json.dumps(good())).check_recoverable(NODES)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        (broken("schema", 2), "schema 2 is not 1"),
        (broken("extra", 1), "unknown field(s) extra"),
        (broken("crashes.0.when", 1), "crashes[0]: unknown field(s) when"),
        (broken("windows.0.colour", "red"), "windows[0]: unknown field(s) colour"),
        (broken("crashes", {}), "crashes must be a list"),
        (broken("crashes.0", 3), "crashes[0]: expected a JSON object"),
        (broken("heal_tick", "100"), "heal_tick: expected an integer, got '100'"),
        (broken("heal_tick", True), "heal_tick: expected an integer, got True"),
        (broken("crashes.0.tick", 1.5), "crashes[0].tick: expected an integer, got 1.5"),
        (broken("crashes.0.node", 7), "crashes[0].node: expected a string, got 7"),
        (broken("windows.0.probability", "high"), "probability: expected a number"),
        (broken("partitions.0.both_ways", 1), "both_ways: expected true or false, got 1"),
        (broken("partitions.0.src", "tm"), "src: expected a list of node names"),
        (broken("windows.0.links", [["tm"]]), "links: expected null or a list of [src, dst]"),
        (broken("crashes.0.node", ...), "crashes[0]: missing field(s) node"),
        (broken("windows.0.start", ...), "windows[0]: missing field(s) start"),
        (broken("partitions.0.dst", ...), "partitions[0]: missing field(s) dst"),
        (broken("heal_tick", -1), "heal_tick=-1 must be >= 0"),
        (broken("crashes.0.tick", 100), "is at or after heal_tick=100"),
        (broken("crashes.0.restart_ticks", 0), "restart_ticks >= 1"),
        (broken("crashes.0.after_steps", 0), "after_steps >= 1"),
        (broken("windows.0.end", 101), "needs 0 <= start < end <= heal_tick=100"),
        (broken("windows.0.end", 0), "needs 0 <= start < end <= heal_tick=100"),
        (broken("partitions.0.end", 101), "needs 0 <= start < end <= heal_tick=100"),
        (broken("windows.0.kind", "reorder"), "window kind 'reorder': expected one of"),
        (broken("windows.0.probability", 1.5), "probability must be in [0, 1]"),
        (broken("windows.0.kind", "delay"), "a delay window needs delay_ticks_max >= 1"),
        (broken("partitions.0.dst", ["tm"]), "src and dst must be non-empty, disjoint"),
        (broken("partitions.0.dst", []), "src and dst must be non-empty, disjoint"),
        (broken("partitions.0.dst", ["r2", "r2"]), "without repeats"),
        (broken("windows.0.links", []), "links must be null (every link) or distinct pairs"),
        (broken("windows.0.links", [["tm", "tm"]]), "of two different nodes"),
        (broken("windows.0.delay_ticks_max", 5), "only a delay window has delay_ticks_max"),
        (broken("schema", True), "schema True is not 1"),
        (broken("heal_tick", 2**64), "heal_tick: expected a 64-bit integer"),
        (broken("windows.0.seed", 2**63), "seed: expected a 64-bit integer"),
        (broken("windows.0.probability", 10**400), "probability must be in [0, 1]"),
        (broken("windows.0.probability", float("nan")), "NaN is not a JSON number"),
        (broken("windows.0.probability", float("inf")), "Infinity is not a JSON number"),
        (broken("windows.0.probability", True), "probability: expected a number, got True"),
        (broken("crashes.0.tick", "x" * 10_000), "expected an integer, got 'xxxxxxxxxx"),
        (broken("crashes.0.tick", [[[[[[1]]]]]]), "expected an integer, got [[[[...]]]]"),
        (broken("crashes.0.bad\u001b[2Jfield", 1), "unknown field(s) 'bad\\x1b[2Jfield'"),
        ('{"heal_tick": ' + "9" * 5000 + "}", "not JSON"),
        ('{"crashes": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
        ('{"heal_tick": ' + "9" * 4000 + "}", "heal_tick: expected a 64-bit integer, got <an"),
    ],
)
def test_malformed_plan_json_is_a_config_error_naming_the_culprit(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        FaultPlan.from_json(text, where="plan.json")
    assert str(caught.value).startswith("plan.json: ")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("path", "value", "culprit"),
    [
        ("crashes.0.node", "r9", "r9"),
        ("windows.0.links", [["tm", "zz"]], "zz"),
        ("partitions.0.src", ["ghost"], "ghost"),
    ],
)
def test_plan_naming_an_unknown_node_is_not_recoverable(path: str, value: Any,
                                                        culprit: str) -> None:
    plan = FaultPlan.from_json(broken(path, value))
    with pytest.raises(ConfigError, match=f"unknown node\\(s\\) {culprit}; this run has tm, r1"):
        plan.check_recoverable(NODES)


def test_plan_built_in_python_with_an_integer_of_thousands_of_digits_is_a_config_error() -> None:
    plan = FaultPlan(crashes=(Crash("tm", 10**5000, restart_ticks=1),), heal_tick=20)
    with pytest.raises(ConfigError, match="must be a 64-bit integer"):
        plan.check_wellformed()


def test_unknown_node_with_a_terminal_escape_is_shown_escaped() -> None:
    plan = FaultPlan.from_json(broken("crashes.0.node", "r9\n\x1b[31mACCEPTED"))
    with pytest.raises(ConfigError) as caught:
        plan.check_recoverable(NODES)
    assert "\n" not in str(caught.value) and "\x1b" not in str(caught.value)
    assert "'r9\\n\\x1b[31mACCEPTED'" in str(caught.value)
