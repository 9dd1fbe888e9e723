"""A results database as one HTML page: what a campaign found, and what mattered.

The database is opened read-only (`ResultsDB(readonly=True)`), so a report
never changes it, and a corrupt or hand-edited one is refused by the checks
`tlasim failures` already relies on. Failures are grouped by the property
they broke (the text before the first colon of the oracle's message, or TLC
when only TLC rejected the run), and the shrunk plans say which kinds of
fault a failure needs: a kind that every shrunk plan drops is noise.
"""

from __future__ import annotations

import html
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tlasim.faults.plan import FaultPlan
from tlasim.sim.campaign.records import RunRecord
from tlasim.sim.campaign.results import ResultsDB
from tlasim.sim.view.html import render_page


@dataclass(slots=True)
class CampaignRow:
    title: str
    runs: int
    failed: int
    rejected: int
    validated: int


@dataclass(slots=True)
class DatabaseSummary:
    path: str
    campaigns: list[CampaignRow]
    failures: dict[str, list[RunRecord]]  # property -> failures breaking it
    kinds_recorded: Counter[str] = field(default_factory=Counter)  # in the failures' plans
    kinds_kept: Counter[str] = field(default_factory=Counter)  # in their shrunk plans
    shrunk: int = 0


def fault_kinds(plan: FaultPlan) -> set[str]:
    """The kinds of fault a plan holds: crash, loss, duplicate, delay, partition."""
    kinds: set[str] = {w.kind for w in plan.windows}
    if plan.crashes:
        kinds.add("crash")
    if plan.partitions:
        kinds.add("partition")
    return kinds


def broken_property(record: RunRecord) -> str:
    failure = record.outcome.failure
    if failure:
        return failure.split(":", 1)[0].strip() or record.outcome.outcome
    if record.outcome.validation == "rejected":
        return "rejected by TLC"
    return record.outcome.outcome


def summarize(db_path: Path) -> DatabaseSummary:
    with ResultsDB(db_path, readonly=True) as db:
        rows = []
        for campaign in db.campaigns():
            outcomes = db.outcomes(campaign.id)
            rows.append(CampaignRow(
                title=campaign.describe(),
                runs=len(outcomes),
                failed=sum(1 for o in outcomes if o.outcome != "ok"),
                rejected=sum(1 for o in outcomes if o.validation == "rejected"),
                validated=sum(1 for o in outcomes if o.validation != "skipped"),
            ))
        summary = DatabaseSummary(str(db_path), rows, {})
        for record in db.failures():
            summary.failures.setdefault(broken_property(record), []).append(record)
            if record.shrunk is not None:
                summary.shrunk += 1
                summary.kinds_recorded.update(fault_kinds(_stored_plan(record, db_path)))
                summary.kinds_kept.update(fault_kinds(_stored_plan(record, db_path, shrunk=True)))
    return summary


def _stored_plan(record: RunRecord, db_path: Path, *, shrunk: bool = False) -> FaultPlan:
    """A failure's recorded (or shrunk) plan, read as any plan file is: a row
    a crash or a hand left unreadable is a ConfigError naming it, as in repro."""
    which = "shrunk plan" if shrunk else "plan"
    stored = record.shrunk.plan_json if shrunk and record.shrunk else record.outcome.plan_json
    return FaultPlan.from_json(stored, where=f"{db_path}: the {which} of {record.failure_id}")


def _cell(value: object) -> str:
    return f"<td>{html.escape(str(value))}</td>"


def database_page(summary: DatabaseSummary) -> str:
    parts = [f"<header><h1>tlasim results: {html.escape(summary.path)}</h1></header><section>",
             "<h2>Campaigns</h2><table id=\"campaigns\"><tr><th>campaign</th><th>runs</th>"
             "<th>oracle failures</th><th>rejected by TLC</th><th>checked by TLC</th></tr>"]
    for row in summary.campaigns:
        parts.append("<tr class=\"campaign\">" + "".join(
            _cell(v) for v in (row.title, row.runs, row.failed, row.rejected, row.validated)
        ) + "</tr>")
    parts.append("</table><h2>Failures by property</h2>")
    if not summary.failures:
        parts.append("<p>No failures.</p>")
    for prop in sorted(summary.failures):
        records = summary.failures[prop]
        parts.append(f"<h3 class=\"property\">{html.escape(prop)} ({len(records)})</h3>"
                     "<table class=\"failures\">")
        for r in records:
            shrunk = "" if r.shrunk is None else \
                f"shrunk to {_stored_plan(r, Path(summary.path), shrunk=True).size}"
            trace = r.outcome.trace_path
            draw = "" if trace is None else shlex.join(
                ["tlasim", "report", trace, "-o", str(Path(trace).with_suffix(".html"))]
            )
            parts.append("<tr>" + "".join(_cell(v) for v in (
                r.failure_id, f"seed {r.outcome.seed}", r.outcome.failure or r.outcome.rejection,
                shrunk, draw,
            )) + "</tr>")
        parts.append("</table>")
    parts.append("<h2>Fault kinds the shrunk plans keep</h2>")
    if not summary.shrunk:
        parts.append("<p>No failure was shrunk (run the campaign with --shrink N).</p>")
    else:
        parts.append(f"<p>Over {summary.shrunk} shrunk failure(s): how many plans held each "
                     "kind before shrinking, and how many still need it after.</p>"
                     "<table id=\"kinds\"><tr><th>kind</th><th>in the recorded plans</th>"
                     "<th>kept by shrinking</th></tr>")
        for kind in sorted(summary.kinds_recorded):
            parts.append(f"<tr class=\"kind\" data-kind=\"{html.escape(kind)}\">" + "".join(
                _cell(v) for v in (kind, summary.kinds_recorded[kind], summary.kinds_kept[kind])
            ) + "</tr>")
        parts.append("</table>")
    parts.append("</section>")
    return render_page(f"tlasim results: {summary.path}", "".join(parts), None)
