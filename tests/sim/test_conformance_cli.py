"""`tlasim conformance` end to end: a spec loosened against the code's rule is reported.

The loosening is the kind issue 30 is about: the code states a rule ("an RM
may abort on its own only before it has voted yes") and a spec that drops
the guard lets a bug that breaks it pass TLC. The report must name the
step the spec now allows and the code never takes; the shipped spec must
not have it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tlasim.sim import exitcodes

SPECS = Path(__file__).resolve().parents[2] / "specs"
# The guard of RMChooseToAbort: the one place a working RM aborts on its own.
GUARD = '''    /\\ rmState[t][r] = "working"
    /\\ RMBecome(t, r, "aborted")'''
LOOSE = '''    /\\ rmState[t][r] \\in {"working", "prepared"}
    /\\ RMBecome(t, r, "aborted")'''
FAST = ["--seeds", "40", "--explore-states", "1500", "--show", "0"]


def conformance(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tlasim.sim", "conformance", *map(str, args)],
        capture_output=True, text=True, check=False,
    )


def spec_copy(tmp_path: Path, loosen: bool) -> Path:
    folder = tmp_path / ("loose" if loosen else "shipped")
    shutil.copytree(SPECS / "twopc", folder / "twopc")
    spec = folder / "twopc" / "TwoPhaseCommitMsg.tla"
    text = spec.read_text()
    assert text.count(GUARD) == 1, "the test's anchor in the spec moved: update GUARD"
    if loosen:
        spec.write_text(text.replace(GUARD, LOOSE))
    return folder


def choose_to_abort(report: Path) -> dict:
    (result,) = json.loads(report.read_text())
    return next(a for a in result["actions"] if a["action"] == "RMChooseToAbort")


@pytest.mark.slow
def test_a_spec_looser_than_the_codes_rule_is_reported_at_that_action(tmp_path: Path) -> None:
    loose = conformance("twopc", "--spec-dir", spec_copy(tmp_path, True), *FAST,
                        "--json", tmp_path / "loose.json")
    assert loose.returncode == exitcodes.DRIFT, loose.stdout + loose.stderr
    assert "LOOSE" in loose.stdout
    unexplained = choose_to_abort(tmp_path / "loose.json")["unexplained"]
    assert any('"prepared"] -> [t1 |-> "aborted"]' in p for p in unexplained), unexplained
    shipped = conformance("twopc", "--spec-dir", spec_copy(tmp_path, False), *FAST,
                          "--json", tmp_path / "shipped.json")
    assert shipped.returncode in (exitcodes.OK, exitcodes.DRIFT), shipped.stderr
    assert not any('"prepared"] -> [t1 |-> "aborted"]' in p
                   for p in choose_to_abort(tmp_path / "shipped.json")["unexplained"])


def test_a_protocol_without_a_model_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    shutil.copytree(SPECS / "twopc", folder / "twopc")
    (folder / "twopc" / "TwoPhaseCommitMsg.conformance.json").unlink()
    done = conformance("twopc", "--spec-dir", folder, *FAST)
    assert done.returncode == exitcodes.USAGE
    assert "TwoPhaseCommitMsg.conformance.json does not exist" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_model_naming_a_variable_the_spec_lacks_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    shutil.copytree(SPECS / "twopc", folder / "twopc")
    model = folder / "twopc" / "TwoPhaseCommitMsg.conformance.json"
    data = json.loads(model.read_text())
    data["nodes"]["tmStat"] = "tm"
    model.write_text(json.dumps(data))
    done = conformance("twopc", "--spec-dir", folder, *FAST)
    assert done.returncode == exitcodes.USAGE
    assert "tmStat" in done.stderr and "not variables of TwoPhaseCommitMsg" in done.stderr


def test_a_spec_tlc_cannot_parse_is_a_usage_error_not_a_crash(tmp_path: Path) -> None:
    folder = spec_copy(tmp_path, False)
    spec = folder / "twopc" / "TwoPhaseCommitMsg.tla"
    spec.write_text(spec.read_text().replace("EXTENDS Naturals, Bags", "EXTENDS Bags"))
    done = conformance("twopc", "--spec-dir", folder, *FAST)
    assert done.returncode == exitcodes.USAGE, done.stderr
    assert "TLC could not explore" in done.stderr and "Traceback" not in done.stderr


def test_the_models_budget_is_the_default_effort_and_the_options_override_it(
        tmp_path: Path) -> None:
    folder = spec_copy(tmp_path, False)
    model_file = folder / "twopc" / "TwoPhaseCommitMsg.conformance.json"
    model = json.loads(model_file.read_text())
    model["budget"] = {"seeds": 7, "explore_states": 0}
    model_file.write_text(json.dumps(model))
    for args, seeds in (((), 7), (("--seeds", "3"), 3)):
        done = conformance("twopc", "--spec-dir", folder, "--show", "0", *args,
                           "--json", tmp_path / "report.json")
        assert done.returncode in (exitcodes.OK, exitcodes.DRIFT), done.stderr
        (result,) = json.loads((tmp_path / "report.json").read_text())
        assert (result["seeds_run"], result["explored_states"]) == (seeds, 0), args
