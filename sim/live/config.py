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
        return cls(**data)

    def file(self, suffix: str) -> Path:
        """This node's file of one kind: `.log`, `.trace` or `.events`."""
        return Path(self.run_dir) / f"{self.node}{suffix}"
