"""A sweep of many seeds, run in batches on a process pool, each run checked and validated.

A task is always a batch of seeds, never one seed, so process start-up and
TLC's JVM start are paid per batch rather than per seed where possible.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from protocols.errors import ConfigError
from sim.kernel import OUTCOME_OK
from sim.options import SimOptions
from sim.runner import run_seed

VALIDATE_MODES = ("all", "failures", "none")


@dataclass(frozen=True, slots=True)
class SeedOutcome:
    seed: int
    outcome: str  # ok, safety or liveness
    failure: str | None
    steps: int
    last_tick: int
    crashes: int
    messages_lost: int
    messages_duplicated: int
    validation: str  # accepted, rejected or skipped
    rejection: str | None  # the first unexplained line, when rejected
    tlc_seconds: float
    trace_path: str | None  # kept for failures and rejections


def parse_seed_range(text: str) -> range:
    """`A:B` is seeds A up to but not including B; `N` alone is one seed."""
    try:
        if ":" in text:
            start_text, end_text = text.split(":", 1)
            start, end = int(start_text), int(end_text)
        else:
            start = int(text)
            end = start + 1
    except ValueError:
        raise ConfigError(f"--seeds {text!r}: expected A:B (integers, B > A) or one seed") from None
    if start < 0 or end <= start:
        raise ConfigError(f"--seeds {text!r}: expected 0 <= A < B")
    return range(start, end)


def run_batch(
    protocol: str,
    seeds: Sequence[int],
    bug: str | None,
    validate: str,
    trace_dir: str | None,
    options: SimOptions | None = None,
) -> list[SeedOutcome]:
    """Run and validate a batch of seeds; this is the unit of work a worker takes."""
    # Imported here so a worker that never validates never loads the validator.
    from tracing.validate import validate_trace

    outcomes = []
    with tempfile.TemporaryDirectory(prefix="tlasim-batch-") as scratch:
        for seed in seeds:
            path = Path(scratch) / f"{protocol}-{seed}.ndjson"
            run = run_seed(protocol, seed, bug=bug, options=options, trace_path=path)
            result = run.result
            failed = result.outcome != OUTCOME_OK
            validation, rejection, tlc_seconds = "skipped", None, 0.0
            if validate == "all" or (validate == "failures" and failed):
                verdict = validate_trace(path)
                tlc_seconds = verdict.tlc_seconds
                validation = "accepted" if verdict.accepted else "rejected"
                if not verdict.accepted:
                    rejection = verdict.summary()
            kept = None
            if trace_dir is not None and (failed or validation == "rejected"):
                target = Path(trace_dir) / path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
                kept = str(target)
            outcomes.append(
                SeedOutcome(
                    seed=seed,
                    outcome=result.outcome,
                    failure=result.failure,
                    steps=result.stats.steps,
                    last_tick=result.stats.last_tick,
                    crashes=result.stats.crashes,
                    messages_lost=result.stats.messages_lost,
                    messages_duplicated=result.stats.messages_duplicated,
                    validation=validation,
                    rejection=rejection,
                    tlc_seconds=tlc_seconds,
                    trace_path=kept,
                )
            )
    return outcomes


def batches(seeds: range, batch_size: int) -> Iterator[list[int]]:
    for start in range(0, len(seeds), batch_size):
        yield list(seeds[start : start + batch_size])


def run_campaign(
    protocol: str,
    seeds: range,
    *,
    bug: str | None = None,
    validate: str = "failures",
    workers: int = 1,
    trace_dir: str | None = None,
    batch_size: int | None = None,
    on_batch: Callable[[list[SeedOutcome]], None] | None = None,
) -> list[SeedOutcome]:
    if validate not in VALIDATE_MODES:
        raise ConfigError(f"--validate {validate!r}: expected one of {', '.join(VALIDATE_MODES)}")
    if workers < 1:
        raise ConfigError(f"--workers {workers}: must be at least 1")
    size = batch_size or max(1, min(10, len(seeds) // (workers * 4) or 1))
    outcomes: list[SeedOutcome] = []

    def collect(batch: list[SeedOutcome]) -> None:
        outcomes.extend(batch)
        if on_batch is not None:
            on_batch(batch)

    if workers == 1:
        for chunk in batches(seeds, size):
            collect(run_batch(protocol, chunk, bug, validate, trace_dir))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(run_batch, protocol, chunk, bug, validate, trace_dir)
                for chunk in batches(seeds, size)
            ]
            for future in as_completed(futures):
                collect(future.result())
    outcomes.sort(key=lambda o: o.seed)
    return outcomes
