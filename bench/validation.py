"""TLC validation: batched runs against one TLC process per trace, side by side.

Both paths check the same two-phase commit traces (3 RMs, 4 transactions,
swarm faults: about 110 steps each, the size the target names) with the
same generated modules; the only difference is how many traces one TLC
process checks. One
process per trace costs about a second and a half each, so by default it is
timed on a sample and the ratio compares seconds per trace;
`python -m bench.validation --sample 1000` times it on every trace.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sim.run.runner import run_seed
from tracing.validation.validator import validate_trace, validate_traces


@dataclass(frozen=True)
class ValidationComparison:
    traces: int
    steps: int
    sample: int  # traces checked one TLC process each
    per_trace_seconds: float  # wall seconds for the sample, one TLC per trace
    batched: dict[int, float]  # jobs -> wall seconds for all traces, batched

    @property
    def per_trace_mean(self) -> float:
        return self.per_trace_seconds / self.sample

    def speedup(self, jobs: int) -> float:
        """Seconds per trace, one TLC each, over seconds per trace batched."""
        return self.per_trace_mean / (self.batched[jobs] / self.traces)


TX_COUNT = 4  # transactions per trace: about 110 steps


def make_traces(count: int, folder: Path) -> tuple[list[Path], int]:
    paths, steps = [], 0
    for seed in range(1, count + 1):
        path = folder / f"twopc-{seed}.ndjson"
        run = run_seed("twopc", seed, trace_path=path, protocol_overrides={"tx_count": TX_COUNT})
        steps += run.result.stats.steps
        paths.append(path)
    return paths, steps


def run(
    traces: int = 1000, sample: int = 60, jobs: tuple[int, ...] = (1, 2)
) -> ValidationComparison:
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        paths, steps = make_traces(traces, Path(scratch))
        start = time.perf_counter()
        for path in paths[:sample]:
            verdict = validate_trace(path)
            if not verdict.accepted:
                raise SystemExit(f"benchmark trace {path.name} was rejected:\n{verdict.report()}")
        per_trace = time.perf_counter() - start
        batched = {}
        for j in jobs:
            start = time.perf_counter()
            verdicts = validate_traces(paths, jobs=j)
            batched[j] = time.perf_counter() - start
            rejected = [v for v in verdicts if not v.accepted]
            if rejected:
                raise SystemExit(f"benchmark trace rejected in a batch:\n{rejected[0].report()}")
    return ValidationComparison(traces, steps, min(sample, traces), per_trace, batched)


def describe(c: ValidationComparison) -> list[str]:
    lines = [
        f"TLC validation of {c.traces} twopc traces ({c.steps} steps, "
        f"{c.steps / c.traces:.0f} per trace):",
        f"  one TLC process per trace: {c.per_trace_mean:.2f} s per trace "
        f"(timed on {c.sample} traces: {c.per_trace_seconds:.1f} s)",
    ]
    for j, seconds in sorted(c.batched.items()):
        lines.append(
            f"  batched, {j} TLC at once: {seconds:.1f} s for all, "
            f"{1000 * seconds / c.traces:.0f} ms per trace: {c.speedup(j):.1f}x faster"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=60)
    args = parser.parse_args()
    for line in describe(run(args.traces, args.sample)):
        print(line, flush=True)


if __name__ == "__main__":
    main()
