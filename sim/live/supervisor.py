"""`tlasim live`: start a protocol's nodes as processes, break them, merge and judge.

Theory of operation: the supervisor binds one UDP socket per node on
127.0.0.1 (port 0: the OS picks, so parallel runs never collide) and keeps
it for the whole run; each node process inherits its socket, so a restarted
node listens on the same port and datagrams sent while it was down wait in
the socket's buffer, as a network may hold them. Nodes are started together,
say when they are ready, and are told one shared tick 0.

The nemesis is mostly in the nodes (sim/live/node.py): each carries out the
fault plan's windows and partitions in its transport and SIGKILLs itself
after the step a crash names. The supervisor sees the kill, waits the
crash's `restart_ticks` and starts the node again; it ends the run when the
merged state says the workload is done (or at the liveness deadline, or
`timeout_s`), stops every node with SIGTERM, merges their traces into one
(sim/live/merge.py) and writes it.

Each run draws a secret key (`secrets.token_bytes`) and an identity; both go
to the nodes in their config files (mode 0600), and every frame carries a
tag made with them (sim/live/wire.py), so a node takes no datagram from
outside the run, whatever port it comes from.
"""

from __future__ import annotations

import io
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn

from tlasim.faults.plan import FaultPlan
from tlasim.faults.swarm import swarm_plan
from tlasim.protocols import get_protocol
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError, InternalError
from tlasim.sim import exitcodes
from tlasim.sim.drift.revision import source_revision
from tlasim.sim.kernel.rng import split
from tlasim.sim.live.config import LOOPBACK, TICK_MS_MAX, TICK_MS_MIN, NodeConfig
from tlasim.sim.live.events import EventTotals, last_crash
from tlasim.sim.live.files import LiveRunError
from tlasim.sim.live.merge import MergedRun, causal_order, read_node_logs, write_merged
from tlasim.sim.live.wire import KEY_BYTES, MAX_FRAME_BYTES
from tlasim.sim.run.runner import TOOL_VERSION
from tlasim.tracing.codec import TraceFormat
from tlasim.tracing.outputs import open_output

DEFAULT_DIR = Path(".tlasim/live")  # where a run's folder goes unless one is given
# How long the nodes may take to import and say ready (seconds): generous,
# because a two-core machine starts nine Python processes in turn.
READY_TIMEOUT_S = 120.0
# The shared tick 0 is this far after the go, so every node is waiting for it.
GO_MARGIN_S = 0.05
POLL_S = 0.005
# How often the supervisor merges what the nodes logged so far, to stop once
# the workload is done (seconds).
DONE_CHECK_S = 0.25
STOP_GRACE_S = 5.0
STDERR_TAIL_BYTES = 1 << 16  # how much of a failed node's stderr is read for the error
# Each node's socket buffer: loopback bursts must not drop datagrams.
SOCKET_BUFFER_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class LiveOptions:
    tick_ms: float = 5.0  # milliseconds per tick of the protocol's timers
    liveness_bound_ticks: int = 600  # after healing, the protocol must finish within this
    swarm_horizon_ticks: int = 600  # a swarm plan's faults all fall before this tick
    timeout_s: float = 120.0  # the run is stopped after this many seconds, done or not
    trace_format: TraceFormat = "ndjson"

    def __post_init__(self) -> None:
        if not TICK_MS_MIN <= self.tick_ms <= TICK_MS_MAX:
            raise ConfigError(f"tick_ms={self.tick_ms!r}: must be between {TICK_MS_MIN:g} "
                              f"and {TICK_MS_MAX:g}")
        if self.liveness_bound_ticks < 1 or self.swarm_horizon_ticks < 1:
            raise ConfigError("the liveness bound and swarm horizon must be positive (ticks)")
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s={self.timeout_s!r}: must be positive (seconds)")


@dataclass(slots=True)
class LiveResult:
    protocol: str
    seed: int
    bug: str | None
    plan: FaultPlan
    merged: MergedRun
    trace_path: Path
    run_dir: Path
    seconds: float  # from tick 0 to the stop, when the supervisor noticed the work done
    stopped_by: str  # "done", "deadline" or "timeout"
    incarnations: dict[str, int]
    events: Counter[str] = field(default_factory=Counter)  # faults fired, by kind
    dropped: Counter[str] = field(default_factory=Counter)  # datagrams dropped, by reason
    messages_sent: int = 0
    unreadable_events: int = 0  # lines of the nodes' events files skipped as no event
    events_problem: str | None = None  # why the first of them was skipped

    tick_ms: float = 0.0

    @property
    def busy_seconds(self) -> float:
        """From tick 0 to the last step any node took."""
        return self.merged.last_tick * self.tick_ms / 1000.0

    @property
    def messages_per_second(self) -> float:
        busy = self.busy_seconds
        return self.messages_sent / busy if busy > 0 else 0.0


def new_run_dir(protocol: str, seed: int) -> Path:
    """A fresh folder under DEFAULT_DIR, unique even for runs started in one second."""
    DEFAULT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.mkdtemp(prefix=f"{protocol}-seed{seed}-{stamp}-", dir=DEFAULT_DIR))


def live_protocol(name: str) -> ProtocolDefinition:
    """The protocol, if its nodes exchange messages (else live has nothing to run)."""
    protocol = get_protocol(name)
    if protocol.net_lose_action is None:
        raise ConfigError(
            f"live runs protocols whose nodes exchange messages; {name}'s cores share a "
            "simulated memory and send none (run it with `tlasim run`)"
        )
    return protocol


class _Node:
    """One node's processes, one after another."""

    def __init__(self, node: str, sock: socket.socket) -> None:
        self.node = node
        self.sock = sock
        self.incarnation = -1
        self.process: subprocess.Popen[bytes] | None = None
        self.restart_at: float | None = None  # time.monotonic() of a pending restart


class Supervisor:
    def __init__(
        self,
        protocol_name: str,
        seed: int,
        *,
        bug: str | None = None,
        overrides: dict[str, Any] | None = None,
        plan: FaultPlan | None = None,
        options: LiveOptions | None = None,
        run_dir: Path | None = None,
        trace_path: Path | None = None,
    ) -> None:
        self.protocol = live_protocol(protocol_name)
        self.seed = seed
        self.bug = bug
        self.overrides = dict(overrides or {})
        self.options = options or LiveOptions()
        self.protocol_options = self.protocol.make_options(self.overrides)
        streams = split(seed)
        self.config = self.protocol.configure(self.protocol_options, bug, streams.workload)
        self.node_ids = self.protocol.node_ids(self.config)
        crash_nodes = self.protocol.crash_nodes(self.config)
        self.swarm = plan is None
        self.plan = plan if plan is not None else swarm_plan(
            streams.faults, self.node_ids,
            horizon_ticks=self.options.swarm_horizon_ticks, crash_nodes=crash_nodes,
        )
        self.plan.check_wellformed()
        self.plan.check_recoverable(self.node_ids, crash_nodes=crash_nodes)
        if run_dir is None:
            run_dir = new_run_dir(self.protocol.name, seed)
        elif run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
            raise ConfigError(f"--dir {run_dir}: exists and is not an empty folder")
        self.run_dir = run_dir
        self.trace_path = trace_path or run_dir / f"merged.{self.options.trace_format}"
        self.nodes: dict[str, _Node] = {}
        self.epoch = 0.0
        # This run's alone: every frame is sealed with them (sim/live/wire.py).
        self.key = secrets.token_bytes(KEY_BYTES)
        self.run_id = secrets.token_hex(16)

    # ---- what every option of the run is ----

    def options_record(self) -> dict[str, Any]:
        return {
            "mode": "live",
            "seed": self.seed,
            "protocol": self.protocol.name,
            "bug": self.bug,
            "protocol_options": self.protocol_options.as_dict(),
            "tick_ms": self.options.tick_ms,
            "faults_mode": "swarm" if self.swarm else "plan",
            "faults": self.plan.to_dict(),
            "liveness_bound_ticks": self.options.liveness_bound_ticks,
        }

    def deadline_ticks(self) -> int:
        """As in the simulator: healed, every crash restarted, then the liveness bound."""
        restart = max((c.restart_ticks for c in self.plan.crashes), default=0)
        healed = max(self.plan.heal_tick + restart, self.protocol.settle_tick(self.config))
        return healed + self.options.liveness_bound_ticks

    # ---- processes ----

    def _bind_sockets(self) -> None:
        for node in self.node_ids:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER_BYTES)
            try:
                sock.bind((LOOPBACK, 0))
            except OSError as exc:
                sock.close()
                raise ConfigError(f"cannot bind a UDP socket on {LOOPBACK}: {exc.strerror}") \
                    from None
            self.nodes[node] = _Node(node, sock)

    def _spawn(self, entry: _Node) -> None:
        entry.incarnation += 1
        peers = {node: n.sock.getsockname()[1] for node, n in self.nodes.items()}
        cfg = NodeConfig(
            protocol=self.protocol.name, seed=self.seed, bug=self.bug,
            overrides=self.overrides, node=entry.node, incarnation=entry.incarnation,
            tick_ms=self.options.tick_ms, epoch=self.epoch, peers=peers,
            sock_fd=entry.sock.fileno(), run_dir=str(self.run_dir.resolve()),
            plan=self.plan.to_dict(), key=self.key.hex(), run_id=self.run_id,
        )
        config_path = self.run_dir / f"{entry.node}.{entry.incarnation}.json"
        cfg.write(config_path)
        stderr = (self.run_dir / f"{entry.node}.stderr").open("ab")
        first = entry.incarnation == 0
        try:
            entry.process = subprocess.Popen(
                [sys.executable, "-m", "tlasim.sim.live.node", str(config_path)],
                stdin=subprocess.PIPE if first else subprocess.DEVNULL,
                stdout=subprocess.PIPE if first else subprocess.DEVNULL,
                stderr=stderr,
                pass_fds=(entry.sock.fileno(),),
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        finally:
            stderr.close()
        entry.restart_at = None

    def _start_all(self) -> None:
        for entry in self.nodes.values():
            self._spawn(entry)
        give_up = time.monotonic() + READY_TIMEOUT_S
        for entry in self.nodes.values():
            process = entry.process
            assert process is not None and process.stdout is not None
            line = _read_line(process.stdout, give_up)
            if line != "ready":
                try:
                    code: int | None = process.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    code = None
                self._failed(entry.node, code, "did not start")
        self.epoch = time.monotonic() + GO_MARGIN_S
        for entry in self.nodes.values():
            process = entry.process
            assert process is not None and process.stdin is not None
            process.stdin.write(f"go {self.epoch!r}\n".encode())
            process.stdin.close()

    def _stderr_tail(self, node: str) -> str:
        """The end of what the node's processes wrote to stderr (read bounded)."""
        try:
            with (self.run_dir / f"{node}.stderr").open("rb") as stream:
                stream.seek(max(0, stream.seek(0, os.SEEK_END) - STDERR_TAIL_BYTES))
                text = stream.read(STDERR_TAIL_BYTES).decode(errors="replace")
        except OSError:
            text = ""
        return text.strip()[-2000:] or "(no output)"

    def _failed(self, node: str, code: int | None, what: str) -> NoReturn:
        """A node stopped early: its input refused (exit 2) is the run's error;
        anything else is a bug."""
        if code == exitcodes.USAGE:
            # The node's own one-line error says why.
            said = self._stderr_tail(node).splitlines()[-1].removeprefix("tlasim: error: ")
            raise LiveRunError(f"node {node} {what}: {said}")
        raise InternalError(f"node {node} {what} (exit code {code}): {self._stderr_tail(node)}")

    def _reap(self, entry: _Node) -> None:
        """A node exited: schedule the restart its crash asked for, or fail."""
        process = entry.process
        assert process is not None
        code = process.returncode
        if process.stdout is not None:
            process.stdout.close()
        entry.process = None
        crash = last_crash(self.run_dir / f"{entry.node}.events", entry.incarnation)
        if code == -signal.SIGKILL and crash is None:
            raise LiveRunError(
                f"node {entry.node} was killed (SIGKILL) with no crash of the plan logged in "
                f"{entry.node}.events: killed from outside the run, or its events file was "
                "written to by another"
            )
        if crash is None:
            self._failed(entry.node, code, "exited unasked")
        restart_s = crash["restart_ticks"] * self.options.tick_ms / 1000.0
        entry.restart_at = time.monotonic() + restart_s

    def _stop_all(self) -> None:
        running = [e.process for e in self.nodes.values() if e.process is not None]
        for process in running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        give_up = time.monotonic() + STOP_GRACE_S
        for process in running:
            try:
                process.wait(timeout=max(0.0, give_up - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        for entry in self.nodes.values():
            entry.process = None
            entry.sock.close()

    # ---- the run ----

    def run(self) -> LiveResult:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        stopped_by = "timeout"
        try:
            self._bind_sockets()
            self._start_all()
            deadline = self.epoch + self.deadline_ticks() * self.options.tick_ms / 1000.0
            give_up = self.epoch + self.options.timeout_s
            settled = self.epoch + (
                max(self.plan.heal_tick, self.protocol.settle_tick(self.config))
                * self.options.tick_ms / 1000.0
            )
            next_check = settled
            while True:
                now = time.monotonic()
                for entry in self.nodes.values():
                    if entry.process is not None and entry.process.poll() is not None:
                        self._reap(entry)
                    if entry.restart_at is not None and now >= entry.restart_at:
                        self._spawn(entry)
                if now >= give_up:
                    break
                if now >= deadline:
                    stopped_by = "deadline"
                    break
                everyone_up = all(e.process is not None for e in self.nodes.values())
                if now >= next_check and everyone_up:
                    next_check = now + DONE_CHECK_S
                    if self._workload_done():
                        stopped_by = "done"
                        break
                time.sleep(POLL_S)
            seconds = time.monotonic() - self.epoch
        finally:
            self._stop_all()
        merged = self._merge()
        result = LiveResult(
            protocol=self.protocol.name, seed=self.seed, bug=self.bug, plan=self.plan,
            merged=merged, trace_path=self.trace_path, run_dir=self.run_dir,
            seconds=seconds, stopped_by=stopped_by,
            incarnations={n: e.incarnation + 1 for n, e in self.nodes.items()},
            tick_ms=self.options.tick_ms,
        )
        self._count(result)
        return result

    def _header(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol.name,
            "seed": self.seed,
            "options": self.options_record(),
            "tool_version": TOOL_VERSION,
            "source_revision": source_revision(tuple(self.protocol.source_files),
                                               self.protocol.source_root),
        }

    def _workload_done(self) -> bool:
        """Whether the state merged from what the nodes logged so far is finished."""
        try:
            lines = causal_order(read_node_logs(self.run_dir, self.node_ids))
            merged = write_merged(self.protocol, self.config, lines, io.BytesIO(), self._header())
        except LiveRunError:
            # The files are read one after another while the nodes run, so a
            # receipt may be read without the line that sent it (read a moment
            # before it was written): not a consistent cut, and not done yet.
            # The final merge, of stopped nodes, raises such errors.
            return False
        return merged.failure is not None or merged.unfinished is None

    def _merge(self) -> MergedRun:
        lines = causal_order(read_node_logs(self.run_dir, self.node_ids))
        with open_output(self.trace_path, "--out") as stream:
            return write_merged(
                self.protocol, self.config, lines, stream, self._header(),
                self.options.trace_format,
            )

    def _count(self, result: LiveResult) -> None:
        totals = EventTotals(result.events, result.dropped)
        for node in self.node_ids:
            totals.add(self.run_dir / f"{node}.events")
        result.unreadable_events, result.events_problem = totals.unreadable, totals.problem
        logs = read_node_logs(self.run_dir, self.node_ids)
        result.messages_sent = sum(len(line.sent) for lines in logs.values() for line in lines)


def _read_line(stream: IO[bytes], give_up: float) -> str:
    """One line from a child's stdout, or "" if none comes before `give_up`."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(max(0.0, give_up - time.monotonic())):
            return ""
    return stream.readline(MAX_FRAME_BYTES).decode(errors="replace").strip()
