"""A protocol in the user's own package (issue 23, part 1): found by
`module:ATTR`, by TLASIM_PROTOCOLS and by the `tlasim.protocols` entry point
group, with its specs and manifest beside it, and found again from a
results database.

The user's project is tests/fixtures/user_project, copied to a temporary
folder: a `counter` protocol with one bug variant, and `sim/` and
`protocols/` packages of its own that the protocol imports. Each test runs
the installed `tlasim` script in a child process, as a user does, so the
registry starts empty and nothing leaks between tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tlasim.sim import exitcodes

USER_PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "user_project"
TLASIM = Path(sys.executable).parent / "tlasim"
REFERENCE = "counter.definition:DEFINITION"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(USER_PROJECT, folder)
    return folder


def tlasim(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("TLASIM_PROTOCOLS", "PYTHONPATH")}
    environment.update(env or {})
    done = subprocess.run([str(TLASIM), *args], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=600, check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    return done.returncode, output


def test_a_protocol_named_as_module_attr_runs_from_its_folder_and_tlc_accepts_it(
    project: Path,
) -> None:
    code, output = tlasim("run", REFERENCE, "--seed", "1", "--validate", cwd=project)
    assert code == exitcodes.OK, output
    assert "ACCEPTED:" in output and "a behaviour of Counter" in output
    # The command it prints finds the protocol the same way.
    assert f"reproduce: tlasim run {REFERENCE} --seed 1" in output


def test_a_folder_in_tlasim_protocols_is_scanned_as_tlasims_own_are(
    project: Path, tmp_path: Path
) -> None:
    env = {"TLASIM_PROTOCOLS": str(project)}
    code, output = tlasim("protocols", cwd=tmp_path, env=env)
    assert code == exitcodes.OK, output
    line = next(li for li in output.splitlines() if li.startswith("counter "))
    assert f"TLASIM_PROTOCOLS {project}: {REFERENCE}" in line
    assert str(project / "counter" / "specs") in line
    assert "twopc  shipped with tlasim" in output
    code, output = tlasim("run", "counter", "--seed", "2", "--validate", "--trace", "t.ndjson",
                          cwd=tmp_path, env=env)
    assert code == exitcodes.OK, output
    assert "ACCEPTED:" in output and "reproduce: tlasim run counter --seed 2" in output
    # Its trace is validated against the specs beside it, and its drift is its own.
    code, output = tlasim("validate", "t.ndjson", cwd=tmp_path, env=env)
    assert code == exitcodes.OK and "1 accepted" in output, output
    code, output = tlasim("drift", "counter", cwd=tmp_path, env=env)
    assert code == exitcodes.OK, output
    assert "counter (Counter): spec and code agree on variables and actions" in output
    # Its modelled code is its own: a change to it is drift.
    core = project / "counter" / "core.py"
    core.write_text(core.read_text().replace("self.count += 1", "self.count = self.count + 1"))
    code, output = tlasim("drift", "counter", cwd=tmp_path, env=env)
    assert code == exitcodes.DRIFT, output
    assert "counter/core.py:Counter" in output


def test_a_refinement_mapping_that_misnames_a_spec_variable_is_drift(project: Path) -> None:
    definition = project / "counter" / "definition.py"
    definition.write_text(definition.read_text().replace('{"count": view("count")}',
                                                         '{"counts": view("count")}'))
    code, output = tlasim("drift", REFERENCE, cwd=project)
    assert code == exitcodes.DRIFT, output
    assert "SPEC_VARS declares counts; the spec declares count" in output
    code, output = tlasim("run", REFERENCE, "--seed", "1", cwd=project)
    assert code == exitcodes.USAGE, output
    assert "SPEC_VARS declares counts; the spec Counter has count" in output


def test_the_specs_of_a_protocol_tlasim_does_not_know_are_not_found_and_it_says_how(
    project: Path,
) -> None:
    code, output = tlasim("run", REFERENCE, "--seed", "1", "--trace", "t.ndjson", cwd=project)
    assert code == exitcodes.OK, output
    code, output = tlasim("validate", "t.ndjson", cwd=project)
    assert code == exitcodes.USAGE, output
    assert "Counter.tla not found" in output and "TLASIM_PROTOCOLS" in output
    code, output = tlasim("validate", "t.ndjson", "--spec-dir", "counter/specs", cwd=project)
    assert code == exitcodes.OK and "1 accepted" in output, output


def test_an_installed_entry_point_is_found_by_name(project: Path, tmp_path: Path) -> None:
    # What `pip install` of the user's package leaves: a dist-info naming the entry point.
    site = tmp_path / "site"
    info = site / "counter_protocol-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: counter-protocol\n"
                                   "Version: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[tlasim.protocols]\ncounter = {REFERENCE}\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(project)])}
    code, output = tlasim("protocols", cwd=tmp_path, env=env)
    assert code == exitcodes.OK, output
    assert f"counter  entry point {REFERENCE}" in output
    code, output = tlasim("run", "counter", "--seed", "3", "--bug", "stops-short", cwd=tmp_path,
                          env=env)
    assert code == exitcodes.LIVENESS, output
    assert "n1 still counting" in output


def test_a_campaign_of_a_users_protocol_is_found_again_by_repro(
    project: Path, tmp_path: Path
) -> None:
    db = project / "results.db"
    code, output = tlasim("campaign", REFERENCE, "--seeds", "1:5", "--bug", "stops-short",
                          "--workers", "2", "--db", str(db), cwd=project)
    assert code == exitcodes.LIVENESS, output
    assert "n1 still counting" in output
    # The database recorded how to load it: repro needs no entry point or variable...
    code, output = tlasim("repro", str(db), "1:2", cwd=project)
    assert code == exitcodes.LIVENESS, output
    assert "repro 1:2: protocol=counter seed=2" in output
    # ...but the user's package must be importable from where it runs.
    code, output = tlasim("repro", str(db), "1:2", cwd=tmp_path)
    assert code == exitcodes.USAGE, output
    assert f"the campaign's protocol counter ({REFERENCE}) cannot be loaded" in output
    # However the protocol is named, it is the same campaign.
    code, output = tlasim("campaign", "counter", "--seeds", "1:5", "--bug", "stops-short",
                          "--db", str(db), "--resume", cwd=tmp_path,
                          env={"TLASIM_PROTOCOLS": str(project)})
    assert "resuming campaign 1" in output, output


def test_its_own_manifest_is_checked_by_tlc(project: Path) -> None:
    manifest = project / "counter" / "specs" / "manifest.json"
    code, output = tlasim("check-specs", "--manifest", str(manifest), cwd=project)
    assert code == exitcodes.OK, output
    assert re.search(r"counter .*ok, 16 distinct states.*pass", output), output


def test_two_protocols_with_one_name_are_an_error_naming_both(
    project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(project / "counter", other / "counter2")
    for path in (other / "counter2").glob("*.py"):
        path.write_text(path.read_text().replace("from counter.", "from counter2."))
    shutil.copytree(project / "sim", other / "sim")
    shutil.copytree(project / "protocols", other / "protocols")
    env = {"TLASIM_PROTOCOLS": os.pathsep.join([str(project), str(other)])}
    code, output = tlasim("run", "counter", "--seed", "1", cwd=tmp_path, env=env)
    assert code == exitcodes.USAGE, output
    assert "two protocols are named 'counter'" in output
    assert REFERENCE in output and "counter2.definition:DEFINITION" in output


def test_a_users_protocol_cannot_take_the_name_of_tlasims_own(project: Path) -> None:
    definition = project / "counter" / "definition.py"
    definition.write_text(definition.read_text().replace('name = "counter"', 'name = "twopc"'))
    code, output = tlasim("run", REFERENCE, "--seed", "1", cwd=project)
    assert code == exitcodes.USAGE, output
    assert "two protocols are named 'twopc': shipped with tlasim and " in output


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("run", "nosuchmodule:DEFINITION", "--seed", "1"), {},
         "cannot import nosuchmodule"),
        (("run", "counter.definition:NOPE", "--seed", "1"), {},
         "counter.definition has no NOPE"),
        (("run", "counter.core:Counter", "--seed", "1"), {},
         "cannot make a protocol definition of it"),
        (("run", "os:sep", "--seed", "1"), {}, "os:sep is not a protocol definition"),
        (("run", "counter.definition:", "--seed", "1"), {}, "is not a protocol reference"),
        (("protocols",), {"TLASIM_PROTOCOLS": "/no/such/folder"},
         "TLASIM_PROTOCOLS: /no/such/folder is neither module:ATTR nor a folder"),
        (("run", "twopc", "--seed", "1"), {"TLASIM_PROTOCOLS": "nosuchmodule:X"},
         "cannot import nosuchmodule"),
    ],
)
def test_a_bad_reference_is_a_usage_error_that_says_what_is_wrong(
    project: Path, args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    code, output = tlasim(*args, cwd=project, env=env)
    assert code == exitcodes.USAGE, output
    assert message in output, output


def test_a_corpus_of_a_protocol_without_messages_uses_the_mutations_that_have_a_place(
    project: Path,
) -> None:
    # Counter sends nothing, so no receipt can be moved before its send.
    code, output = tlasim("corpus", REFERENCE, "--count", "12", "--out", "corpus", cwd=project)
    assert code == exitcodes.OK, output
    manifest = json.loads((project / "corpus" / "manifest.json").read_text())
    used = {entry["mutation"] for entry in manifest["files"] if entry["mutation"]}
    assert used and "deliver-before-send" not in used, manifest
