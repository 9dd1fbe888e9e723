"""The commands that read a results database: `repro` and `failures`.

Both open the database read-only, so neither ever creates or changes one.
`failures` lists what a database holds, each failure with the one command
that replays it; `repro` replays one, under its shrunk plan when the
campaign shrank it. A replay that differs from its record is explained as
surely as the database allows: the code changed, the row was edited (its
seal says so), or, with an intact row and the same code, the simulator is
not deterministic (a bug in tlasim). Every value read from the database is
printed through `printable`.
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

from tlasim.faults.plan import FaultPlan
from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import ConfigError, InternalError
from tlasim.sim import exitcodes
from tlasim.sim.campaign.results import Campaign, ResultsDB, RunRecord
from tlasim.sim.campaign.sweep import (
    campaign_options_json,
    identity_changes,
    recall_protocol,
    stored_run_options,
)
from tlasim.sim.cli.support import (
    bounded_int,
    err,
    exit_code_help,
    exit_for,
    guarded,
    out,
    refuse_overwrite,
)
from tlasim.sim.kernel.simulation import OUTCOME_OK
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.printable import printable

LISTED_FAILURES_MAX = 10  # failure ids named in one message


def repro_command(db: Path, failure_id: str) -> str:
    """The `tlasim repro` command for a stored run, runnable from any folder."""
    return shlex.join(["tlasim", "repro", str(db.resolve()), failure_id])


def _ended(outcome: str, failure: str | None) -> str:
    """How a run ended, for a line: its outcome, and its failure when it has one."""
    return f"{outcome}: {printable(failure)}" if failure is not None else outcome


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
    protocol = recall_protocol(record.campaign.protocol, record.campaign.options)
    bug = record.campaign.bug
    options, overrides = stored_run_options(record.campaign.options)
    shrunk = None if original else record.shrunk
    expected = (recorded.outcome, recorded.failure, recorded.plan_json)
    run_as = recorded.seed
    if recorded.run_seed is not None:
        # A guided campaign's run: its own seed, under the plan it was given.
        run_as = recorded.run_seed
        options = dataclasses.replace(options, faults=FaultPlan.from_json(
            recorded.plan_json, where=f"{db_path}: the plan of {record.failure_id}"))
    if shrunk is not None:
        options = dataclasses.replace(options, faults=FaultPlan.from_json(
            shrunk.plan_json, where=f"{db_path}: the shrunk plan of {record.failure_id}"))
        expected = (shrunk.outcome, shrunk.failure, shrunk.plan_json)
    changes = _code_changes(record.campaign)
    out.print(
        f"repro {record.failure_id}: protocol={protocol} seed={run_as} "
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
        protocol, run_as, bug=bug, options=options, protocol_overrides=overrides,
        trace_path=trace_path,
    )
    result = run.result
    tlc_said = (" (the oracles passed; TLC rejected its trace)"
                if recorded.validation == "rejected" and expected[1] is None else "")
    out.print(f"recorded: {_ended(expected[0], expected[1])}{tlc_said}", markup=False)
    out.print(f"replayed: {_ended(result.outcome, result.failure)}", markup=False)
    replayed_plan = json.dumps(result.plan.to_dict(), sort_keys=True)
    # Read (and so checked) as a plan above: the one reader cannot fail here.
    recorded_plan = json.dumps(load_json(expected[2], "the recorded plan"), sort_keys=True)
    if (result.outcome, result.failure) != expected[:2] or replayed_plan != recorded_plan:
        _did_not_reproduce(db_path, record, changes)
    for line in FaultPlan.from_dict(result.plan.to_dict()).describe().splitlines():
        out.print(f"fault: {line}", markup=False)
    if trace_path is not None:
        out.print(f"trace={printable(trace_path)}", markup=False)
    exit_for(result.outcome)
    if record.campaign.validate != "none" and recorded.validation == "rejected":
        # The recorded failure is TLC's verdict, so the replay must be checked too.
        from tlasim.tracing.validation.validator import validate_trace

        with tempfile.TemporaryDirectory(prefix="tlasim-repro-") as scratch:
            path = Path(scratch) / "replayed.ndjson"
            if trace_path is not None and trace_path.is_file():
                path = trace_path
            else:
                # No --trace, or one that cannot be read back (a FIFO, /dev/null).
                run_seed(protocol, run_as, bug=bug, options=options,
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
@click.option("--campaign", "campaign_id", type=bounded_int(min=0), default=None,
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
        click.echo(json.dumps(document, indent=2))
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

