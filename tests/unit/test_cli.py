"""The CLI: every kind of bad input gets a one-line error and its own exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlasim.protocols.twopc.bugs import BUGS
from tlasim.sim import exitcodes
from tlasim.sim.cli.main import main
from tlasim.tracing.codec import STEP_EVENT


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def test_run_prints_seed_and_every_option_before_the_result() -> None:
    code, output = invoke("run", "twopc", "--seed", "3")
    assert code == exitcodes.OK
    lines = output.splitlines()
    assert lines[0] == "seed=3"
    assert "faults_mode=swarm" in lines
    assert any(line.startswith("fault: heal at tick") for line in lines)
    assert any(line.startswith("protocol_options.rm_count=") for line in lines)
    result_index = next(i for i, line in enumerate(lines) if line.startswith("result="))
    assert all("=" in line or line.startswith("fault: ") for line in lines[:result_index])


def test_bugs_lists_one_variant_per_line_name_first() -> None:
    code, output = invoke("bugs", "twopc")
    assert code == exitcodes.OK
    lines = output.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(BUGS)


@pytest.mark.parametrize(
    "args",
    [
        ("run", "nosuchprotocol", "--seed", "1"),
        ("run", "twopc", "--seed", "1", "--bug", "no-such-bug"),
        ("run", "twopc", "--seed", "1", "--set", "rm_count=0"),
        ("run", "twopc", "--seed", "1", "--set", "no_such_option=3"),
        ("run", "twopc", "--seed", "1", "--set", "rm_count"),
        ("run", "twopc", "--seed", "1", "--plan", "/no/such/plan.json"),
        ("run", "twopc", "--seed", "notanumber"),
        ("run", "twopc", "--seed", "-5"),
        ("run", "twopc", "--seed", "1", "--set", "rm_count=abc"),
        ("run", "twopc", "--seed", "1", "--set", "no_vote_probability=abc"),
        ("run", "twopc", "--seed", "1", "--trace", "/proc/no/such/dir/t.ndjson"),
        ("campaign", "twopc", "--seeds", "1:2", "--trace-dir", "/proc/no/such/dir"),
        ("run", "twopc"),
        ("campaign", "twopc", "--seeds", "9:3"),
        ("campaign", "twopc", "--seeds", "0:" + "9" * 30),
        ("campaign", "twopc", "--seeds", "9" * 5000),
        ("run", "twopc", "--seed", "9" * 5000),
        ("failures", "/no/such/results.db"),
        ("repro", "/no/such/results.db", "1:" + "9" * 5000),
        ("campaign", "twopc", "--seeds", "1:3", "--bug", "nope"),
        ("campaign", "twopc", "--seeds", "1:3", "--validate", "sometimes"),
        ("validate", "/no/such/trace.ndjson"),
    ],
)
def test_bad_input_exits_with_usage_code_and_no_traceback(args: tuple[str, ...]) -> None:
    code, output = invoke(*args)
    assert code == exitcodes.USAGE, output


def test_too_many_workers_for_their_tlcs_are_refused_before_any_seed_runs(
    tmp_path: Path,
) -> None:
    # Each worker's TLC needs a few hundred MB: a million workers fit nowhere.
    db = tmp_path / "results.db"
    code, output = invoke("campaign", "twopc", "--seeds", "0:5", "--workers", "1000000",
                          "--db", str(db))
    assert code == exitcodes.USAGE, output
    assert "--workers 1000000: each worker runs a simulation and its own TLC" in output
    assert "such workers fit" in output
    assert "simulated" not in output  # refused before the progress starts
    assert not db.exists()  # and before the database is made
    # Without TLC per seed, the same count is no memory question.
    code, output = invoke("campaign", "twopc", "--seeds", "0:1", "--workers", "1000000",
                          "--validate", "failures", "--dask", "tcp://127.0.0.1:1")
    assert "such workers fit" not in output


def test_safety_violation_exits_1() -> None:
    # Seed 96 breaks agreement under abort-after-prepare (found by the sweep).
    code, output = invoke("run", "twopc", "--seed", "96", "--bug", "abort-after-prepare")
    assert code == exitcodes.SAFETY, output
    assert "failure: agreement" in output
    assert "reproduce: tlasim run twopc --seed 96 --bug abort-after-prepare" in output


def test_liveness_violation_exits_3() -> None:
    # RMs give up at once and the bound leaves no time: the TM cannot decide in time.
    code, output = invoke(
        "run", "twopc", "--seed", "1", "--faults", "none",
        "--set", "working_timeout_ticks=1", "--liveness-bound", "1",
    )
    assert code == exitcodes.LIVENESS, output
    assert "failure: liveness" in output


def _trace(tmp_path: Path, seed: int = 5) -> Path:
    path = tmp_path / "trace.ndjson"
    code, output = invoke("run", "twopc", "--seed", str(seed), "--trace", str(path))
    assert code == exitcodes.OK, output
    return path


def test_malformed_trace_exits_with_usage_code(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    lines = path.read_text().splitlines()
    lines[3] = lines[3][:40]
    path.write_text("\n".join(lines) + "\n")
    code, output = invoke("validate", str(path))
    assert code == exitcodes.USAGE
    assert "trace.ndjson:4:" in output


def test_trace_naming_a_missing_spec_exits_with_usage_code(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["spec"] = "NoSuchSpec"
    lines[0] = json.dumps(header)
    path.write_text("\n".join(lines) + "\n")
    code, output = invoke("validate", str(path))
    assert code == exitcodes.USAGE
    assert "NoSuchSpec" in output


@pytest.mark.parametrize("variable", ["JAVA", "TLA2TOOLS_JAR"])
@pytest.mark.parametrize("broken", ["missing", "not a tool"])
def test_missing_or_broken_java_or_tlc_exits_5_and_says_what_to_set(
    tmp_path: Path, variable: str, broken: str
) -> None:
    path = _trace(tmp_path)
    tool = tmp_path / "tool"
    if broken == "not a tool":
        tool.write_text("#!/bin/sh\nexit 1\n")
        tool.chmod(0o755)
    code, output = invoke("validate", str(path), env={variable: str(tool)})
    assert code == exitcodes.TOOL_MISSING, output
    assert variable in output


def test_plan_file_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(b"\xff\xfe{}")
    code, output = invoke("run", "twopc", "--seed", "1", "--plan", str(plan))
    assert code == exitcodes.USAGE, output


def test_rejected_trace_exits_4(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    lines = path.read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if json.loads(line)["event"] == STEP_EVENT)
    step = json.loads(lines[last])
    step["vars"]["tmUp"] = not step["vars"]["tmUp"]
    lines[last] = json.dumps(step)
    path.write_text("\n".join(lines) + "\n")
    code, output = invoke("validate", str(path))
    assert code == exitcodes.TRACE_REJECTED, output
    assert f"line {last + 1}" in output


@pytest.mark.parametrize(
    "plan",
    [
        "not json",
        '{"crashes": [{"node": "tm"}]}',
        '{"heal_tick": 10, "crashes": [{"node": "r7", "tick": 1, "restart_ticks": 5}]}',
        '{"heal_tick": 10, "windows": [{"kind": "loss", "start": 0, "end": 99, "probability": 1}]}',
        '{"heal_tick": 10, "gremlins": []}',
    ],
)
def test_bad_fault_plan_exits_with_usage_code(tmp_path: Path, plan: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(plan)
    code, output = invoke("run", "twopc", "--seed", "1", "--plan", str(path))
    assert code == exitcodes.USAGE, output
    assert "plan" in output


def test_plan_file_replays_the_swarm_plan_of_a_seed(tmp_path: Path) -> None:
    from tlasim.sim.run.runner import run_seed

    swarm = run_seed("twopc", 41, bug="commit-before-durable", trace_path=tmp_path / "a.ndjson")
    (tmp_path / "plan.json").write_text(swarm.result.plan.to_json())
    code, output = invoke(
        "run", "twopc", "--seed", "41", "--bug", "commit-before-durable",
        "--plan", str(tmp_path / "plan.json"), "--trace", str(tmp_path / "b.ndjson"),
    )
    assert code == exitcodes.SAFETY, output
    body = lambda p: p.read_text().splitlines()[1:]  # noqa: E731 - the header names the mode
    assert body(tmp_path / "a.ndjson") == body(tmp_path / "b.ndjson")


def test_headerless_trace_validates_given_spec_and_constants(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    lines = path.read_text().splitlines()
    bare = tmp_path / "bare.ndjson"
    bare.write_text(
        "\n".join(
            json.dumps({"ts": s["ts"], "action": s["action"], "vars": s["vars"]})
            for s in map(json.loads, lines[1:])
            if s["event"] == STEP_EVENT
        )
        + "\n"
    )
    header = json.loads(lines[0])
    code, output = invoke("validate", str(bare))
    assert code == exitcodes.USAGE and "--spec" in output
    code, output = invoke(
        "validate", str(bare), "--spec", header["spec"],
        "--constants", json.dumps(header["constants"]),
    )
    assert code == exitcodes.OK, output
    code, output = invoke("validate", str(bare), "--spec", header["spec"], "--constants", "[1]")
    assert code == exitcodes.USAGE


def _twopc_traces(folder: Path, seeds: range) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in seeds:
        path = folder / f"t{seed}.ndjson"
        code, output = invoke("run", "twopc", "--seed", str(seed), "--trace", str(path))
        assert code == exitcodes.OK, output
        paths.append(path)
    return paths


def test_validate_a_folder_gives_every_trace_a_verdict_as_json(tmp_path: Path) -> None:
    paths = _twopc_traces(tmp_path / "traces", range(1, 4))
    # One line of the last trace changed: a rejection among acceptances.
    lines = paths[-1].read_text().splitlines()
    lines[5] = lines[5].replace('"tmUp":true', '"tmUp":false')
    paths[-1].write_text("\n".join(lines) + "\n")
    code, output = invoke("validate", str(tmp_path / "traces"), "--format", "json", "--jobs", "2")
    assert code == exitcodes.TRACE_REJECTED, output
    document = json.loads(output)
    assert (document["traces"], document["accepted"], document["rejected"]) == (3, 2, 1)
    rejected = [v for v in document["verdicts"] if not v["accepted"]]
    assert rejected[0]["trace"].endswith("t3.ndjson")
    assert rejected[0]["divergence"]["line"] == 6
    assert rejected[0]["seed"] == 3
    assert rejected[0]["regenerate"] == f"tlasim run twopc --seed 3 --trace {paths[-1]}"


def test_validate_keeps_going_past_an_unreadable_trace(tmp_path: Path) -> None:
    paths = _twopc_traces(tmp_path / "traces", range(1, 3))
    (tmp_path / "traces" / "broken.ndjson").write_text('{"event": "tla_trace", "action": "Init"\n')
    code, output = invoke("validate", str(tmp_path / "traces"))
    assert code == exitcodes.USAGE, output
    assert "UNREADABLE" in output and "broken.ndjson:1: bad JSON" in output
    assert output.count("ACCEPTED") == len(paths)
    assert "3 traces: 2 accepted, 0 rejected, 1 not checked" in output


def test_validate_an_empty_folder_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, output = invoke("validate", str(tmp_path / "empty"))
    assert code == exitcodes.USAGE
    assert "holds no trace files" in output


def test_validate_another_systems_log_through_a_mapping_file() -> None:
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "foreign"
    code, output = invoke(
        "validate", "--mapping", str(example / "twopc.toml"), str(example / "twopc.log")
    )
    assert code == exitcodes.OK, output
    assert "ACCEPTED" in output
    mapping, log = str(example / "twopc.toml"), str(example / "twopc.log")
    code, output = invoke("validate", "--mapping", mapping, "--spec", "X", log)
    assert code == exitcodes.USAGE
    assert "drop --spec and --constants" in output


def test_validate_refuses_a_fifo_or_device_at_once(irregular_path: Path) -> None:
    if irregular_path.is_dir():
        pytest.skip("validate reads a folder as a folder of traces")
    code, output = invoke("validate", str(irregular_path))
    assert code == exitcodes.USAGE
    assert "reads only regular files" in output
