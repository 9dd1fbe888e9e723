"""The results database: what a campaign records reads back, and no other file is harmed."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from tlasim.protocols.errors import ConfigError
from tlasim.sim.campaign.results import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    ResultsDB,
    SeedOutcome,
    parse_failure_id,
)

OK = SeedOutcome(
    seed=0,
    outcome="ok",
    failure=None,
    steps=120,
    last_tick=431,
    crashes=1,
    messages_lost=2,
    messages_duplicated=3,
    plan_json='{"crashes":[],"heal_tick":600,"partitions":[],"schema":1,"windows":[]}',
    validation="skipped",
    rejection=None,
    tlc_seconds=0.0,
    trace_path=None,
)


def outcome(seed: int, **changes: object) -> SeedOutcome:
    return replace(OK, seed=seed, **changes)  # type: ignore[arg-type]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_recorded_outcomes_read_back_field_for_field_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    safety = outcome(
        7,
        outcome="safety",
        failure="agreement: r1 committed, r2 aborted",
        validation="rejected",
        rejection="step 12: no TLA+ action explains it",
        tlc_seconds=1.5,
        trace_path="traces/twopc-7.ndjson",
    )
    with ResultsDB(path) as db:
        campaign = db.open_campaign("twopc", None, range(0, 10), "{}", "failures", resume=False)
        db.record(campaign.id, [outcome(0), safety])
        db.record(campaign.id, [outcome(3)])
    with ResultsDB(path) as db:
        (again,) = db.campaigns()
        assert again == campaign
        assert db.outcomes(campaign.id) == [outcome(0), outcome(3), safety]
        assert db.finished_seeds(campaign.id) == {0, 3, 7}
        (failure,) = db.failures()
        assert failure.outcome == safety and failure.campaign == campaign
        assert failure.failure_id == f"{campaign.id}:7"
        assert db.run(failure.failure_id) == failure
        assert db.run("7") == failure


def test_database_is_in_wal_mode_and_marked_as_a_tlasim_database(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    ResultsDB(path).close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        conn.close()


def test_an_empty_file_becomes_a_results_database(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.touch()
    with ResultsDB(path) as db:
        assert db.campaigns() == []


def test_a_file_of_random_bytes_is_refused_and_left_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.write_bytes(random.Random(1).randbytes(8192))
    before = digest(path)
    with pytest.raises(ConfigError, match="is not a tlasim results database"):
        ResultsDB(path)
    assert digest(path) == before


def test_a_sqlite_database_of_another_application_is_refused_and_left_byte_identical(
    tmp_path: Path,
) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(ConfigError, match=r"not a tlasim results database.*invoices"):
        ResultsDB(path)
    assert digest(path) == before


def test_a_database_of_a_newer_schema_is_refused_and_left_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    ResultsDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = digest(path)
    with pytest.raises(ConfigError, match="newer tlasim"):
        ResultsDB(path)
    assert digest(path) == before


def test_a_damaged_database_is_refused_and_left_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with ResultsDB(path) as db:
        campaign = db.open_campaign("twopc", None, range(0, 500), "{}", "none", resume=False)
        db.record(campaign.id, [outcome(seed) for seed in range(500)])
    # Keep the first page, the header SQLite checks on open, and garble the rest.
    data = bytearray(path.read_bytes())
    page = 4096
    data[page:] = random.Random(2).randbytes(len(data) - page)
    path.write_bytes(bytes(data))
    before = digest(path)
    with pytest.raises(ConfigError, match="damaged"), ResultsDB(path) as db:
        db.outcomes(campaign.id)
    assert digest(path) == before


def test_rerunning_a_recorded_campaign_needs_resume_and_the_same_validate_mode(
    tmp_path: Path,
) -> None:
    with ResultsDB(tmp_path / "results.db") as db:
        first = db.open_campaign("twopc", "tm-forgets-decision", range(0, 5), "{}", "none",
                                 resume=False)
        db.record(first.id, [outcome(1)])
        with pytest.raises(ConfigError, match=r"1 of 5 seeds finished; pass --resume"):
            db.open_campaign("twopc", "tm-forgets-decision", range(0, 5), "{}", "none",
                             resume=False)
        with pytest.raises(ConfigError, match="--validate none"):
            db.open_campaign("twopc", "tm-forgets-decision", range(0, 5), "{}", "all",
                             resume=True)
        assert db.open_campaign("twopc", "tm-forgets-decision", range(0, 5), "{}", "none",
                                resume=True) == first
        # Another bug, range or options is another campaign, resumed or not.
        other = db.open_campaign("twopc", None, range(0, 5), "{}", "none", resume=True)
        assert other.id != first.id


def test_a_seed_recorded_twice_is_refused_and_its_batch_is_not_half_written(
    tmp_path: Path,
) -> None:
    with ResultsDB(tmp_path / "results.db") as db:
        campaign = db.open_campaign("twopc", None, range(0, 10), "{}", "none", resume=False)
        db.record(campaign.id, [outcome(5)])
        with pytest.raises(ConfigError, match="already recorded"):
            db.record(campaign.id, [outcome(6), outcome(5)])
        assert db.finished_seeds(campaign.id) == {5}


def test_failure_ids_name_one_run_or_fail_clearly(tmp_path: Path) -> None:
    assert parse_failure_id("3:8812") == (3, 8812)
    assert parse_failure_id("8812") == (None, 8812)
    for bad in ("", "x:1", "1:y", "1:2:3"):
        with pytest.raises(ConfigError, match="CAMPAIGN:SEED"):
            parse_failure_id(bad)
    with ResultsDB(tmp_path / "results.db") as db:
        a = db.open_campaign("twopc", None, range(0, 10), "{}", "none", resume=False)
        b = db.open_campaign("twopc", None, range(0, 20), "{}", "none", resume=False)
        db.record(a.id, [outcome(4)])
        db.record(b.id, [outcome(4)])
        with pytest.raises(ConfigError, match=f"{a.id}:4, {b.id}:4"):
            db.run("4")
        with pytest.raises(ConfigError, match="holds no run"):
            db.run(f"{a.id}:5")
        assert db.run(f"{b.id}:4").campaign == b
