"""A real live node process whose every peer is a socket this test holds."""

from __future__ import annotations

import secrets
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tlasim.faults.plan import NO_FAULTS_PLAN
from tlasim.sim.live.config import LOOPBACK, NodeConfig
from tlasim.sim.live.events import EventTotals, read_events
from tlasim.sim.live.wire import (
    KEY_BYTES,
    MAX_FRAME_BYTES,
    Frame,
    RunKey,
    decode_frame,
    encode_frame,
)


class OneNode:
    def __init__(
        self,
        tmp_path: Path,
        node: str,
        peers: tuple[str, ...],
        *,
        protocol: str = "twopc",
        incarnation: int = 0,
        tick_ms: float = 50.0,
    ) -> None:
        self.sockets: dict[str, socket.socket] = {}
        for name in peers:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            sock.bind((LOOPBACK, 0))
            self.sockets[name] = sock
        self.node = node
        self.run_dir = tmp_path
        own = self.sockets[node]
        # The run's key, which this test holds as the node's peers do.
        key = secrets.token_bytes(KEY_BYTES)
        self.key = RunKey(key, "one-node")
        self.config = NodeConfig(
            protocol=protocol, seed=0, bug=None, overrides={}, node=node,
            incarnation=incarnation, tick_ms=tick_ms, epoch=time.monotonic(),
            peers={name: s.getsockname()[1] for name, s in self.sockets.items()},
            sock_fd=own.fileno(), run_dir=str(tmp_path), plan=NO_FAULTS_PLAN.to_dict(),
            key=key.hex(), run_id=self.key.run_id,
        )
        path = tmp_path / f"{node}.{incarnation}.json"
        self.config.write(path)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tlasim.sim.live.node", str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=(tmp_path / f"{node}.stderr").open("ab"),
            pass_fds=(own.fileno(),),
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        if incarnation == 0:
            assert self.process.stdout.readline().strip() == b"ready", self.stderr()
            self.process.stdin.write(f"go {time.monotonic()!r}\n".encode())
            self.process.stdin.flush()

    def stderr(self) -> str:
        return (self.run_dir / f"{self.node}.stderr").read_text(errors="replace")

    def send_raw(self, sender: str, data: bytes) -> None:
        self.sockets[sender].sendto(data, self.sockets[self.node].getsockname())

    def send_sealed(self, sender: str, body: bytes) -> None:
        """`body` under the run's tag: what a peer holding the key may send."""
        self.send_raw(sender, self.key.seal(body))

    def send(self, sender: str, clock: int, wire: Any) -> None:
        self.send_raw(sender, encode_frame(self.key, sender, clock, wire))

    def receive(self, at: str, timeout_s: float = 30.0) -> Frame:
        sock = self.sockets[at]
        ready, _, _ = select.select([sock], [], [], timeout_s)
        assert ready, f"no datagram reached {at} in {timeout_s} s; node stderr: {self.stderr()}"
        data, _ = sock.recvfrom(MAX_FRAME_BYTES + 1)
        return decode_frame(self.key, data)

    def dropped(self) -> dict[str, int]:
        """The node's latest drop counts, from its events file."""
        totals = EventTotals()
        totals.add(self.run_dir / f"{self.node}.events")
        return dict(totals.dropped)

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.run_dir / f"{self.node}.events").events

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        for sock in self.sockets.values():
            sock.close()
        return code
