"""Campaign throughput: seeds per second per core, pool speed-up, Dask against the pool.

All figures come from one process, side by side, for the standard campaign of
a protocol (its default options, swarm faults):
- one core, traces in memory: each seed's trace kept in memory;
- `run_campaign` with 1 and with 2 local workers (no validation, no trace):
  the pool's speed-up on this machine;
- optionally, `run_campaign` on a Dask LocalCluster of 2 workers against the
  pool of 2.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.run.runner import run_seed


@dataclass(frozen=True)
class Rate:
    label: str
    seeds: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.seeds / self.seconds


def one_core_traces_in_memory(protocol: str, seeds: int) -> Rate:
    start = time.perf_counter()
    for seed in range(seeds):
        run_seed(protocol, seed, keep_trace=True)
    return Rate("1 core, traces in memory", seeds, time.perf_counter() - start)


def campaign(protocol: str, seeds: int, *, workers: int, dask: bool = False) -> Rate:
    start = time.perf_counter()
    run_campaign(protocol, range(seeds), workers=workers, validate="none", dask=dask or None)
    label = f"{'dask LocalCluster' if dask else 'process pool'}, {workers} worker(s)"
    return Rate(label, seeds, time.perf_counter() - start)


def command(protocol: str, seeds: int) -> Rate:
    """What a user runs: `tlasim campaign` with its defaults (a results
    database, a trace folder), no validation, 1 worker, process start included."""
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tlasim.sim", "campaign", protocol, "--seeds", f"0:{seeds}",
             "--validate", "none", "--workers", "1", "--db", str(Path(scratch) / "r.db"),
             "--trace-dir", str(Path(scratch) / "traces")],
            check=True, capture_output=True,
        )
        seconds = time.perf_counter() - start
    return Rate("tlasim campaign command, 1 worker", seeds, seconds)


def run(protocol: str = "twopc", seeds: int = 1000, *, dask: bool = True) -> list[Rate]:
    """Traces in memory, the pool at 1 and 2 workers, (if `dask`) Dask at 2,
    then the command a user runs at 1 worker."""
    rates = [
        one_core_traces_in_memory(protocol, seeds),
        campaign(protocol, seeds, workers=1),
        campaign(protocol, seeds, workers=2),
    ]
    if dask:
        rates.append(campaign(protocol, seeds, workers=2, dask=True))
    rates.append(command(protocol, seeds))
    return rates
