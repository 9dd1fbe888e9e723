"""Installed names that cannot collide (issue 23, part 2): tlasim built as a
wheel and installed (not editable) into a fresh environment serves a user's
project that has `sim/` and `protocols/` packages of its own.

The project is tests/fixtures/user_project: its `counter` protocol imports
the project's own `sim.pace` and `protocols`, and is installed from its own
folder with the `tlasim.protocols` entry point. Nothing is downloaded: the
wheel is built with this environment's setuptools, and the fresh
environment reads tlasim's dependencies from this one's site-packages
through a `.pth` file (which appends them after its own, so the installed
wheel, not the checkout, is the tlasim it imports).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tlasim.sim import exitcodes

ROOT = Path(__file__).resolve().parents[2]
USER_PROJECT = ROOT / "tests" / "fixtures" / "user_project"

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("TLASIM_PROTOCOLS", "PYTHONPATH", "PYTHONHOME")}
    environment.update(env or {})
    done = subprocess.run(args, cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=900, check=False)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fresh environment's bin folder, the user's project folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # A copy of the checkout without what a build leaves behind, so that two
    # builds at once (or a stale build/) cannot meet.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", ".tlasim", "node_modules"))
    wheels = tmp / "wheels"
    code, output = _run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                         "--no-build-isolation", "--wheel-dir", str(wheels), str(source)], tmp)
    assert code == 0, output
    (wheel,) = wheels.glob("tlasim-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/", 1)[0] for name in names}
    assert top == {"tlasim", next(t for t in top if t.endswith(".dist-info"))}, sorted(top)
    assert "tlasim/specs/twopc/TwoPhaseCommitMsg.tla" in names
    assert "tlasim/specs/manifest.json" in names

    env_dir = tmp / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    code, purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp)
    assert code == 0, purelib
    (Path(purelib.strip()) / "tlasim-dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n")
    # The user's package is installed from a copy (a build writes beside it);
    # the commands run in another copy, the project folder the user works in.
    for copy in ("package", "project"):
        shutil.copytree(USER_PROJECT, tmp / copy)
    for target in (wheel, tmp / "package"):
        code, output = _run([sys.executable, "-m", "pip", "--python", str(python), "install",
                             "--no-deps", "--no-build-isolation", "--no-index", str(target)], tmp)
        assert code == 0, output
    return env_dir / "bin", tmp / "project"


def test_the_wheel_installs_one_import_name_and_leaves_the_users_sim_and_protocols_alone(
    installed: tuple[Path, Path],
) -> None:
    bin_dir, project = installed
    code, output = _run([str(bin_dir / "python"), "-c",
                         "import sim, protocols, tlasim.sim, tlasim.protocols;"
                         "print(sim.OWNER, protocols.OWNER, tlasim.sim.__file__)"], project)
    assert code == 0, output
    owner_sim, owner_protocols, where = output.split()
    assert (owner_sim, owner_protocols) == ("user", "user")
    assert "site-packages" in where and str(ROOT) not in where


def test_a_users_protocol_runs_end_to_end_on_the_installed_wheel(
    installed: tuple[Path, Path],
) -> None:
    bin_dir, project = installed
    tlasim = str(bin_dir / "tlasim")
    code, output = _run([tlasim, "protocols"], project)
    assert code == 0, output
    assert "counter  entry point counter.definition:DEFINITION" in output
    # tlasim's own protocols and specs come from the wheel.
    twopc = next(line for line in output.splitlines() if line.startswith("twopc "))
    assert "site-packages/tlasim/specs" in twopc, twopc
    code, output = _run([tlasim, "run", "counter", "--seed", "1", "--validate"], project)
    assert code == exitcodes.OK, output
    assert "ACCEPTED:" in output
    db = project / "results.db"
    code, output = _run([tlasim, "campaign", "counter", "--seeds", "1:9", "--bug", "stops-short",
                         "--db", str(db)], project)
    assert code == exitcodes.LIVENESS, output
    assert "n1 still counting" in output
    code, output = _run([tlasim, "repro", str(db), "1:3"], project)
    assert code == exitcodes.LIVENESS, output
    code, output = _run([tlasim, "check-specs", "--manifest",
                         str(project / "counter" / "specs" / "manifest.json")], project)
    assert code == exitcodes.OK, output
    code, output = _run([tlasim, "run", "twopc", "--seed", "1", "--validate"], project)
    assert code == exitcodes.OK, output
    assert "ACCEPTED:" in output


def test_a_project_from_tlasim_new_installs_and_passes_its_own_tests(
    installed: tuple[Path, Path], tmp_path: Path,
) -> None:
    """The newcomer's path on the installed wheel: `tlasim new`, `pip install`
    of the project (its entry point), a validated run and its own tests."""
    bin_dir, _project = installed
    code, output = _run([str(bin_dir / "tlasim"), "new", "kv-replica"], tmp_path)
    assert code == exitcodes.OK, output
    project = tmp_path / "kv-replica"
    code, output = _run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"),
                         "install", "--no-deps", "--no-build-isolation", "--no-index",
                         str(project)], tmp_path)
    assert code == 0, output
    code, output = _run([str(bin_dir / "tlasim"), "protocols"], tmp_path)
    assert "kv-replica  entry point kv_replica.definition:DEFINITION" in output, output
    code, output = _run([str(bin_dir / "tlasim"), "run", "kv-replica", "--seed", "3",
                         "--validate"], project)
    assert code == exitcodes.OK, output
    assert "ACCEPTED:" in output
    code, output = _run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "-k", "not survives"], project)
    assert code == 0, output
