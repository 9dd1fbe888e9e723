"""Snapshot transfer cores, messages, configuration and oracle, without the kernel."""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from tlasim.protocols.base import Effect, Persist, Receive, Recover, Send, Timeout, Trace
from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import ConfigError, InvariantViolation, ProtocolViolation
from tlasim.protocols.frozen import FrozenRecord
from tlasim.protocols.snapshot import bugs
from tlasim.protocols.snapshot.config import (
    NO_VALUE,
    SnapshotConfig,
    SnapshotOptions,
    build_config,
    write_id,
)
from tlasim.protocols.snapshot.messages import SCHEMA, from_wire, message, to_wire
from tlasim.protocols.snapshot.oracles import SnapshotOracle
from tlasim.protocols.snapshot.receiver import Receiver
from tlasim.protocols.snapshot.source import Source


def config(bug: str | None = None, **options: Any) -> SnapshotConfig:
    base = {"key_count": 4, "chunk_count": 2, "client_count": 2}
    return build_config(SnapshotOptions(**{**base, **options}), bug, random.Random(3))


def actions(effects: list[Effect]) -> list[str]:
    return [e.action for e in effects if isinstance(e, Trace)]


def sent(effects: list[Effect]) -> list[Any]:
    return [e.msg for e in effects if isinstance(e, Send)]


def put(key: str, client: str = "c1", n: int = 1) -> Receive:
    return Receive(client, message("Put", key=key, id=write_id(client, n)))


def join(snap: int = -1, have: frozenset[str] = frozenset(), pos: int = -1) -> Receive:
    return Receive("rcv", message("Join", snap=snap, have=have, pos=pos))


@pytest.mark.parametrize(
    "options, words",
    [
        ({"chunk_count": 5, "key_count": 4}, "chunk_count"),
        ({"get_ratio": -0.1}, "probability"),
        ({"rcv_join_ticks": 0}, "at least 1"),
        ({"key_count": 2.0}, "integer"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        SnapshotOptions(**options)


def test_chunks_partition_the_keys() -> None:
    cfg = config(key_count=7, chunk_count=3)
    keys = [k for c in cfg.chunks for k in cfg.chunk_keys[c]]
    assert sorted(keys) == sorted(cfg.keys) and all(cfg.chunk_keys.values())


@pytest.mark.parametrize("kind", sorted(SCHEMA.types))
def test_every_message_survives_the_wire(kind: str) -> None:
    values = {
        "key": "k1",
        "id": write_id("c1", 2),
        "val": NO_VALUE,
        "snap": 3,
        "pos": -1,
        "have": frozenset({"ch1"}),
        "chunk": "ch2",
        "data": FrozenRecord(k3=write_id("c2", 1)),
        "from": 4,
        "entries": (FrozenRecord(key="k1", val=write_id("c1", 1)),),
    }
    msg = message(kind, **{f: values[f] for f in SCHEMA.types[kind]})
    wire = msgpack.unpackb(msgpack.packb(to_wire(msg), use_bin_type=True), raw=False)
    assert from_wire(wire) == msg


@pytest.mark.parametrize(
    "data",
    [
        {"type": "Join", "snap": "1", "have": [], "pos": 0},
        {"type": "Records", "from": 1, "entries": [{"key": "k1"}]},
        {"type": "Chunk", "snap": 1, "chunk": "ch1", "data": {"k1": 5}},
        None,
    ],
)
def test_malformed_messages_are_refused(data: Any) -> None:
    with pytest.raises(ProtocolViolation):
        from_wire(data)


def test_the_source_snapshots_at_its_log_position_and_streams_one_chunk_at_a_time() -> None:
    cfg = config()
    src = Source(cfg)
    src.handle(1, put("k1"))
    out = src.handle(2, join())
    assert actions(out) == ["SrcJoin"] and src.snap == 1
    (chunk,) = sent(out)
    assert chunk["chunk"] == "ch1" and chunk["data"]["k1"] == write_id("c1", 1)
    src.handle(3, put("k1", "c2", 1))  # after the snapshot: not in any chunk
    out = src.handle(4, Receive("rcv", message("ChunkAck", snap=1, chunk="ch1")))
    (chunk,) = sent(out)
    assert chunk["chunk"] == "ch2"
    resent = src.handle(5, join(1, frozenset({"ch1"}), -1))
    assert sent(resent)[0]["chunk"] == "ch2"
    out = src.handle(6, Receive("rcv", message("ChunkAck", snap=1, chunk="ch2")))
    assert actions(out) == ["SrcChunkAck", "SrcShip"]
    records = sent(out)[-1]
    assert records["from"] == 2 and [w["val"] for w in records["entries"]] == [write_id("c2", 1)]


def test_the_fuzzy_snapshot_bug_sends_current_data() -> None:
    src = Source(config(bugs.FUZZY_SNAPSHOT))
    src.handle(1, put("k1"))
    src.handle(2, join())
    src.handle(3, put("k1", "c2", 1))
    out = src.handle(4, join(1, frozenset(), -1))
    assert sent(out)[0]["data"]["k1"] == write_id("c2", 1)


def feed(core: Any, log: list[Any], now: int, event: Any) -> list[Effect]:
    out = core.handle(now, event)
    log.extend(e.record for e in out if isinstance(e, Persist) and e.sync)
    return out


def chunk(cfg: SnapshotConfig, name: str, snap: int, value: Any = NO_VALUE) -> Receive:
    data = FrozenRecord({k: value for k in cfg.chunk_keys[name]})
    return Receive("src", message("Chunk", snap=snap, chunk=name, data=data))


def test_the_receiver_applies_a_chunk_once_and_replays_in_order() -> None:
    cfg = config()
    rcv, log = Receiver(cfg), []

    assert actions(feed(rcv, log, cfg.join_tick, Timeout("join"))) == ["RcvJoin"]
    feed(rcv, log, 2, chunk(cfg, "ch1", 0))
    feed(rcv, log, 3, chunk(cfg, "ch2", 0))
    assert rcv.state == "replaying" and rcv.pos == 0
    w1 = FrozenRecord(key=cfg.chunk_keys["ch1"][0], val=write_id("c1", 1))
    ahead = Receive("src", message("Records", **{"from": 2, "entries": (w1,)}))
    assert sent(feed(rcv, log, 4, ahead))[0] == message("RecordsAck", pos=0)  # out of order
    batch = Receive("src", message("Records", **{"from": 1, "entries": (w1,)}))
    feed(rcv, log, 5, batch)
    assert rcv.state == "ready" and rcv.pos == 1 and rcv.kv[w1["key"]] == w1["val"]
    late = feed(rcv, log, 6, chunk(cfg, "ch1", 0))  # a duplicate after the replay began
    assert rcv.kv[w1["key"]] == w1["val"]
    assert sent(late) == [message("ChunkAck", snap=0, chunk="ch1")]
    recovered = Receiver(cfg)
    recovered.handle(7, Recover(tuple(log)))
    assert recovered.view() == rcv.view()


def test_a_ready_receiver_serves_a_read_only_at_the_read_index() -> None:
    cfg = config()
    rcv = Receiver(cfg)
    rcv.state, rcv.snap, rcv.chunks, rcv.pos = "ready", 0, set(cfg.chunks), 0
    get = Receive("c1", message("Get", key="k1", id=write_id("c1", 1)))
    assert sent(rcv.handle(1, get)) == [message("ReadIndexReq", id=write_id("c1", 1))]
    out = rcv.handle(2, Receive("src", message("ReadIndex", id=write_id("c1", 1), pos=1)))
    assert actions(out) == ["RcvReadIndex"]  # position 0 < index 1: the read waits
    w = FrozenRecord(key="k1", val=write_id("c2", 1))
    out = rcv.handle(3, Receive("src", message("Records", **{"from": 1, "entries": (w,)})))
    assert actions(out) == ["RcvRecords", "RcvServe"]
    assert message("GetOk", id=write_id("c1", 1), val=write_id("c2", 1)) in sent(out)


def test_a_receiver_that_is_not_ready_answers_retry() -> None:
    rcv = Receiver(config())
    out = rcv.handle(1, Receive("c1", message("Get", key="k1", id=write_id("c1", 1))))
    assert sent(out) == [message("Retry", id=write_id("c1", 1))]


def vars_(cfg: SnapshotConfig, **changes: Any) -> dict[str, Any]:
    state = {
        "srcLog": (),
        "srcSnap": -1,
        "srcAcked": frozenset(),
        "srcShipped": -1,
        "rcvState": "empty",
        "rcvSnap": -1,
        "rcvChunks": frozenset(),
        "rcvKv": dict.fromkeys(cfg.keys, NO_VALUE),
        "rcvPos": -1,
        "rcvReads": frozenset(),
        "clientOp": {},
        "msgs": {},
    }
    state.update(changes)
    return state


def test_the_oracle_checks_the_replica_against_the_source_log() -> None:
    cfg = config()
    log = (FrozenRecord(key="k1", val=write_id("c1", 1)),)
    stale = vars_(
        cfg, srcLog=log, rcvState="ready", rcvSnap=0, rcvChunks=frozenset(cfg.chunks), rcvPos=1
    )
    with pytest.raises(InvariantViolation, match="ReplicaMatchesSource"):
        SnapshotOracle(cfg).check_step(stale, StepInfo(1, "rcv", "RcvRecords", {}))


def test_the_oracle_catches_a_lost_acknowledged_chunk() -> None:
    cfg = config()
    oracle = SnapshotOracle(cfg)
    acked = {message("ChunkAck", snap=0, chunk="ch1"): 1}
    holding = vars_(cfg, rcvState="receiving", rcvSnap=0, rcvChunks=frozenset({"ch1"}), msgs=acked)
    oracle.check_step(holding, StepInfo(1, "rcv", "RcvChunk", {}))
    with pytest.raises(InvariantViolation, match="AckedIsDurable"):
        oracle.check_step(vars_(cfg, rcvState="receiving"), StepInfo(2, "rcv", "RcvCrash", {}))


def test_the_oracle_catches_a_read_served_before_ready() -> None:
    cfg = config()
    oracle = SnapshotOracle(cfg)
    receiving = vars_(cfg, rcvState="receiving")
    oracle.check_step(
        receiving, StepInfo(1, "c1", "ClientInvoke", {"client": "c1", "kind": "get", "key": "k1"})
    )
    served = {message("GetOk", id=write_id("c1", 1), val=NO_VALUE): 1}
    get = message("Get", key="k1", id=write_id("c1", 1))
    with pytest.raises(InvariantViolation, match="ReadSafe"):
        oracle.check_step(
            vars_(cfg, rcvState="receiving", msgs=served),
            StepInfo(2, "rcv", "RcvGet", {"msg": get}),
        )
