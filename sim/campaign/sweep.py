"""A sweep of many seeds, run in batches, each run checked, validated and recorded.

A task is always a batch of seeds, never one seed, so process start-up, task
scheduling and pickling are paid per batch rather than per seed. Batches run
in this process (one worker), on a local process pool, or on Dask
(sim/campaign/executors.py). With a results database (sim/campaign/results.py), this process
records each batch as it arrives, in one transaction, and a resumed campaign
runs only the seeds that no transaction recorded.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlasim.faults.plan import FaultPlan
from tlasim.protocols import get_protocol, protocol_names, reference
from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import ConfigError, InternalError
from tlasim.sim.campaign.executors import make_executor
from tlasim.sim.campaign.records import ValidateMode, parse_validate_mode
from tlasim.sim.campaign.results import SEED_MAX, VALIDATE_MODES, Campaign, ResultsDB, SeedOutcome
from tlasim.sim.drift.revision import source_revision
from tlasim.sim.kernel.options import NetworkOptions, SimOptions
from tlasim.sim.kernel.simulation import OUTCOME_OK
from tlasim.sim.run.runner import replay_traced, run_recorded, run_seed
from tlasim.tracing.outputs import open_output
from tlasim.tracing.tla.binary import PreparedTrace

if TYPE_CHECKING:
    from tlasim.tracing.validation.tlc_batch import CheckSession

__all__ = [
    "VALIDATE_MODES",
    "SeedOutcome",
    "batches",
    "identity_changes",
    "options_json",
    "parse_seed_range",
    "plan_json",
    "run_batch",
    "run_campaign",
]



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
        # int() also refuses integers of thousands of digits: never a seed.
        raise ConfigError(
            f"--seeds {text[:40]!r}: expected A:B (integers, B > A) or one seed"
        ) from None
    if start < 0 or end <= start or end > SEED_MAX + 1:
        raise ConfigError(f"--seeds {text!r}: expected 0 <= A < B <= {SEED_MAX + 1}")
    return range(start, end)


@dataclass(slots=True)
class BatchRun:
    """A worker's batch: every seed's outcome, and the runs it recorded for
    the campaign's TLC session (`validation` "pending" until checked)."""

    outcomes: list[SeedOutcome]
    prepared: dict[int, PreparedTrace | None]  # None: recording refused a value


def run_batch(
    protocol: str,
    seeds: Sequence[int],
    bug: str | None,
    validate: str,
    trace_dir: str | None,
    options: SimOptions | None = None,
    protocol_overrides: Mapping[str, Any] | None = None,
) -> BatchRun:
    """Run a batch of seeds; this is the unit of work a worker takes.

    A run that `validate` samples, and that no oracle failed, is recorded for
    TLC (`run_recorded`: no log) and left "pending" for the campaign's
    session. A failure is checked here from its log, as the validator checks
    any file; its log is written by replaying it, which the simulator's
    determinism makes the same run, so no passing run pays for a log.
    """
    mode = parse_validate_mode(validate)
    suffix = (options or SimOptions()).trace_format
    overrides = dict(protocol_overrides or {})
    runs = []
    prepared: dict[int, PreparedTrace | None] = {}
    with tempfile.TemporaryDirectory(prefix="tlasim-batch-") as scratch:
        for seed in seeds:
            # The bug is in the name so campaigns sharing a trace directory
            # never overwrite each other's traces.
            path = Path(scratch) / f"{protocol}-{bug or 'correct'}-{seed}.{suffix}"
            recorded = mode.samples(seed)
            if recorded:
                run, ready, _refused = run_recorded(
                    protocol, seed, bug=bug, options=options, protocol_overrides=overrides
                )
            else:
                run = run_seed(protocol, seed, bug=bug, options=options,
                               protocol_overrides=overrides)
            failed = run.result.outcome != OUTCOME_OK
            if failed and (mode.checks_failures or trace_dir is not None):
                run = replay_traced(
                    protocol, seed, run.result, path, bug=bug, options=options,
                    protocol_overrides=overrides,
                )
            elif recorded:
                prepared[seed] = ready
            runs.append((seed, path, run))
        verdicts = _validate_failures(mode, runs)
        outcomes = []
        for seed, path, run in runs:
            result = run.result
            failed = result.outcome != OUTCOME_OK
            validation, rejection, tlc_seconds = "skipped", None, 0.0
            verdict = verdicts.get(seed)
            if seed in prepared:
                validation = "pending"
            elif verdict is not None:
                tlc_seconds = verdict.tlc_seconds
                validation = "accepted" if verdict.accepted else "rejected"
                if not verdict.accepted:
                    rejection = verdict.summary()
            kept = None
            if trace_dir is not None and (failed or validation == "rejected"):
                kept = _keep(path, trace_dir)
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
                )
            )
    return BatchRun(outcomes, prepared)


def _keep(path: Path, trace_dir: str) -> str:
    target = (Path(trace_dir) / path.name).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Copied, not renamed: the scratch directory is often on another
    # filesystem (a tmpfs /tmp), where a rename fails. The copy follows
    # tracing/outputs.py's rule, so it never lands on a FIFO, a device or a folder.
    with path.open("rb") as source, open_output(target, "--trace-dir") as kept:
        shutil.copyfileobj(source, kept)
    return str(target)


def _validate_failures(mode: ValidateMode, runs: list[tuple[int, Path, Any]]) -> dict[int, Any]:
    """The verdicts of the failures' logs, by seed: one TLC run for the
    batch. A rejection's summary names its line and action; `tlasim repro`
    explains it in full, so no explain job runs here."""
    wanted = [
        (seed, path)
        for seed, path, run in runs
        if mode.checks_failures and run.result.outcome != OUTCOME_OK
    ]
    if not wanted:
        return {}
    # Imported here so a worker that never validates never loads the validator.
    from tlasim.tracing.validation.validator import validate_traces

    verdicts = validate_traces([path for _, path in wanted], explain=False)
    return {seed: verdict for (seed, _), verdict in zip(wanted, verdicts, strict=True)}


def recheck_from_logs(
    protocol: str,
    outcomes: list[SeedOutcome],
    *,
    bug: str | None,
    trace_dir: str | None,
    options: SimOptions | None,
    protocol_overrides: Mapping[str, Any] | None,
) -> list[SeedOutcome]:
    """The outcomes of runs the session did not accept, checked from their
    logs by the validator, as every other file is: the verdict (and the
    rejection's line) are the validator's own. A log is written by replaying
    the run; a rejected one is kept in `trace_dir`.
    """
    from tlasim.tracing.validation.validator import validate_traces

    suffix = (options or SimOptions()).trace_format
    overrides = dict(protocol_overrides or {})
    with tempfile.TemporaryDirectory(prefix="tlasim-recheck-") as scratch:
        paths = []
        for o in outcomes:
            path = Path(scratch) / f"{protocol}-{bug or 'correct'}-{o.seed}.{suffix}"
            # One traced run: the recorded outcome is what the replay must match.
            again = run_seed(protocol, o.seed, bug=bug, options=options,
                             protocol_overrides=overrides, trace_path=path).result
            if (again.outcome, again.failure) != (o.outcome, o.failure):
                raise InternalError(
                    f"{protocol} seed {o.seed} gave two different results: the simulator is "
                    "not deterministic"
                )
            paths.append(path)
        verdicts = validate_traces(paths, explain=False)
        checked = []
        for o, path, verdict in zip(outcomes, paths, verdicts, strict=True):
            kept = o.trace_path
            if not verdict.accepted and trace_dir is not None:
                kept = _keep(path, trace_dir)
            checked.append(dataclasses.replace(
                o,
                validation="accepted" if verdict.accepted else "rejected",
                rejection=None if verdict.accepted else verdict.summary(),
                tlc_seconds=o.tlc_seconds + verdict.tlc_seconds,
                trace_path=kept,
            ))
    return checked


def plan_json(plan: FaultPlan) -> str:
    """A fault plan as compact JSON, as the results database stores it."""
    return json.dumps(plan.to_dict(), sort_keys=True, separators=(",", ":"))


def options_json(
    options: SimOptions | None,
    protocol_overrides: Mapping[str, Any] | None = None,
    source_revision: str | None = None,
    protocol_reference: str | None = None,
) -> str:
    """The run options as canonical JSON: part of a campaign's identity in the database.

    An explicit fault plan is stored as FaultPlan.to_dict() gives it, so that
    the options of a recorded campaign can be read back into a plan. The
    protocol's option overrides and the modelled code's revision are part of
    the identity too: resuming after the code changed starts a new campaign
    rather than mixing results of two versions.
    """
    chosen = options or SimOptions()
    data = dataclasses.asdict(chosen)
    data["faults"] = None if chosen.faults is None else chosen.faults.to_dict()
    data["protocol_options"] = dict(protocol_overrides or {})
    if source_revision is not None:
        data["source_revision"] = source_revision
    if protocol_reference is not None:
        # A user's protocol: how `repro` and `failures` load it again.
        data["protocol_reference"] = protocol_reference
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def campaign_options_json(
    protocol: str, options: SimOptions | None, protocol_overrides: Mapping[str, Any] | None
) -> str:
    """`options_json` with the protocol's current source revision: a campaign's key."""
    definition = get_protocol(protocol)
    revision = source_revision(tuple(definition.source_files), definition.source_root)
    return options_json(options, protocol_overrides, revision, reference(definition.name))


def recall_protocol(protocol: str, options_text: str) -> str:
    """Make a recorded campaign's protocol known again: a user's protocol that
    no entry point or TLASIM_PROTOCOLS names is loaded by the `module:ATTR`
    its campaign recorded. Returns the protocol's name."""
    if protocol in protocol_names():
        return protocol
    try:
        ref = json.loads(options_text).get("protocol_reference")
    except (ValueError, AttributeError):
        ref = None
    if not isinstance(ref, str):
        return get_protocol(protocol).name  # the error that names the known ones
    try:
        definition = get_protocol(ref)
    except ConfigError as exc:
        raise ConfigError(f"the campaign's protocol {protocol} ({ref}) cannot be loaded: "
                          f"{exc} (run from the folder it was recorded in, or name it in "
                          "TLASIM_PROTOCOLS)") from None
    if definition.name != protocol:
        raise ConfigError(f"the campaign's protocol reference {ref} now loads "
                          f"{definition.name}, not {protocol}")
    return protocol


def _check_writable_dir(path: Path) -> None:
    """Fail before any seed runs, not in a worker after a batch has run."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--trace-dir {path}: cannot create it: {exc.strerror}") from None
    if not os.access(path, os.W_OK):
        raise ConfigError(f"--trace-dir {path}: not writable")


def stored_run_options(text: str) -> tuple[SimOptions, dict[str, Any]]:
    """The inverse of `options_json`: a recorded campaign's options and overrides."""
    data = load_json(text, "the stored campaign options")
    if not isinstance(data, dict):
        raise ConfigError("the stored campaign options are not a JSON object")
    try:
        data.pop("source_revision", None)
        data.pop("protocol_reference", None)
        overrides = dict(data.pop("protocol_options", {}))
        plan = data.pop("faults")
        network = NetworkOptions(**data.pop("network"))
        options = SimOptions(
            network=network,
            faults=None if plan is None else FaultPlan.from_dict(plan),
            **data,
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"the stored campaign options cannot be read: {exc}") from None
    return options, overrides


def identity_changes(old: Campaign, protocol: str, bug: str | None, seeds: range,
                     options: str) -> list[str]:
    """What differs between campaign `old` and a campaign with this key, part by part.

    Such as `source_revision sha256:1f… -> sha256:9c…` (the protocol's code
    changed) or `protocol_options {"rm_count":3} -> {"rm_count":4}`.
    """
    changes = []
    if old.protocol != protocol:
        changes.append(f"protocol {old.protocol} -> {protocol}")
    if old.bug != bug:
        changes.append(f"bug {old.bug} -> {bug}")
    if old.seeds != seeds:
        changes.append(
            f"seeds {old.seeds.start}:{old.seeds.stop} -> {seeds.start}:{seeds.stop}"
        )
    try:
        before = load_json(old.options, "the stored campaign options")
        after = load_json(options, "the campaign options")
    except ConfigError:
        before, after = old.options, options
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return changes + ([] if before == after else ["options"])
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            shown = [json.dumps(side.get(key), sort_keys=True, separators=(",", ":"))
                     for side in (before, after)]
            changes.append(f"{key} {shown[0]} -> {shown[1]}")
    return changes


def _resume_note(store: ResultsDB, earlier: list[Campaign], campaign: Campaign,
                 done: int, resume: bool) -> str | None:
    """What `--resume` did: continue a campaign, or (and why) start a new one."""
    if not resume:
        return None
    if any(c.id == campaign.id for c in earlier):
        return f"resuming {campaign.describe()}: {done} of {len(campaign.seeds)} seeds finished"
    key = (campaign.protocol, campaign.bug, campaign.seeds, campaign.options)
    alike = [c for c in earlier if (c.protocol, c.bug) == (campaign.protocol, campaign.bug)]
    if not alike:
        return (f"--resume: {store.path} holds no {campaign.protocol} campaign"
                + (f" with bug {campaign.bug}" if campaign.bug else "")
                + f", so there is nothing to resume; starting {campaign.describe()}")
    # The closest earlier campaign: the one that differs in the fewest parts.
    changes = min((identity_changes(c, *key) for c in alike), key=len)
    closest = next(c for c in alike if identity_changes(c, *key) == changes)
    return (f"--resume: not resuming {closest.describe()}: its identity differs in "
            f"{'; '.join(changes)}; starting {campaign.describe()}, which runs every seed "
            "(the earlier results stay in the database)")


def batches(seeds: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    for start in range(0, len(seeds), batch_size):
        yield list(seeds[start : start + batch_size])


# How much nicer than the campaign's process its pool workers run while TLC
# checks their runs. The cores are shared by more processes than they hold,
# and TLC is the one the rest wait for: left an equal share, it fell behind,
# the workers were held back and a core idled, and its backlog was a
# one-core tail at the end (twopc, 1,000 seeds, 2 workers: 77 seeds/s, the
# cores 86% busy; with the workers 5 nicer: 90 seeds/s, 98% busy, TLC never
# more than about 5,000 lines behind).
WORKERS_YIELD_TO_TLC = 5


# A campaign that checks this many runs or more pays for Java's optimizing
# compiler in its TLC (`CheckSession`'s `stream_long`).
LONG_RUN_SEEDS = 1000


def run_campaign(
    protocol: str,
    seeds: range,
    *,
    bug: str | None = None,
    validate: str = "all",
    workers: int = 1,
    trace_dir: str | None = None,
    batch_size: int | None = None,
    options: SimOptions | None = None,
    protocol_overrides: Mapping[str, Any] | None = None,
    db: ResultsDB | str | os.PathLike[str] | None = None,
    resume: bool = False,
    dask: str | bool | None = None,
    on_batch: Callable[[list[SeedOutcome]], None] | None = None,
    on_resume: Callable[[list[SeedOutcome]], None] | None = None,
    on_open: Callable[[Campaign, str | None], None] | None = None,
    on_simulated: Callable[[list[SeedOutcome]], None] | None = None,
) -> list[SeedOutcome]:
    """Run every seed of `seeds` not yet recorded; return all of them, in seed order.

    `db` records each batch as it finishes. `resume` continues the campaign
    with the same key (protocol, bug, seed range, options) in `db`; without
    it, such a campaign is an error, so a sweep is never run twice into one
    database by accident. `on_open` hears of the campaign in `db` and, with
    `resume`, a note that says whether it was resumed or (and why) started
    afresh. `on_resume` hears once of the seeds recorded before, `on_batch`
    of each new batch after it is recorded (its runs checked), and
    `on_simulated` of each batch as soon as its runs are done (runs TLC
    still checks have validation "pending").

    `validate` is all, failures, none or sample:N (`records.ValidateMode`).
    Under all and sample:N the runs that pass their oracles are checked in
    large TLC batches in this process (`tlc_batch.CheckSession`) while the
    workers simulate; a run the session does not accept is checked again
    from its log by the validator, whose verdict is the one recorded.

    `dask` runs batches on the Dask scheduler at that address, or on a new
    LocalCluster of `workers` processes when True; otherwise `workers`
    processes run them (one: this process).
    """
    mode = parse_validate_mode(validate)
    if workers < 1:
        raise ConfigError(f"--workers {workers}: must be at least 1")
    if batch_size is not None and batch_size < 1:
        raise ConfigError(f"batch size {batch_size}: must be at least 1")
    if isinstance(dask, str) and not dask.strip():
        raise ConfigError("--dask: the scheduler address is empty; give tcp://host:port")
    if resume and db is None:
        raise ConfigError("--resume needs --db: the database of the campaign to resume")
    if trace_dir is not None:
        _check_writable_dir(Path(trace_dir))
    with _opened(db) as store:
        campaign_id = None
        outcomes: list[SeedOutcome] = []
        if store is not None:
            earlier = store.campaigns()
            campaign = store.open_campaign(
                protocol, bug, seeds,
                campaign_options_json(protocol, options, protocol_overrides),
                validate, resume=resume,
            )
            campaign_id = campaign.id
            outcomes = store.outcomes(campaign_id)
            if on_open is not None:
                on_open(campaign, _resume_note(store, earlier, campaign, len(outcomes), resume))
            if outcomes and on_resume is not None:
                on_resume(list(outcomes))
        finished = {o.seed for o in outcomes}
        todo = [seed for seed in seeds if seed not in finished]
        if not todo:
            # Nothing left: do not start a pool or a cluster just to stop it.
            return outcomes
        size = batch_size or max(1, min(10, len(todo) // (workers * 4) or 1))
        work = partial(
            run_batch, protocol, bug=bug, validate=validate, trace_dir=trace_dir, options=options,
            protocol_overrides=protocol_overrides,
        )

        def finish(batch: list[SeedOutcome]) -> None:
            # Recorded before anyone hears of it, so what was reported is on disk.
            if store is not None and campaign_id is not None:
                store.record(campaign_id, batch)
            outcomes.extend(batch)
            if on_batch is not None:
                on_batch(batch)

        recheck = partial(
            recheck_from_logs, protocol, bug=bug, trace_dir=trace_dir, options=options,
            protocol_overrides=protocol_overrides,
        )
        # While the workers simulate, TLC shares the cores with them: one TLC
        # run at a time per two workers. Once they are done, the last traces
        # are cut into a batch per worker, run side by side.
        jobs = max(1, workers // 2)
        with (
            _session(mode, workers, sum(map(mode.samples, todo))) as session,
            # TLC first: the workers yield the cores to it (see WORKERS_YIELD_TO_TLC).
            make_executor(
                workers, dask, WORKERS_YIELD_TO_TLC if session is not None else 0
            ) as executor,
        ):
            checking = _Checking(session, jobs, workers, finish, recheck)
            for batch in executor.map_unordered(work, batches(todo, size)):
                if on_simulated is not None:
                    on_simulated(batch.outcomes)
                checking.add(batch)
            checking.finish_all()
    outcomes.sort(key=lambda o: o.seed)
    return outcomes


class _Checking:
    """The campaign's batches between their runs and their record: each
    waits for the session's verdicts on its recorded runs, then for the
    validator on the runs the session did not accept, and is finished in the
    order its verdicts complete."""

    def __init__(
        self,
        session: CheckSession | None,
        jobs: int,
        parts: int,
        finish: Callable[[list[SeedOutcome]], None],
        recheck: Callable[[list[SeedOutcome]], list[SeedOutcome]],
    ) -> None:
        self._session, self._jobs, self._parts = session, jobs, parts
        self._finish, self._recheck = finish, recheck
        self._waiting: list[_Waiting] = []
        self._by_seed: dict[int, _Waiting] = {}

    def add(self, batch: BatchRun) -> None:
        waiting = _Waiting({o.seed: o for o in batch.outcomes})
        for seed, ready in batch.prepared.items():
            if ready is None or self._session is None:
                waiting.recheck.add(seed)
            else:
                self._session.submit(seed, ready)
                waiting.open.add(seed)
                self._by_seed[seed] = waiting
        self._waiting.append(waiting)
        self._drain(block=False)
        # Back-pressure: while TLC is behind, stop taking the workers' batches.
        while self._session is not None and self._session.pending() > self._jobs:
            if not self._by_seed:
                # Every result is in; the batches still count while they tidy up.
                self._session.wait()
                break
            self._drain(block=True)
        self._finish_ready()

    def finish_all(self) -> None:
        if self._session is not None:
            self._session.flush(self._parts)
        while self._by_seed:
            self._drain(block=True)
        self._finish_ready()

    def _drain(self, *, block: bool) -> None:
        if self._session is None:
            return
        while self._by_seed:
            result = self._session.next_result(0.2 if block else 0.0)
            if result is None:
                if block:
                    continue
                return
            seed = int(result.tag)  # type: ignore[call-overload]
            waiting = self._by_seed.pop(seed)
            waiting.open.discard(seed)
            if result.accepted:
                waiting.outcomes[seed] = dataclasses.replace(
                    waiting.outcomes[seed], validation="accepted", tlc_seconds=result.tlc_seconds
                )
            else:
                waiting.recheck.add(seed)
                if result.unchecked is None:
                    waiting.rejected.add(seed)
            if block:
                return

    def _finish_ready(self) -> None:
        for waiting in [w for w in self._waiting if not w.open]:
            self._waiting.remove(waiting)
            if waiting.recheck:
                for o in self._recheck([waiting.outcomes[s] for s in sorted(waiting.recheck)]):
                    if o.seed in waiting.rejected and o.validation == "accepted":
                        # The session checked the values the log holds; TLC
                        # cannot both reject and accept them.
                        raise InternalError(
                            f"seed {o.seed}: TLC rejected the run as recorded but accepts "
                            "its log: the recorder and the log disagree"
                        )
                    waiting.outcomes[o.seed] = o
            self._finish(list(waiting.outcomes.values()))


@dataclass(slots=True)
class _Waiting:
    outcomes: dict[int, SeedOutcome]
    open: set[int] = dataclasses.field(default_factory=set)  # seeds TLC is checking
    recheck: set[int] = dataclasses.field(default_factory=set)  # seeds for the validator
    rejected: set[int] = dataclasses.field(default_factory=set)  # of those, TLC rejected


@contextmanager
def _session(mode: ValidateMode, workers: int, runs: int) -> Iterator[CheckSession | None]:
    """The campaign's TLC session, when its mode records runs for one;
    `runs` of them at most (the sampled seeds)."""
    if mode.kind not in ("all", "sample"):
        yield None
        return
    from tlasim.tracing.validation.tlc_batch import CheckSession

    # A TLC stream explores with one thread, about as fast as two workers
    # simulate and record (twopc: 9 ms of TLC per seed against 10 of a
    # worker's), so a stream per two workers. On two cores a second stream
    # only added its start-up cost (measured: 19% to 14% of --validate none
    # on shardsplit, whose two constant sets already make two streams).
    with CheckSession(
        jobs=workers, stream=True, stream_runs=max(1, workers // 2),
        stream_long=runs >= LONG_RUN_SEEDS,
    ) as session:
        yield session


@contextmanager
def _opened(db: ResultsDB | str | os.PathLike[str] | None) -> Iterator[ResultsDB | None]:
    """`db` as a ResultsDB; closed afterwards only if it was opened here."""
    if db is None or isinstance(db, ResultsDB):
        yield db
        return
    with ResultsDB(db) as store:
        yield store
