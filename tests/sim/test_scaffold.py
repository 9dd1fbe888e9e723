"""`tlasim new` (issue 23, part 4): the project it writes works as written.

The slow test runs the project's own tests, which run a validated campaign,
the bug variant under the oracle, TLC and the explorer, the TLC models of
its manifest and `tlasim drift`; tests/sim/test_wheel.py runs the same
project from an installed wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tlasim.sim import exitcodes
from tlasim.sim.scaffold import names_for, planned_files


def _tlasim(*args: str, cwd: Path, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "TLASIM_PROTOCOLS"}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "tlasim.sim", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, check=False)


def test_names_are_derived_from_the_protocols_name() -> None:
    names = names_for("kv-replica")
    assert (names.name, names.package, names.module) == ("kv-replica", "kv_replica", "KvReplica")
    files = planned_files(names)
    assert {"pyproject.toml", ".gitignore", "README.md", "kv_replica/core.py",
            "kv_replica/definition.py", "kv_replica/specs/KvReplicaMsg.tla",
            "kv_replica/specs/KvReplica.tla", "kv_replica/specs/manifest.json",
            "tests/test_kv_replica.py"} <= set(files)
    # Every placeholder is filled in, in every file.
    assert not [path for path, text in files.items() if "{{" in text or "PACKAGE" in path]


@pytest.mark.parametrize("bad", ["Paxos", "2pc", "my proto", "kv--replica", "", "class",
                                 "sim", "a/b"])
def test_a_name_that_cannot_name_a_protocol_is_refused_and_nothing_is_written(
    bad: str, tmp_path: Path,
) -> None:
    done = _tlasim("new", bad, "--dir", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE, done.stdout + done.stderr
    assert "cannot name a protocol" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("taken", ["json", "email", "hypothesis", "click"])
def test_a_name_an_importable_module_has_is_refused(taken: str, tmp_path: Path) -> None:
    # The standard library's or an installed package's: the project's package
    # would shadow it, or be shadowed by it.
    done = _tlasim("new", taken, "--dir", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE, done.stdout + done.stderr
    assert "already importable" in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_empty_folder_of_the_name_is_no_module_and_does_not_stop_it(tmp_path: Path) -> None:
    (tmp_path / "mything").mkdir()
    done = _tlasim("new", "mything", "--dir", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == exitcodes.OK, done.stdout + done.stderr


def test_a_shipped_protocols_name_is_refused(tmp_path: Path) -> None:
    done = _tlasim("new", "twopc", cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE
    assert "already exists" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    done = _tlasim("new", "mine", cwd=tmp_path)
    assert done.returncode == exitcodes.USAGE
    assert "nothing was written" in done.stderr
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert (target / "notes.txt").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no scratch folder left


def test_an_empty_folder_is_filled_and_the_protocol_is_found_there(tmp_path: Path) -> None:
    target = tmp_path / "here"
    target.mkdir()
    done = _tlasim("new", "rep", "--dir", str(target), cwd=tmp_path)
    assert done.returncode == exitcodes.OK, done.stderr
    assert "tlasim run rep --seed 1 --validate" in done.stdout
    assert (target / "rep" / "core.py").is_file()
    listed = _tlasim("protocols", cwd=tmp_path, env={"TLASIM_PROTOCOLS": str(target)})
    assert "rep  TLASIM_PROTOCOLS" in listed.stdout, listed.stdout + listed.stderr
    drift = _tlasim("drift", "rep", cwd=tmp_path, env={"TLASIM_PROTOCOLS": str(target)})
    assert drift.returncode == exitcodes.OK, drift.stdout + drift.stderr


@pytest.mark.slow
def test_the_new_project_passes_its_own_tests(tmp_path: Path) -> None:
    done = _tlasim("new", "kv-replica", cwd=tmp_path)
    assert done.returncode == exitcodes.OK, done.stderr
    project = tmp_path / "kv-replica"
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=project, capture_output=True, text=True, check=False,
        env={k: v for k, v in os.environ.items()
             if k not in ("TLASIM_PROTOCOLS", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")})
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "7 passed" in tests.stdout
