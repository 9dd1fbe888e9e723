"""What a live node process is told: one JSON file, written by the supervisor.

A node rebuilds the run's configuration (workload, cast, bug) itself from the
protocol, seed, bug and option overrides, exactly as the simulator does, so
only plain data crosses the process boundary.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from protocols.errors import ConfigError

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class NodeConfig:
    protocol: str
    seed: int
    bug: str | None
    overrides: dict[str, Any]  # protocol options given with --set
    node: str
    incarnation: int  # 0 for the first start, then one more per restart
    tick_ms: float  # one tick of the protocol's timers, in milliseconds
    epoch: float  # time.monotonic() at tick 0, shared by every node of the run
    peers: dict[str, int]  # node -> its UDP port on LOOPBACK (this node's own included)
    sock_fd: int  # this node's bound UDP socket, inherited from the supervisor
    run_dir: str  # where the node's log, trace and events files live
    plan: dict[str, Any]  # the run's FaultPlan, as plain data

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), sort_keys=True))

    @classmethod
    def read(cls, path: Path) -> NodeConfig:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the node config {path}: {exc}") from None
        names = {f.name for f in fields(cls)}
        if type(data) is not dict or set(data) != names:
            raise ConfigError(f"{path}: a node config must have exactly the fields "
                              f"{', '.join(sorted(names))}")
        config = cls(**data)
        config.check(str(path))
        return config

    def check(self, where: str) -> None:
        """Each field of the kind it must be, or ConfigError naming it."""
        kinds: dict[str, tuple[type, ...]] = {
            "protocol": (str,), "seed": (int,), "bug": (str, type(None)), "overrides": (dict,),
            "node": (str,), "incarnation": (int,), "tick_ms": (int, float), "epoch": (int, float),
            "peers": (dict,), "sock_fd": (int,), "run_dir": (str,), "plan": (dict,),
        }
        for name, allowed in kinds.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, allowed):
                raise ConfigError(f"{where}: {name}={value!r:.60} has the wrong type")
        if self.incarnation < 0 or self.seed < 0 or not self.tick_ms > 0:
            raise ConfigError(f"{where}: incarnation and seed must be at least 0, tick_ms above 0")
        if self.node not in self.peers:
            raise ConfigError(f"{where}: peers must name this node, {self.node}, and its port")
        for name, port in self.peers.items():
            if type(port) is not int or not 0 < port < 65536:
                raise ConfigError(f"{where}: peers[{name!r}]={port!r:.40} is not a port")

    def file(self, suffix: str) -> Path:
        """This node's file of one kind: `.log`, `.trace` or `.events`."""
        return Path(self.run_dir) / f"{self.node}{suffix}"
