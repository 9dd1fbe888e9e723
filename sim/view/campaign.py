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
from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.sim.campaign.records import RunRecord
from tlasim.sim.campaign.results import ResultsDB
from tlasim.sim.campaign.sweep import recall_protocol
from tlasim.sim.coverage.campaign import CampaignCoverage, campaign_coverage
from tlasim.sim.view.html import render_page


@dataclass(slots=True)
class CampaignRow:
    title: str
    runs: int
    failed: int
    rejected: int
    validated: int
    coverage: CampaignCoverage | None = None  # None: no run measured it


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
            coverage = campaign_coverage(_trace_actions(campaign.protocol, campaign.options),
                                         ((o.seed, o.coverage) for o in outcomes))
            rows.append(CampaignRow(
                title=campaign.describe(),
                runs=len(outcomes),
                failed=sum(1 for o in outcomes if o.outcome != "ok"),
                rejected=sum(1 for o in outcomes if o.validation == "rejected"),
                validated=sum(1 for o in outcomes if o.validation != "skipped"),
                coverage=coverage if coverage.runs else None,
            ))
        summary = DatabaseSummary(str(db_path), rows, {})
        for record in db.failures():
            summary.failures.setdefault(broken_property(record), []).append(record)
            if record.shrunk is not None:
                summary.shrunk += 1
                summary.kinds_recorded.update(fault_kinds(_stored_plan(record, db_path)))
                summary.kinds_kept.update(fault_kinds(_stored_plan(record, db_path, shrunk=True)))
    return summary


def _trace_actions(protocol: str, options: str) -> frozenset[str]:
    """The recorded campaign's protocol's actions; none when it cannot be
    loaded here (the report then names no unreached action rather than fail)."""
    try:
        return get_protocol(recall_protocol(protocol, options)).trace_actions
    except ConfigError:
        return frozenset()


def _stored_plan(record: RunRecord, db_path: Path, *, shrunk: bool = False) -> FaultPlan:
    """A failure's recorded (or shrunk) plan, read as any plan file is: a row
    a crash or a hand left unreadable is a ConfigError naming it, as in repro."""
    which = "shrunk plan" if shrunk else "plan"
    stored = record.shrunk.plan_json if shrunk and record.shrunk else record.outcome.plan_json
    return FaultPlan.from_json(stored, where=f"{db_path}: the {which} of {record.failure_id}")


def _cell(value: object) -> str:
    return f"<td>{html.escape(str(value))}</td>"


PLOT_WIDTH, PLOT_HEIGHT, PLOT_MARGIN = 480, 180, 40
PLOT_POINTS_MAX = 400  # a long campaign's curve is drawn from this many of its points


def growth_plot(growth: list[int]) -> str:
    """Distinct spec states against runs, as an inline SVG line (no script:
    the page stays static)."""
    runs, top = len(growth), max(growth[-1], 1)
    step = max(1, runs // PLOT_POINTS_MAX)
    picked = list(range(0, runs, step))
    if picked[-1] != runs - 1:
        picked.append(runs - 1)
    width, height, margin = PLOT_WIDTH, PLOT_HEIGHT, PLOT_MARGIN
    points = " ".join(
        f"{margin + (width - 2 * margin) * (i + 1) / runs:.1f},"
        f"{height - margin - (height - 2 * margin) * growth[i] / top:.1f}"
        for i in picked
    )
    bottom, right = height - margin, width - margin
    return (
        f'<svg class="growth" width="{width}" height="{height}" data-runs="{runs}" '
        f'data-states="{growth[-1]}" xmlns="http://www.w3.org/2000/svg">'
        f'<line class="axis" x1="{margin}" y1="{bottom}" x2="{right}" y2="{bottom}" '
        'stroke="#888"/>'
        f'<line class="axis" x1="{margin}" y1="{margin}" x2="{margin}" y2="{bottom}" '
        'stroke="#888"/>'
        f'<polyline class="curve" fill="none" stroke="#1f5fa8" stroke-width="2" '
        f'points="{points}"/>'
        f'<text x="{margin}" y="{margin - 8}" font-size="11">{top:,} states</text>'
        f'<text x="{right}" y="{bottom + 16}" font-size="11" text-anchor="end">'
        f'{runs:,} runs</text><text x="{margin}" y="{bottom + 16}" font-size="11">0</text>'
        "</svg>"
    )


def _coverage_section(campaigns: list[CampaignRow]) -> list[str]:
    parts = ["<h2>Spec coverage</h2>"]
    measured = [row for row in campaigns if row.coverage is not None]
    if not measured:
        return [*parts, "<p>No run measured its spec coverage (a campaign of an older "
                "tlasim).</p>"]
    for row in measured:
        coverage = row.coverage
        assert coverage is not None
        parts.append(f'<div class="coverage" data-campaign="{html.escape(row.title)}">'
                     f"<h3>{html.escape(row.title)}</h3><p class=\"coverage-line\">"
                     f"{html.escape(coverage.line(row.runs))}</p>")
        parts.append(growth_plot(coverage.growth))
        if coverage.unreached:
            parts.append("<p>Actions no run reached (holes in the fault model or the "
                         "workload):</p><ul class=\"unreached\">" + "".join(
                             f"<li>{html.escape(a)}</li>" for a in coverage.unreached)
                         + "</ul>")
        elif coverage.all_actions:
            parts.append("<p class=\"all-reached\">Every action of the protocol was "
                         "reached.</p>")
        parts.append("</div>")
    return parts


def database_page(summary: DatabaseSummary) -> str:
    parts = [f"<header><h1>tlasim results: {html.escape(summary.path)}</h1></header><section>",
             "<h2>Campaigns</h2><table id=\"campaigns\"><tr><th>campaign</th><th>runs</th>"
             "<th>oracle failures</th><th>rejected by TLC</th><th>checked by TLC</th></tr>"]
    for row in summary.campaigns:
        parts.append("<tr class=\"campaign\">" + "".join(
            _cell(v) for v in (row.title, row.runs, row.failed, row.rejected, row.validated)
        ) + "</tr>")
    parts.append("</table>")
    parts.extend(_coverage_section(summary.campaigns))
    parts.append("<h2>Failures by property</h2>")
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
