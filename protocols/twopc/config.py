"""Options, workload and the per-run configuration shared by the TM and RMs.

The workload is plain data drawn once per run from the workload stream, so a
core never draws a random number: every choice it makes is written here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tlasim.protocols.defaults import OptionsBase
from tlasim.protocols.errors import ConfigError

VOTE_YES = "yes"
VOTE_NO = "no"


@dataclass(frozen=True, slots=True)
class TwoPCOptions(OptionsBase):
    rm_count: int = 3  # resource managers
    tx_count: int = 5  # transactions per run
    tx_spacing_ticks: int = 40  # mean gap between two transactions' begin ticks
    vote_timeout_ticks: int = 30  # TM waits this long for votes before resending Prepare
    prepare_attempts_max: int = 3  # TM sends Prepare this many times, then aborts
    inquiry_interval_ticks: int = 25  # a prepared RM resends its vote this often
    working_timeout_ticks: int = 200  # an RM still working this long after begin aborts
    no_vote_probability: float = 0.1  # chance an RM votes No on a transaction
    self_abort_probability: float = 0.05  # chance an RM aborts on its own before voting

    def __post_init__(self) -> None:
        for name in ("rm_count", "tx_count"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name}={value!r}: must be an integer")
        if not 1 <= self.rm_count <= 9:
            raise ConfigError(f"rm_count={self.rm_count}: must be between 1 and 9")
        if not 1 <= self.tx_count <= 99:
            raise ConfigError(f"tx_count={self.tx_count}: must be between 1 and 99")
        for name in (
            "tx_spacing_ticks",
            "vote_timeout_ticks",
            "prepare_attempts_max",
            "inquiry_interval_ticks",
            "working_timeout_ticks",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name}={value!r}: must be a positive integer")
        for name in ("no_vote_probability", "self_abort_probability"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0.0 <= value <= 1.0)
            ):
                raise ConfigError(f"{name}={value!r}: must be a probability in [0, 1]")


@dataclass(frozen=True, slots=True)
class TxPlan:
    """One transaction: when the TM begins it and how each RM behaves."""

    tx: str
    begin_tick: int
    votes: dict[str, str]  # rm -> VOTE_YES or VOTE_NO
    self_abort_ticks: dict[str, int] = field(default_factory=dict)  # rm -> tick


@dataclass(frozen=True, slots=True)
class TwoPCConfig:
    """Everything a core knows: the cast, the workload, the timing and the bug."""

    rms: tuple[str, ...]
    txs: tuple[TxPlan, ...]
    options: TwoPCOptions
    bug: str | None = None

    def plan(self, tx: str) -> TxPlan:
        for plan in self.txs:
            if plan.tx == tx:
                return plan
        raise KeyError(tx)


def rm_ids(count: int) -> tuple[str, ...]:
    return tuple(f"r{i}" for i in range(1, count + 1))


def tx_ids(count: int) -> tuple[str, ...]:
    return tuple(f"t{i}" for i in range(1, count + 1))


def draw_workload(options: TwoPCOptions, rng: random.Random) -> tuple[TxPlan, ...]:
    """Draw begin ticks and every RM's behaviour, from the workload stream only."""
    plans = []
    tick = 0
    rms = rm_ids(options.rm_count)
    for tx in tx_ids(options.tx_count):
        tick += rng.randint(1, 2 * options.tx_spacing_ticks)
        votes = {}
        self_aborts = {}
        for rm in rms:
            votes[rm] = VOTE_NO if rng.random() < options.no_vote_probability else VOTE_YES
            if rng.random() < options.self_abort_probability:
                self_aborts[rm] = tick + rng.randint(0, options.vote_timeout_ticks)
        plans.append(TxPlan(tx=tx, begin_tick=tick, votes=votes, self_abort_ticks=self_aborts))
    return tuple(plans)
