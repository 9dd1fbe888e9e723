"""Coverage in the results database: stored with its run, read back whole,
guarded by its seal, and absent (not an error) in files of older schemas."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from tlasim.protocols.errors import ConfigError
from tlasim.sim.campaign.results import SCHEMA_VERSION, ResultsDB, SeedOutcome
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.coverage.campaign import campaign_coverage
from tlasim.sim.coverage.run import RunCoverage

OK = SeedOutcome(
    seed=0, outcome="ok", failure=None, steps=120, last_tick=431, crashes=1, messages_lost=2,
    messages_duplicated=3,
    plan_json='{"crashes":[],"heal_tick":600,"partitions":[],"schema":1,"windows":[]}',
    validation="skipped", rejection=None, tlc_seconds=0.0, trace_path=None,
)
REACHED = RunCoverage(
    states=frozenset({0, 1, 2**64 - 1, 0x1234_5678_9ABC_DEF0}),
    actions=frozenset({"Init", "TMCommit"}),
    pairs=frozenset({("tm", "TMBegin", "TMCommit"), ("", "Init", "NetLose")}),
)


def _recorded(path: Path, *outcomes: SeedOutcome) -> int:
    """A database at `path` holding one campaign with `outcomes`; its id."""
    with ResultsDB(path) as db:
        cid = db.open_campaign("twopc", None, range(0, 10), "{}", "none", resume=False).id
        db.record(cid, list(outcomes))
    return cid


def test_a_runs_coverage_reads_back_exactly_and_a_run_without_it_reads_none(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    cid = _recorded(path, replace(OK, seed=1, coverage=REACHED), replace(OK, seed=2))
    with ResultsDB(path, readonly=True) as db:
        first, second = db.outcomes(cid)
        assert first.coverage == REACHED
        assert second.coverage is None
        assert db.coverage(cid) == {1: REACHED}


def test_a_campaign_stores_every_runs_coverage_and_resuming_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    ran = run_campaign("twopc", range(0, 6), validate="none", db=path)
    assert all(o.coverage is not None and o.coverage.states for o in ran)
    with ResultsDB(path, readonly=True) as db:
        assert db.outcomes(1) == ran
    again = run_campaign("twopc", range(0, 6), validate="none", db=path, resume=True)
    assert again == ran
    united = campaign_coverage({"Init", "TMCommit", "NoSuchAction"},
                               ((o.seed, o.coverage) for o in ran))
    assert united.growth[-1] == len(set().union(*(o.coverage.states for o in ran)))
    assert united.growth == sorted(united.growth)
    assert united.unreached == ["NoSuchAction"]
    assert united.line().startswith(f"spec coverage: {united.growth[-1]:,} states, 2 of 3 ")


@pytest.mark.parametrize("column, value", [
    ("states", b"\x00" * 16),
    ("actions", '["Init"]'),
    ("pairs", "not json"),
])
def test_a_changed_coverage_row_is_refused_by_name(
    tmp_path: Path, column: str, value: object
) -> None:
    path = tmp_path / "r.db"
    cid = _recorded(path, replace(OK, seed=1, coverage=REACHED))
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE coverage SET {column} = ?", (value,))
    with ResultsDB(path, readonly=True) as db, pytest.raises(ConfigError) as caught:
        db.outcomes(cid)
    assert "table coverage" in str(caught.value) and "changed" in str(caught.value)


def test_a_states_column_that_is_not_whole_hashes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    cid = _recorded(path, replace(OK, seed=1, coverage=REACHED))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE coverage SET states = ?", (b"\x01\x02\x03",))
    with ResultsDB(path, readonly=True) as db, pytest.raises(ConfigError, match="8-byte"):
        db.outcomes(cid)


def _as_schema_2(path: Path) -> None:
    """Make `path` a file as tlasim wrote it before coverage and guided runs."""
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE coverage")
        conn.execute("ALTER TABLE runs DROP COLUMN run_seed")
        conn.execute("PRAGMA user_version = 2")


def test_a_schema_2_file_reads_without_coverage_and_upgrades_when_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    cid = _recorded(path, replace(OK, seed=1))
    _as_schema_2(path)
    before = path.read_bytes()
    with ResultsDB(path, readonly=True) as db:
        assert db.outcomes(cid) == [replace(OK, seed=1)]
        assert db.coverage(cid) == {}
    assert path.read_bytes() == before  # a reader upgrades nothing
    with ResultsDB(path) as db:
        db.record(cid, [replace(OK, seed=2, coverage=REACHED)])
        assert db.coverage(cid) == {2: REACHED}
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
