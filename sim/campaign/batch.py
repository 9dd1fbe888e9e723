"""A worker's unit of work: a batch of seeds, each run, checked and judged.

A run that `validate` samples is recorded for TLC as it runs (no log) and
handed to this worker's own TLC session (`worker_tlc`) at once, so TLC
checks it while the worker runs the next seed. A run that an oracle failed,
or that the session did not accept, is run again with a log (the simulator
is deterministic: the same run) and checked from that log by the validator,
as any file is, so its verdict and its rejection's line are the
validator's own. The batch comes back with every seed's verdict: the
campaign's process only records them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlasim.faults.plan import FaultPlan
from tlasim.protocols.errors import InternalError
from tlasim.sim.campaign import worker_tlc
from tlasim.sim.campaign.records import parse_validate_mode
from tlasim.sim.campaign.results import SeedOutcome
from tlasim.sim.coverage.run import RunCoverage
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.simulation import OUTCOME_OK
from tlasim.sim.run.runner import SeedRun, replay_traced, run_recorded, run_seed
from tlasim.tracing.outputs import open_output

__all__ = ["BatchRun", "plan_json", "run_batch"]

# How long a worker waits for its TLC between two looks at whether a run
# of its stream failed (which then raises rather than leaving it waiting).
_RESULT_POLL_SECONDS = 0.5


@dataclass(slots=True)
class BatchRun:
    """A worker's batch: every seed's outcome, with its verdict, and how
    much memory the worker's TLC held after it."""

    outcomes: list[SeedOutcome]
    worker: str  # host:pid of the process that ran it
    tlc_resident_bytes: int = 0  # its TLC JVMs' resident memory (0: none ran)
    seconds: float = 0.0  # how long the worker took, verdicts and all


def plan_json(plan: FaultPlan) -> str:
    """A fault plan as compact JSON, as the results database stores it."""
    return json.dumps(plan.to_dict(), sort_keys=True, separators=(",", ":"))


def run_batch(
    protocol: str,
    seeds: Sequence[int],
    bug: str | None,
    validate: str,
    trace_dir: str | None,
    options: SimOptions | None = None,
    protocol_overrides: Mapping[str, Any] | None = None,
    tlc: worker_tlc.TLCPlan | None = None,
    coverage: bool = True,
    inputs: Mapping[int, tuple[int, str]] | None = None,
) -> BatchRun:
    """Run a batch of seeds and judge each; `tlc` says how this worker runs
    its TLC for the runs `validate` samples (a default plan when None).
    With `coverage`, each outcome carries its run's spec coverage.

    `inputs` gives a seed of the batch another input, as a guided campaign
    chooses it (sim/campaign/guide.py): (the seed its run is run with, the
    fault plan as JSON). A seed it does not name runs as itself.
    """
    started = time.perf_counter()
    mode = parse_validate_mode(validate)
    suffix = (options or SimOptions()).trace_format
    overrides = dict(protocol_overrides or {})
    chosen = dict(inputs or {})

    def input_of(seed: int) -> tuple[int, SimOptions | None]:
        """The seed a slot's run is run with, and its options."""
        if seed not in chosen:
            return seed, options
        run_as, plan = chosen[seed]
        return run_as, dataclasses.replace(options or SimOptions(),
                                           faults=FaultPlan.from_json(plan))
    session = None
    if any(map(mode.samples, seeds)):
        session = worker_tlc.session(tlc or worker_tlc.TLCPlan("", None, long_run=False))
    runs: dict[int, SeedRun] = {}
    reached: dict[int, RunCoverage | None] = {}  # measured by the first run: a replay is the same
    submitted: set[int] = set()
    from_logs: set[int] = set()  # seeds whose verdict the validator gives, from a log
    with tempfile.TemporaryDirectory(prefix="tlasim-batch-") as scratch:

        def log_path(seed: int) -> Path:
            # The bug is in the name so campaigns sharing a trace directory
            # never overwrite each other's traces.
            return Path(scratch) / f"{protocol}-{bug or 'correct'}-{seed}.{suffix}"

        for seed in seeds:
            recorded = session is not None and mode.samples(seed)
            ready = None
            run_as, run_options = input_of(seed)
            with _collector_paused():
                if recorded:
                    run, ready, _refused = run_recorded(
                        protocol, run_as, bug=bug, options=run_options,
                        protocol_overrides=overrides, coverage=coverage,
                    )
                else:
                    run = run_seed(protocol, run_as, bug=bug, options=run_options,
                                   protocol_overrides=overrides, coverage=coverage)
            reached[seed] = run.result.coverage
            failed = run.result.outcome != OUTCOME_OK
            if failed and (mode.checks_failures or trace_dir is not None):
                run = replay_traced(
                    protocol, run_as, run.result, log_path(seed), bug=bug, options=run_options,
                    protocol_overrides=overrides,
                )
                if mode.checks_failures:
                    from_logs.add(seed)
            elif recorded:
                if ready is None:
                    from_logs.add(seed)  # a value TLC's modules cannot hold: the log tells
                else:
                    assert session is not None
                    session.submit(seed, ready)
                    submitted.add(seed)
            runs[seed] = run
        session_said = _session_verdicts(session, submitted)
        rejected_as_recorded = set()
        for seed, (accepted, unchecked, _seconds) in session_said.items():
            if not accepted:
                from_logs.add(seed)
                if unchecked is None:
                    rejected_as_recorded.add(seed)
        for seed in sorted(from_logs - {s for s in runs if log_path(s).exists()}):
            # One traced run: the recorded outcome is what the replay must match.
            first = runs[seed].result
            run_as, run_options = input_of(seed)
            again = run_seed(protocol, run_as, bug=bug, options=run_options,
                             protocol_overrides=overrides, trace_path=log_path(seed)).result
            if (again.outcome, again.failure) != (first.outcome, first.failure):
                raise InternalError(
                    f"{protocol} seed {seed} gave two different results: the simulator is "
                    "not deterministic"
                )
        verdicts = _validate_logs({seed: log_path(seed) for seed in sorted(from_logs)})
        outcomes = []
        for seed in seeds:
            result = runs[seed].result
            failed = result.outcome != OUTCOME_OK
            validation, rejection, tlc_seconds = "skipped", None, 0.0
            said = session_said.get(seed)
            verdict = verdicts.get(seed)
            if said is not None:
                tlc_seconds = said[2]
            if verdict is not None:
                tlc_seconds += verdict.tlc_seconds
                validation = "accepted" if verdict.accepted else "rejected"
                if not verdict.accepted:
                    rejection = verdict.summary()
                elif seed in rejected_as_recorded:
                    # The session checked the values the log holds; TLC
                    # cannot both reject and accept them.
                    raise InternalError(
                        f"seed {seed}: TLC rejected the run as recorded but accepts "
                        "its log: the recorder and the log disagree"
                    )
            elif said is not None:
                validation = "accepted"
            kept = None
            if trace_dir is not None and (failed or validation == "rejected"):
                kept = _keep(log_path(seed), trace_dir)
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
                    plan_json=plan_json(result.plan),
                    validation=validation,
                    rejection=rejection,
                    tlc_seconds=tlc_seconds,
                    trace_path=kept,
                    coverage=reached[seed],
                    run_seed=chosen[seed][0] if seed in chosen else None,
                )
            )
    resident = worker_tlc.resident_bytes() if session is not None else 0
    return BatchRun(outcomes, f"{socket.gethostname()}:{os.getpid()}", resident,
                    time.perf_counter() - started)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Run one seed with the cyclic garbage collector paused, then collect
    its young generation once.

    A run allocates many small objects that live until it ends (the
    recorder's steps, the cores' messages), so the collector, left on, scans
    them again and again as they age (a recorded twopc run: 7.3 ms with it
    on, 6.9 ms paused).
    One run's garbage is bounded by the run, so it waits for the run's end.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def _session_verdicts(
    session: Any, submitted: set[int]
) -> dict[int, tuple[bool, str | None, float]]:
    """What the session said of each submitted seed: (accepted, why it could
    not check it, TLC seconds)."""
    if session is None or not submitted:
        return {}
    session.flush()
    said: dict[int, tuple[bool, str | None, float]] = {}
    while len(said) < len(submitted):
        result = session.next_result(_RESULT_POLL_SECONDS)
        if result is None:
            continue
        seed = int(result.tag)
        if seed not in submitted or seed in said:
            raise InternalError(f"this worker's TLC answered for seed {seed}, which it was "
                                "not checking for this batch")
        said[seed] = (result.accepted, result.unchecked, result.tlc_seconds)
    return said


def _validate_logs(paths: dict[int, Path]) -> dict[int, Any]:
    """The validator's verdicts on these logs, by seed: one TLC run for the
    batch. A rejection's summary names its line and action; `tlasim repro`
    explains it in full, so no explain job runs here."""
    if not paths:
        return {}
    # Imported here so a worker that never validates never loads the validator.
    from tlasim.tracing.validation.validator import validate_traces

    verdicts = validate_traces(list(paths.values()), explain=False)
    return dict(zip(paths, verdicts, strict=True))


def _keep(path: Path, trace_dir: str) -> str:
    target = (Path(trace_dir) / path.name).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Copied, not renamed: the scratch directory is often on another
    # filesystem (a tmpfs /tmp), where a rename fails. The copy follows
    # tracing/outputs.py's rule, so it never lands on a FIFO, a device or a folder.
    with path.open("rb") as source, open_output(target, "--trace-dir") as kept:
        shutil.copyfileobj(source, kept)
    return str(target)

