"""What a live node process is told: one JSON file, written by the supervisor.

A node rebuilds the run's configuration (workload, cast, bug) itself from the
protocol, seed, bug and option overrides, exactly as the simulator does, so
only plain data crosses the process boundary. The file also holds the run's
secret key (sim/live/wire.py), so it is written readable by its owner only.

A config file may also be written by hand (docs/live.md), so reading one
checks everything: a regular file within a size limit, JSON within a depth,
exactly the fields below, each of its type and range. Anything else is one
ConfigError naming the field.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from tlasim.protocols.checked import checked_finite, checked_int, load_json
from tlasim.protocols.errors import ConfigError
from tlasim.tracing.inputs import read_regular_file

LOOPBACK = "127.0.0.1"
TICK_MS_MIN, TICK_MS_MAX = 0.1, 10_000.0  # the tick lengths a run may have (milliseconds)
# A shared tick 0 is a time.monotonic() value: seconds since the machine
# started, never negative, and 2**40 s is far beyond any uptime.
EPOCH_MAX_S = float(2**40)
SEED_MAX = 2**63 - 1
INCARNATION_MAX = 2**31 - 1
FD_MAX = 2**31 - 1
RUN_ID_MAX_CHARS = 256
# A config holds a fault plan, itself read within tracing.inputs.PLAN_MAX_BYTES.
CONFIG_MAX_BYTES = 32 * 2**20
# A config nests a few levels (a plan's crashes are a list of objects).
CONFIG_MAX_DEPTH = 32


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
    sock_fd: int  # this node's bound UDP socket, inherited from the supervisor; -1: bind here
    run_dir: str  # where the node's log, trace and events files live
    plan: dict[str, Any]  # the run's FaultPlan, as plain data
    key: str  # the run's secret frame key, 32 bytes in hex (sim/live/wire.py)
    run_id: str  # the run's identity, under every frame's tag with the key

    def write(self, path: Path) -> None:
        """Write the config to a new file that only its owner may read."""
        data = json.dumps(asdict(self), sort_keys=True).encode()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise ConfigError(f"cannot write the node config {str(path)!r}: {exc.strerror}") \
                from None
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    @property
    def key_bytes(self) -> bytes:
        return bytes.fromhex(self.key)

    @classmethod
    def read(cls, path: Path) -> NodeConfig:
        where = f"the node config {str(path)!r}"
        data = load_json(read_regular_file(path, "the node config", CONFIG_MAX_BYTES),
                         where, max_depth=CONFIG_MAX_DEPTH)
        return cls.from_dict(data, where)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> NodeConfig:
        """The config `data` describes, every field checked; else ConfigError."""
        names = {f.name for f in fields(cls)}
        if type(data) is not dict or set(data) != names:
            raise ConfigError(f"{where}: a node config must have exactly the fields "
                              f"{', '.join(sorted(names))}")
        for name in ("protocol", "node", "run_dir", "key", "run_id"):
            _string(data[name], f"{where}: {name}")
        if data["bug"] is not None:
            _string(data["bug"], f"{where}: bug")
        for name in ("overrides", "peers", "plan"):
            if type(data[name]) is not dict:
                raise ConfigError(f"{where}: {name} must be a JSON object")
        for name, port in data["peers"].items():
            checked_int(port, f"{where}: peers[{name!r:.40}]", low=1, high=65535)
        if len(set(data["peers"].values())) != len(data["peers"]):
            raise ConfigError(f"{where}: peers must have a port each")
        if data["node"] not in data["peers"]:
            raise ConfigError(f"{where}: peers must name this node, {data['node']!r:.40}, "
                              "and its port")
        if len(data["run_id"]) > RUN_ID_MAX_CHARS:
            raise ConfigError(f"{where}: run_id is longer than {RUN_ID_MAX_CHARS} characters")
        key = data["key"]
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ConfigError(f"{where}: key must be 64 lowercase hex digits (32 bytes)")
        return cls(
            protocol=data["protocol"],
            seed=checked_int(data["seed"], f"{where}: seed", low=0, high=SEED_MAX),
            bug=data["bug"],
            overrides=data["overrides"],
            node=data["node"],
            incarnation=checked_int(data["incarnation"], f"{where}: incarnation",
                                    low=0, high=INCARNATION_MAX),
            tick_ms=checked_finite(data["tick_ms"], f"{where}: tick_ms",
                                   low=TICK_MS_MIN, high=TICK_MS_MAX),
            epoch=checked_epoch(data["epoch"], f"{where}: epoch"),
            peers=data["peers"],
            sock_fd=checked_int(data["sock_fd"], f"{where}: sock_fd", low=-1, high=FD_MAX),
            run_dir=data["run_dir"],
            plan=data["plan"],
            key=key,
            run_id=data["run_id"],
        )

    def file(self, suffix: str) -> Path:
        """This node's file of one kind: `.log`, `.trace` or `.events`."""
        return Path(self.run_dir) / f"{self.node}{suffix}"


def checked_epoch(value: Any, where: str) -> float:
    """A shared tick 0: a finite time.monotonic() value, or ConfigError."""
    return checked_finite(value, where, low=0.0, high=EPOCH_MAX_S)


def _string(value: Any, where: str) -> str:
    if type(value) is not str or not value or "\x00" in value:
        raise ConfigError(f"{where}: expected a non-empty string without NUL")
    return value
