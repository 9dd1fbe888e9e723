"""tracing.tla.speccheck: the manifest of expected TLC outcomes, and spec lookup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols.errors import SpecError
from tlasim.tracing.tla.speccheck import check_specs, find_spec, load_trace_spec, read_manifest

_TOY = """---- MODULE Toy ----
EXTENDS Naturals, TLC
VARIABLE x
Init == x = 0
Next == x' = (x + 1) % 4
Small == x < 2
Asserting == Next /\\ Assert(x < 2, "XBelowTwo")
====
"""


def write_manifest(root: Path, checks: list[dict[str, Any]], schema: int = 1) -> Path:
    (root / "toy").mkdir(exist_ok=True)
    (root / "toy" / "Toy.tla").write_text(_TOY)
    (root / "toy" / "Ok.cfg").write_text("INIT Init\nNEXT Next\n")
    (root / "toy" / "Inv.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT Small\n")
    (root / "toy" / "Assert.cfg").write_text("INIT Init\nNEXT Asserting\n")
    path = root / "manifest.json"
    path.write_text(json.dumps({"schema": schema, "checks": checks}))
    return path


def entry(name: str, config: str, expect: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "module": "toy/Toy.tla", "config": config, "expect": expect, **extra}


def test_check_specs_compares_outcome_violation_and_state_count(tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path,
        [
            entry("toy-ok", "toy/Ok.cfg", "ok", distinct_states=4),
            entry("toy-inv", "toy/Inv.cfg", "invariant", violated="Small", distinct_states=99),
            entry("toy-slow", "toy/Ok.cfg", "ok", slow=True),
        ],
    )
    results = check_specs(manifest, include_slow=False)
    assert [r.check.name for r in results] == ["toy-ok", "toy-inv"]
    ok, inv = results
    assert ok.passed, ok.summary()
    assert (ok.outcome, ok.distinct_states) == ("ok", 4)
    assert not inv.passed
    assert (inv.outcome, inv.violated) == ("invariant", "Small")
    assert inv.problems == (f"distinct states: expected 99, got {inv.distinct_states}",)
    assert inv.name == "toy-inv"
    assert inv.expected == "invariant Small, 99 distinct states"
    assert inv.actual == f"invariant Small, {inv.distinct_states} distinct states"
    assert inv.summary().startswith("FAIL toy-inv: expected invariant Small, 99 distinct states")


def test_check_specs_reports_a_wrong_outcome(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, [entry("toy", "toy/Inv.cfg", "ok")])
    (result,) = check_specs(manifest, names=["toy"])
    assert not result.passed
    assert result.problems == ("outcome: expected ok, got invariant",)


def test_check_specs_expects_a_failed_assertion_by_its_message(tmp_path: Path) -> None:
    # A PlusCal `assert`, or an Assert in an action, fails while TLC computes
    # a step: the outcome "assertion", named by Assert's second argument.
    manifest = write_manifest(
        tmp_path,
        [
            entry("toy-assert", "toy/Assert.cfg", "assertion", violated="XBelowTwo"),
            entry("toy-assert-other", "toy/Assert.cfg", "assertion", violated="Other"),
            entry("toy-assert-ok", "toy/Assert.cfg", "ok"),
        ],
    )
    named, other, ok = check_specs(manifest)
    assert named.passed, named.summary()
    assert (named.outcome, named.violated) == ("assertion", "XBelowTwo")
    assert named.expected == "assertion XBelowTwo"
    assert other.problems == ("violated: expected Other, got XBelowTwo",)
    assert ok.problems == ("outcome: expected ok, got assertion",)


@pytest.mark.parametrize(
    ("checks", "schema", "match"),
    [
        ([entry("a", "toy/Ok.cfg", "fine")], 1, "expect must be one of"),
        ([entry("a", "toy/Missing.cfg", "ok")], 1, "Missing.cfg does not exist"),
        ([{"name": "a", "module": "toy/Toy.tla", "expect": "ok"}], 1, "missing 'config'"),
        ([entry("a", "toy/Ok.cfg", "ok", distinct_states="4")], 1, "must be a int"),
        ([entry("a", "toy/Ok.cfg", "ok", colour="red")], 1, "unknown keys"),
        ([entry("a", "toy/Ok.cfg", "ok"), entry("a", "toy/Ok.cfg", "ok")], 1, "repeated"),
        ([], 2, "schema"),
    ],
)
def test_read_manifest_rejects_bad_entries(
    tmp_path: Path, checks: list[dict[str, Any]], schema: int, match: str
) -> None:
    with pytest.raises(SpecError, match=match):
        read_manifest(write_manifest(tmp_path, checks, schema))


def test_read_manifest_missing_or_corrupt_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        read_manifest(tmp_path / "manifest.json")
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(SpecError, match="not readable JSON"):
        read_manifest(tmp_path / "manifest.json")


def test_check_specs_unknown_name_is_a_spec_error(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, [entry("toy", "toy/Ok.cfg", "ok")])
    with pytest.raises(SpecError, match="no check named nope"):
        check_specs(manifest, names=["nope"])


def test_the_shipped_manifest_reads_cleanly() -> None:
    try:
        checks = read_manifest()
    except SpecError as exc:
        if "does not exist" in str(exc):
            pytest.skip("specs/manifest.json is not written yet")
        raise
    assert checks
    assert all(c.module.is_file() and c.config.is_file() for c in checks)


def test_load_trace_spec_reads_variables_constants_and_actions(tmp_path: Path) -> None:
    (tmp_path / "Toy.tla").write_text(_TOY.replace("VARIABLE x", "CONSTANT N\nVARIABLE x"))
    (tmp_path / "ToyTrace.tla").write_text(
        '---- MODULE ToyTrace ----\nEXTENDS Toy\nTraceActionNames == {"Init", "Next"}\n'
        'TraceAction(e) == CASE e.action = "Next" -> Next [] OTHER -> FALSE\n====\n'
    )
    assert find_spec("Toy", [tmp_path]) == (tmp_path / "Toy.tla", tmp_path / "ToyTrace.tla")
    spec = load_trace_spec("Toy", [tmp_path])
    assert spec.decls.variables == ("x",)
    assert spec.decls.constants == (("N", 0),)
    assert spec.actions == ("Init", "Next")


def test_load_trace_spec_refuses_names_the_validator_generates(tmp_path: Path) -> None:
    (tmp_path / "Toy.tla").write_text(_TOY.replace("Small ==", "TraceLog =="))
    (tmp_path / "ToyTrace.tla").write_text(
        '---- MODULE ToyTrace ----\nEXTENDS Toy\nTraceActionNames == {"Init"}\n'
        "TraceAction(e) == FALSE\n====\n"
    )
    with pytest.raises(SpecError, match="TraceLog"):
        load_trace_spec("Toy", [tmp_path])
