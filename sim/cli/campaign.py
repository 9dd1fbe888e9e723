"""The campaign family of commands: campaign, search and shrink.

A campaign sweeps seeds and stores every result; each failure ends in a
report (the broken property, the shrunk plan, a trace excerpt, one command
that replays it), and the shrunk plan is stored beside the failure, for
`tlasim repro` (sim/cli/repro.py) to replay. `shrink` minimizes one seed's
plan, and `search` lets hypothesis choose the inputs. Every value read from
a file or a database is printed through `printable`, so none can forge a
line of output.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tlasim.faults.plan import FaultPlan
from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.sim import exitcodes
from tlasim.sim.api import save_plan
from tlasim.sim.campaign.executors import start_local_workers_early
from tlasim.sim.campaign.guide import GUIDES
from tlasim.sim.campaign.records import parse_validate_mode
from tlasim.sim.campaign.results import Campaign, ResultsDB, ShrunkRun
from tlasim.sim.campaign.shrinking import shrink_failure
from tlasim.sim.campaign.sweep import (
    SeedOutcome,
    parse_seed_range,
    plan_json,
    run_campaign,
)
from tlasim.sim.campaign.worker_tlc import plan_tlc
from tlasim.sim.cli.repro import repro_command
from tlasim.sim.cli.support import (
    bounded_int,
    check_bug,
    err,
    exit_code_help,
    exit_for,
    fault_plan,
    guarded,
    out,
    parse_assignments,
    protocol_argument,
    refuse_overwrite,
)
from tlasim.sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY
from tlasim.sim.run.report import reproduce_command
from tlasim.tracing.printable import printable

LISTED_FAILURES_MAX = 10  # failures listed one line each, after the full reports
REJECTED_ROW = "TLC rejected"  # the summary's row of runs only TLC found fault with


def _summary_table(protocol: str, bug: str | None, outcomes: list[SeedOutcome]) -> Table:
    table = Table(title=f"{protocol} campaign" + (f" (bug {bug})" if bug else ""))
    for column in ("outcome", "seeds", "mean steps", "crashes", "lost", "dup",
                   "TLC ok", "TLC rejected"):
        table.add_column(column, justify="right" if column != "outcome" else "left")
    # A run the oracles pass but TLC rejects is a failure too: it has a row of
    # its own, so that `ok` counts only the runs nothing found fault with.
    rows = [
        (OUTCOME_OK, [o for o in outcomes
                      if o.outcome == OUTCOME_OK and o.validation != "rejected"]),
        (REJECTED_ROW, [o for o in outcomes
                        if o.outcome == OUTCOME_OK and o.validation == "rejected"]),
        *((outcome, [o for o in outcomes if o.outcome == outcome])
          for outcome in (OUTCOME_SAFETY, OUTCOME_LIVENESS)),
    ]
    for outcome, group in rows:
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


def _print_coverage(protocol: str, outcomes: list[SeedOutcome]) -> None:
    """The campaign's spec coverage, and the actions no run took (holes in
    the fault model or the workload)."""
    from tlasim.sim.coverage.campaign import campaign_coverage

    united = campaign_coverage(get_protocol(protocol).trace_actions,
                               ((o.seed, o.coverage) for o in outcomes))
    if not united.runs:
        return
    out.print(united.line(len(outcomes)), markup=False)
    if united.unreached:
        out.print(f"never reached: {', '.join(united.unreached)}", markup=False)


def _plan_file(protocol: str, seed: int, plan: FaultPlan | None, bug: str | None,
               overrides: dict[str, Any]) -> Path | None:
    """Where a replay command finds a guided run's plan (None: the seed's own)."""
    if plan is None:
        return None
    return save_plan(protocol, seed, plan, bug=bug, protocol_overrides=overrides)


def _report_failures(
    protocol: str,
    bug: str | None,
    failed: list[SeedOutcome],
    *,
    overrides: dict[str, Any],
    shrink_count: int,
    campaign_id: int | None,
    db: Path | None,
    report_path: Path | None = None,
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
        # A guided run is its run seed under its recorded plan, given as a file.
        run_as, plan = o.seed, None
        if o.run_seed is not None:
            run_as, plan = o.run_seed, FaultPlan.from_json(o.plan_json)
        if o.outcome != OUTCOME_OK and prop not in reported and len(reported) < shrink_count:
            reported.add(prop)
            shrunk = shrink_failure(protocol, run_as, bug=bug, plan=plan, options=overrides)
            result = shrunk.shrunk.result
            report = shrunk.shrunk.report(original_plan_size=shrunk.original.result.plan.size)
            out.print(report.render(), markup=False)
            unshrunk = reproduce_command(protocol, run_as, bug,
                                         _plan_file(protocol, run_as, plan, bug, overrides),
                                         settings)
            out.print(f"  unshrunk: {printable(unshrunk)}", markup=False)
            if report_path is not None:
                out.print(f"  report:   {printable(report_path.resolve())}", markup=False)
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
        if o.run_seed is not None:
            line = (f"seed {o.seed} (guided: seed {o.run_seed} under a mutated plan): "
                    f"{o.outcome}")
        if o.failure:
            line += f": {printable(o.failure)}"
        if o.validation == "rejected":
            replay = reproduce_command(protocol, run_as, bug,
                                       _plan_file(protocol, run_as, plan, bug, overrides),
                                       settings)
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
@click.option("--workers", type=bounded_int(min=1), default=2, show_default=True,
              help="Local worker processes (or LocalCluster workers with --dask).")
@click.option("--dask", "dask", is_flag=False, flag_value="local", default=None,
              metavar="[ADDRESS]",
              help="Run on a Dask cluster: a scheduler ADDRESS, or a LocalCluster when none.")
@click.option("--validate", "validate_mode", default="all", show_default=True,
              metavar="all|failures|none|sample:N",
              help="Which runs TLC checks: every run; the runs an oracle failed; none; or "
                   "every failure and a seeded 1-in-N sample of the seeds.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Store every result in this SQLite database as it arrives.")
@click.option("--resume", is_flag=True, help="Continue the same campaign in --db.")
@click.option("--trace-dir", default="traces", show_default=True,
              help="Where traces of failing or rejected runs are kept.")
@click.option("--set", "protocol_settings", multiple=True, metavar="KEY=VALUE",
              help="Set a protocol option for every seed, e.g. rm_count=4.")
@click.option("--shrink", "shrink_count", type=bounded_int(min=0), default=3,
              show_default=True,
              help="Shrink and fully report the first failure of up to this many properties.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the database's HTML report here at the end (needs --db).")
@click.option("--guide", type=click.Choice(GUIDES), default="none", show_default=True,
              help="coverage: spend seeds on mutants of the runs that reached spec states, "
                   "action pairs or actions no run had, as many as find more than fresh seeds.")
@click.option("--guide-seed", type=bounded_int(min=0), default=0, show_default=True,
              help="Seeds the guide's choices: the same value gives the same campaign.")
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
    report_path: Path | None,
    guide: str,
    guide_seed: int,
) -> None:
    """Sweep seeds of PROTOCOL under swarm faults; store, validate, shrink, report."""
    if dask == "local":
        # Its workers' imports run while this process checks the options.
        start_local_workers_early()
    check_bug(protocol, bug)
    if report_path is not None and db_path is None:
        raise ConfigError("--report draws the results database: give --db too")
    refuse_overwrite({"--report": report_path}, {"--db": db_path})
    overrides = parse_assignments(protocol_settings, "--set")
    get_protocol(protocol).make_options(overrides)  # bad options fail before any seed runs
    seeds = parse_seed_range(seed_range)
    mode = parse_validate_mode(validate_mode)
    if mode.kind in ("all", "sample"):
        # Refused before any bar is drawn; the campaign plans its TLCs again.
        plan_tlc("", workers, long_run=False, local=dask in (None, "local"))
    where = "local pool" if dask is None else f"dask {dask}"
    out.print(
        f"campaign protocol={protocol} seeds={seeds.start}:{seeds.stop} bug={bug} "
        f"workers={workers} executor={where} validate={mode} faults=swarm"
        + (f" guide={guide} guide_seed={guide_seed}" if guide != "none" else "")
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
        # Simulated and validated: a batch arrives with its verdicts (each
        # worker checks its own runs), is counted simulated, then validated
        # once it is recorded.
        checked = mode.kind != "none"
        simulated_task = progress.add_task(
            "simulated", total=len(seeds), rate=0.0, failures=0
        )
        task = progress.add_task(
            "validated" if checked else "recorded", total=len(seeds), rate=0.0, failures=0
        )
        new_seeds = simulated_seeds = 0

        def on_resume(done: list[SeedOutcome]) -> None:
            nonlocal failures
            failures += sum(o.failed for o in done)
            progress.update(simulated_task, completed=len(done))
            progress.update(task, completed=len(done), failures=failures)

        def on_simulated(batch: list[SeedOutcome]) -> None:
            nonlocal simulated_seeds
            simulated_seeds += len(batch)
            progress.advance(simulated_task, len(batch))
            elapsed = progress.tasks[simulated_task].elapsed or 1e-9
            progress.update(
                simulated_task, rate=simulated_seeds / elapsed,
                failures=sum(o.outcome != OUTCOME_OK for o in batch)
                + progress.tasks[simulated_task].fields["failures"],
            )

        def on_batch(batch: list[SeedOutcome]) -> None:
            nonlocal failures, new_seeds
            failures += sum(o.failed for o in batch)
            new_seeds += len(batch)
            progress.advance(task, len(batch))
            elapsed = progress.tasks[task].elapsed or 1e-9
            progress.update(task, rate=new_seeds / elapsed, failures=failures)

        tlc_resident: dict[str, int] = {}

        def on_tlc(worker: str, resident: int) -> None:
            tlc_resident[worker] = max(resident, tlc_resident.get(worker, 0))

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
                validate=str(mode),
                workers=workers,
                trace_dir=trace_dir,
                db=db,
                resume=resume,
                dask=True if dask == "local" else dask,
                protocol_overrides=overrides,
                on_batch=on_batch,
                on_resume=on_resume,
                on_open=on_open,
                on_simulated=on_simulated,
                on_tlc=on_tlc,
                guide=guide,
                guide_seed=guide_seed,
            )
        finally:
            if db is not None:
                db.close()
    out.print(_summary_table(protocol, bug, outcomes))
    if tlc_resident:
        sizes = sorted(tlc_resident.values())
        out.print(
            f"TLC per worker: {len(sizes)} worker(s), resident at most "
            f"{sizes[-1] / 2**20:,.0f} MB (least {sizes[0] / 2**20:,.0f} MB)",
            markup=False,
        )
    _print_coverage(protocol, outcomes)
    failed = [o for o in outcomes if o.failed]
    _report_failures(
        protocol, bug, failed, overrides=overrides, shrink_count=shrink_count,
        campaign_id=campaign_id, db=db_path, report_path=report_path,
    )
    if report_path is not None and db_path is not None:
        from tlasim.sim.view.campaign import database_page, summarize
        from tlasim.sim.view.html import write_page

        write_page(report_path, database_page(summarize(db_path)))
        out.print(f"report={printable(report_path.resolve())}", markup=False)
    if any(o.outcome == OUTCOME_SAFETY for o in outcomes):
        sys.exit(exitcodes.SAFETY)
    if any(o.outcome == OUTCOME_LIVENESS for o in outcomes):
        sys.exit(exitcodes.LIVENESS)
    if any(o.validation == "rejected" for o in outcomes):
        sys.exit(exitcodes.TRACE_REJECTED)


@click.command(epilog=exit_code_help())
@protocol_argument
@click.option("--bug", default=None, help="Switch on a named bug variant (see `tlasim bugs`).")
@click.option("--examples", type=bounded_int(min=1), default=200, show_default=True,
              help="How many inputs hypothesis may try before shrinking.")
@click.option("--search-seed", type=bounded_int(), default=0, show_default=True,
              help="Seeds the search itself: the same value finds the same failure.")
@guarded
def search(protocol: str, bug: str | None, examples: int, search_seed: int) -> None:
    """Let hypothesis draw seeds, workloads and fault plans; shrink what fails."""
    from tlasim.sim.campaign.search import search as run_search

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
@click.option("--seed", type=bounded_int(min=0), required=True, help="The failing seed.")
@click.option("--bug", default=None)
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Shrink this plan (default: the seed's swarm plan).")
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--max-runs", type=bounded_int(min=1), default=300, show_default=True,
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
