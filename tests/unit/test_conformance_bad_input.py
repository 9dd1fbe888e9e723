"""`tlasim conformance` on bad input: a clear error, its own exit code, and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tlasim.sim import exitcodes
from tlasim.sim.cli.main import main


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["conformance", *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("args, message", [
    (["nosuch"], "unknown protocol 'nosuch'"),
    (["twopc", "--chase-states", "-1"], "--chase-states"),
    (["twopc", "--chase-states", "many"], "'many' is not a valid integer"),
    (["twopc", "--explore-workloads", "0"], "--explore-workloads"),
])
def test_a_bad_option_is_refused_before_any_work(args: list[str], message: str) -> None:
    code, output = invoke(*args)
    assert code == exitcodes.USAGE, output
    assert message in output


def test_a_spec_folder_without_the_spec_is_named(tmp_path: Path) -> None:
    code, output = invoke("twopc", "--spec-dir", str(tmp_path), "--seeds", "0",
                          "--explore-states", "0", "--chase-states", "0")
    assert code == exitcodes.USAGE, output
    assert f"TwoPhaseCommitMsg.tla not found under {tmp_path}" in output
