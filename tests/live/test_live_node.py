"""A live node process against hostile datagrams and a torn log (real processes, no cluster)."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgpack

from tlasim.faults.plan import NO_FAULTS_PLAN
from tlasim.sim.live.config import LOOPBACK, NodeConfig
from tlasim.sim.live.disk import encode_record
from tlasim.sim.live.nodelog import read_node_log
from tlasim.sim.live.wire import RunKey

from .one_node import OneNode

TWOPC_NODES = ("tm", "r1", "r2", "r3")
FRAMES = 3000


def _junk(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.randint(-(2**63), 2**64 - 1)
    if kind == 1:
        return "".join(rng.choice("t1r2 Prepare\x00\n\"'") for _ in range(rng.randrange(12)))
    if kind == 2:
        return rng.choice([None, True, False, 1.5])
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(8)))
    if kind == 4:
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 5:
        return {str(_junk(rng, depth + 1)): _junk(rng, depth + 1) for _ in range(rng.randrange(4))}
    return {"type": rng.choice(["Prepare", "Commit", "Abort", "Nope"]),
            "tx": _junk(rng, depth + 1), "rm": _junk(rng, depth + 1)}


def hostile_frames(rng: random.Random, count: int, key: RunKey) -> list[tuple[str, bytes]]:
    """(sender, datagram) pairs, none of them a message of the run from its sender.

    Most are sealed with the run's key, as a peer gone wrong could send them,
    so that every check after the tag's is reached too.
    """
    frames: list[tuple[str, bytes]] = []
    for _ in range(count):
        kind = rng.randrange(8)
        if kind == 0:  # noise, with no tag
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        elif kind == 1:
            data = key.seal(msgpack.packb(_junk(rng)))
        elif kind == 2:  # a frame claiming another sender than the socket it comes from
            data = key.seal(msgpack.packb({"src": "r2", "clock": 1, "msg": {
                "type": "Prepare", "tx": "t1", "rm": "r1"}}))
        elif kind == 3:
            data = key.seal(msgpack.packb({"src": "tm", "clock": 1,
                                           "msg": msgpack.ExtType(rng.randrange(128), b"\x00")}))
        elif kind == 4:  # the frame's shape, a message no decoder or core can take
            data = key.seal(msgpack.packb({"src": "tm", "clock": rng.randrange(99), "msg": {
                "type": rng.choice(["Prepare", "Commit", "Abort", "Zap"]),
                "tx": rng.choice([5, None, ["t1"], "t99", {"a": 1}]),
                "rm": rng.choice(["r1", 7, None])}}))
        elif kind == 5:
            data = key.seal(msgpack.packb({"src": "tm", "clock": -rng.randrange(1, 99),
                                           "msg": {}}))
        elif kind == 6:  # a real message of the run, with no tag or a forged one
            body = msgpack.packb({"src": "tm", "clock": 1, "msg": {
                "type": "Prepare", "tx": "t1", "rm": "r1"}})
            data = rng.choice([b"", bytes(32), key.tag(body)[::-1]]) + body
        else:  # a clock far ahead of any the run reached
            data = key.seal(msgpack.packb({"src": "tm", "clock": 2**40 + rng.randrange(2**61),
                                           "msg": {"type": "Abort", "tx": "t1", "rm": "r1"}}))
        frames.append(("tm", data))
    return frames


def test_thousands_of_hostile_datagrams_are_dropped_and_the_node_still_answers(
    tmp_path: Path,
) -> None:
    node = OneNode(tmp_path, "r1", TWOPC_NODES)
    try:
        frames = hostile_frames(random.Random(14), FRAMES, node.key)
        stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stranger.bind((LOOPBACK, 0))
        for number, (sender, data) in enumerate(frames):
            node.send_raw(sender, data)
            if number % 100 == 0:
                stranger.sendto(b"\x80", node.sockets["r1"].getsockname())
                time.sleep(0.002)  # keep within the socket's buffer
        stranger.close()
        strangers = (FRAMES + 99) // 100
        # The node is alive and takes a real message: it answers the TM's Prepare.
        node.send("tm", 1, {"type": "Prepare", "tx": "t1", "rm": "r1"})
        reply = node.receive("tm")
        assert reply.src == "r1" and reply.msg["tx"] == "t1"
        assert reply.msg["type"] in ("Prepared", "Aborted")
        # Every hostile datagram was counted by why it was dropped.
        give_up = time.monotonic() + 30
        while sum(node.dropped().values()) < FRAMES + strangers and time.monotonic() < give_up:
            time.sleep(0.05)
        dropped = node.dropped()
        assert sum(dropped.values()) == FRAMES + strangers, dropped
        assert dropped["unknown-sender"] == strangers
        assert {"bad-mac", "malformed", "wrong-sender", "clock-jump"} <= set(dropped)
        assert {"undecodable", "refused-by-core"} & set(dropped)
    finally:
        code = node.stop()
    assert code == 0, node.stderr()
    # No hostile datagram reached the trace: its one receipt is the real Prepare.
    receipts = [line for line in read_node_log(tmp_path / "r1.trace") if line.recv is not None]
    assert [line.action for line in receipts] == ["RMRcvPrepare"]


def test_a_node_killed_mid_write_restarts_from_its_whole_records(tmp_path: Path) -> None:
    # What a SIGKILL in the middle of a sync and of a trace line leaves behind.
    whole = encode_record({"kind": "prepared", "tx": "t1"})
    (tmp_path / "r1.log").write_bytes(whole + encode_record({"kind": "x", "tx": "t2"})[:5])
    (tmp_path / "r1.trace").write_bytes(b'{"event":"tla_trace","clo')
    node = OneNode(tmp_path, "r1", TWOPC_NODES, incarnation=1)
    try:
        # Recovered as prepared on t1, r1 answers a Prepare with its vote again.
        node.send("tm", 1, {"type": "Prepare", "tx": "t1", "rm": "r1"})
        reply = node.receive("tm")
        assert (reply.msg["type"], reply.msg["tx"]) == ("Prepared", "t1")
    finally:
        code = node.stop()
    assert code == 0, node.stderr()
    assert (tmp_path / "r1.log").read_bytes() == whole
    lines = read_node_log(tmp_path / "r1.trace")
    assert [line.action for line in lines[:2]] == ["RMCrash", "RMRecover"]
    assert lines[0].view["rmState"]["t1"] == "prepared" and not lines[0].up
    assert any(e["kind"] == "torn-record" for e in node.events())


def test_a_node_that_cannot_bind_its_port_says_so_and_exits_2(tmp_path: Path) -> None:
    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    taken.bind((LOOPBACK, 0))
    port = taken.getsockname()[1]
    try:
        config = NodeConfig(
            protocol="twopc", seed=0, bug=None, overrides={}, node="tm", incarnation=0,
            tick_ms=5.0, epoch=0.0, peers={"tm": port, "r1": 9, "r2": 10, "r3": 11},
            sock_fd=-1, run_dir=str(tmp_path), plan=NO_FAULTS_PLAN.to_dict(),
            key="00" * 32, run_id="by-hand",
        )
        path = tmp_path / "tm.json"
        config.write(path)
        done = subprocess.run([sys.executable, "-m", "tlasim.sim.live.node", str(path)],
                              capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert done.returncode == 2
    assert f"cannot bind 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_node_config_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"protocol": "twopc"}')
    done = subprocess.run([sys.executable, "-m", "tlasim.sim.live.node", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "exactly the fields" in done.stderr
