"""What users hit with stored results: nothing read is ever overwritten, a changed
database says so, `repro` replays the shrunk plan, `failures` lists what there is."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlasim.faults.plan import FaultPlan
from tlasim.sim import exitcodes
from tlasim.sim.campaign.results import SCHEMA_VERSION, ResultsDB, SeedOutcome
from tlasim.sim.cli.main import main
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.printable import printable

OK = SeedOutcome(
    seed=0, outcome="ok", failure=None, steps=120, last_tick=431, crashes=1, messages_lost=2,
    messages_duplicated=3,
    plan_json='{"crashes":[],"heal_tick":600,"partitions":[],"schema":1,"windows":[]}',
    validation="skipped", rejection=None, tlc_seconds=0.0, trace_path=None,
)
SAFETY = replace(OK, seed=7, outcome="safety", failure="agreement: r1 committed, r2 aborted")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def small_db(path: Path, *outcomes: SeedOutcome) -> Path:
    """A results database holding `outcomes` (no simulation needed to read them)."""
    with ResultsDB(path) as db:
        campaign = db.open_campaign("twopc", None, range(0, 10), "{}", "none", resume=False)
        db.record(campaign.id, list(outcomes or (OK, SAFETY)))
    return path


@pytest.fixture(scope="module")
def bug_campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A campaign whose first failure was shrunk: (db, the shrunk failure's id, output)."""
    folder = tmp_path_factory.mktemp("campaign")
    db = folder / "results.db"
    before = os.environ.get("TLASIM_FAILURE_DIR")
    os.environ["TLASIM_FAILURE_DIR"] = str(folder / "failures")
    try:
        code, output = invoke(
            "campaign", "twopc", "--seeds", "0:12", "--bug", "tm-forgets-decision",
            "--workers", "1", "--validate", "none", "--db", str(db),
            "--trace-dir", str(folder / "traces"), "--shrink", "1",
        )
    finally:
        if before is None:
            del os.environ["TLASIM_FAILURE_DIR"]
        else:
            os.environ["TLASIM_FAILURE_DIR"] = before
    assert code == exitcodes.SAFETY, output
    repro_line = next(line for line in output.splitlines() if "tlasim repro" in line)
    return db, repro_line.split()[-1], output


# ---- nothing a command reads is written over ----


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink"])
def test_repro_refuses_a_trace_path_that_is_its_database_and_leaves_it_intact(
    tmp_path: Path, spelling: str
) -> None:
    db = small_db(tmp_path / "results.db")
    before = digest(db)
    trace = {
        "same": db,
        "dotted": tmp_path / "." / "results.db",
        "symlink": tmp_path / "link.db",
    }[spelling]
    if spelling == "symlink":
        trace.symlink_to(db)
    code, output = invoke("repro", str(db), "1:7", "--trace", str(trace))
    assert code == exitcodes.USAGE, output
    assert "--trace" in output and "overwrite" in output
    assert digest(db) == before


def test_run_refuses_a_trace_path_that_is_its_plan(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(FaultPlan(heal_tick=100).to_json())
    before = digest(plan)
    code, output = invoke("run", "twopc", "--seed", "1", "--plan", str(plan),
                          "--trace", str(plan))
    assert code == exitcodes.USAGE, output
    assert digest(plan) == before


def test_run_regenerates_a_trace_in_place_when_the_trace_is_its_own_plan(tmp_path: Path) -> None:
    """The regenerate command a validation report prints for a --plan run
    names the trace as both plan and output: it must work, and write the
    same bytes, with nothing left beside it."""
    plan = tmp_path / "plan.json"
    plan.write_text(FaultPlan(heal_tick=100).to_json())
    trace = tmp_path / "t.ndjson"
    code, output = invoke("run", "twopc", "--seed", "4", "--plan", str(plan), "--trace", str(trace))
    assert code == exitcodes.OK, output
    before = digest(trace)
    code, output = invoke("run", "twopc", "--seed", "4", "--plan", str(trace),
                          "--trace", str(trace))
    assert code == exitcodes.OK, output
    assert digest(trace) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "t.ndjson"]


def test_export_refuses_an_output_that_is_its_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.ndjson"
    run_seed("twopc", 3, trace_path=trace)
    before = digest(trace)
    code, output = invoke("export", str(trace), "--out", str(trace))
    assert code == exitcodes.USAGE, output
    assert digest(trace) == before


def test_shrink_refuses_an_output_that_is_its_plan(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(FaultPlan(heal_tick=100).to_json())
    before = digest(plan)
    code, output = invoke("shrink", "twopc", "--seed", "41", "--plan", str(plan),
                          "--out", str(plan))
    assert code == exitcodes.USAGE, output
    assert digest(plan) == before


# ---- reading never writes, and never blocks ----


@pytest.mark.parametrize("command", ["repro", "failures"])
def test_reading_an_empty_file_as_a_database_leaves_it_empty(
    tmp_path: Path, command: str
) -> None:
    db = tmp_path / "results.db"
    db.touch()
    args = [command, str(db)] + (["1:7"] if command == "repro" else [])
    code, output = invoke(*args)
    assert code == exitcodes.USAGE, output
    assert "empty" in output
    assert db.read_bytes() == b""


def test_repro_reads_a_database_without_changing_a_byte(tmp_path: Path) -> None:
    db = small_db(tmp_path / "results.db")
    before = digest(db)
    invoke("failures", str(db))
    invoke("repro", str(db), "1:0")
    assert digest(db) == before


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
@pytest.mark.parametrize("command", ["repro", "failures", "campaign"])
def test_a_database_path_that_is_not_a_regular_file_is_refused_without_blocking(
    tmp_path: Path, kind: str, command: str
) -> None:
    path = {"fifo": tmp_path / "fifo", "device": Path("/dev/zero"), "folder": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    args = {
        "repro": ["repro", str(path), "1:1"],
        "failures": ["failures", str(path)],
        "campaign": ["campaign", "twopc", "--seeds", "0:1", "--validate", "none",
                     "--db", str(path)],
    }[command]
    # A subprocess, so that a regression hangs only it: the timeout is a safety net.
    done = subprocess.run([sys.executable, "-m", "tlasim.sim", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "regular file" in done.stderr or "directory" in done.stderr


def test_a_fifo_given_as_plan_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "tlasim.sim", "run", "twopc", "--seed", "1", "--plan", str(fifo)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == exitcodes.USAGE, done.stderr
    assert "FIFO" in done.stderr


# ---- a changed database says so ----


@pytest.mark.parametrize(
    ("table", "edit", "culprit"),
    [
        ("runs", "UPDATE runs SET steps = 'abc' WHERE seed = 7", "column steps holds 'abc'"),
        ("runs", "UPDATE runs SET outcome = 'bogus' WHERE seed = 7", "column outcome"),
        ("runs", "UPDATE runs SET crashes = -3 WHERE seed = 7", "column crashes holds -3"),
        ("runs", "UPDATE runs SET failure = 'agreement: edited' WHERE seed = 7", "seal"),
        ("runs", "UPDATE runs SET tlc_seconds = 'x' WHERE seed = 7", "tlc_seconds"),
        ("runs", "UPDATE runs SET plan = '{' WHERE seed = 7", "seal"),
        ("campaigns", "UPDATE campaigns SET seed_start = 'zero'", "seed_start"),
        ("campaigns", "UPDATE campaigns SET seed_stop = 0", "seal"),
        ("campaigns", "UPDATE campaigns SET options = '{\"x\": 1}'", "seal"),
        ("campaigns", "UPDATE campaigns SET validate = 1", "column validate holds '1'"),
    ],
)
@pytest.mark.parametrize("command", ["repro", "failures"])
def test_a_database_edited_by_hand_says_it_was_changed_naming_table_and_row(
    tmp_path: Path, table: str, edit: str, culprit: str, command: str
) -> None:
    db = small_db(tmp_path / "results.db")
    conn = sqlite3.connect(db)
    conn.execute(edit)
    conn.commit()
    conn.close()
    args = [command, str(db)] + (["1:7"] if command == "repro" else [])
    code, output = invoke(*args)
    assert code == exitcodes.USAGE, output
    assert "this database was changed" in output
    assert f"table {table}, row " in output and culprit in output
    assert "not deterministic" not in output


def test_resuming_an_edited_database_says_it_was_changed(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    code, output = invoke("campaign", "twopc", "--seeds", "0:2", "--workers", "1",
                          "--validate", "none", "--db", str(db))
    assert code == exitcodes.OK, output
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET crashes = crashes + 1 WHERE seed = 1")
    conn.commit()
    conn.close()
    code, output = invoke("campaign", "twopc", "--seeds", "0:2", "--workers", "1",
                          "--validate", "none", "--db", str(db), "--resume")
    assert code == exitcodes.USAGE, output
    assert "this database was changed" in output and "seed 1" in output


SCHEMA_1 = """
CREATE TABLE campaigns (id INTEGER PRIMARY KEY, protocol TEXT NOT NULL, bug TEXT,
    seed_start INTEGER NOT NULL, seed_stop INTEGER NOT NULL, options TEXT NOT NULL,
    validate TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE runs (campaign INTEGER NOT NULL REFERENCES campaigns (id),
    seed INTEGER NOT NULL, outcome TEXT NOT NULL, failure TEXT, steps INTEGER NOT NULL,
    last_tick INTEGER NOT NULL, crashes INTEGER NOT NULL, messages_lost INTEGER NOT NULL,
    messages_duplicated INTEGER NOT NULL, plan TEXT NOT NULL, validation TEXT NOT NULL,
    rejection TEXT, tlc_seconds REAL NOT NULL, trace_path TEXT, finished TEXT NOT NULL,
    PRIMARY KEY (campaign, seed)) WITHOUT ROWID;
INSERT INTO campaigns VALUES (1, 'twopc', NULL, 0, 10, '{}', 'none', '2026-01-01T00:00:00');
INSERT INTO runs VALUES (1, 7, 'safety', 'agreement: x', 1, 2, 0, 0, 0,
    '{"crashes":[],"heal_tick":600,"partitions":[],"schema":1,"windows":[]}', 'skipped',
    NULL, 0.0, NULL, '2026-01-01T00:00:00');
PRAGMA application_id = 1414283603;
PRAGMA user_version = 1;
"""


def test_a_schema_1_database_is_read_as_it_is_and_upgraded_when_a_writer_opens_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_1)
    conn.close()
    before = digest(db)
    code, output = invoke("failures", str(db))
    assert code == exitcodes.OK, output
    assert "1:7" in output
    assert digest(db) == before
    with ResultsDB(db) as store:
        (record,) = store.failures()
        assert not record.sealed and record.shrunk is None
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()


# ---- repro replays the shrunk plan; failures lists what there is ----


def test_repro_replays_the_stored_shrunk_plan_and_original_the_recorded_one(
    bug_campaign: tuple[Path, str, str], tmp_path: Path
) -> None:
    db, failure_id, _ = bug_campaign
    with ResultsDB(db, readonly=True) as store:
        record = store.run(failure_id)
    assert record.shrunk is not None
    shrunk_plan = FaultPlan.from_json(record.shrunk.plan_json)
    assert shrunk_plan.size < FaultPlan.from_json(record.outcome.plan_json).size

    replayed = tmp_path / "replayed.ndjson"
    code, output = invoke("repro", str(db), failure_id, "--trace", str(replayed))
    assert code == exitcodes.SAFETY, output
    assert f"plan: the shrunk plan, {shrunk_plan.size} fault(s)" in output
    direct = tmp_path / "direct.ndjson"
    run_seed("twopc", record.outcome.seed, bug="tm-forgets-decision",
             options=SimOptions(faults=shrunk_plan), trace_path=direct)
    assert replayed.read_bytes().splitlines()[1:] == direct.read_bytes().splitlines()[1:]

    code, output = invoke("repro", str(db), failure_id, "--original")
    assert code == exitcodes.SAFETY, output
    assert "plan: the recorded plan" in output
    lines = output.splitlines()
    recorded = next(line for line in lines if line.startswith("recorded:"))
    assert recorded == f"recorded: safety: {record.outcome.failure}"


def test_repro_of_a_passing_seed_says_it_passed_and_names_the_failures(
    bug_campaign: tuple[Path, str, str],
) -> None:
    db, failure_id, _ = bug_campaign
    with ResultsDB(db, readonly=True) as store:
        failed = {o.seed for o in store.outcomes(1) if o.failed}
    passing = next(seed for seed in range(12) if seed not in failed)
    code, output = invoke("repro", str(db), f"1:{passing}")
    assert code == exitcodes.USAGE, output
    assert "passed" in output and "no failure to reproduce" in output
    assert failure_id in output
    assert "recorded: ok" not in output


def test_failures_lists_id_seed_property_plan_size_and_a_command_that_runs_anywhere(
    bug_campaign: tuple[Path, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, failure_id, _ = bug_campaign
    code, text = invoke("failures", str(db))
    assert code == exitcodes.OK, text
    code, output = invoke("failures", str(db), "--format", "json")
    assert code == exitcodes.OK, output
    document = json.loads(output)
    rows = {row["id"]: row for row in document["failures"]}
    row = rows[failure_id]
    assert row["property"] == "durability"
    assert row["shrunk_plan_faults"] < row["plan_faults"]
    assert row["reproduce"] == f"tlasim repro {db.resolve()} {failure_id}"
    assert f"{failure_id}  twopc bug=tm-forgets-decision seed={row['seed']}  durability" in text
    assert row["reproduce"] in text
    # The command works from another folder.
    monkeypatch.chdir(tmp_path)
    code, output = invoke(*shlex.split(row["reproduce"])[1:])
    assert code == exitcodes.SAFETY, output


def test_failures_of_a_database_without_any_says_so(tmp_path: Path) -> None:
    db = small_db(tmp_path / "results.db", OK)
    code, output = invoke("failures", str(db))
    assert code == exitcodes.OK, output
    assert "no failures among 1 recorded runs" in output
    code, output = invoke("failures", str(db), "--campaign", "9")
    assert code == exitcodes.USAGE, output


def test_campaign_report_commands_name_absolute_paths(
    bug_campaign: tuple[Path, str, str],
) -> None:
    _, _, output = bug_campaign
    reproduce = next(line for line in output.splitlines() if "reproduce: " in line)
    plan = Path(shlex.split(reproduce.split("reproduce: ", 1)[1])[-1])
    assert plan.is_absolute() and plan.is_file()
    repro = next(line for line in output.splitlines() if "tlasim repro" in line)
    assert Path(shlex.split(repro.split("or:", 1)[1])[2]).is_absolute()


def test_run_prints_an_absolute_plan_path_given_a_relative_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("plan.json").write_text(FaultPlan(heal_tick=100).to_json())
    code, output = invoke("run", "twopc", "--seed", "1", "--plan", "plan.json")
    assert code == exitcodes.OK, output
    assert f"--plan {tmp_path / 'plan.json'}" in output


@pytest.mark.parametrize("failure_id", ["1:" + "9" * 30, "9" * 5000, "-1", "1:-4", "x"])
def test_a_failure_id_out_of_range_or_malformed_is_a_usage_error(
    tmp_path: Path, failure_id: str
) -> None:
    db = small_db(tmp_path / "results.db")
    code, output = invoke("repro", str(db), failure_id)
    assert code == exitcodes.USAGE, output
    assert len(output) < 400


# ---- resume says what it did ----


def test_resume_after_a_code_change_says_it_starts_afresh_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "results.db"
    args = ["campaign", "twopc", "--seeds", "0:2", "--workers", "1", "--validate", "none",
            "--db", str(db)]
    code, output = invoke(*args)
    assert code == exitcodes.OK, output
    code, output = invoke(*args, "--resume")
    assert code == exitcodes.OK, output
    assert "resuming campaign 1 (twopc --seeds 0:2): 2 of 2 seeds finished" in output

    import tlasim.sim.campaign.sweep as sweep

    monkeypatch.setattr(sweep, "source_revision", lambda files, root: "sha256:changed")
    code, output = invoke(*args, "--resume")
    assert code == exitcodes.OK, output
    assert "not resuming campaign 1" in output
    assert "source_revision" in output and '"sha256:changed"' in output
    assert "starting campaign 2" in output
    code, output = invoke(*args[:-2], "--db", str(tmp_path / "new.db"), "--resume")
    assert "nothing to resume" in output


# ---- every value from a file is printed escaped ----


def test_printable_shows_control_characters_and_ansi_escapes_as_escapes() -> None:
    text = printable("ok\nACCEPTED: forged\r\x1b[2J\x85\u202e\u2028é")
    assert text == "ok\\nACCEPTED: forged\\r\\x1b[2J\\x85\\u202e\\u2028é"
    assert text.isprintable()


def test_values_from_a_database_cannot_forge_output_lines(tmp_path: Path) -> None:
    from tlasim.sim.campaign.sweep import campaign_options_json

    forged = replace(
        SAFETY, failure="agreement: x\nACCEPTED: all good\x1b[32m :smile:",
        trace_path="t\n\x1b[0m.ndjson",
    )
    db = tmp_path / "results\n.db"
    with ResultsDB(db) as store:
        campaign = store.open_campaign("twopc", None, range(0, 10),
                                       campaign_options_json("twopc", None, {}), "none",
                                       resume=False)
        store.record(campaign.id, [OK, forged])
    outputs = {}
    for args in (("failures", str(db)), ("repro", str(db), "1:0"), ("repro", str(db), "1:7"),
                 ("failures", str(db), "--format", "json")):
        result = CliRunner().invoke(main, list(args))
        output = outputs[args] = result.output
        # 70 for 1:7: its intact row claims a failure the replay does not have.
        assert result.exit_code in (exitcodes.OK, exitcodes.USAGE, exitcodes.INTERNAL), output
        assert "\x1b" not in output, output
        assert "\U0001f604" not in output, output
        assert not any(line.startswith("ACCEPTED") for line in output.splitlines()), output
    shown = "recorded: safety: agreement: x\\nACCEPTED: all good\\x1b[32m :smile:"
    assert shown in outputs[("repro", str(db), "1:7")]


# ---- a replay that differs is explained as surely as the database allows ----


def _forged_failure_db(path: Path) -> Path:
    """A database whose one row claims a failure that twopc seed 7 does not have."""
    from tlasim.sim.campaign.sweep import campaign_options_json

    with ResultsDB(path) as db:
        campaign = db.open_campaign("twopc", None, range(0, 10),
                                    campaign_options_json("twopc", None, {}), "none",
                                    resume=False)
        db.record(campaign.id, [SAFETY])
    return path


def test_an_intact_row_that_does_not_replay_is_a_bug_in_tlasim(tmp_path: Path) -> None:
    db = _forged_failure_db(tmp_path / "results.db")
    result = CliRunner().invoke(main, ["repro", str(db), "1:7"])
    assert result.exit_code == exitcodes.INTERNAL, result.output
    assert "its row is intact, so the simulator is not deterministic" in result.output


def test_an_unsealed_row_that_does_not_replay_names_both_causes(tmp_path: Path) -> None:
    db = _forged_failure_db(tmp_path / "results.db")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET seal = NULL")
    conn.execute("UPDATE campaigns SET seal = NULL")
    conn.commit()
    conn.close()
    code, output = invoke("repro", str(db), "1:7")
    assert code == exitcodes.USAGE, output
    assert "changed by hand or the simulator is not deterministic" in output


def test_repro_after_a_code_change_says_the_replay_runs_todays_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tlasim.sim.campaign.sweep as sweep

    db = _forged_failure_db(tmp_path / "results.db")
    monkeypatch.setattr(sweep, "source_revision", lambda files, root: "sha256:changed")
    code, output = invoke("repro", str(db), "1:7")
    assert code == exitcodes.USAGE, output
    assert "the protocol's code changed since this campaign" in output
    assert "check out that revision" in output


def test_repro_of_a_run_only_tlc_rejected_says_so_and_exits_as_rejected(
        tmp_path: Path) -> None:
    # abort-after-prepare's seed 0 passes every oracle, but its RM aborts a
    # prepared transaction on its own, a step TLC rejects.
    db = tmp_path / "results.db"
    code, output = invoke("campaign", "twopc", "--seeds", "0:1", "--bug", "abort-after-prepare",
                          "--workers", "1", "--db", str(db),
                          "--trace-dir", str(tmp_path / "traces"))
    assert code != exitcodes.OK, output
    code, output = invoke("repro", str(db), "1:0")
    assert code == exitcodes.TRACE_REJECTED, output
    assert "recorded: ok (the oracles passed; TLC rejected its trace)" in output
    assert "replayed: ok\n" in output
    assert "None" not in output
