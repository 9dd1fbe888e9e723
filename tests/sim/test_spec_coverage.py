"""`tlasim spec-coverage`: runs against TLC's reachable states at small constants.

The fractions are only worth something if a run's states and TLC's hash
alike. At twopc's coverage bound (one copy of each message, any number in
flight) TLC's set holds every abstract state a run can reach, so a state of
a run outside it would be a hashing mismatch or a refinement bug; snapshot's
bound cuts the messages in flight, so some run states lie beyond it, and
TLC prints those back with the same hash.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.sim import exitcodes
from tlasim.sim.conformance.model import read_model
from tlasim.sim.coverage.against_spec import CampaignPlan, ExplorePlan, spec_coverage
from tlasim.sim.explore.system import FaultBounds

SPECS = Path(__file__).resolve().parents[2] / "specs"


def spec_coverage_cli(*args: str | Path, cwd: Path | None = None
                      ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tlasim.sim", "spec-coverage", *map(str, args)],
                          capture_output=True, text=True, check=False, cwd=cwd)


def test_model_coverage_key_is_checked(tmp_path: Path) -> None:
    model = json.loads((SPECS / "twopc" / "TwoPhaseCommitMsg.conformance.json").read_text())
    model["coverage"] = {"constants": {"MaxInFlight": 3}, "bogus": 1, "why": "x"}
    path = tmp_path / "TwoPhaseCommitMsg.conformance.json"
    path.write_text(json.dumps(model))
    with pytest.raises(ConfigError, match="coverage has unknown keys"):
        read_model(path)
    model["coverage"] = {"constants": {"MaxInFlight": 3}}
    path.write_text(json.dumps(model))
    with pytest.raises(ConfigError, match="why must be a non-empty string"):
        read_model(path)


@pytest.mark.parametrize(("args", "message"), [
    (["--bound", "MaxInFlight=three"], "is not a JSON value"),
    (["--bound", "NoSuchConstant=3"], "not a constant of MCTwoPhaseCommitMsg"),
    (["--bound", "=3"], "expected NAME=VALUE"),
    (["--no-campaign", "--explore-states", "0"], "nothing to measure"),
    (["--set", "rm_count=zero"], "rm_count"),
    (["--seeds", "5:2"], "--seeds"),
])
def test_bad_input_is_refused_before_any_run(args: list[str], message: str) -> None:
    done = spec_coverage_cli("twopc", *args)
    assert done.returncode == exitcodes.USAGE, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_spec_without_a_conformance_model_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    for module in (SPECS / "twopc").glob("*.tla"):
        (folder / module.name).write_text(module.read_text())
    done = spec_coverage_cli("twopc", "--spec-dir", folder)
    assert done.returncode == exitcodes.USAGE, done.stderr
    assert "no conformance model TwoPhaseCommitMsg.conformance.json" in done.stderr


@pytest.mark.slow
def test_twopc_runs_stay_within_tlcs_exact_set() -> None:
    result = spec_coverage(
        get_protocol("twopc"),
        campaigns=[CampaignPlan(range(200)), CampaignPlan(range(200), guide="coverage")],
        explorer=ExplorePlan(FaultBounds(1, 1, 1, True), 2000, 2))
    spec = result.spec
    assert spec.options["rm_count"] == 2 and spec.options["tx_count"] == 1
    assert len(spec.states) == spec.tlc_states  # one copy each: no two states alike
    for side in result.sides:
        assert side.outside == 0, side.name  # the bound cuts nothing coverage sees
        assert 0 < side.within <= len(spec.states)
        assert 0 < side.fraction(spec) < 1
    assert [s.name for s in result.sides] == ["campaign", "guided (coverage)", "explorer"]


@pytest.mark.slow
def test_snapshot_states_beyond_the_bound_print_back_alike(tmp_path: Path) -> None:
    out = tmp_path / "coverage.json"
    done = spec_coverage_cli("snapshot", "--seeds", "0:100", "--explore-states", "1000",
                             "--explore-workloads", "1", "--json", out, cwd=tmp_path)
    assert done.returncode == exitcodes.OK, done.stderr
    found = json.loads(out.read_text())
    assert found["options"]["key_count"] == 1  # the model's coverage options
    assert found["bound"]["MaxInFlight"] == 3
    campaign, explorer = found["sides"]
    assert campaign["runs"] == 100 and explorer["runs"] == 1000
    assert campaign["beyond"] > 0  # more than three messages in flight
    for side in found["sides"]:
        assert side["mismatched"] == 0
        assert side["within"] + side["beyond"] == side["reached"]
    assert "in TLC's" in done.stdout and "MISMATCH" not in done.stdout
