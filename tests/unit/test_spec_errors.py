"""A spec that SANY rejects is the spec's fault (issue 23, part 6): every
command that needs it exits 2, naming the spec file, with SANY's report
once and as SANY wrote it (one line per line); none blames the trace, and
none calls it a bug in tlasim.

The spec is the user-project fixture's, copied and broken by dropping the
`EXTENDS Naturals` its `+` and `..` need.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tlasim.sim import exitcodes

USER_PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "user_project"
TLASIM = Path(sys.executable).parent / "tlasim"


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(USER_PROJECT, folder)
    spec = folder / "counter" / "specs" / "Counter.tla"
    spec.write_text(spec.read_text().replace("EXTENDS Naturals\n", ""))
    return folder


def tlasim(*args: str, cwd: Path) -> tuple[int, str, str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environment["TLASIM_PROTOCOLS"] = str(cwd)
    done = subprocess.run([str(TLASIM), *args], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=600, check=False)
    return done.returncode, done.stdout, done.stderr


def _holds_one_sany_report(stderr: str, spec: Path) -> None:
    assert "Traceback" not in stderr and "bug in tlasim" not in stderr, stderr
    assert f"tlasim: error: SANY cannot parse {spec}:" in stderr, stderr
    # Once, and with real line breaks: no escaped newline, each of SANY's
    # lines on its own line.
    assert stderr.count("SANY cannot parse") == 1, stderr
    assert "\\n" not in stderr, stderr
    assert any(line.strip().startswith("line ") and "of module Counter" in line
               for line in stderr.splitlines()), stderr


def test_run_validate_on_a_spec_sany_rejects_exits_2_naming_the_spec(broken: Path) -> None:
    code, _out, err = tlasim("run", "counter", "--seed", "1", "--validate", cwd=broken)
    assert code == exitcodes.USAGE
    _holds_one_sany_report(err, broken / "counter" / "specs" / "Counter.tla")


def test_validate_blames_the_spec_not_the_trace(broken: Path) -> None:
    trace = broken / "counter-1.ndjson"
    code, _out, err = tlasim("run", "counter", "--seed", "1", "--trace", str(trace), cwd=broken)
    assert code == exitcodes.OK, err
    code, out, err = tlasim("validate", str(trace), cwd=broken)
    assert code == exitcodes.USAGE
    assert "UNREADABLE" not in out + err and str(trace) not in err, out + err
    _holds_one_sany_report(err, broken / "counter" / "specs" / "Counter.tla")


def test_a_campaign_on_a_spec_sany_rejects_exits_2_naming_the_spec(broken: Path) -> None:
    code, _out, err = tlasim("campaign", "counter", "--seeds", "1:4", cwd=broken)
    assert code == exitcodes.USAGE
    _holds_one_sany_report(err, broken / "counter" / "specs" / "Counter.tla")
