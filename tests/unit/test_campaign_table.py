"""The campaign summary counts a run TLC rejected as a failure (issue 23,
part 6): its outcome column never says `ok` for a run the bar counts among
the failures."""

from __future__ import annotations

import io

from rich.console import Console

from tlasim.sim.campaign.records import SeedOutcome
from tlasim.sim.cli.campaign import REJECTED_ROW, _summary_table


def _outcome(seed: int, outcome: str, validation: str) -> SeedOutcome:
    return SeedOutcome(seed=seed, outcome=outcome, failure=None if outcome == "ok" else "P: x",
                       steps=10, last_tick=5, crashes=0, messages_lost=0,
                       messages_duplicated=0, plan_json="{}", validation=validation,
                       rejection=None, tlc_seconds=0.0, trace_path=None)


def _rows(outcomes: list[SeedOutcome]) -> dict[str, list[str]]:
    console = Console(file=io.StringIO(), width=200)
    table = _summary_table("twopc", None, outcomes)
    console.print(table)
    cells = [list(column.cells) for column in table.columns]
    return {row[0]: list(row[1:]) for row in zip(*cells, strict=True)}


def test_rejected_runs_are_a_row_of_failures_not_ok() -> None:
    outcomes = ([_outcome(s, "ok", "accepted") for s in range(3)]
                + [_outcome(s, "ok", "rejected") for s in range(3, 5)]
                + [_outcome(5, "safety", "rejected")])
    rows = _rows(outcomes)
    assert rows["ok"][0] == "3" and rows["ok"][-2:] == ["3", "0"]
    assert rows[REJECTED_ROW][0] == "2" and rows[REJECTED_ROW][-2:] == ["0", "2"]
    assert rows["safety"][0] == "1"
    failures = sum(o.failed for o in outcomes)
    assert failures == sum(int(r[0]) for name, r in rows.items() if name != "ok")


def test_without_rejections_there_is_no_rejected_row() -> None:
    rows = _rows([_outcome(1, "ok", "accepted"), _outcome(2, "ok", "skipped")])
    assert set(rows) == {"ok"} and rows["ok"][0] == "2"
