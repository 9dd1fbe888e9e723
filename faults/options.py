"""Fault options: what may go wrong in a run, and how often.

`faults/` decides what may happen; `sim/` only carries it out. Every field
is validated and carries its unit. All faults stop at `fault_phase_ticks`:
after that every crashed node restarts, the network is reliable, and the
protocol must finish its work within the liveness bound.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from protocols.errors import ConfigError


@dataclass(frozen=True, slots=True)
class FaultOptions:
    crash_probability: float = 0.0  # chance a node crashes after any one atomic step
    restart_ticks_min: int = 5  # a crashed node restarts after at least this many ticks
    restart_ticks_max: int = 60  # ... and at most this many
    loss_probability: float = 0.0  # chance a message in flight is lost
    duplicate_probability: float = 0.0  # chance a sent message gets a second copy
    delay_probability: float = 0.0  # chance a message takes extra latency
    delay_ticks_max: int = 100  # the most extra latency a delayed message takes
    fault_phase_ticks: int = 600  # faults happen only before this tick

    def __post_init__(self) -> None:
        for name in (
            "crash_probability",
            "loss_probability",
            "duplicate_probability",
            "delay_probability",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                0.0 <= value <= 1.0
            ):
                raise ConfigError(f"{name}={value!r}: must be a probability in [0, 1]")
        for name in ("restart_ticks_min", "restart_ticks_max", "delay_ticks_max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}={value!r}: must be a positive integer (ticks)")
        if self.restart_ticks_min > self.restart_ticks_max:
            raise ConfigError(
                f"restart_ticks_min={self.restart_ticks_min} exceeds "
                f"restart_ticks_max={self.restart_ticks_max}"
            )
        if (
            isinstance(self.fault_phase_ticks, bool)
            or not isinstance(self.fault_phase_ticks, int)
            or self.fault_phase_ticks < 0
        ):
            raise ConfigError(
                f"fault_phase_ticks={self.fault_phase_ticks!r}: must be a non-negative integer"
            )

    @property
    def any(self) -> bool:
        return any(
            getattr(self, name) > 0
            for name in (
                "crash_probability",
                "loss_probability",
                "duplicate_probability",
                "delay_probability",
            )
        )

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


NO_FAULTS = FaultOptions()
