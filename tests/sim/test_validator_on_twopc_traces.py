"""The validator on real simulated traces: each mutation is rejected at its line.

The trace comes from one swarm seed with crashes, loss and duplication; each
test breaks one line the way a buggy logger or a corrupted file would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols.errors import TraceFormatError
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import END_EVENT
from tlasim.tracing.validation.validator import validate_trace

SEED = 85  # 109 steps: a TM crash, a lost message, every twopc action kind


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("trace") / "base.ndjson"
    run_seed("twopc", SEED, trace_path=path)
    # The mutations here move step lines; the end record holds no step.
    return [
        line for line in path.read_text().splitlines() if json.loads(line)["event"] != END_EVENT
    ]


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "mutated.ndjson"
    path.write_text("\n".join(lines) + "\n")
    return path


def step(line: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(line)
    return parsed


def rejected_line(tmp_path: Path, lines: list[str]) -> int:
    verdict = validate_trace(write(tmp_path, lines))
    assert not verdict.accepted
    assert verdict.divergence is not None
    return verdict.divergence.line


def first_index(lines: list[str], action: str, start: int = 2) -> int:
    return next(i for i in range(start, len(lines)) if step(lines[i])["action"] == action)


def test_unmodified_trace_is_accepted(tmp_path: Path, lines: list[str]) -> None:
    assert validate_trace(write(tmp_path, lines)).accepted


def test_trace_with_a_step_cut_out_is_rejected_after_the_gap(
    tmp_path: Path, lines: list[str]
) -> None:
    i = first_index(lines, "RMRcvPrepare")
    assert rejected_line(tmp_path, lines[:i] + lines[i + 1 :]) == i + 1


def test_trace_whose_last_line_is_cut_short_is_a_format_error(
    tmp_path: Path, lines: list[str]
) -> None:
    cut = [*lines[:-1], lines[-1][:len(lines[-1]) // 2]]
    with pytest.raises(TraceFormatError, match=f":{len(lines)}:"):
        validate_trace(write(tmp_path, cut))


def test_trace_with_two_lines_swapped_is_rejected_at_the_first(
    tmp_path: Path, lines: list[str]
) -> None:
    i = first_index(lines, "TMCommit")
    swapped = [*lines[:i], lines[i + 1], lines[i], *lines[i + 2:]]
    assert rejected_line(tmp_path, swapped) == i + 1


def test_trace_with_a_value_changed_is_rejected_at_that_line(
    tmp_path: Path, lines: list[str]
) -> None:
    i = first_index(lines, "TMBegin")
    changed = step(lines[i])
    changed["vars"]["tmState"]["t1"] = "committed"
    mutated = [*lines[:i], json.dumps(changed), *lines[i + 1 :]]
    assert rejected_line(tmp_path, mutated) == i + 1


def test_trace_with_an_action_renamed_is_rejected_at_that_line(
    tmp_path: Path, lines: list[str]
) -> None:
    i = first_index(lines, "TMSendPrepare")
    renamed = step(lines[i])
    renamed["action"] = "TMSendCommit"
    mutated = [*lines[:i], json.dumps(renamed), *lines[i + 1 :]]
    verdict = validate_trace(write(tmp_path, mutated))
    assert verdict.divergence is not None
    assert verdict.divergence.line == i + 1
    assert verdict.divergence.action == "TMSendCommit"
    assert "TMSendCommit" in verdict.report()


def test_entry_wrapped_lines_validate_like_plain_ones(tmp_path: Path, lines: list[str]) -> None:
    wrapped = [lines[0]] + [
        json.dumps({"level": "info", "msg": "tla_trace", "entry": json.dumps(step(line))})
        for line in lines[1:]
    ]
    assert validate_trace(write(tmp_path, wrapped)).accepted


def test_line_naming_the_wrong_rm_is_rejected_although_its_state_is_right(
    tmp_path: Path, lines: list[str]
) -> None:
    i = first_index(lines, "TMSendPrepare")
    wrong = step(lines[i])
    wrong["params"]["rm"] = "r3" if wrong["params"]["rm"] != "r3" else "r1"
    mutated = [*lines[:i], json.dumps(wrong), *lines[i + 1 :]]
    assert rejected_line(tmp_path, mutated) == i + 1


def test_lines_without_params_still_validate(tmp_path: Path, lines: list[str]) -> None:
    bare = [lines[0]] + [
        json.dumps({"ts": s["ts"], "action": s["action"], "vars": s["vars"]})
        for s in map(step, lines[1:])
    ]
    assert validate_trace(write(tmp_path, bare)).accepted
