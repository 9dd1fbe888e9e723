"""One live node: a protocol core in its own process, on trio, over UDP on loopback.

Theory of operation: `LiveNode` is a `StepMachine` (sim/kernel/stepping.py)
whose hooks are real: a send is a datagram, a timer is a trio sleep of
`delay * tick_ms`, a persist goes to a `FileDisk`, and a crash is a SIGKILL
the node sends itself after the step the fault plan names. The effect loop
itself is the simulator's, unchanged; only `record` differs, because a node
sees only itself: it writes its own line (sim/live/nodelog.py) and leaves
the spec's global state to the supervisor's merge.

Each atomic step is carried out in the order a crash can observe: persists
are written and fsynced, then the step's trace line is written, then its
datagrams leave (one `sendto` each, done before the step returns), then the
fault plan may kill the node. So a SIGKILL after step N finds every effect of
steps 1..N done and logged, and none of step N+1; and a receipt is never
logged before the line of the step that sent it.

The nemesis acts in the sender's transport, from the plan's windows and
partitions through the simulator's `FaultInjector`: a lost message is not
sent and gets a `NetLose` line, a duplicate is sent twice with a
`NetDuplicate` line, a delayed one leaves later. Every fault that fires is
written to the node's events file.

Every datagram is checked before the core sees it: from a known peer's
address, sealed with the run's key (sim/live/wire.py), a well-formed frame
naming that peer, a clock within CLOCK_WINDOW of the node's own, a message
the protocol decodes, and one the core can handle (tried first on a copy of
the core, so that a hostile message that would make a handler raise leaves
the node as it was). Anything else is dropped and counted, and the counts go
to the events file.

A node may be started by hand (docs/live.md), so its config, the `go` line
and the files it finds are input from outside: anything wrong with them is
one line `tlasim: error: ...` and exit 2, never a traceback.
"""

from __future__ import annotations

import copy
import os
import signal
import socket
import stat
import sys
import time
import traceback
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import trio

from tlasim.faults.plan import Crash, FaultPlan
from tlasim.protocols import get_protocol, zoo
from tlasim.protocols.base import Receive, Send, SetTimer, Start, Timeout, Trace
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError, InternalError, TlasimError
from tlasim.sim import exitcodes
from tlasim.sim.kernel.host import NodeHost
from tlasim.sim.kernel.injector import FaultInjector
from tlasim.sim.kernel.rng import split
from tlasim.sim.kernel.stepping import NET_NODE, StepMachine
from tlasim.sim.live.config import LOOPBACK, NodeConfig, checked_epoch
from tlasim.sim.live.disk import FileDisk
from tlasim.sim.live.events import EventLog, last_crash
from tlasim.sim.live.nodelog import NodeLog
from tlasim.sim.live.wire import (
    CLOCK_WINDOW,
    MAX_FRAME_BYTES,
    BadFrame,
    RunKey,
    decode_frame,
    encode_frame,
)
from tlasim.tracing.printable import printable
from tlasim.tracing.values import Record

# How often a node writes its drop counts to its events file (seconds): a
# flood of bad datagrams costs one line per period, not one per datagram.
COUNTS_PERIOD_S = 0.2
# The longest `go` line read from stdin ("go " and a float's repr).
GO_LINE_MAX_CHARS = 4096


class Outgoing:
    """A message on its way out: its wire form, spec record and destination."""

    __slots__ = ("dst", "record", "wire")

    def __init__(self, dst: str, wire: Any, record: Hashable) -> None:
        self.dst = dst
        self.wire = wire
        self.record = record


@dataclass(frozen=True, slots=True)
class RunParts:
    """What a node config names, made: the protocol, the run's configuration, the plan."""

    protocol: ProtocolDefinition
    config: Any
    plan: FaultPlan


def resolve(cfg: NodeConfig) -> RunParts:
    """The run `cfg` describes, or ConfigError: checked before the node opens a
    socket or a file (its name makes its files' names)."""
    protocol = get_protocol(cfg.protocol)
    if protocol.net_lose_action is None:
        raise ConfigError(f"{protocol.name}'s nodes send no messages: it does not run live")
    zoo.check_bug(protocol.bugs, protocol.name, cfg.bug)
    options = protocol.make_options(cfg.overrides)
    config = protocol.configure(options, cfg.bug, split(cfg.seed).workload)
    node_ids = protocol.node_ids(config)
    if cfg.node not in node_ids:
        raise ConfigError(f"node {cfg.node!r:.40} is not a node of this {protocol.name} "
                          f"run ({', '.join(node_ids)})")
    if set(cfg.peers) != set(node_ids):
        raise ConfigError(f"peers must name every node of the run and no other: "
                          f"{', '.join(node_ids)}")
    return RunParts(protocol, config, FaultPlan.from_dict(cfg.plan, "the run's fault plan"))


class LiveNode(StepMachine):
    def __init__(self, cfg: NodeConfig, parts: RunParts, sock: socket.socket) -> None:
        protocol, config = parts.protocol, parts.config
        super().__init__(protocol, config, protocol.make_oracle(config), emitter=None)
        self.cfg = cfg
        self.key = RunKey(cfg.key_bytes, cfg.run_id)
        self.node_id = cfg.node
        # A node process hosts its own core only; the others live elsewhere.
        self.host: NodeHost = self.hosts[cfg.node]
        self.hosts = {cfg.node: self.host}
        self.disk = FileDisk(cfg.file(".log"))
        self.host.disk = self.disk
        self.log = NodeLog(cfg.file(".trace"))
        self.clock = self.log.last_clock
        self.plan = parts.plan
        self.injector = FaultInjector(self.plan)
        self.sock = sock
        self.addresses = {node: (LOOPBACK, port) for node, port in cfg.peers.items()}
        self.peer_by_port = {port: node for node, port in cfg.peers.items()}
        self.dropped: Counter[str] = Counter()
        self._counts_written: dict[str, int] = {}
        self._events = EventLog(cfg.file(".events"), cfg.incarnation)
        self._timer_generation = 0
        self._pinned_now: int | None = None
        self._last_log: tuple[Any, ...] | None = None
        self._step_sent: list[Hashable] = []
        self._receiving: Hashable | None = None
        self._outbox: list[tuple[bytes, str]] = []  # datagrams of the step being taken
        # The plan's faults that struck since this node's last line, named as
        # the simulator names them (docs/trace-format.md): its line says so.
        self._struck: list[str] = []
        self._nursery: trio.Nursery | None = None
        if self.disk.torn_bytes:
            self.event("torn-record", bytes=self.disk.torn_bytes)

    # ---- time ----

    @property
    def now(self) -> int:
        if self._pinned_now is not None:
            return self._pinned_now
        elapsed_ms = (time.monotonic() - self.cfg.epoch) * 1000.0
        return max(0, int(elapsed_ms / self.cfg.tick_ms))

    def _seconds(self, ticks: int) -> float:
        return ticks * self.cfg.tick_ms / 1000.0

    # ---- the events file: faults that fired, datagrams dropped ----

    def event(self, kind: str, **fields: Any) -> None:
        self._events.write(kind, self.now, **fields)

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def write_counts(self) -> None:
        if dict(self.dropped) != self._counts_written:
            self._counts_written = dict(self.dropped)
            self.event("dropped", counts=self._counts_written)

    # ---- the step machine's hooks ----

    def record(self, node: str | None, action: str, params: Mapping[str, Any]) -> None:
        """Write this node's line for the step just taken (see sim/live/nodelog.py)."""
        self.clock += 1
        host = self.host
        fields: dict[str, Any] = {
            "incarnation": self.cfg.incarnation,
            "clock": self.clock,
            "ts": self.now,
            "node": node or self.node_id,
            "action": action,
            "params": params,
            "view": host.view,
            "up": host.up,
        }
        synced = host.disk.synced()
        if synced is not self._last_log:
            fields["log"] = synced
            self._last_log = synced
        if self._step_sent:
            fields["sent"] = self._step_sent
            self._step_sent = []
        if self._receiving is not None:
            fields["recv"] = self._receiving
            self._receiving = None
        timer, self._timer = self._timer, None
        if timer is not None:
            fields["timer"] = timer
        struck = self._struck + self.injector.take_fired()
        self._struck = []
        if struck:
            fields["faults"] = struck
        self.log.write(**fields)
        # Datagrams leave only once the line that sends them is written, so no
        # receipt is ever logged before its send (a kill in between is a loss).
        outbox, self._outbox = self._outbox, []
        for frame, dst in outbox:
            self._sendto(frame, dst)
        self.steps += 1
        self.last_tick = fields["ts"]

    def _bag(self) -> Mapping[Hashable, int]:
        raise InternalError("a live node does not know the network's contents")

    def _send(self, host: NodeHost, send: Send) -> Outgoing | None:
        out = Outgoing(
            send.dst,
            self.protocol.encode_message(send.msg),
            Record(self.protocol.message_record(send.msg)),
        )
        self._step_sent.append(out.record)
        duplicated = self.injector.duplicate_on_send(self.now, self.node_id, send.dst)
        # This step's line takes the next clock, and a duplicate's line the one
        # after: a copy carries the clock of the last line that put the message
        # in flight, so that its receipt is ordered after both.
        self._transmit(out, self.clock + (2 if duplicated else 1))
        if duplicated:
            self.event("duplicate", dst=send.dst)
            return out
        return None

    def _add_duplicate(self, copy_: Outgoing) -> Mapping[str, Any]:
        self._transmit(copy_, self.clock + 1)
        return {"msg": copy_.record}

    def _transmit(self, out: Outgoing, clock: int) -> None:
        """Send one copy now, later, or never, as the fault plan says."""
        now = self.now
        cut = next((index for index, p in enumerate(self.plan.partitions)
                    if p.start <= now < p.end and p.cuts(self.node_id, out.dst)), None)
        # The injector looks at partitions before it draws from a loss window,
        # so asking it only when no partition cuts the link draws the same.
        if cut is not None:
            self._struck.append(f"partitions/{cut}")
        if cut is not None or self.injector.lose_on_delivery(now, self.node_id, out.dst):
            self.event("partition" if cut is not None else "loss", dst=out.dst)
            self._spawn(self._log_loss, out)
            return
        frame = encode_frame(self.key, self.node_id, clock, out.wire)
        delay = self.injector.extra_delay_on_send(now, self.node_id, out.dst)
        if delay:
            self.event("delay", dst=out.dst, ticks=delay)
            self._spawn(self._send_later, frame, out.dst, delay)
            return
        self._outbox.append((frame, out.dst))

    def _sendto(self, frame: bytes, dst: str) -> None:
        try:
            self.sock.sendto(frame, self.addresses[dst])
        except (BlockingIOError, ConnectionRefusedError):
            # A full socket buffer drops the datagram, as a network may.
            self.event("send-dropped", dst=dst)

    async def _send_later(self, frame: bytes, dst: str, delay: int) -> None:
        await trio.sleep(self._seconds(delay))
        self._sendto(frame, dst)

    async def _log_loss(self, out: Outgoing) -> None:
        action = self.net_action(self.protocol.net_lose_action)
        self.record(NET_NODE, action, {"msg": out.record})

    def _arm_timer(self, host: NodeHost, timer: SetTimer) -> None:
        self._timer_generation += 1
        host.timers[timer.name] = self._timer_generation
        self._spawn(self._fire, timer.name, self._timer_generation, timer.delay)

    async def _fire(self, name: str, generation: int, delay: int) -> None:
        await trio.sleep(self._seconds(delay))
        host = self.host
        if host.up and host.timers.get(name) == generation:
            del host.timers[name]
            self.dispatch(host, Timeout(name))

    def _crash_strikes(self, host: NodeHost) -> Crash | None:
        crash = self.injector.crash_after_step(self.node_id, self.now)
        if crash is not None:
            # Every effect of the step is done and its line written: die now,
            # with whatever is unsynced still in this process's memory.
            # The crash's plan entry goes with it, for the crash line that the
            # next incarnation writes.
            self.event("crash", after_steps=crash.after_steps, tick=crash.tick,
                       restart_ticks=crash.restart_ticks, faults=self.injector.take_fired())
            os.kill(os.getpid(), signal.SIGKILL)
        return None

    def _crashed(self, host: NodeHost, crash: Any, lost_records: int) -> None:
        raise InternalError("a live node crashes by SIGKILL, never in process")

    def _spawn(self, fn: Any, *args: Any) -> None:
        if self._nursery is None:
            raise InternalError("a live node sends and arms timers only while it serves")
        self._nursery.start_soon(fn, *args)

    # ---- booting ----

    def boot(self) -> None:
        """Start afresh, or, after a crash, log the crash and recover from the log."""
        host = self.host
        if self.cfg.incarnation == 0:
            # Every node boots at tick 0, when the supervisor says go.
            self._pinned_now = 0
            try:
                self.dispatch(host, Start())
            finally:
                self._pinned_now = None
            return
        # The crash is this node's next line: the state it recovers to, down.
        recovered = self.protocol.make_core(self.config, self.node_id)
        recovered.restore(self.disk.synced())
        host.core = None
        host.up = False
        host.view = recovered.view()
        action, params = self.protocol.crash_step(self.node_id)
        crash = last_crash(self.cfg.file(".events"), self.cfg.incarnation - 1)
        struck = crash.get("faults") if crash is not None else None
        if isinstance(struck, list):
            self._struck = [name for name in struck if isinstance(name, str)]
        self.record(self.node_id, action, params)
        self.restart(host)

    # ---- receiving ----

    def on_datagram(self, data: bytes, address: Any) -> None:
        """Hand a datagram's message to the core, or drop and count it."""
        peer = self.peer_by_port.get(address[1]) if address[0] == LOOPBACK else None
        if peer is None:
            self.drop("unknown-sender")
            return
        try:
            frame = decode_frame(self.key, data)
        except BadFrame as bad:
            self.drop(bad.reason)
            return
        if frame.src != peer:
            self.drop("wrong-sender")
            return
        if frame.clock > self.clock + CLOCK_WINDOW:
            self.drop("clock-jump")
            return
        try:
            msg = self.protocol.decode_message(frame.msg)
            record = Record(self.protocol.message_record(msg))
        except Exception:  # a hostile message may break a decoder in any way
            self.drop("undecodable")
            return
        host = self.host
        if not host.up or host.core is None:
            self.drop("node-down")
            return
        now = self.now
        self._pinned_now = now
        try:
            if not self._core_accepts(host, now, Receive(peer, msg)):
                self.drop("refused-by-core")
                return
            self.clock = max(self.clock, frame.clock)
            self._receiving = record
            self.dispatch(host, Receive(peer, msg))
        finally:
            self._pinned_now = None

    @staticmethod
    def _core_accepts(host: NodeHost, now: int, event: Receive) -> bool:
        """Whether the core handles `event` without raising, tried on a copy."""
        trial = copy.deepcopy(host.live_core())
        try:
            effects = trial.handle(now, event)
        except Exception:  # a message no handler can take; the real core never sees it
            return False
        return any(isinstance(e, Trace) for e in effects)

    # ---- serving ----

    async def serve(self) -> None:
        sock = trio.socket.from_stdlib_socket(self.sock)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            # SIGTERM is caught before the node's first step, so a stop never
            # finds a node between a step's line and its datagrams.
            await nursery.start(self._stop_on_sigterm, nursery.cancel_scope)
            nursery.start_soon(self._write_counts_periodically)
            booted_at = 0 if self.cfg.incarnation == 0 else self.now
            for crash in self.plan.crashes:
                if crash.node == self.node_id:
                    nursery.start_soon(self._arm_at, crash, booted_at)
            self.boot()
            while True:
                try:
                    data, address = await sock.recvfrom(MAX_FRAME_BYTES + 1)
                except (ConnectionRefusedError, ConnectionResetError):
                    continue
                self.on_datagram(data, address)

    async def _arm_at(self, crash: Crash, booted_at: int) -> None:
        # A crash whose tick passed before this life began is not armed, as in
        # the simulator (it arms a crash only at its tick, on a live node).
        if crash.tick < booted_at:
            return
        await trio.sleep(max(0.0, self._seconds(crash.tick - self.now)))
        if self.host.up:
            self.injector.arm(crash)

    async def _write_counts_periodically(self) -> None:
        while True:
            await trio.sleep(COUNTS_PERIOD_S)
            self.write_counts()

    async def _stop_on_sigterm(
        self, scope: trio.CancelScope, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            task_status.started()
            async for _ in signals:
                self.write_counts()
                self.event("stopped")
                scope.cancel()
                return


def open_socket(cfg: NodeConfig) -> socket.socket:
    """The node's UDP socket: inherited (`sock_fd`), or bound here when it is -1."""
    port = cfg.peers[cfg.node]
    if cfg.sock_fd >= 0:
        sock = _inherited_socket(cfg.sock_fd, port)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((LOOPBACK, port))
        except OSError as exc:
            sock.close()
            raise ConfigError(f"cannot bind {LOOPBACK}:{port}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


def _inherited_socket(fd: int, port: int) -> socket.socket:
    """The UDP socket on LOOPBACK:`port` at descriptor `fd`, or ConfigError."""
    where = f"sock_fd={fd}"
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        raise ConfigError(f"{where}: not an open descriptor: {exc.strerror}") from None
    if not stat.S_ISSOCK(mode):
        raise ConfigError(f"{where}: not a socket")
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise ConfigError(f"{where}: not a usable socket: {exc.strerror}") from None
    try:
        bound = sock.getsockname() if sock.family == socket.AF_INET else None
    except OSError:
        bound = None
    if sock.type != socket.SOCK_DGRAM or bound != (LOOPBACK, port):
        sock.detach()  # not this node's to close
        raise ConfigError(f"{where}: not a UDP socket bound to {LOOPBACK}:{port}, "
                          "this node's port in peers")
    return sock


def read_go(stream: Any) -> float | None:
    """The shared tick 0 from the `go EPOCH` line (a bare `go`: now); None if
    the supervisor gave up instead (no line, or another)."""
    words = stream.readline(GO_LINE_MAX_CHARS).split()
    if not words or words[0] != "go" or len(words) > 2:
        return None
    if len(words) == 1:
        return time.monotonic()
    try:
        epoch = float(words[1])
    except ValueError:
        raise ConfigError(f"go {words[1]!r:.60}: the epoch must be a number") from None
    return checked_epoch(epoch, f"go {words[1]!r:.60}: the epoch")


def run_node(config_path: Path) -> int:
    cfg = NodeConfig.read(config_path)
    parts = resolve(cfg)
    node = LiveNode(cfg, parts, open_socket(cfg))
    if cfg.incarnation == 0:
        # Say ready, then wait for the shared tick 0 ("go EPOCH", a
        # time.monotonic() value; a bare "go" means now): every first boot is
        # then at the same moment, whatever each process took to start.
        print("ready", flush=True)
        epoch = read_go(sys.stdin)
        if epoch is None:
            return 0  # the supervisor gave up before the run began
        node.cfg = replace(cfg, epoch=epoch)
        time.sleep(max(0.0, min(1.0, epoch - time.monotonic())))
    trio.run(node.serve)
    return 0


def main(argv: list[str]) -> int:
    """Run one node; bad input is one line on stderr and exit 2, as `tlasim` says it."""
    if len(argv) != 2:
        print("usage: python -m tlasim.sim.live.node CONFIG.json", file=sys.stderr)
        return exitcodes.USAGE
    try:
        return run_node(Path(argv[1]))
    except InternalError:
        print("tlasim: internal error (a bug in tlasim, please report it):", file=sys.stderr)
        traceback.print_exc()
        return exitcodes.INTERNAL
    except TlasimError as exc:
        message = str(exc)
    except KeyboardInterrupt:
        return exitcodes.INTERRUPTED
    except OSError as exc:
        # A path of the config cannot be used (a run_dir that is gone, a full disk).
        where = f" {exc.filename}" if exc.filename else ""
        message = f"cannot use{where}: {exc.strerror or exc}"
    print(f"tlasim: error: {printable(message)}", file=sys.stderr)
    return exitcodes.USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv))
