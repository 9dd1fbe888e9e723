"""Simulation options: one frozen, validated dataclass per part, combined in SimOptions.

Units are in the field comments; qualifiers come last (`latency_ticks_min`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tlasim.faults.plan import FaultPlan
from tlasim.protocols.errors import ConfigError
from tlasim.tracing.codec import TraceFormat


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name}={value!r}: must be a positive integer (ticks)")


@dataclass(frozen=True, slots=True)
class NetworkOptions:
    latency_ticks_min: int = 1  # every message takes at least this long
    latency_ticks_max: int = 10  # ... and at most this long, before delay faults

    def __post_init__(self) -> None:
        _positive_int("latency_ticks_min", self.latency_ticks_min)
        _positive_int("latency_ticks_max", self.latency_ticks_max)
        if self.latency_ticks_min > self.latency_ticks_max:
            raise ConfigError(
                f"latency_ticks_min={self.latency_ticks_min} exceeds "
                f"latency_ticks_max={self.latency_ticks_max}"
            )

    def as_dict(self) -> dict[str, Any]:
        return {
            "latency_ticks_min": self.latency_ticks_min,
            "latency_ticks_max": self.latency_ticks_max,
        }


@dataclass(frozen=True, slots=True)
class SimOptions:
    """Everything a run needs besides the seed and the protocol's own options.

    `faults=None` means swarm mode: the seed's fault stream draws a fault plan
    whose faults all fall before `swarm_horizon_ticks`.
    """

    network: NetworkOptions = field(default_factory=NetworkOptions)
    faults: FaultPlan | None = None
    swarm_horizon_ticks: int = 600  # swarm plans heal at this tick
    liveness_bound_ticks: int = 600  # after healing, the protocol must finish within this
    trace_format: TraceFormat = "ndjson"

    def __post_init__(self) -> None:
        _positive_int("liveness_bound_ticks", self.liveness_bound_ticks)
        _positive_int("swarm_horizon_ticks", self.swarm_horizon_ticks)
        if self.trace_format not in ("ndjson", "msgpack"):
            raise ConfigError(
                f"trace_format={self.trace_format!r}: must be 'ndjson' or 'msgpack'"
            )
