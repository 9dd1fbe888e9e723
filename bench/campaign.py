"""Campaign throughput: seeds per second per core, pool speed-up, Dask against the pool.

All figures come from one process, side by side:
- one core, traces in memory: the standard two-phase commit campaign
  (3 RMs, 5 transactions, swarm faults), each seed's trace kept in memory;
- `run_campaign` with 1 and with 2 local workers (no validation, no trace):
  the pool's speed-up on this machine;
- `run_campaign` on a Dask LocalCluster of 2 workers against the pool of 2.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sim.campaign import run_campaign
from sim.runner import run_seed


@dataclass(frozen=True)
class Rate:
    label: str
    seeds: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.seeds / self.seconds


def one_core_traces_in_memory(seeds: int) -> Rate:
    start = time.perf_counter()
    for seed in range(seeds):
        run_seed("twopc", seed, keep_trace=True)
    return Rate("1 core, traces in memory", seeds, time.perf_counter() - start)


def campaign(seeds: int, *, workers: int, dask: bool = False) -> Rate:
    start = time.perf_counter()
    run_campaign("twopc", range(seeds), workers=workers, validate="none", dask=dask or None)
    label = f"{'dask LocalCluster' if dask else 'process pool'}, {workers} worker(s)"
    return Rate(label, seeds, time.perf_counter() - start)


def run(seeds: int = 1000) -> list[Rate]:
    return [
        one_core_traces_in_memory(seeds),
        campaign(seeds, workers=1),
        campaign(seeds, workers=2),
        campaign(seeds, workers=2, dask=True),
    ]
