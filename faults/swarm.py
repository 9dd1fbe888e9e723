"""Swarm testing, as in TigerBeetle's VOPR: the seed picks the weather.

Each seed switches every kind of fault on or off and draws its rate, so two
seeds can explore very different conditions: one run has heavy loss and no
crashes, the next crashes nodes often on a reliable network. A sweep over
many seeds then covers combinations that one fixed fault mix would starve.
The draw uses only the fault stream it is given.
"""

from __future__ import annotations

import random

from faults.options import FaultOptions

# Rates are drawn from these menus so that "rare" and "often" both occur.
_CRASH_RATES = (0.002, 0.01, 0.03)
_LOSS_RATES = (0.02, 0.1, 0.3)
_DUPLICATE_RATES = (0.02, 0.1, 0.3)
_DELAY_RATES = (0.05, 0.2, 0.5)


def swarm_faults(rng: random.Random, *, fault_phase_ticks: int = 600) -> FaultOptions:
    """Draw which faults are on, and how often, from the fault stream `rng`."""

    def maybe(rates: tuple[float, ...]) -> float:
        # Each kind is on for about two seeds in three.
        return rng.choice(rates) if rng.random() < 0.65 else 0.0

    crash = maybe(_CRASH_RATES)
    loss = maybe(_LOSS_RATES)
    duplicate = maybe(_DUPLICATE_RATES)
    delay = maybe(_DELAY_RATES)
    restart_max = rng.choice((20, 60, 150))
    return FaultOptions(
        crash_probability=crash,
        restart_ticks_min=min(5, restart_max),
        restart_ticks_max=restart_max,
        loss_probability=loss,
        duplicate_probability=duplicate,
        delay_probability=delay,
        delay_ticks_max=rng.choice((20, 100)),
        fault_phase_ticks=fault_phase_ticks,
    )
