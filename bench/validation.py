"""TLC validation cost: seconds per trace and per trace step, one TLC run per trace."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sim.runner import run_seed
from tracing.validate import validate_trace


@dataclass(frozen=True)
class ValidationCost:
    traces: int
    steps: int
    wall_seconds: float
    tlc_seconds: float

    @property
    def ms_per_step(self) -> float:
        return 1000 * self.wall_seconds / self.steps


def run(traces: int = 10) -> ValidationCost:
    steps = 0
    tlc = 0.0
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        paths = []
        for seed in range(traces):
            path = Path(scratch) / f"{seed}.ndjson"
            result = run_seed("twopc", seed, trace_path=path).result
            steps += result.stats.steps
            paths.append(path)
        start = time.perf_counter()
        for path in paths:
            verdict = validate_trace(path)
            if not verdict.accepted:
                raise SystemExit(f"benchmark trace {path.name} was rejected:\n{verdict.report()}")
            tlc += verdict.tlc_seconds
        wall = time.perf_counter() - start
    return ValidationCost(traces, steps, wall, tlc)
