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
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from tlasim.faults.plan import FaultPlan
from tlasim.protocols import get_protocol, protocol_names, reference
from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import ConfigError
from tlasim.sim.campaign.batch import BatchRun, plan_json, run_batch
from tlasim.sim.campaign.executors import IN_FLIGHT_PER_WORKER, make_executor
from tlasim.sim.campaign.guide import Guide, check_guide
from tlasim.sim.campaign.records import parse_validate_mode
from tlasim.sim.campaign.results import SEED_MAX, VALIDATE_MODES, Campaign, ResultsDB, SeedOutcome
from tlasim.sim.campaign.sizing import BatchSizer
from tlasim.sim.campaign.worker_tlc import close_sessions, plan_tlc
from tlasim.sim.drift.revision import source_revision
from tlasim.sim.kernel.options import NetworkOptions, SimOptions

__all__ = [
    "VALIDATE_MODES",
    "BatchRun",
    "SeedOutcome",
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


def options_json(
    options: SimOptions | None,
    protocol_overrides: Mapping[str, Any] | None = None,
    source_revision: str | None = None,
    protocol_reference: str | None = None,
    guide: tuple[str, int] | None = None,
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
    if guide is not None:
        # A guided campaign's runs differ from a plain one's: another campaign.
        data["guide"] = {"mode": guide[0], "seed": guide[1]}
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def campaign_options_json(
    protocol: str, options: SimOptions | None, protocol_overrides: Mapping[str, Any] | None,
    guide: tuple[str, int] | None = None,
) -> str:
    """`options_json` with the protocol's current source revision: a campaign's key."""
    definition = get_protocol(protocol)
    revision = source_revision(tuple(definition.source_files), definition.source_root)
    return options_json(options, protocol_overrides, revision, reference(definition.name),
                        guide)


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
        data.pop("guide", None)
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


# A worker that checks this many runs or more pays for Java's optimizing
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
    on_tlc: Callable[[str, int], None] | None = None,
    coverage: bool = True,
    guide: str = "none",
    guide_seed: int = 0,
) -> list[SeedOutcome]:
    """Run every seed of `seeds` not yet recorded; return all of them, in seed order.

    `db` records each batch as it finishes. `resume` continues the campaign
    with the same key (protocol, bug, seed range, options) in `db`; without
    it, such a campaign is an error, so a sweep is never run twice into one
    database by accident. `on_open` hears of the campaign in `db` and, with
    `resume`, a note that says whether it was resumed or (and why) started
    afresh. `on_resume` hears once of the seeds recorded before, `on_batch`
    of each new batch after it is recorded, `on_simulated` of it as it
    arrives, before it is recorded (both with its verdicts: a worker checks
    its own runs), and `on_tlc` of the worker that ran it (host:pid) and its
    TLC's resident memory in bytes, when it ran one.

    `validate` is all, failures, none or sample:N (`records.ValidateMode`).
    Under all and sample:N each worker checks the runs that pass their
    oracles in its own long-lived TLC (`worker_tlc`) while it simulates the
    next; a run its TLC does not accept is checked again from its log by
    the validator, whose verdict is the one recorded. Each worker's TLC
    gets a heap that lets `workers` of them fit in this machine's memory,
    or the campaign is refused (`worker_tlc.plan_tlc`).

    `dask` runs batches on the Dask scheduler at that address, or on a new
    LocalCluster of `workers` processes when True; otherwise `workers`
    processes run them (one: this process).

    `coverage` measures each run's spec coverage (`SeedOutcome.coverage`),
    stored with its run. `guide` "coverage" steers the campaign toward spec
    states no run reached (sim/campaign/guide.py), deterministically from
    `guide_seed`; it needs `coverage` and swarm faults.
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
    guider = None
    if check_guide(guide) != "none":
        if not coverage:
            raise ConfigError("--guide coverage steers by the runs' coverage: it cannot run "
                              "without measuring it")
        if options is not None and options.faults is not None:
            raise ConfigError("--guide coverage mutates swarm plans: it cannot run under one "
                              "fixed fault plan")
        guider = Guide(protocol, protocol_overrides, seeds, guide_seed)
    if trace_dir is not None:
        _check_writable_dir(Path(trace_dir))
    with _opened(db) as store:
        campaign_id = None
        outcomes: list[SeedOutcome] = []
        if store is not None:
            earlier = store.campaigns()
            campaign = store.open_campaign(
                protocol, bug, seeds,
                campaign_options_json(protocol, options, protocol_overrides,
                                      None if guider is None else (guide, guide_seed)),
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
        tlc = None
        if any(map(mode.samples, todo)):
            # Each worker's share of the checked runs decides its compiler.
            per_worker = sum(map(mode.samples, todo)) / workers
            tlc = plan_tlc(
                uuid.uuid4().hex, workers, long_run=per_worker >= LONG_RUN_SEEDS,
                local=not isinstance(dask, str),
            )
        work = partial(
            run_batch, protocol, bug=bug, validate=validate, trace_dir=trace_dir, options=options,
            protocol_overrides=protocol_overrides, tlc=tlc, coverage=coverage,
        )
        try:
            with make_executor(workers, dask) as executor:

                def run_all(todo: list[int], inputs: dict[int, tuple[int, str]],
                            sizer: BatchSizer) -> None:
                    for batch in executor.map_unordered(partial(work, inputs=inputs), sizer):
                        sizer.observe(len(batch.outcomes), batch.seconds)
                        if on_simulated is not None:
                            on_simulated(batch.outcomes)
                        # Recorded before anyone hears of it, so what was reported is on disk.
                        if store is not None and campaign_id is not None:
                            store.record(campaign_id, batch.outcomes)
                        outcomes.extend(batch.outcomes)
                        if on_batch is not None:
                            on_batch(batch.outcomes)
                        if on_tlc is not None and batch.tlc_resident_bytes:
                            on_tlc(batch.worker, batch.tlc_resident_bytes)

                if guider is None:
                    run_all(todo, {}, BatchSizer(todo, executor.slots, fixed=batch_size,
                                                 in_flight_per_slot=IN_FLIGHT_PER_WORKER))
                else:
                    for slots in guider.rounds():
                        # Decided even for a round already recorded, so that
                        # the corpus's picks are as the first attempt made them.
                        inputs = guider.inputs(slots)
                        left = [seed for seed in slots if seed not in finished]
                        if left:
                            # Every worker gets a share of the round: it ends
                            # at a barrier, so one big batch would idle the rest.
                            share = batch_size or -(-len(left) // (2 * executor.slots))
                            run_all(left, {s: inputs[s] for s in left if s in inputs},
                                    BatchSizer(left, executor.slots, fixed=share))
                        in_round = {o.seed: o for o in outcomes if o.seed in slots}
                        guider.observe(in_round.values())
        finally:
            # This process's own TLC, when it was the only worker.
            close_sessions()
    outcomes.sort(key=lambda o: o.seed)
    return outcomes


@contextmanager
def _opened(db: ResultsDB | str | os.PathLike[str] | None) -> Iterator[ResultsDB | None]:
    """`db` as a ResultsDB; closed afterwards only if it was opened here."""
    if db is None or isinstance(db, ResultsDB):
        yield db
        return
    with ResultsDB(db) as store:
        yield store
