"""One printed command replays a failure exactly: the same trace, byte for byte."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlasim.faults.plan import FaultPlan
from tlasim.sim.campaign.shrinking import shrink_failure
from tlasim.sim.cli.main import main
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.run.runner import run_seed


@pytest.fixture(autouse=True)
def failure_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TLASIM_FAILURE_DIR", str(tmp_path / "failures"))
    return tmp_path / "failures"


def test_reproduce_command_of_a_shrunk_failure_replays_the_same_trace(tmp_path: Path) -> None:
    shrunk = shrink_failure("twopc", 41, bug="commit-before-durable")
    report = shrunk.shrunk.report()
    argv = shlex.split(report.reproduce)
    assert argv[:2] == ["tlasim", "run"]

    replayed = tmp_path / "replayed.ndjson"
    result = CliRunner().invoke(main, [*argv[1:], "--trace", str(replayed)])
    assert result.exit_code == 1, result.output
    assert shrunk.shrunk.result.failure is not None
    assert shrunk.shrunk.result.failure in result.output

    plan = FaultPlan.from_json(Path(argv[argv.index("--plan") + 1]).read_text())
    assert plan == shrunk.shrunk.result.plan
    direct = tmp_path / "direct.ndjson"
    run_seed("twopc", 41, bug="commit-before-durable", options=SimOptions(faults=plan),
             trace_path=direct)
    assert replayed.read_bytes() == direct.read_bytes()


def test_shrink_command_reports_the_minimal_plan(tmp_path: Path) -> None:
    out = tmp_path / "min.plan.json"
    result = CliRunner().invoke(
        main,
        ["shrink", "twopc", "--seed", "41", "--bug", "commit-before-durable", "--out", str(out)],
    )
    assert result.exit_code == 1, result.output
    assert "shrunk 7 fault(s) to 1" in result.output
    assert FaultPlan.from_json(out.read_text()).size == 1
    assert f"--plan {out}" in result.output


def test_shrink_of_a_passing_seed_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["shrink", "twopc", "--seed", "3"])
    assert result.exit_code == 2
    assert "no failure to shrink" in result.output


def test_search_command_is_repeatable_and_reports_a_shrunk_failure(failure_dir: Path) -> None:
    command = [sys.executable, "-m", "tlasim.sim", "search", "twopc", "--bug",
               "tm-forgets-decision", "--examples", "150"]
    env = {**os.environ, "TLASIM_FAILURE_DIR": str(failure_dir)}
    first, second = (
        subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        for _ in range(2)
    )
    assert first.returncode == 1, first.stdout + first.stderr
    assert "FAILURE safety: durability" in first.stdout
    assert "reproduce: tlasim run twopc" in first.stdout
    assert first.stdout == second.stdout


def test_campaign_reports_each_failure_with_commands_that_replay_it(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    result = CliRunner().invoke(
        main,
        ["campaign", "twopc", "--seeds", "0:12", "--bug", "tm-forgets-decision", "--workers",
         "1", "--validate", "none", "--db", str(db), "--trace-dir", str(tmp_path / "traces")],
    )
    assert result.exit_code == 1, result.output
    assert "FAILURE safety: durability" in result.output
    assert "(shrunk from" in result.output
    repro_line = next(line for line in result.output.splitlines() if "tlasim repro" in line)
    failure_id = repro_line.split()[-1]

    replay = CliRunner().invoke(
        main, ["repro", str(db), failure_id, "--trace", str(tmp_path / "again.ndjson")]
    )
    assert replay.exit_code == 1, replay.output
    recorded = next(line for line in replay.output.splitlines() if line.startswith("recorded:"))
    replayed = next(line for line in replay.output.splitlines() if line.startswith("replayed:"))
    assert recorded.split(":", 1)[1] == replayed.split(":", 1)[1]


@pytest.mark.parametrize(
    "args",
    [
        ["campaign", "twopc", "--seeds", "0:3", "--resume"],
        ["repro", "/no/such/results.db", "1:3"],
    ],
)
def test_campaign_and_repro_bad_input_is_a_usage_error(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_campaign_refuses_a_corrupt_database_and_leaves_it_alone(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    db.write_bytes(b"not a database at all" * 100)
    before = db.read_bytes()
    result = CliRunner().invoke(
        main, ["campaign", "twopc", "--seeds", "0:3", "--db", str(db), "--validate", "none"]
    )
    assert result.exit_code == 2, result.output
    assert db.read_bytes() == before


def test_repro_of_an_unknown_failure_is_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    ok = CliRunner().invoke(
        main, ["campaign", "twopc", "--seeds", "0:3", "--db", str(db), "--validate", "none",
               "--workers", "1"]
    )
    assert ok.exit_code == 0, ok.output
    result = CliRunner().invoke(main, ["repro", str(db), "1:999"])
    assert result.exit_code == 2, result.output


def test_campaigns_sharing_a_trace_dir_keep_their_own_traces(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    for bug in ("abort-after-prepare", "counts-duplicate-votes"):
        result = CliRunner().invoke(
            main,
            ["campaign", "twopc", "--seeds", "0:30", "--bug", bug, "--workers", "1",
             "--validate", "none", "--trace-dir", str(traces), "--shrink", "0"],
        )
        assert result.exit_code == 1, result.output
    names = {p.name for p in traces.iterdir()}
    assert any("abort-after-prepare" in n for n in names)
    assert any("counts-duplicate-votes" in n for n in names)


def test_repro_of_a_trace_only_failure_validates_the_replay(tmp_path: Path) -> None:
    # Under abort-after-prepare seed 0 passes every oracle, but its trace breaks the spec.
    db = tmp_path / "results.db"
    result = CliRunner().invoke(
        main,
        ["campaign", "twopc", "--seeds", "0:1", "--bug", "abort-after-prepare", "--workers", "1",
         "--validate", "all", "--db", str(db), "--trace-dir", str(tmp_path / "traces")],
    )
    assert result.exit_code == 4, result.output
    replay = CliRunner().invoke(main, ["repro", str(db), "1:0"])
    assert replay.exit_code == 4, replay.output
    assert "REJECTED" in replay.output


def test_campaign_protocol_options_reach_every_seed_and_its_replay(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    result = CliRunner().invoke(
        main,
        ["campaign", "twopc", "--seeds", "0:20", "--bug", "counts-duplicate-votes",
         "--set", "rm_count=2", "--set", "tx_count=3", "--workers", "1", "--validate", "none",
         "--db", str(db), "--trace-dir", str(tmp_path / "traces"), "--shrink", "1"],
    )
    assert result.exit_code == 1, result.output
    assert "--set rm_count=2 --set tx_count=3" in result.output
    failure_id = next(
        line.split()[-1] for line in result.output.splitlines() if "tlasim repro" in line
    )
    replay = CliRunner().invoke(main, ["repro", str(db), failure_id])
    assert replay.exit_code == 1, replay.output
    lines = replay.output.splitlines()
    recorded = next(line for line in lines if line.startswith("recorded:"))
    replayed = next(line for line in lines if line.startswith("replayed:"))
    assert recorded.split(":", 1)[1] == replayed.split(":", 1)[1]
