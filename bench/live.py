"""The live runtime beside the simulator: messages per second and commit latency.

Each row runs one protocol's default workload, seed 0, no faults, twice in
this process, one after the other: as a live cluster on loopback at
`TICK_MS` milliseconds per tick, and in the simulator. The simulator's
figures are given two ways: per second of its own wall time (as fast as the
CPU goes) and per second of simulated time at the same tick (what the
modelled network's latency gives). Live messages per second are paced by the
workload's timers (both count time from tick 0 to the last step), so the
live / simulated-time ratio says how closely a
real cluster keeps the modelled pace; live / simulator-wall says what real
I/O costs. Commit latency (two-phase commit): from a transaction's
`TMBegin` to the last `RMRcvCommit` of it, averaged over its committed
transactions, from each run's trace.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tlasim.faults.plan import NO_FAULTS_PLAN
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.live.supervisor import LiveOptions, Supervisor
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import TraceStep, read_trace

TICK_MS = 1.0
PROTOCOLS = ("twopc", "shardsplit", "snapshot")


@dataclass(frozen=True)
class Row:
    protocol: str
    live_messages: int
    live_ticks: int  # the last step's tick: how long the workload took
    live_commit_ms: float | None
    sim_messages: int
    sim_wall_seconds: float
    sim_ticks: int
    sim_commit_ms: float | None

    @property
    def live_seconds(self) -> float:
        return self.live_ticks * TICK_MS / 1000.0

    @property
    def live_rate(self) -> float:
        return self.live_messages / self.live_seconds

    @property
    def sim_wall_rate(self) -> float:
        return self.sim_messages / self.sim_wall_seconds

    @property
    def sim_time_rate(self) -> float:
        return self.sim_messages / (self.sim_ticks * TICK_MS / 1000.0)


def commit_latency_ms(steps: Iterable[TraceStep]) -> float | None:
    """Mean ms from TMBegin to the last RMRcvCommit of each committed transaction."""
    begun: dict[str, int] = {}
    committed: dict[str, int] = {}
    for step in steps:
        if step.ts is None:
            continue
        tx = step.params.get("tx")
        if step.action == "TMBegin" and isinstance(tx, str):
            begun.setdefault(tx, step.ts)
        elif step.action == "RMRcvCommit" and isinstance(tx, str):
            committed[tx] = max(committed.get(tx, step.ts), step.ts)
    spans = [committed[tx] - begun[tx] for tx in committed if tx in begun]
    return sum(spans) / len(spans) * TICK_MS if spans else None


def row(protocol: str) -> Row:
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-live-") as scratch:
        live = Supervisor(
            protocol, 0, plan=NO_FAULTS_PLAN, options=LiveOptions(tick_ms=TICK_MS),
            run_dir=Path(scratch) / "run",
        ).run()
        live_steps = read_trace(live.trace_path).steps
        live_latency = commit_latency_ms(live_steps)
        live_ticks = live.merged.last_tick
        trace = Path(scratch) / "sim.ndjson"
        started = time.perf_counter()
        run_seed(protocol, 0, options=SimOptions(faults=NO_FAULTS_PLAN))
        sim_seconds = time.perf_counter() - started
        sim = run_seed(protocol, 0, options=SimOptions(faults=NO_FAULTS_PLAN), trace_path=trace)
        sim_latency = commit_latency_ms(read_trace(trace).steps)
    stats = sim.result.stats
    return Row(protocol, live.messages_sent, live_ticks, live_latency,
               stats.messages_sent, sim_seconds, stats.last_tick, sim_latency)


def run() -> list[Row]:
    return [row(protocol) for protocol in PROTOCOLS]
