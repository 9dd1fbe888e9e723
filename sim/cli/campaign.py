"""The campaign family of commands: campaign, repro, failures, search and shrink.

A campaign sweeps seeds and stores every result; each failure ends in a
report (the broken property, the shrunk plan, a trace excerpt, one command
that replays it), and the shrunk plan is stored beside the failure.
`failures` lists a database's failures, `repro` replays one (its shrunk
plan by default), `shrink` minimizes one seed's plan, and `search` lets
hypothesis choose the inputs. Every value read from a file or a database is
printed through `printable`, so none can forge a line of output.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from faults.plan import FaultPlan
from protocols import get_protocol
from protocols.errors import ConfigError, InternalError
from sim import exitcodes
from sim.campaign.results import Campaign, ResultsDB, RunRecord, ShrunkRun
from sim.campaign.shrinking import shrink_failure
from sim.campaign.sweep import (
    VALIDATE_MODES,
    SeedOutcome,
    campaign_options_json,
    identity_changes,
    parse_seed_range,
    plan_json,
    run_campaign,
    stored_run_options,
)
from sim.cli.support import (
    check_bug,
    err,
    exit_code_help,
    exit_for,
    fault_plan,
    guarded,
    out,
    parse_assignments,
    printable,
    protocol_argument,
    refuse_overwrite,
)
from sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY
from sim.run.report import reproduce_command
from sim.run.runner import run_seed

LISTED_FAILURES_MAX = 10  # failures listed one line each, after the full reports


def _summary_table(protocol: str, bug: str | None, outcomes: list[SeedOutcome]) -> Table:
    table = Table(title=f"{protocol} campaign" + (f" (bug {bug})" if bug else ""))
    for column in ("outcome", "seeds", "mean steps", "crashes", "lost", "dup",
                   "TLC ok", "TLC rejected"):
        table.add_column(column, justify="right" if column != "outcome" else "left")
    for outcome in (OUTCOME_OK, OUTCOME_SAFETY, OUTCOME_LIVENESS):
        group = [o for o in outcomes if o.outcome == outcome]
        if not group:
            continue
        table.add_row(
            outcome,
            str(len(group)),
            f"{sum(o.steps for o in group) / len(group):.0f}",
            str(sum(o.crashes for o in group)),
            str(sum(o.messages_lost for o in group)),
            str(sum(o.messages_duplicated for o in group)),
            str(sum(o.validation == "accepted" for o in group)),
            str(sum(o.validation == "rejected" for o in group)),
        )
    return table


def repro_command(db: Path, failure_id: str) -> str:
    """The `tlasim repro` command for a stored run, runnable from any folder."""
    return shlex.join(["tlasim", "repro", str(db.resolve()), failure_id])


def _report_failures(
    protocol: str,
    bug: str | None,
    failed: list[SeedOutcome],
    *,
    overrides: dict[str, Any],
    shrink_count: int,
    campaign_id: int | None,
    db: Path | None,
) -> None:
    """Shrink and report the first failure of each broken property; list the rest.

    A shrunk plan is stored beside its failure in `db`, so that `tlasim
    repro` replays it.
    """
    reported: set[str] = set()
    listed = 0
    settings = [f"{k}={v}" for k, v in overrides.items()]
    for o in failed:
        prop = (o.failure or o.outcome).split(":", 1)[0]
        if o.outcome != OUTCOME_OK and prop not in reported and len(reported) < shrink_count:
            reported.add(prop)
            shrunk = shrink_failure(protocol, o.seed, bug=bug, options=overrides)
            result = shrunk.shrunk.result
            report = shrunk.shrunk.report(original_plan_size=shrunk.original.result.plan.size)
            out.print(report.render(), markup=False)
            out.print(f"  unshrunk: {reproduce_command(protocol, o.seed, bug, None, settings)}",
                      markup=False)
            if db is not None and campaign_id is not None:
                with ResultsDB(db) as store:
                    store.record_shrunk(
                        campaign_id, o.seed,
                        ShrunkRun(plan_json(result.plan), result.outcome, result.failure),
                    )
                failure_id = f"{campaign_id}:{o.seed}"
                out.print(f"  or:       {printable(repro_command(db, failure_id))}",
                          markup=False)
            continue
        listed += 1
        if listed > LISTED_FAILURES_MAX:
            continue
        line = f"seed {o.seed}: {o.outcome}"
        if o.failure:
            line += f": {printable(o.failure)}"
        if o.validation == "rejected":
            replay = reproduce_command(protocol, o.seed, bug, None, settings)
            line += f" [TLC: {printable(o.rejection)}]; replay: {replay} --validate"
        if o.trace_path:
            line += f" (trace {printable(o.trace_path)})"
        out.print(line, markup=False)
    if listed > LISTED_FAILURES_MAX:
        out.print(f"... and {listed - LISTED_FAILURES_MAX} more failing seeds", markup=False)


@click.command(epilog=exit_code_help())
@protocol_argument
@click.option("--seeds", "seed_range", required=True, metavar="A:B",
              help="Seeds A up to but not including B.")
@click.option("--bug", default=None)
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Local worker processes (or LocalCluster workers with --dask).")
@click.option("--dask", "dask", is_flag=False, flag_value="local", default=None,
              metavar="[ADDRESS]",
              help="Run on a Dask cluster: a scheduler ADDRESS, or a LocalCluster when none.")
@click.option("--validate", "validate_mode", type=click.Choice(VALIDATE_MODES),
              default="failures", show_default=True)
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Store every result in this SQLite database as it arrives.")
@click.option("--resume", is_flag=True, help="Continue the same campaign in --db.")
@click.option("--trace-dir", default="traces", show_default=True,
              help="Where traces of failing or rejected runs are kept.")
@click.option("--set", "protocol_settings", multiple=True, metavar="KEY=VALUE",
              help="Set a protocol option for every seed, e.g. rm_count=4.")
@click.option("--shrink", "shrink_count", type=click.IntRange(min=0), default=3,
              show_default=True,
              help="Shrink and fully report the first failure of up to this many properties.")
@guarded
def campaign(
    protocol: str,
    seed_range: str,
    bug: str | None,
    workers: int,
    dask: str | None,
    validate_mode: str,
    db_path: Path | None,
    resume: bool,
    trace_dir: str,
    protocol_settings: tuple[str, ...],
    shrink_count: int,
) -> None:
    """Sweep seeds of PROTOCOL under swarm faults; store, validate, shrink, report."""
    check_bug(protocol, bug)
    overrides = parse_assignments(protocol_settings, "--set")
    get_protocol(protocol).make_options(overrides)  # bad options fail before any seed runs
    seeds = parse_seed_range(seed_range)
    where = "local pool" if dask is None else f"dask {dask}"
    out.print(
        f"campaign protocol={protocol} seeds={seeds.start}:{seeds.stop} bug={bug} "
        f"workers={workers} executor={where} validate={validate_mode} faults=swarm"
        + (f" db={printable(db_path)}" + (" --resume" if resume else "") if db_path else ""),
        markup=False,
    )
    failures = 0
    campaign_id: int | None = None
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.1f} seeds/s  failures: {task.fields[failures]}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task("seeds", total=len(seeds), rate=0.0, failures=0)
        new_seeds = 0

        def on_resume(done: list[SeedOutcome]) -> None:
            nonlocal failures
            failures += sum(o.failed for o in done)
            progress.update(task, completed=len(done), failures=failures)

        def on_batch(batch: list[SeedOutcome]) -> None:
            nonlocal failures, new_seeds
            failures += sum(o.failed for o in batch)
            new_seeds += len(batch)
            progress.advance(task, len(batch))
            elapsed = progress.tasks[0].elapsed or 1e-9
            progress.update(task, rate=new_seeds / elapsed, failures=failures)

        def on_open(opened: Campaign, note: str | None) -> None:
            nonlocal campaign_id
            campaign_id = opened.id
            if note is not None:
                progress.console.print(printable(note), markup=False)

        db = ResultsDB(db_path) if db_path is not None else None
        try:
            outcomes = run_campaign(
                protocol,
                seeds,
                bug=bug,
                validate=validate_mode,
                workers=workers,
                trace_dir=trace_dir,
                db=db,
                resume=resume,
                dask=True if dask == "local" else dask,
                protocol_overrides=overrides,
                on_batch=on_batch,
                on_resume=on_resume,
                on_open=on_open,
            )
        finally:
            if db is not None:
                db.close()
    out.print(_summary_table(protocol, bug, outcomes))
    failed = [o for o in outcomes if o.failed]
    _report_failures(
        protocol, bug, failed, overrides=overrides, shrink_count=shrink_count,
        campaign_id=campaign_id, db=db_path,
    )
    if any(o.outcome == OUTCOME_SAFETY for o in outcomes):
        sys.exit(exitcodes.SAFETY)
    if any(o.outcome == OUTCOME_LIVENESS for o in outcomes):
        sys.exit(exitcodes.LIVENESS)
    if any(o.validation == "rejected" for o in outcomes):
        sys.exit(exitcodes.TRACE_REJECTED)


@click.command(epilog=exit_code_help())
@click.argument("db_path", metavar="DB", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("failure_id")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the replayed trace here.")
@click.option("--original", is_flag=True,
              help="Replay the plan the run was recorded with, not its shrunk plan.")
@guarded
def repro(db_path: Path, failure_id: str, trace_path: Path | None, original: bool) -> None:
    """Replay the failure FAILURE_ID (CAMPAIGN:SEED, or a seed) stored in DB, exactly.

    A failure the campaign shrank replays under its shrunk plan; --original
    replays the plan it was recorded with. DB is only read.
    """
    refuse_overwrite({"--trace": trace_path}, {"DB": db_path})
    with ResultsDB(db_path, readonly=True) as db:
        record = db.run(failure_id)
        if not record.outcome.failed:
            _refuse_a_passing_run(db, record)
    recorded = record.outcome
    protocol, bug = record.campaign.protocol, record.campaign.bug
    options, overrides = stored_run_options(record.campaign.options)
    shrunk = None if original else record.shrunk
    expected = (recorded.outcome, recorded.failure, recorded.plan_json)
    if shrunk is not None:
        options = dataclasses.replace(options, faults=FaultPlan.from_json(
            shrunk.plan_json, where=f"{db_path}: the shrunk plan of {record.failure_id}"))
        expected = (shrunk.outcome, shrunk.failure, shrunk.plan_json)
    changes = _code_changes(record.campaign)
    out.print(
        f"repro {record.failure_id}: protocol={protocol} seed={recorded.seed} "
        f"bug={printable(bug)}",
        markup=False,
    )
    if changes:
        err.print("tlasim: warning: the protocol's code changed since this campaign "
                  f"({printable('; '.join(changes))}): the replay runs today's code",
                  markup=False)
    recorded_size = FaultPlan.from_json(recorded.plan_json).size
    if shrunk is not None:
        out.print(f"plan: the shrunk plan, {options.faults.size if options.faults else 0} "
                  f"fault(s), shrunk from {recorded_size}; --original replays the recorded "
                  "one", markup=False)
    else:
        out.print(f"plan: the recorded plan, {recorded_size} fault(s)", markup=False)
    run = run_seed(
        protocol, recorded.seed, bug=bug, options=options, protocol_overrides=overrides,
        trace_path=trace_path,
    )
    result = run.result
    out.print(f"recorded: {expected[0]}: {printable(expected[1])}", markup=False)
    out.print(f"replayed: {result.outcome}: {printable(result.failure)}", markup=False)
    replayed_plan = json.dumps(result.plan.to_dict(), sort_keys=True)
    try:
        recorded_plan = json.dumps(json.loads(expected[2]), sort_keys=True)
    except ValueError:
        recorded_plan = expected[2]
    if (result.outcome, result.failure) != expected[:2] or replayed_plan != recorded_plan:
        _did_not_reproduce(db_path, record, changes)
    for line in FaultPlan.from_dict(result.plan.to_dict()).describe().splitlines():
        out.print(f"fault: {line}", markup=False)
    if trace_path is not None:
        out.print(f"trace={printable(trace_path)}", markup=False)
    exit_for(result.outcome)
    if record.campaign.validate != "none" and recorded.validation == "rejected":
        # The recorded failure is TLC's verdict, so the replay must be checked too.
        from tracing.validation.validator import validate_trace

        with tempfile.TemporaryDirectory(prefix="tlasim-repro-") as scratch:
            path = trace_path or Path(scratch) / "replayed.ndjson"
            if trace_path is None:
                run_seed(protocol, recorded.seed, bug=bug, options=options,
                         protocol_overrides=overrides, trace_path=path)
            verdict = validate_trace(path)
        out.print(verdict.report(), markup=False)
        if not verdict.accepted:
            sys.exit(exitcodes.TRACE_REJECTED)


def _refuse_a_passing_run(db: ResultsDB, record: RunRecord) -> None:
    """A run that passed has nothing to reproduce: say so, and name the failures there are."""
    failures = [r.failure_id for r in db.failures()]
    shown = ", ".join(failures[:LISTED_FAILURES_MAX])
    if len(failures) > LISTED_FAILURES_MAX:
        shown += f" and {len(failures) - LISTED_FAILURES_MAX} more"
    listing = (f"its failures are {shown} (`tlasim failures {db.path}` lists them)"
               if failures else "it holds no failure")
    raise ConfigError(
        f"run {record.failure_id} ({record.campaign.protocol} seed {record.outcome.seed}) "
        f"passed (outcome {record.outcome.outcome}, TLC {record.outcome.validation}): there "
        f"is no failure to reproduce in {db.path}; {listing}"
    )


def _code_changes(campaign: Campaign) -> list[str]:
    """How the protocol's code (its source revision) differs from the campaign's."""
    current = campaign_options_json(campaign.protocol, None, None)
    return [c for c in identity_changes(campaign, campaign.protocol, campaign.bug,
                                        campaign.seeds, current)
            if c.startswith("source_revision ")]


def _did_not_reproduce(db_path: Path, record: RunRecord, changes: list[str]) -> None:
    """The replay differs from the record: say why, as surely as the database allows."""
    where = f"run {record.failure_id} of {db_path} did not reproduce"
    if changes:
        raise ConfigError(
            f"{where}: the protocol's code changed since it was recorded "
            f"({'; '.join(changes)}); check out that revision to replay it"
        )
    if not record.sealed:
        raise ConfigError(
            f"{where}: its row was written by an older tlasim, without a seal, so either "
            "the database was changed by hand or the simulator is not deterministic"
        )
    raise InternalError(f"{where}: its row is intact, so the simulator is not deterministic")


@click.command(epilog=exit_code_help())
@click.argument("db_path", metavar="DB", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--campaign", "campaign_id", type=click.IntRange(min=0), default=None,
              help="Only this campaign's failures.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True)
@guarded
def failures(db_path: Path, campaign_id: int | None, output_format: str) -> None:
    """List the failures stored in DB, each with the command that replays it. DB is only read."""
    with ResultsDB(db_path, readonly=True) as db:
        if campaign_id is not None:
            db.campaign(campaign_id)  # an unknown campaign is an error, not an empty list
        records = db.failures(campaign_id)
        runs = sum(len(db.finished_seeds(c.id)) for c in db.campaigns())
    rows = [_failure_row(db_path, r) for r in records]
    if output_format == "json":
        document = {"db": str(db_path.resolve()), "runs": runs, "failures": rows}
        out.print(json.dumps(document, indent=2), markup=False, soft_wrap=True)
        return
    if not rows:
        out.print(f"no failures among {runs} recorded runs in {printable(db_path)}",
                  markup=False)
        return
    out.print(f"{len(rows)} failure(s) among {runs} recorded runs in {printable(db_path)}:",
              markup=False)
    for row in rows:
        faults = f"{row['plan_faults']} fault(s)"
        if row["shrunk_plan_faults"] is not None:
            faults += f", shrunk to {row['shrunk_plan_faults']}"
        line = (f"{row['id']}  {row['protocol']}"
                + (f" bug={row['bug']}" if row["bug"] else "")
                + f" seed={row['seed']}  {row['property']}  {faults}")
        out.print(printable(line), markup=False)
        out.print(f"    {printable(row['reproduce'])}", markup=False)


def _failure_row(db_path: Path, record: RunRecord) -> dict[str, Any]:
    o = record.outcome
    if o.outcome != OUTCOME_OK:
        broken = (o.failure or o.outcome).split(":", 1)[0]
    else:
        broken = "trace rejected by TLC"
    shrunk = record.shrunk
    return {
        "id": record.failure_id,
        "campaign": record.campaign.id,
        "protocol": record.campaign.protocol,
        "bug": record.campaign.bug,
        "seed": o.seed,
        "outcome": o.outcome,
        "property": broken,
        "failure": o.failure,
        "validation": o.validation,
        "rejection": o.rejection,
        "plan_faults": FaultPlan.from_json(o.plan_json).size,
        "shrunk_plan_faults": None if shrunk is None else FaultPlan.from_json(
            shrunk.plan_json).size,
        "trace": o.trace_path,
        "reproduce": repro_command(db_path, record.failure_id),
    }


@click.command(epilog=exit_code_help())
@protocol_argument
@click.option("--bug", default=None, help="Switch on a named bug variant (see `tlasim bugs`).")
@click.option("--examples", type=int, default=200, show_default=True,
              help="How many inputs hypothesis may try before shrinking.")
@click.option("--search-seed", type=int, default=0, show_default=True,
              help="Seeds the search itself: the same value finds the same failure.")
@guarded
def search(protocol: str, bug: str | None, examples: int, search_seed: int) -> None:
    """Let hypothesis draw seeds, workloads and fault plans; shrink what fails."""
    from sim.campaign.search import search as run_search

    check_bug(protocol, bug)
    out.print(
        f"search protocol={protocol} bug={bug} examples={examples} search_seed={search_seed}",
        markup=False,
    )
    found = run_search(protocol, bug=bug, max_examples=examples, search_seed=search_seed)
    if found.failure is None:
        out.print(f"no failure in {found.examples_run} examples", markup=False)
        return
    out.print(
        f"first failure at example {found.first_failure_at}; "
        f"{found.examples_run} runs in all, shrinking included",
        markup=False,
    )
    out.print(found.failure.report().render(), markup=False)
    exit_for(found.failure.result.outcome)


@click.command(epilog=exit_code_help())
@protocol_argument
@click.option("--seed", type=click.IntRange(min=0), required=True, help="The failing seed.")
@click.option("--bug", default=None)
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Shrink this plan (default: the seed's swarm plan).")
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--max-runs", type=int, default=300, show_default=True,
              help="The most simulation runs shrinking may take.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the shrunk plan here (default: under .tlasim/failures).")
@guarded
def shrink(
    protocol: str,
    seed: int,
    bug: str | None,
    plan_path: Path | None,
    protocol_overrides: tuple[str, ...],
    max_runs: int,
    out_path: Path | None,
) -> None:
    """Minimize the fault plan of a failing seed by delta debugging."""
    get_protocol(protocol)
    check_bug(protocol, bug)
    refuse_overwrite({"--out": out_path}, {"--plan": plan_path})
    shrunk = shrink_failure(
        protocol,
        seed,
        bug=bug,
        plan=fault_plan("swarm", plan_path),
        options=parse_assignments(protocol_overrides, "--set"),
        max_runs=max_runs,
    )
    before = shrunk.original.result.plan.size
    out.print(
        f"shrunk {before} fault(s) to {shrunk.shrunk.result.plan.size} in {shrunk.shrink.runs} "
        "runs" + (" (run budget exhausted)" if shrunk.shrink.exhausted else ""),
        markup=False,
    )
    report = shrunk.shrunk.report(original_plan_size=before, plan_path=out_path)
    out.print(report.render(), markup=False)
    exit_for(shrunk.shrunk.result.outcome)
