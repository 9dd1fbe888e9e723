"""`tlasim live`: bad input is refused before any process starts; a run reports its end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlasim.sim import exitcodes
from tlasim.sim.cli.main import main


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def plan_file(tmp_path: Path, crashes: list[dict[str, object]]) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"schema": 1, "heal_tick": 100, "crashes": crashes,
                                "windows": [], "partitions": []}))
    return str(path)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("nosuch",), "nosuch"),
        (("lockfree-queue",), "send none"),
        (("twopc", "--set", "colour=red"), "unknown twopc option"),
        (("twopc", "--set", "rm_count=0"), "rm_count=0"),
        (("twopc", "--bug", "nosuch"), "nosuch"),
        (("twopc", "--tick-ms", "0"), "tick-ms"),
        (("twopc", "--faults", "none", "--plan", "x.json"), "cannot be given together"),
    ],
)
def test_bad_input_exits_with_the_usage_code(args: tuple[str, ...], says: str,
                                             tmp_path: Path) -> None:
    code, output = invoke("live", *args, "--dir", str(tmp_path / "run"))
    assert code == exitcodes.USAGE
    assert says in output
    assert not (tmp_path / "run").exists()


def test_a_plan_naming_a_node_the_run_lacks_or_a_client_is_refused(tmp_path: Path) -> None:
    code, output = invoke("live", "twopc", "--plan", plan_file(tmp_path, [
        {"node": "r9", "tick": 0, "restart_ticks": 1, "after_steps": 1}]),
        "--dir", str(tmp_path / "a"))
    assert code == exitcodes.USAGE and "r9" in output
    code, output = invoke("live", "shardsplit", "--plan", plan_file(tmp_path, [
        {"node": "c1", "tick": 0, "restart_ticks": 1, "after_steps": 1}]),
        "--dir", str(tmp_path / "b"))
    assert code == exitcodes.USAGE and "cannot crash" in output


def test_a_folder_that_holds_files_is_not_reused(tmp_path: Path) -> None:
    (tmp_path / "tm.trace").write_text("old run\n")
    code, output = invoke("live", "twopc", "--dir", str(tmp_path))
    assert code == exitcodes.USAGE and "not an empty folder" in output
    assert (tmp_path / "tm.trace").read_text() == "old run\n"


@pytest.mark.slow
def test_a_live_bug_run_reports_the_broken_property_and_the_rejection(tmp_path: Path) -> None:
    plan = plan_file(tmp_path, [{"node": "tm", "tick": 0, "restart_ticks": 10,
                                 "after_steps": 6}])
    code, output = invoke(
        "live", "twopc", "--bug", "commit-before-durable", "--plan", plan,
        "--set", "tx_count=1", "--set", "rm_count=2", "--set", "no_vote_probability=0",
        "--set", "self_abort_probability=0", "--dir", str(tmp_path / "run"),
    )
    assert code == exitcodes.SAFETY
    assert "result=safety" in output and "faults fired: crash=1" in output
    assert "failure: agreement" in output
    assert "REJECTED" in output


def test_a_live_run_writes_its_report(tmp_path: Path) -> None:
    page = tmp_path / "live.html"
    code, output = invoke("live", "twopc", "--faults", "none", "--set", "tx_count=1",
                          "--set", "rm_count=2", "--tick-ms", "2", "--no-validate",
                          "--dir", str(tmp_path / "run"), "--report", str(page))
    assert code == exitcodes.OK, output
    assert f"report={page.resolve()}" in output
    assert "<h1>tlasim live run: twopc seed 0</h1>" in page.read_text()
