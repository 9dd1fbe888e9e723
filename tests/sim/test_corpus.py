"""`tlasim corpus`: every label is TLC's, every line number is the file's, and the
corpus is the same bytes from the same seed in another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tlasim.sim.cli.corpus import corpus
from tlasim.sim.corpus import MANIFEST_NAME, CorpusOptions, build_corpus
from tlasim.tracing.codec import read_trace
from tlasim.tracing.mutation.mutate import MUTATIONS
from tlasim.tracing.validation.validator import validate_trace, validate_traces

COUNT, SEED, RATIO = 20, 1, 0.5


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("corpus") / "twopc"
    manifest = build_corpus(CorpusOptions("twopc", COUNT, seed=SEED, invalid_ratio=RATIO), out)
    return out, manifest


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def step_at(path: Path, line: int) -> Any:
    """The step record a file holds at `line` (header = line 1)."""
    (step,) = [s for s in read_trace(path).steps if s.line == line]
    return step


def test_manifest_lists_every_file_with_its_parameters(built: tuple[Path, dict[str, Any]]) -> None:
    out, manifest = built
    assert json.loads((out / MANIFEST_NAME).read_text()) == manifest
    params = manifest["corpus"]
    assert (params["protocol"], params["seed"], params["count"], params["invalid_ratio"]) == (
        "twopc", SEED, COUNT, RATIO,
    )
    assert params["spec"] == "TwoPhaseCommitMsg" and params["tool_version"]
    entries = manifest["files"]
    assert sorted(e["file"] for e in entries) == sorted(set(files_of(out)) - {MANIFEST_NAME})
    # Ten files were made invalid, cycling through every mutation and a bug variant.
    made_invalid = [e for e in entries if e["kind"] != "simulation"]
    assert len(made_invalid) == round(COUNT * RATIO)
    assert {e["mutation"] for e in made_invalid} == {*MUTATIONS, None}
    assert [e["bug"] for e in made_invalid if e["kind"] == "bug-variant"] == [
        "abort-after-prepare"
    ]
    summary = manifest["summary"]
    assert summary["valid"] + summary["invalid"] == COUNT
    assert summary["invalid"] == sum(e["label"] == "invalid" for e in entries)


def test_every_label_is_what_tlc_says_of_the_file(built: tuple[Path, dict[str, Any]]) -> None:
    out, manifest = built
    entries = manifest["files"]
    # Read back from disk, in one batch: independent of what the builder held.
    verdicts = validate_traces([out / e["file"] for e in entries], explain=False)
    for entry, verdict in zip(entries, verdicts, strict=True):
        assert (entry["label"] == "valid") == verdict.accepted, entry
        line = verdict.divergence.line if verdict.divergence else None
        assert entry["first_bad_line"] == line, entry
    # And one by one, for a valid, a mutated and a bug-variant file.
    kinds = {"simulation", "mutation", "bug-variant"}
    picked = [next(e for e in entries if e["kind"] == kind) for kind in sorted(kinds)]
    for entry in picked:
        verdict = validate_trace(out / entry["file"], explain=False)
        assert (entry["label"] == "valid") == verdict.accepted, entry
        if verdict.divergence is not None:
            assert verdict.divergence.line == entry["first_bad_line"]
            assert verdict.divergence.action == entry["tlc_action"]


def test_simulations_are_valid_and_bug_variants_and_most_mutations_invalid(
    built: tuple[Path, dict[str, Any]],
) -> None:
    entries = built[1]["files"]
    for entry in entries:
        if entry["kind"] == "simulation":
            assert entry["label"] == "valid" and entry["mutation"] is None, entry
        if entry["kind"] == "bug-variant":
            assert entry["label"] == "invalid" and entry["run_outcome"] == "safety", entry
            assert entry["oracle_failure"]
    mutants = [e for e in entries if e["kind"] == "mutation"]
    assert sum(e["label"] == "invalid" for e in mutants) >= len(mutants) // 2
    for entry in mutants:
        if entry["label"] == "valid":
            assert entry["first_bad_line"] is None and entry["mutation"], entry


def test_line_numbers_name_lines_of_the_written_file(built: tuple[Path, dict[str, Any]]) -> None:
    out, manifest = built
    for entry in manifest["files"]:
        path = out / entry["file"]
        if entry["first_bad_line"] is not None:
            lines = path.read_text().splitlines()
            record = json.loads(lines[entry["first_bad_line"] - 1])
            assert record["event"] == "tla_trace"
            assert record["action"] == entry["tlc_action"], entry
            assert entry["first_bad_step"] == entry["first_bad_line"] - 1  # after the header
        if entry["mutation"] is None:
            assert entry["mutated_line"] is None
            continue
        # Lines before the mutation are the valid source's, so TLC cannot reject them.
        if entry["first_bad_line"] is not None:
            assert entry["first_bad_line"] >= entry["mutated_line"], entry
        touched = step_at(path, entry["mutated_line"])
        if entry["mutation"] == "rename-action":
            assert entry["detail"].endswith(f" to {touched.action}")
        if entry["mutation"] == "duplicate-line":
            before = step_at(path, entry["mutated_line"] - 1)
            assert (before.seq, before.action, before.vars) == (
                touched.seq, touched.action, touched.vars,
            )


def test_same_seed_gives_the_same_corpus_bytes_in_another_process(
    built: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out, _ = built
    again = tmp_path / "again"
    env = dict(os.environ, PYTHONHASHSEED="4242")
    code = (
        "import sys; from sim.cli.corpus import corpus; "
        f"corpus(['twopc', '--count', '{COUNT}', '--seed', '{SEED}', "
        f"'--invalid-ratio', '{RATIO}', '--out', sys.argv[1]])"
    )
    subprocess.run([sys.executable, "-c", code, str(again)], env=env, check=True,
                   capture_output=True)
    assert files_of(again) == files_of(out)


def run_cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(corpus, list(args), env=env)


def test_cli_writes_a_partial_msgpack_corpus_and_refuses_to_overwrite_it(tmp_path: Path) -> None:
    out = tmp_path / "c"
    result = run_cli("twopc", "--count", "4", "--seed", "3", "--partial", "--format", "msgpack",
                     "--invalid-ratio", "1", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("seed=3\n")
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert manifest["summary"]["valid"] + manifest["summary"]["invalid"] == 4
    for entry in manifest["files"]:
        assert entry["file"].endswith(".msgpack")
        if entry["first_bad_line"] is not None:
            # msgpack lines are record numbers, the header being record 1.
            assert step_at(out / entry["file"], entry["first_bad_line"]).action == entry[
                "tlc_action"
            ]
    assert any(e["partial"] for e in manifest["files"])

    refused = run_cli("twopc", "--count", "2", "--out", str(out))
    assert refused.exit_code == 2
    assert "not empty" in refused.output and "--force" in refused.output

    (out / "notes.txt").write_text("mine")
    forced = run_cli("twopc", "--count", "2", "--invalid-ratio", "0", "--out", str(out),
                     "--force")
    assert forced.exit_code == 0, forced.output
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json", "notes.txt", "trace-0001.ndjson", "trace-0002.ndjson",
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nosuch", "--count", "3"], "nosuch"),
        (["twopc", "--count", "0"], "--count"),
        (["twopc", "--count", "3", "--invalid-ratio", "1.5"], "--invalid-ratio"),
        (["twopc", "--count", "3", "--set", "rm_countt=2"], "rm_countt"),
    ],
)
def test_cli_rejects_bad_input_before_writing_anything(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    out = tmp_path / "c"
    result = run_cli(*args, "--out", str(out))
    assert result.exit_code == 2
    assert expected in result.output
    assert not out.exists()


def test_cli_says_java_is_missing_before_any_run(tmp_path: Path) -> None:
    out = tmp_path / "c"
    result = run_cli("twopc", "--count", "3", "--out", str(out), env={"JAVA": "/no/such/java"})
    assert result.exit_code == 5
    assert "$JAVA" in result.output
    assert not out.exists()


def test_options_are_checked_for_api_callers_too() -> None:
    from tlasim.protocols.errors import ConfigError

    for bad in ({"count": 0}, {"count": 2, "invalid_ratio": -0.1}, {"count": 2, "seed": -1}):
        with pytest.raises(ConfigError):
            CorpusOptions("twopc", **bad)  # type: ignore[arg-type]
    assert CorpusOptions("twopc", 3, invalid_ratio=0.5).invalid_count == 2
