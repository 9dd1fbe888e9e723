"""Sizing a model is a command (issue 23, part 5): `check-specs --record`
writes the counts TLC measured into the manifest the checks came from, and
`--time` stops a model too large for the time given, saying so, without
hiding the other checks' results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tlasim.sim import exitcodes

ROOT = Path(__file__).resolve().parents[2]


def tlasim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tlasim.sim", *args], cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=600)


def _project(tmp_path: Path) -> Path:
    done = tlasim("new", "sizing", cwd=tmp_path)
    assert done.returncode == exitcodes.OK, done.stderr
    return tmp_path / "sizing" / "sizing" / "specs" / "manifest.json"


def test_record_writes_the_measured_count_and_keeps_the_layout(tmp_path: Path) -> None:
    manifest = _project(tmp_path)
    original = manifest.read_text()
    wrong = original.replace('"distinct_states": 17}', '"distinct_states": 5}')
    assert wrong != original
    manifest.write_text(wrong)
    done = tlasim("check-specs", "--manifest", str(manifest), "--name", "sizing-abstract",
                  cwd=tmp_path)
    assert done.returncode == exitcodes.SPEC_MISMATCH, done.stdout
    # Progress goes to stderr as each model starts and ends.
    assert "check-specs: sizing-abstract: TLC started" in done.stderr
    assert "check-specs: sizing-abstract: ok, 17 distinct states in" in done.stderr
    done = tlasim("check-specs", "--manifest", str(manifest), "--name", "sizing-abstract",
                  "--record", cwd=tmp_path)
    assert done.returncode == exitcodes.OK, done.stdout + done.stderr
    assert "recorded in" in done.stdout and "sizing-abstract" in done.stdout
    # The row says the count was written, not that it failed.
    assert "recorded" in done.stdout.split("recorded in")[0] and "FAIL" not in done.stdout
    # Byte for byte the file as it was: only the count changed back.
    assert manifest.read_text() == original


def test_a_model_that_does_not_finish_in_time_is_named_and_not_recorded(tmp_path: Path) -> None:
    manifest = _project(tmp_path)
    before = manifest.read_text()
    done = tlasim("check-specs", "--manifest", str(manifest), "--time", "0.5", "--record",
                  cwd=tmp_path)
    assert done.returncode == exitcodes.SPEC_MISMATCH, done.stdout + done.stderr
    assert "did not finish in 0.5 s" in done.stdout
    assert "not recorded" in done.stdout and "sizing-safety" in done.stdout
    assert manifest.read_text() == before
    assert json.loads(before)["checks"][1]["name"] == "sizing-safety"


def test_a_bad_time_is_refused(tmp_path: Path) -> None:
    done = tlasim("check-specs", "--time", "0", cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE
    assert "--time" in done.stderr


def test_record_leaves_a_violation_check_without_a_count_as_it_is(tmp_path: Path) -> None:
    """Where TLC stops on a violation depends on its search order: --record
    sizes the models expected to pass, and updates a violation check's count
    only where its author pinned one."""
    from tlasim.tracing.tla.speccheck import ManifestCheck, SpecCheckResult, record_counts

    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        '{"schema": 1, "checks": [\n'
        '  {"name": "ok-one", "module": "M.tla", "config": "M.cfg", "expect": "ok"},\n'
        '  {"name": "bug-free", "module": "B.tla", "config": "B.cfg", "expect": "invariant",'
        ' "violated": "Safe"},\n'
        '  {"name": "bug-pinned", "module": "B.tla", "config": "P.cfg", "expect": "invariant",'
        ' "violated": "Safe", "distinct_states": 3}\n]}\n')

    def result(name: str, expect: str, pinned: int | None, measured: int) -> SpecCheckResult:
        violated = None if expect == "ok" else "Safe"
        check = ManifestCheck(name, tmp_path / "M.tla", tmp_path / "M.cfg", expect,  # type: ignore[arg-type]
                              violated, pinned, False)
        return SpecCheckResult(check, expect, violated, measured, 1.0, (), "")  # type: ignore[arg-type]

    written = record_counts(manifest, [result("ok-one", "ok", None, 40),
                                       result("bug-free", "invariant", None, 7),
                                       result("bug-pinned", "invariant", 3, 9)])
    assert written == ["ok-one", "bug-pinned"]
    checks = {c["name"]: c for c in json.loads(manifest.read_text())["checks"]}
    assert checks["ok-one"]["distinct_states"] == 40
    assert "distinct_states" not in checks["bug-free"]
    assert checks["bug-pinned"]["distinct_states"] == 9


def test_a_protocol_named_runs_the_checks_of_its_own_manifest(tmp_path: Path) -> None:
    _project(tmp_path)
    env = {**os.environ, "TLASIM_PROTOCOLS": str(tmp_path / "sizing")}
    done = subprocess.run([sys.executable, "-m", "tlasim.sim", "check-specs", "sizing"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                          timeout=600)
    assert done.returncode == exitcodes.OK, done.stdout + done.stderr
    assert "sizing-abstract" in done.stdout and "sizing-safety" in done.stdout
    assert "twopc" not in done.stdout


def test_a_shipped_protocol_named_runs_only_its_checks_of_the_shipped_manifest(
        tmp_path: Path) -> None:
    done = tlasim("check-specs", "twopc", "--name", "twopc-abstract", cwd=tmp_path)
    assert done.returncode == exitcodes.OK, done.stdout + done.stderr
    assert "twopc-abstract" in done.stdout and "twopc-safety" not in done.stdout
    # A name of another protocol's check is not one of twopc's.
    done = tlasim("check-specs", "twopc", "--name", "snapshot-safety", cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE, done.stdout + done.stderr
    assert "no check named snapshot-safety" in done.stderr and "twopc-safety" in done.stderr


def test_protocols_and_a_manifest_at_once_or_an_unknown_protocol_are_refused(
        tmp_path: Path) -> None:
    done = tlasim("check-specs", "twopc", "--manifest", str(ROOT / "specs" / "manifest.json"),
                  cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE and "not both" in done.stderr
    done = tlasim("check-specs", "no-such-protocol", cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE and "unknown protocol" in done.stderr
    # The package's spelling of a dashed name gets a hint.
    done = tlasim("check-specs", "lockfree_queue", cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE
    assert "did you mean 'lockfree-queue'?" in done.stderr


def test_a_protocol_without_a_manifest_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    from tlasim.protocols.errors import SpecError
    from tlasim.tracing.tla.speccheck import protocol_checks

    with pytest.raises(SpecError, match=r"has no manifest\.json in its spec folders"):
        protocol_checks("mine", [tmp_path])
    (tmp_path / "manifest.json").write_text('{"schema": 1, "checks": []}')
    with pytest.raises(SpecError, match="holds no check of protocol mine"):
        protocol_checks("mine", [tmp_path])
