"""Hostile input to every reader, one test per class of input, not per case.

The classes (issue 28): JSON nested past any limit, integers past 64 bits,
non-finite numbers, a file that says something other than what is true (a
schedule's claimed verdict, two end records, a version `true`, an ITF tag
beside other keys), a count that would expand without end, and output that
echoes input. Each must end in a right answer, or a one-line error with exit
2, never a traceback, a hang or a wrong verdict.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tlasim.protocols.checked import JSON_MAX_DEPTH, checked_finite, checked_int, clip, load_json
from tlasim.protocols.errors import ConfigError, TraceFormatError
from tlasim.sim import exitcodes
from tlasim.sim.cli.main import main
from tlasim.sim.cli.support import ERROR_MAX_CHARS
from tlasim.tracing.codec import read_trace
from tlasim.tracing.interchange.itf import itf_to_tagged, read_itf

SCHEDULE = {
    "tlasim_schedule": 1, "protocol": "twopc", "seed": 0, "bug": None,
    "protocol_options": {"rm_count": 2, "tx_count": 1}, "faults": {}, "moves": [],
}


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    # Only SystemExit may end a command: anything else escaped `guarded`.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    return result.exit_code, result.output


def assert_one_line_error(code: int, output: str, *fragments: str) -> None:
    assert code == exitcodes.USAGE, output
    errors = [line for line in output.splitlines() if line.startswith("tlasim: error:")]
    assert len(errors) == 1, output
    assert len(errors[0]) <= len("tlasim: error: ") + ERROR_MAX_CHARS + 40, len(errors[0])
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


# --- JSON past every limit, in every JSON file a command reads --------------------

DEEP = "[" * 5_000 + "]" * 5_000
HOSTILE_JSON = {
    "deep": DEEP,
    "deep object": '{"a":' * 3_000 + "1" + "}" * 3_000,
    "just past the limit": "[" * (JSON_MAX_DEPTH + 1) + "]" * (JSON_MAX_DEPTH + 1),
    "huge integer": "[" + "9" * 5_000 + "]",
    "nan": '{"x": NaN}',
    "duplicate key": '{"tlasim_schedule": 1, "tlasim_schedule": 2}',
    "not utf-8": b'{"x": "\xff"}',
    "long garbage": "x" * 1_000_000,
}


def _schedule_command(path: Path) -> list[str]:
    return ["run", "twopc", "--schedule", str(path)]


def _plan_command(path: Path) -> list[str]:
    return ["run", "twopc", "--seed", "1", "--plan", str(path)]


def _constants_command(path: Path) -> list[str]:
    return ["validate", str(path), "--constants", path.read_text(errors="replace")]


READERS: dict[str, Callable[[Path], list[str]]] = {
    "run --schedule": _schedule_command,
    "run --plan": _plan_command,
    "validate --constants": _constants_command,
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_JSON))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_json_input_refuses_hostile_json_in_one_short_line(
    tmp_path: Path, reader: str, kind: str
) -> None:
    text = HOSTILE_JSON[kind]
    if reader == "validate --constants" and isinstance(text, bytes):
        pytest.skip("an argument cannot hold bytes that are not UTF-8")
    path = tmp_path / "input.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    code, output = invoke(*READERS[reader](path))
    assert_one_line_error(code, output)


@pytest.mark.parametrize("kind", sorted(HOSTILE_JSON))
def test_the_one_reader_refuses_each_hostile_kind_with_the_callers_error(kind: str) -> None:
    with pytest.raises(TraceFormatError, match=r"^where: "):
        load_json(HOSTILE_JSON[kind], "where", error=TraceFormatError)


def test_the_one_reader_accepts_nesting_up_to_its_limit_and_a_key_once() -> None:
    deep = "[" * JSON_MAX_DEPTH + "]" * JSON_MAX_DEPTH
    assert load_json(deep, "w") is not None
    assert load_json('{"a": 1, "b": {"a": 2}}', "w") == {"a": 1, "b": {"a": 2}}


def _campaign_db(tmp_path: Path) -> Path:
    db = tmp_path / "results.db"
    code, output = invoke("campaign", "twopc", "--seeds", "1:3", "--bug", "commit-before-durable",
                          "--db", str(db), "--validate", "none", "--shrink", "0")
    assert code in (exitcodes.OK, exitcodes.SAFETY), output
    return db


def test_report_of_a_database_with_a_garbage_stored_plan_is_a_clean_error(
    tmp_path: Path,
) -> None:
    db = _campaign_db(tmp_path)
    # A row without a seal (as schema 1 wrote them) is read, not refused:
    # what it holds must still be read safely.
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "UPDATE runs SET outcome = 'safety', failure = 'atomicity: x', plan = ?,"
            " shrunk_plan = ?, shrunk_outcome = 'safety', seal = NULL",
            (DEEP, "{not json"),
        ).rowcount
        connection.execute("UPDATE campaigns SET seal = NULL")
    assert rows > 0
    for args in (["report", str(db), "-o", str(tmp_path / "r.html")], ["failures", str(db)]):
        code, output = invoke(*args)
        assert_one_line_error(code, output, "plan")


# --- integers past 64 bits ------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["failures", "{db}", "--campaign", str(10**30)],
        ["run", "twopc", "--seed", str(10**30)],
        ["explore", "twopc", "--depth", str(2**64)],
        ["run", "twopc", "--seed", "1", "--set", f"rm_count={10**30}"],
        ["run", "twopc", "--seed", "1", "--liveness-bound", str(2**63)],
    ],
)
def test_integer_options_past_64_bits_are_refused(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "empty.db"
    code, output = invoke(*(a.replace("{db}", str(db)) for a in args))
    assert code == exitcodes.USAGE, output
    assert "internal error" not in output


@pytest.mark.parametrize(
    "move",
    [
        {"kind": "deliver", "node": "tm", "src": "r1", "msg": 2**64},
        {"kind": "deliver", "node": "tm", "src": "r1", "msg": {"tx": -(2**70)}},
        {"kind": "start", "node": "tm", "crash_after": 2**70},
        {"kind": "start", "node": "tm", "crash_after": True},
    ],
)
def test_a_schedule_move_with_an_integer_past_its_range_is_refused(
    tmp_path: Path, move: dict[str, Any]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCHEDULE, "moves": [{"kind": "start", "node": "tm"}, move]}))
    code, output = invoke("run", "twopc", "--schedule", str(path))
    assert_one_line_error(code, output, "move 1")


def test_checked_int_refuses_bools_floats_and_out_of_range() -> None:
    assert checked_int(5, "w", low=0, high=5) == 5
    for bad in (True, 5.0, "5", 6, -1, 10**400):
        with pytest.raises(ConfigError, match=r"^w: "):
            checked_int(bad, "w", low=0, high=5)


# --- numbers that are no numbers ------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "NaN"])
@pytest.mark.parametrize(
    "option",
    [
        ["explore", "twopc", "--time"],
        ["live", "twopc", "--tick-ms"],
        ["live", "twopc", "--timeout"],
        ["corpus", "twopc", "--count", "1", "--out", "{tmp}/c", "--invalid-ratio"],
    ],
)
def test_number_options_refuse_non_finite_values(
    tmp_path: Path, option: list[str], value: str
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in option]
    code, output = invoke(*args, value)
    assert code == exitcodes.USAGE, output
    assert "finite" in output or "range" in output, output


@pytest.mark.parametrize("value", ["nan", "inf", "1e400"])
def test_set_refuses_a_non_finite_number(value: str) -> None:
    code, output = invoke("run", "twopc", "--seed", "1", "--set", f"no_vote_probability={value}")
    assert_one_line_error(code, output, "finite")


def test_checked_finite_refuses_nan_inf_and_bools() -> None:
    assert checked_finite(0.5, "w", low=0, high=1) == 0.5
    for bad in (float("nan"), float("inf"), True, 10**400, 2.0):
        with pytest.raises(ConfigError, match=r"^w: "):
            checked_finite(bad, "w", low=0, high=1)


# --- a file that claims what is not so ------------------------------------------


@pytest.mark.parametrize("claimed", [{"kind": "liveness", "failure": "x"}, {"kind": "safety"}])
def test_a_schedule_s_claimed_verdict_is_never_trusted(
    tmp_path: Path, claimed: dict[str, Any]
) -> None:
    # The correct protocol, no moves: whatever the file claims, nothing failed.
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCHEDULE, "found": claimed}))
    code, output = invoke("run", "twopc", "--schedule", str(path))
    assert code == exitcodes.OK, output
    assert "result=ok" in output


@pytest.mark.parametrize("version", [True, 1.0, "1", [1], None])
def test_a_schedule_version_must_be_the_integer_1(tmp_path: Path, version: Any) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCHEDULE, "tlasim_schedule": version}))
    code, output = invoke("run", "twopc", "--schedule", str(path))
    assert_one_line_error(code, output, "version 1")


def _trace(tmp_path: Path, seed: int = 3) -> Path:
    path = tmp_path / f"t{seed}.ndjson"
    code, output = invoke("run", "twopc", "--seed", str(seed), "--trace", str(path))
    assert code == exitcodes.OK, output
    return path


@pytest.mark.parametrize("command", ["show", "report", "validate"])
def test_two_end_records_are_refused_not_the_last_believed(tmp_path: Path, command: str) -> None:
    path = _trace(tmp_path)
    lines = path.read_text().splitlines()
    end = json.loads(lines[-1])
    assert end["event"] == "tla_trace_end"
    safety = {**end, "outcome": "safety", "failure": "atomicity: forged"}
    path.write_text("\n".join([*lines[:-1], json.dumps(safety), lines[-1]]) + "\n")
    with pytest.raises(TraceFormatError, match="second end record"):
        read_trace(path)
    extra = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    code, output = invoke(command, str(path), *extra)
    assert code in (exitcodes.USAGE, exitcodes.TRACE_REJECTED), output
    assert "oracles: ok" not in output and "ACCEPTED" not in output


@pytest.mark.parametrize(
    "value",
    [{"#bigint": "5", "x": 1}, {"#set": [], "y": 2}, {"x": 1, "#map": []}],
)
def test_an_itf_tag_beside_other_keys_is_refused(value: dict[str, Any]) -> None:
    with pytest.raises(TraceFormatError, match="only key"):
        itf_to_tagged(value, "v")


def test_an_itf_file_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.itf.json"
    path.write_text('{"vars": ["x"], "vars": ["y"], "states": [{"x": 1}]}')
    with pytest.raises(TraceFormatError, match="twice"):
        read_itf(path)


# --- counts that would expand without end ---------------------------------------


def test_a_bag_count_of_two_billion_costs_a_note_not_two_billion_copies(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        bag = record.get("vars", {}).get("msgs")
        if isinstance(bag, dict):
            for pair in bag.get("#map", []):
                pair[1] = 2**31 - 1
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    code, output = invoke("show", str(path))
    assert code == exitcodes.OK, output[-2000:]
    assert re.search(r"note: [\d,]+ message copies past the first [\d,]+ are not drawn", output)


def test_a_node_named_by_five_thousand_digits_is_drawn(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    lines = path.read_text().splitlines()
    step = json.loads(lines[2])
    step["node"] = "r" + "1" * 5_000
    path.write_text("\n".join([*lines[:2], json.dumps(step), *lines[3:]]) + "\n")
    code, output = invoke("show", str(path))
    assert code == exitcodes.OK, output[-2000:]


# --- output that echoes input ---------------------------------------------------


def test_an_output_path_with_control_characters_is_printed_escaped(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    out = tmp_path / "a\nACCEPTED: \x1b[2Jforged.html"
    code, output = invoke("report", str(trace), "-o", str(out))
    assert code == exitcodes.OK, output
    assert out.is_file()
    assert "\x1b" not in output
    assert not any(line.startswith("ACCEPTED") for line in output.splitlines())


def test_an_error_echoing_a_megabyte_of_input_is_cut_to_one_short_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"crashes": [{"node": "x" * 1_000_000}]}))
    code, output = invoke("run", "twopc", "--seed", "1", "--plan", str(path))
    assert_one_line_error(code, output)


def test_clip_keeps_both_ends_and_says_how_much_was_cut() -> None:
    text = "a" * 500 + "MIDDLE" + "z" * 500
    short = clip(text, 100)
    assert short.startswith("a" * 50) and short.endswith("z" * 50)
    assert "906 characters cut" in short
    assert clip("short", 100) == "short"
