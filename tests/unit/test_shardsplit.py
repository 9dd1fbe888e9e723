"""Shard split cores, messages, configuration and oracle, without the kernel."""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from tlasim.protocols.base import (
    Effect,
    Persist,
    Receive,
    Recover,
    Send,
    SetTimer,
    Start,
    Timeout,
    Trace,
)
from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import ConfigError, InvariantViolation, ProtocolViolation
from tlasim.protocols.frozen import FrozenRecord
from tlasim.protocols.shardsplit import bugs
from tlasim.protocols.shardsplit.client import Client
from tlasim.protocols.shardsplit.config import (
    NO_VALUE,
    ShardSplitConfig,
    ShardSplitOptions,
    build_config,
    write_id,
)
from tlasim.protocols.shardsplit.coordinator import Coordinator
from tlasim.protocols.shardsplit.messages import FIELDS, from_wire, message, to_wire
from tlasim.protocols.shardsplit.oracles import ShardSplitOracle
from tlasim.protocols.shardsplit.shard import Shard


def config(bug: str | None = None, **options: Any) -> ShardSplitConfig:
    base = {"key_count": 4, "split_count": 1, "client_count": 2}
    return build_config(ShardSplitOptions(**{**base, **options}), bug, random.Random(7))


def actions(effects: list[Effect]) -> list[str]:
    return [e.action for e in effects if isinstance(e, Trace)]


def sends(effects: list[Effect]) -> list[Send]:
    return [e for e in effects if isinstance(e, Send)]


def put(dst: str, key: str, client: str = "c1", n: int = 1) -> Receive:
    return Receive(client, message("Put", dst=dst, key=key, id=write_id(client, n)))


# ---- configuration ----


@pytest.mark.parametrize(
    "options, words",
    [
        ({"key_count": 1}, "key_count"),
        ({"key_count": 4, "split_count": 4}, "split_count"),
        ({"initial_shards": 5, "key_count": 4}, "initial_shards"),
        ({"get_ratio": 1.5}, "probability"),
        ({"apply_delay_ticks": 0}, "at least 1"),
        ({"client_count": "3"}, "integer"),
    ],
)
def test_bad_options_are_refused_with_the_option_named(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        ShardSplitOptions(**options)


@pytest.mark.parametrize("seed", range(20))
def test_ranges_partition_the_keys_and_children_halve_their_parent(seed: int) -> None:
    options = ShardSplitOptions(key_count=7, initial_shards=2, split_count=3)
    cfg = build_config(options, None, random.Random(seed))
    owned = [k for s in cfg.initial_shards for k in cfg.shard_keys[s]]
    assert sorted(owned) == sorted(cfg.keys)
    for plan in cfg.splits:
        low, high = (cfg.shard_keys[c] for c in plan.children)
        assert low + high == cfg.shard_keys[plan.parent]
        assert low and high
    assert [p.due_tick for p in cfg.splits] == sorted(p.due_tick for p in cfg.splits)
    assert build_config(options, None, random.Random(seed)) == cfg


# ---- messages ----


def sample(kind: str) -> FrozenRecord:
    values: dict[str, Any] = {
        "dst": "s1",
        "key": "k1",
        "id": write_id("c1", 2),
        "val": NO_VALUE,
        "why": "frozen",
        "c": "c2",
        "routing": FrozenRecord(k1="s2", k2="s3"),
        "parent": "s1",
        "child": "s2",
        "data": FrozenRecord(k1=write_id("c1", 1)),
        "applied": frozenset({write_id("c1", 1), write_id("c2", 4)}),
    }
    return message(kind, **{name: values[name] for name in FIELDS[kind]})


@pytest.mark.parametrize("kind", sorted(FIELDS))
def test_every_message_survives_the_wire(kind: str) -> None:
    msg = sample(kind)
    wire = msgpack.unpackb(msgpack.packb(to_wire(msg), use_bin_type=True), raw=False)
    assert from_wire(wire) == msg


@pytest.mark.parametrize(
    "data",
    [
        {"type": "Nope"},
        {"type": "Freeze"},
        {"type": "Freeze", "parent": "s1", "extra": 1},
        {"type": "PutOk", "id": {"c": "c1"}},
        {"type": "PutOk", "id": {"c": "c1", "n": True}},
        {"type": "Install", "parent": "s1", "child": "s2", "data": [], "applied": []},
        {"type": "Route", "c": "c1", "routing": {"k1": 3}},
        [1, 2],
    ],
)
def test_malformed_messages_are_refused(data: Any) -> None:
    with pytest.raises(ProtocolViolation):
        from_wire(data)


# ---- the shard ----


def test_a_write_is_pending_until_applied_then_acknowledged_once() -> None:
    shard = Shard("s1", config())
    out = shard.handle(0, put("s1", "k1"))
    assert actions(out) == ["ShardAccept"]
    assert [e.delay for e in out if isinstance(e, SetTimer)] == [4]
    assert shard.view()["pending"] == {FrozenRecord(key="k1", val=write_id("c1", 1))}
    # A resend while pending neither re-accepts nor re-arms the timer.
    again = shard.handle(1, put("s1", "k1"))
    assert actions(again) == ["ShardAccept"] and not any(isinstance(e, SetTimer) for e in again)
    timer = next(e.name for e in out if isinstance(e, SetTimer))
    applied = shard.handle(4, Timeout(timer))
    assert actions(applied) == ["ShardApply"]
    assert any(isinstance(e, Persist) and e.sync for e in applied)
    assert shard.kv["k1"] == write_id("c1", 1)
    # A resend after it applied is acknowledged, not applied again.
    late = shard.handle(9, put("s1", "k1"))
    assert actions(late) == ["ShardAckApplied"]
    assert [s.msg["type"] for s in sends(late)] == ["PutOk"]


def test_a_frozen_parent_drains_then_transfers_and_refuses_new_writes() -> None:
    cfg = config()
    shard = Shard("s1", cfg)
    timer = next(e.name for e in shard.handle(0, put("s1", "k1")) if isinstance(e, SetTimer))
    frozen = shard.handle(1, Receive("coord", message("Freeze", parent="s1")))
    assert actions(frozen) == ["ShardFreeze"]  # a write is pending: no transfer yet
    refused = shard.handle(2, put("s1", "k2", "c2", 1))
    assert actions(refused) == ["ShardRedirect"]
    assert sends(refused)[0].msg["why"] == "frozen"
    read = shard.handle(2, Receive("c2", message("Get", dst="s1", key="k1", id=write_id("c2", 2))))
    assert actions(read) == ["ShardGet"]
    drained = shard.handle(5, Timeout(timer))
    assert actions(drained) == ["ShardApply", "ShardTransfer"]
    installs = [s.msg for s in sends(drained) if s.msg["type"] == "Install"]
    assert {m["child"] for m in installs} == set(cfg.splits[0].children)
    assert all(write_id("c1", 1) in m["applied"] for m in installs)


def test_retire_waits_for_pending_writes_unless_the_bug_says_otherwise() -> None:
    for bug, retired in ((None, False), (bugs.RETIRE_WITH_PENDING, True)):
        shard = Shard("s1", config(bug))
        shard.handle(0, put("s1", "k1"))
        shard.handle(1, Receive("coord", message("Freeze", parent="s1")))
        shard.handle(2, Receive("coord", message("Retire", parent="s1")))
        assert (shard.state == "retired") is retired, bug


def test_a_child_installs_once_and_activates_only_after_installing() -> None:
    cfg = config()
    child = cfg.splits[0].children[0]
    shard = Shard(child, cfg)
    early = shard.handle(0, Receive("coord", message("Activate", parent="s1", child=child)))
    assert actions(early) == ["ShardActivate"] and not sends(early) and shard.state == "absent"
    data = FrozenRecord({k: write_id("c1", 1) for k in cfg.shard_keys[child]})
    install = message("Install", parent="s1", child=child, data=data, applied=frozenset())
    shard.handle(1, Receive("s1", install))
    assert shard.state == "splitting"
    shard.handle(2, Receive("coord", message("Activate", parent="s1", child=child)))
    assert shard.state == "active"
    # A late duplicate Install must not overwrite what was written since.
    shard.kv[cfg.shard_keys[child][0]] = write_id("c2", 5)
    again = shard.handle(3, Receive("s1", install))
    assert [s.msg["type"] for s in sends(again)] == ["Installed"]
    assert shard.kv[cfg.shard_keys[child][0]] == write_id("c2", 5)


def test_a_shard_recovers_its_durable_state_and_loses_pending_writes() -> None:
    shard = Shard("s1", config())
    log: list[Any] = []

    def feed(now: int, event: Any) -> list[Effect]:
        out = shard.handle(now, event)
        log.extend(e.record for e in out if isinstance(e, Persist))
        return out

    timer = next(e.name for e in feed(0, put("s1", "k1")) if isinstance(e, SetTimer))
    feed(4, Timeout(timer))
    feed(5, put("s1", "k2", "c2", 1))
    feed(6, Receive("coord", message("Freeze", parent="s1")))
    before = shard.view()
    fresh = Shard("s1", config())
    out = fresh.handle(9, Recover(tuple(log)))
    assert actions(out) == ["ShardRecover"]
    after = fresh.view()
    assert after["pending"] == frozenset() and before["pending"]
    assert {k: after[k] for k in ("shardState", "kv", "applied")} == {
        k: before[k] for k in ("shardState", "kv", "applied")
    }


# ---- the coordinator ----


def test_the_coordinator_runs_a_split_and_recovers_its_phase() -> None:
    cfg = config()
    plan = cfg.splits[0]
    coord = Coordinator(cfg)
    log: list[Any] = []

    def feed(now: int, event: Any) -> list[Effect]:
        out = coord.handle(now, event)
        log.extend(e.record for e in out if isinstance(e, Persist))
        return out

    assert not actions(feed(0, Start()))
    assert actions(feed(plan.due_tick, Timeout("start"))) == ["CoordStartSplit"]
    low, high = plan.children
    assert actions(feed(50, Receive(low, message("Installed", parent="s1", child=low)))) == [
        "CoordInstalled"
    ]
    out = feed(51, Receive(high, message("Installed", parent="s1", child=high)))
    assert actions(out) == ["CoordInstalled", "CoordSwitch"]
    routing = coord.view()["routing"]
    assert {routing[k] for k in cfg.shard_keys["s1"]} == {low, high}
    recovered = Coordinator(cfg)
    recovered.handle(60, Recover(tuple(log)))
    assert recovered.view()["routing"] == routing
    assert recovered.view()["splitPhase"] == {"s1": "retiring"}


def test_the_unsynced_split_progress_bug_forgets_the_switch() -> None:
    cfg = config(bugs.SPLIT_PROGRESS_NOT_DURABLE)
    coord = Coordinator(cfg)
    out = coord.handle(cfg.splits[0].due_tick, Timeout("start"))
    assert [e.sync for e in out if isinstance(e, Persist)] == [False]


# ---- the client ----


def test_a_client_retries_through_the_coordinator_and_ignores_stale_answers() -> None:
    cfg = config(ops_per_client=2)
    client = Client("c1", cfg)
    client.handle(0, Start())
    invoke = client.handle(5, Timeout("next"))
    assert actions(invoke) == ["ClientInvoke"]
    request = sends(invoke)[0].msg
    op_id = request["id"]
    assert op_id == write_id("c1", 1)
    redirected = client.handle(6, Receive("s1", message("Retry", id=op_id, why="frozen")))
    assert actions(redirected) == ["ClientRedirected"]
    asked = client.handle(12, Timeout("retry"))
    assert [s.msg["type"] for s in sends(asked)] == ["RouteReq"]
    routing = FrozenRecord({k: "s9" for k in cfg.keys})
    resent = client.handle(14, Receive("coord", message("Route", c="c1", routing=routing)))
    assert [s.dst for s in sends(resent)] == ["s9"]
    answer = (
        message("PutOk", id=op_id)
        if request["type"] == "Put"
        else message("GetOk", id=op_id, val=NO_VALUE)
    )
    assert actions(client.handle(15, Receive("s9", answer))) == ["ClientReturn"]
    assert actions(client.handle(16, Receive("s9", answer))) == ["ClientIgnore"]
    with pytest.raises(ProtocolViolation, match="do not crash"):
        client.restore(())


# ---- the oracle ----


def spec_state(cfg: ShardSplitConfig, **changes: Any) -> dict[str, Any]:
    state = {
        "shardState": {s: "active" if s in cfg.initial_shards else "absent" for s in cfg.shards},
        "kv": {s: {k: NO_VALUE for k in cfg.keys} for s in cfg.shards},
        "pending": {s: frozenset() for s in cfg.shards},
        "routing": cfg.initial_routing(),
    }
    state.update(changes)
    return state


def step(tick: int, action: str, **params: Any) -> StepInfo:
    return StepInfo(tick, params.get("client"), action, params)


def test_the_oracle_reports_a_lost_acknowledged_write() -> None:
    cfg = config()
    oracle = ShardSplitOracle(cfg)
    written = spec_state(cfg)
    written["kv"]["s1"]["k1"] = write_id("c1", 1)
    oracle.check_step(spec_state(cfg), step(1, "ClientInvoke", client="c1", kind="put", key="k1"))
    oracle.check_step(
        written, step(5, "ClientReturn", client="c1", msg=message("PutOk", id=write_id("c1", 1)))
    )
    with pytest.raises(InvariantViolation, match=r"no lost write: write c1\.1 of key k1"):
        oracle.check_step(spec_state(cfg), step(6, "ShardCrash", shard="s1"))


def test_the_oracle_reports_a_stale_read() -> None:
    cfg = config()
    oracle = ShardSplitOracle(cfg)
    written = spec_state(cfg)
    written["kv"]["s1"]["k1"] = write_id("c1", 1)
    oracle.check_step(spec_state(cfg), step(1, "ClientInvoke", client="c1", kind="put", key="k1"))
    oracle.check_step(
        written, step(5, "ClientReturn", client="c1", msg=message("PutOk", id=write_id("c1", 1)))
    )
    oracle.check_step(written, step(6, "ClientInvoke", client="c2", kind="get", key="k1"))
    stale = message("GetOk", id=write_id("c2", 1), val=NO_VALUE)
    with pytest.raises(InvariantViolation, match="linearizability: key 'k1'"):
        oracle.check_step(written, step(8, "ClientReturn", client="c2", msg=stale))


@pytest.mark.parametrize(
    "change, words",
    [
        ({"shardState": "frozen-and-active-child"}, "SingleOwner"),
        ({"shardState": "retired-with-pending"}, "SafeRetire"),
        ({"shardState": "retired-but-routed"}, "RouteLive"),
    ],
)
def test_the_oracle_checks_the_seed_invariants(change: dict[str, str], words: str) -> None:
    cfg = config()
    low = cfg.splits[0].children[0]
    state = spec_state(cfg)
    case = change["shardState"]
    if case == "frozen-and-active-child":
        state["shardState"]["s1"], state["shardState"][low] = "frozen", "active"
    elif case == "retired-with-pending":
        state["shardState"]["s1"] = "retired"
        state["pending"]["s1"] = frozenset({FrozenRecord(key="k1", val=write_id("c1", 1))})
        state["routing"] = {k: low for k in cfg.keys}
    else:
        state["shardState"]["s1"] = "retired"
    with pytest.raises(InvariantViolation, match=words):
        ShardSplitOracle(cfg).check_step(state, step(1, "Whatever"))
