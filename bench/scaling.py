"""Does validated throughput grow with the workers? Measured parts, and a model.

Measured here, side by side in one run, per protocol's standard campaign:
(a) `tlc_rate`: one TLC session fed as fast as it takes them from runs
    recorded beforehand (no simulation meanwhile): step lines per second of
    wall time, and the JVM's CPU seconds per line (all its threads: the
    compiler's and the collector's too);
(b) `worker_rate`: one core simulating and recording runs for TLC, step
    lines per second (and, for scale, simulating alone);
(c) `model`: from (a) and (b), the validated seeds per second of W workers
    in the old design (every worker's runs to one TLC session in the
    campaign's process) and in this one (each worker its own TLC);
(d) `side_by_side`: on this machine, `run_campaign` with 2 workers on the
    process pool and on a Dask LocalCluster, validating all runs and none.

The model's assumptions, stated where it is printed (`assumptions`):
- a worker has a core of its own, and simulates at (b)'s rate;
- old design: the shared TLC has a core of its own too (generous to it)
  and checks at (a)'s rate, so validated lines/s = min(W * b, a);
- new design: a worker's core runs its simulation and its TLC in turn, so
  it validates 1 / (1/b + cpu_per_line) lines/s, where cpu_per_line is (a)'s
  JVM CPU per line (warm: start-up is paid once per worker and left out);
  the campaign's process records every seed, so the whole is capped at
  1 / record_seconds_per_seed seeds/s, also measured here;
- memory, the network (Dask) and the disk are not the limit.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tlasim.sim.campaign.results import ResultsDB
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.run.runner import run_recorded, run_seed
from tlasim.tracing.tla.binary import PreparedTrace
from tlasim.tracing.validation.tlc_batch import CheckSession

WORKER_COUNTS = (2, 4, 8, 16, 64)
# Runs recorded for (a): enough that TLC's warm-up is a small part.
TLC_SEEDS = {"twopc": 3000, "shardsplit": 1000, "snapshot": 1000}
WORKER_SEEDS = {"twopc": 400, "shardsplit": 150, "snapshot": 150}
SIDE_BY_SIDE_SEEDS = 1000


@dataclass(frozen=True)
class TLCRate:
    protocol: str
    traces: int
    lines: int
    seconds: float
    cpu_seconds: float

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.seconds

    @property
    def cpu_per_line(self) -> float:
        return self.cpu_seconds / self.lines


@dataclass(frozen=True)
class WorkerRate:
    protocol: str
    seeds: int
    lines: int
    recorded_seconds: float  # simulating and recording, CPU of this process
    plain_seconds: float  # simulating alone

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.recorded_seconds

    @property
    def lines_per_seed(self) -> float:
        return self.lines / self.seeds


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tlc_rate(protocol: str) -> TLCRate:
    """(a): one warm session, fed from memory as fast as it takes the runs."""
    prepared: list[PreparedTrace] = []
    for seed in range(TLC_SEEDS[protocol]):
        _, ready, _ = run_recorded(protocol, seed)
        if ready is not None:
            prepared.append(ready)
    cpu, start = _children_cpu(), time.perf_counter()
    with CheckSession(stream=True, stream_long=True) as session:
        for index, ready in enumerate(prepared):
            session.submit(index, ready)
        session.flush()
        results = [session.results.get() for _ in prepared]
    seconds = time.perf_counter() - start
    if not all(r.accepted for r in results):
        raise SystemExit(f"{protocol}: the session did not accept a correct run")
    return TLCRate(protocol, len(prepared), sum(p.steps for p in prepared), seconds,
                   _children_cpu() - cpu)


def worker_rate(protocol: str) -> WorkerRate:
    """(b): one core's simulation and recording, in this process's CPU time."""
    seeds = WORKER_SEEDS[protocol]
    run_seed(protocol, 0)  # imports and first-use costs out of the way
    start = time.process_time()
    lines = 0
    for seed in range(seeds):
        run, _, _ = run_recorded(protocol, seed)
        lines += run.result.stats.steps
    recorded = time.process_time() - start
    start = time.process_time()
    for seed in range(seeds):
        run_seed(protocol, seed)
    return WorkerRate(protocol, seeds, lines, recorded, time.process_time() - start)


# Seeds per batch the campaign's process records in one transaction: the
# size `sizing.BatchSizer` gives twopc's batches once its pace is known.
RECORD_BATCH = 50


def record_seconds_per_seed(protocol: str, seeds: int = 2000) -> float:
    """The campaign process's own cost per seed: writing outcomes to the
    results database, a batch per transaction as workers send them."""
    outcomes = run_campaign(protocol, range(seeds), validate="none", workers=1)
    with (tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch,
          ResultsDB(Path(scratch) / "r.db") as db):
        campaign = db.open_campaign(protocol, None, range(seeds), "{}", "none", resume=False)
        start = time.perf_counter()
        for i in range(0, seeds, RECORD_BATCH):
            db.record(campaign.id, outcomes[i : i + RECORD_BATCH])
        return (time.perf_counter() - start) / seeds


@dataclass(frozen=True)
class Modelled:
    workers: int
    old_seeds_per_second: float
    new_seeds_per_second: float


def model(tlc: TLCRate, worker: WorkerRate, record_seconds: float) -> list[Modelled]:
    """(c), by the assumptions of this module's docstring."""
    per_seed = worker.lines_per_seed
    per_worker_new = 1 / (1 / worker.lines_per_second + tlc.cpu_per_line)
    rows = []
    for w in WORKER_COUNTS:
        old = min(w * worker.lines_per_second, tlc.lines_per_second) / per_seed
        new = min(w * per_worker_new / per_seed, 1 / record_seconds)
        rows.append(Modelled(w, old, new))
    return rows


def saturation(tlc: TLCRate, worker: WorkerRate) -> float:
    """The worker count at which one shared TLC is as fast as the workers."""
    return tlc.lines_per_second / worker.lines_per_second


@dataclass(frozen=True)
class SideBySide:
    label: str
    none_seconds: float
    all_seconds: float

    @property
    def ratio(self) -> float:
        """validate all / validate none, in seeds per second."""
        return self.none_seconds / self.all_seconds


def side_by_side(protocol: str = "twopc", seeds: int = SIDE_BY_SIDE_SEEDS,
                 pairs: int = 3) -> list[SideBySide]:
    """(d): pool and Dask LocalCluster, 2 workers each, all against none,
    `pairs` times back to back; the median of each."""
    rows = []
    for label, dask in (("process pool", None), ("dask LocalCluster", True)):
        none, checked = [], []
        for _ in range(pairs):
            for mode, into in (("none", none), ("all", checked)):
                start = time.perf_counter()
                outcomes = run_campaign(protocol, range(seeds), validate=mode, workers=2,
                                        dask=dask)
                into.append(time.perf_counter() - start)
                if mode == "all" and any(o.validation != "accepted" for o in outcomes):
                    raise SystemExit(f"{protocol}: a correct run was not accepted")
        rows.append(SideBySide(label, statistics.median(none), statistics.median(checked)))
    return rows


ASSUMPTIONS = (
    "model: each worker a core of its own, simulating at (b); old design: one shared TLC "
    "on a core of its own at (a), validated lines/s = min(W*b, a); new design: each worker's "
    "core runs its simulation and its TLC in turn, 1/(1/b + TLC CPU per line) lines/s each, "
    "capped by the campaign process recording every seed; start-up and memory left out"
)


def describe(protocol: str) -> list[str]:
    tlc, worker = tlc_rate(protocol), worker_rate(protocol)
    record = record_seconds_per_seed(protocol)
    lines = [
        f"{protocol} (a) one TLC session fed from {tlc.traces:,} recorded runs: "
        f"{tlc.lines_per_second:,.0f} lines/s, {1e6 * tlc.cpu_per_line:.1f} us of JVM CPU "
        f"per line ({tlc.cpu_seconds / tlc.seconds:.2f} cores busy)",
        f"{protocol} (b) one worker core: {worker.lines_per_second:,.0f} lines/s simulated "
        f"and recorded ({worker.lines / worker.plain_seconds:,.0f} simulated alone), "
        f"{worker.lines_per_seed:.0f} lines per seed",
        f"{protocol} (c) one shared TLC saturates at {saturation(tlc, worker):.1f} workers; "
        f"the campaign process records {1 / record:,.0f} seeds/s at most",
    ]
    for row in model(tlc, worker, record):
        lines.append(
            f"{protocol} (c) {row.workers:>2} workers: old design {row.old_seeds_per_second:,.0f} "
            f"validated seeds/s, new {row.new_seeds_per_second:,.0f} "
            f"({row.new_seeds_per_second / row.old_seeds_per_second:.2f}x)"
        )
    return lines
