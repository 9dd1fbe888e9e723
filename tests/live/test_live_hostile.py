"""The live runtime under hostile input (issue 28): one test per class of input.

A datagram forged from a peer's port, a frame whose clock leaps ahead,
garbage in a node's events file, and a node started by hand with a bad
config, `go` line, socket or trace: none may crash a node or the run, make
a run's verdict wrong, or print a traceback.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import msgpack
import pytest

from tlasim.faults.plan import NO_FAULTS_PLAN, Crash, FaultPlan
from tlasim.sim.cli.live import report
from tlasim.sim.live.config import LOOPBACK, NodeConfig
from tlasim.sim.live.events import EVENTS_MAX_BYTES, EventTotals, last_crash, read_events
from tlasim.sim.live.files import LiveRunError
from tlasim.sim.live.nodelog import read_node_log
from tlasim.sim.live.supervisor import LiveOptions, LiveResult, Supervisor
from tlasim.sim.live.wire import CLOCK_WINDOW, RunKey
from tlasim.tracing.validation.validator import validate_trace

from .one_node import OneNode

TWOPC_NODES = ("tm", "r1", "r2", "r3")
ONE_TX = {"tx_count": 1, "rm_count": 2, "no_vote_probability": 0.0,
          "self_abort_probability": 0.0}
TIMEOUT_S = 90.0
COMMIT = {"type": "Commit", "tx": "t1", "rm": "r1"}


def frame_body(src: str, clock: int, msg: Any) -> bytes:
    body: bytes = msgpack.packb({"src": src, "clock": clock, "msg": msg})
    return body


# A Commit to r1 that the TM never sent: an RM takes a Commit in any state, so
# a node that let it in would log a receipt with no send, which no merge can
# order. Forged with no tag, a tag of zeros, and another run's key.
FORGED = [
    frame_body("tm", 1, COMMIT),
    bytes(32) + frame_body("tm", 1, COMMIT),
    RunKey(secrets.token_bytes(32), "another run").seal(frame_body("tm", 1, COMMIT)),
]

# What anything that can write to a node's events file might leave there.
GARBAGE_EVENTS = [
    b"\x00\xff not json at all",
    b"[" * 100_000,  # nested past any parser's stack
    b'{"kind": "dropped", "incarnation": 0, "ts": 1, "counts": {"x": ' + b"9" * 5000 + b"}}",
    b'{"kind": "dropped", "incarnation": 0, "ts": 1, "counts": {"x": 1e400}}',
    b'{"kind": "dropped", "incarnation": 0, "ts": 1, "counts": {"x": "many"}}',
    b'{"kind": "dropped", "incarnation": 0, "ts": 1, "counts": [1, 2]}',
    b'{"kind": "crash", "incarnation": 0, "ts": 1, "restart_ticks": "soon"}',
    b'{"kind": "crash", "incarnation": true, "ts": 1, "after_steps": 1, "tick": 0,'
    b' "restart_ticks": 1, "faults": []}',
    b'{"kind": "loss", "incarnation": -1, "ts": 1}',
    b'{"kind": 7}',
    b"[1, 2, 3]",
    b'{"kind": "loss", "kind": "crash", "incarnation": 0, "ts": 1}',
]


class MeddledSupervisor(Supervisor):
    """A supervisor that, once every node is up, lets the test meddle with the run."""

    meddle: Any = None

    def _start_all(self) -> None:
        super()._start_all()
        self.meddle(self)


def run_meddled(tmp_path: Path, plan: FaultPlan, meddle: Any) -> LiveResult:
    supervisor = MeddledSupervisor(
        "twopc", 1, overrides=ONE_TX, plan=plan,
        options=LiveOptions(tick_ms=5.0, timeout_s=TIMEOUT_S), run_dir=tmp_path / "run",
    )
    supervisor.meddle = meddle
    return supervisor.run()


def test_a_datagram_forged_from_a_peers_port_is_dropped_and_the_run_is_accepted(
    tmp_path: Path,
) -> None:
    def forge(supervisor: Supervisor) -> None:
        r1 = supervisor.nodes["r1"].sock.getsockname()
        # From the TM's own port (the supervisor holds it), and from a stranger's.
        for data in FORGED:
            supervisor.nodes["tm"].sock.sendto(data, r1)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
            stranger.sendto(FORGED[0], r1)

    result = run_meddled(tmp_path, NO_FAULTS_PLAN, forge)
    assert result.dropped == {"bad-mac": len(FORGED), "unknown-sender": 1}
    assert result.merged.failure is None and result.merged.unfinished is None
    verdict = validate_trace(result.trace_path, explain=False)
    assert verdict.accepted, verdict.summary()


def test_a_frame_with_a_huge_clock_is_dropped_and_the_node_keeps_its_clock(
    tmp_path: Path,
) -> None:
    node = OneNode(tmp_path, "r1", TWOPC_NODES)
    try:
        # Sealed with the run's key, as a peer gone wrong could send it.
        node.send("tm", 2**62, {"type": "Prepare", "tx": "t1", "rm": "r1"})
        node.send("tm", 1, {"type": "Prepare", "tx": "t1", "rm": "r1"})
        reply = node.receive("tm")
        # The node answers the real Prepare with a clock its peers still take.
        assert reply.msg["type"] == "Prepared" and reply.clock < CLOCK_WINDOW
    finally:
        code = node.stop()
    assert code == 0, node.stderr()
    assert node.dropped() == {"clock-jump": 1}
    lines = read_node_log(tmp_path / "r1.trace")
    assert max(line.clock for line in lines) < CLOCK_WINDOW
    assert [line.action for line in lines if line.recv is not None] == ["RMRcvPrepare"]


def test_garbage_in_an_events_file_is_skipped_and_counted_never_fatal(tmp_path: Path) -> None:
    path = tmp_path / "r1.events"
    crash = {"incarnation": 0, "kind": "crash", "ts": 9, "after_steps": 2, "tick": 0,
             "restart_ticks": 3, "faults": ["crashes/0"]}
    dropped = {"incarnation": 0, "kind": "dropped", "ts": 9, "counts": {"bad-mac": 2}}
    good = [json.dumps(crash).encode(), json.dumps(dropped).encode()]
    path.write_bytes(b"\n".join([*GARBAGE_EVENTS, *good]) + b"\n")
    assert last_crash(path, 0) == crash
    totals = EventTotals()
    totals.add(path)
    assert totals.faults == {"crash": 1} and totals.dropped == {"bad-mac": 2}
    assert totals.unreadable == len(GARBAGE_EVENTS) and totals.problem


def test_an_events_file_that_is_no_regular_file_or_too_large_counts_as_unreadable(
    tmp_path: Path,
) -> None:
    folder, fifo, huge = tmp_path / "a.events", tmp_path / "b.events", tmp_path / "c.events"
    folder.mkdir()
    os.mkfifo(fifo)  # a plain read of it would wait forever for a writer
    with huge.open("wb") as stream:
        stream.truncate(EVENTS_MAX_BYTES + 1)
    for path in (folder, fifo, huge):
        read = read_events(path)
        assert (read.events, read.unreadable) == ([], 1) and read.problem
        assert last_crash(path, 0) is None


def test_a_run_whose_events_files_take_garbage_finishes_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    def scribble(supervisor: Supervisor) -> None:
        # Into the events file of a node the plan SIGKILLs and restarts (the
        # supervisor reads it to restart the node, which reads it to recover).
        for node in ("r2", "tm"):
            with (supervisor.run_dir / f"{node}.events").open("ab") as stream:
                stream.write(b"\n".join(GARBAGE_EVENTS) + b"\n")

    plan = FaultPlan(crashes=(Crash("r2", 0, 4, 2),), heal_tick=50)
    result = run_meddled(tmp_path, plan, scribble)
    assert result.events["crash"] == 1 and result.incarnations["r2"] == 2
    assert result.unreadable_events == 2 * len(GARBAGE_EVENTS)
    report(result)
    said = capsys.readouterr().out
    assert f"unreadable event lines: {2 * len(GARBAGE_EVENTS)} skipped (first: " in said
    assert result.merged.failure is None and result.merged.unfinished is None
    verdict = validate_trace(result.trace_path, explain=False)
    assert verdict.accepted, verdict.summary()


def test_a_node_killed_from_outside_the_run_is_the_runs_error_not_a_bug(
    tmp_path: Path,
) -> None:
    def kill(supervisor: Supervisor) -> None:
        process = supervisor.nodes["r1"].process
        assert process is not None
        process.send_signal(signal.SIGKILL)

    with pytest.raises(LiveRunError, match=r"r1 was killed .* no crash of the plan"):
        run_meddled(tmp_path, NO_FAULTS_PLAN, kill)


# ---- a node started by hand ----


def node_config(tmp_path: Path, port: int, **changes: Any) -> dict[str, Any]:
    """A valid config of r1 bound to `port`, as JSON data, with `changes`."""
    config = NodeConfig(
        protocol="twopc", seed=0, bug=None, overrides={}, node="r1", incarnation=0,
        tick_ms=50.0, epoch=0.0, peers={"tm": 9, "r1": port, "r2": 10, "r3": 11},
        sock_fd=-1, run_dir=str(tmp_path), plan=NO_FAULTS_PLAN.to_dict(),
        key=secrets.token_hex(32), run_id="by-hand",
    )
    return {**asdict(config), **changes}


def start_by_hand(config: bytes | dict[str, Any], tmp_path: Path, *, stdin: bytes = b"",
                  pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "r1.json"
    path.write_bytes(config if isinstance(config, bytes) else json.dumps(config).encode())
    return subprocess.run([sys.executable, "-m", "tlasim.sim.live.node", str(path)],
                          input=stdin.decode(), capture_output=True, text=True, timeout=60,
                          pass_fds=pass_fds)


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tlasim: error: "), done.stderr
    for word in words:
        assert word in lines[0]


def free_port() -> int:
    """A port no socket holds now (a node started with sock_fd -1 binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def bound_socket() -> Any:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((LOOPBACK, 0))
    yield sock
    sock.close()


@pytest.mark.parametrize("epoch", ["nan", "inf", "-inf", "1e400", "-5", "0x1p3", "soon"])
def test_a_hand_started_node_refuses_a_go_epoch_that_is_no_time(
    tmp_path: Path, bound_socket: socket.socket, epoch: str,
) -> None:
    port = bound_socket.getsockname()[1]
    config = node_config(tmp_path, port, sock_fd=bound_socket.fileno())
    done = start_by_hand(config, tmp_path, stdin=f"go {epoch}\n".encode(),
                         pass_fds=(bound_socket.fileno(),))
    assert done.stdout.strip() == "ready"
    assert_one_line_error(done, "epoch")


@pytest.mark.parametrize(("field", "value", "said"), [
    ("epoch", float("nan"), "NaN"), ("epoch", float("inf"), "Infinity"),
    ("epoch", 1e300, "epoch"), ("tick_ms", 0.0, "tick_ms"), ("tick_ms", "5", "tick_ms"),
    ("seed", 2**80, "seed"), ("seed", True, "seed"), ("incarnation", -1, "incarnation"),
    ("peers", {"tm": 9, "r1": 70000, "r2": 10, "r3": 11}, "peers"),
    ("peers", {"tm": 9, "r1": 9, "r2": 10, "r3": 11}, "peers"), ("sock_fd", 2**40, "sock_fd"),
    ("key", "zz" * 32, "key"), ("run_id", ["x"], "run_id"), ("node", "../../r1", "node"),
    ("bug", "no-such-bug", "bug"), ("plan", {"x": 1}, "plan"), ("protocol", "lockfree-queue",
                                                                "live"),
])
def test_a_hand_started_node_refuses_a_config_field_out_of_kind(
    tmp_path: Path, field: str, value: Any, said: str,
) -> None:
    config = node_config(tmp_path, free_port(), incarnation=1)
    config[field] = value
    if field == "node":
        config["peers"] = {**config["peers"], value: 12}
    # json.dumps writes NaN and Infinity, which are no JSON: a hand may too.
    assert_one_line_error(start_by_hand(config, tmp_path), said)
    assert not list(tmp_path.parent.parent.glob("r1.*"))  # no file outside the run's folder


def test_a_hand_started_node_refuses_a_deep_or_huge_json_config(tmp_path: Path) -> None:
    assert_one_line_error(start_by_hand(b"[" * 100_000 + b"]" * 100_000, tmp_path), "nested")
    number = json.dumps(node_config(tmp_path, 9)).replace('"seed": 0', '"seed": ' + "7" * 9000)
    assert_one_line_error(start_by_hand(number.encode(), tmp_path), "r1.json")


@pytest.mark.parametrize("kind", ["closed", "a file", "tcp", "another port"])
def test_a_hand_started_node_refuses_a_sock_fd_that_is_not_its_udp_socket(
    tmp_path: Path, bound_socket: socket.socket, kind: str,
) -> None:
    port = bound_socket.getsockname()[1]
    with (tmp_path / "plain").open("wb") as plain, \
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind((LOOPBACK, 0))
        fd = {"closed": 1000, "a file": plain.fileno(), "tcp": tcp.fileno(),
              "another port": bound_socket.fileno()}[kind]
        own_port = port + 1 if kind == "another port" else port
        config = node_config(tmp_path, own_port % 65536 or 1, sock_fd=fd)
        passed = () if kind == "closed" else (fd,)
        done = start_by_hand(config, tmp_path, pass_fds=passed)
    assert_one_line_error(done, "sock_fd")


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_a_hand_started_node_refuses_a_trace_or_log_that_is_no_regular_file(
    tmp_path: Path, kind: str,
) -> None:
    for suffix in (".trace", ".log", ".events"):
        run_dir = tmp_path / suffix.strip(".")
        run_dir.mkdir()
        target = run_dir / f"r1{suffix}"
        if kind == "folder":
            target.mkdir()
        elif kind == "fifo":
            os.mkfifo(target)
        else:
            target.symlink_to("/dev/zero")
        config = node_config(run_dir, free_port(), incarnation=1, run_dir=str(run_dir))
        # The run's timeout would catch a node that waits on the FIFO.
        assert_one_line_error(start_by_hand(config, run_dir), f"r1{suffix}")
