"""Names written once (issue 23, part 3): a spec without a trace template gets
one derived from its Next, a definition without `variable_types` reads
them from the spec, and one with `SPEC_VARS` declares its refinement mapping.

The spec is the user project fixture's Counter (tests/fixtures/user_project),
which has no CounterTrace.tla, copied to a temporary folder; the derived
templates are cached under a temporary TLASIM_CACHE_DIR.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tlasim.protocols.errors import ConfigError, SpecError
from tlasim.protocols.gather import Gathered, gather, log, messages, up, view
from tlasim.protocols.spec_variables import read_spec_variables
from tlasim.protocols.trace_template import find_template, read_action_names
from tlasim.tracing.tla.derive_template import derive_template_text, derived_template
from tlasim.tracing.validation.validator import validate_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COUNTER_SPECS = FIXTURES / "user_project" / "counter" / "specs"
TWOPC = Path(__file__).resolve().parents[2] / "specs" / "twopc" / "TwoPhaseCommitMsg.tla"


@pytest.fixture
def specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TLASIM_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "specs"
    shutil.copytree(COUNTER_SPECS, folder)
    return folder


def test_the_derived_template_names_every_action_of_next_but_the_stuttering_one(
    specs: Path,
) -> None:
    template = find_template("Counter", [specs])
    assert template.name == "CounterTrace.tla" and template.parent != specs
    # Terminated leaves every variable unchanged: no code logs it.
    assert read_action_names(template) == {"Init", "Tick"}
    text = template.read_text()
    assert '"n", n) /\\ Tick(n)' in text
    # Beside copies of the spec's modules, so SANY and TLC find what it extends.
    assert (template.parent / "Counter.tla").read_text() == (specs / "Counter.tla").read_text()


def test_the_derived_template_is_cached_by_content_and_rederived_after_an_edit(
    specs: Path,
) -> None:
    first = derived_template(specs / "Counter.tla")
    assert derived_template(specs / "Counter.tla") == first
    spec = specs / "Counter.tla"
    spec.write_text(spec.read_text().replace("count[n] < Limit", "count[n] < Limit + 0"))
    second = derived_template(spec)
    assert second != first and "Limit + 0" in (second.parent / "Counter.tla").read_text()


def test_a_template_written_beside_the_spec_wins(specs: Path) -> None:
    (specs / "CounterTrace.tla").write_text(
        "---- MODULE CounterTrace ----\nEXTENDS Counter\n"
        'TraceActionNames == {"Init", "Tick"}\nTraceAction(e) == FALSE\n====\n')
    assert find_template("Counter", [specs]) == specs / "CounterTrace.tla"


def _trace(path: Path, counts: list[dict[str, int]], params: list[dict[str, str]]) -> Path:
    lines = [{"event": "tla_trace", "action": "Init", "seq": 0, "ts": 0, "node": None,
              "params": {}, "vars": {"count": counts[0]}}]
    for i, (count, param) in enumerate(zip(counts[1:], params, strict=True), start=1):
        lines.append({"event": "tla_trace", "action": "Tick", "seq": i, "ts": i,
                      "node": param["n"], "params": param, "vars": {"count": count}})
    header = {"event": "tla_trace_header", "spec": "Counter", "schema": 1,
              "constants": {"Nodes": {"#set": ["n1", "n2"]}, "Limit": 2},
              "variables": {"count": ""}}
    path.write_text("\n".join(json.dumps(x) for x in [header, *lines]) + "\n")
    return path


def test_tlc_checks_a_trace_against_the_derived_template_params_and_all(
    specs: Path, tmp_path: Path
) -> None:
    zero, one = {"n1": 0, "n2": 0}, {"n1": 1, "n2": 0}
    good = _trace(tmp_path / "good.ndjson", [zero, one], [{"n": "n1"}])
    assert validate_trace(good, spec_dirs=[specs]).accepted
    # The right state, but the line names the node that did not move.
    wrong_node = _trace(tmp_path / "wrong.ndjson", [zero, one], [{"n": "n2"}])
    assert not validate_trace(wrong_node, spec_dirs=[specs]).accepted


def test_a_next_that_cannot_be_derived_says_to_write_the_template(specs: Path) -> None:
    spec = specs / "Counter.tla"
    spec.write_text(spec.read_text().replace(
        "Next == (\\E n \\in Nodes : Tick(n)) \\/ Terminated",
        "Next == LET some == Nodes IN \\E n \\in some : Tick(n)"))
    with pytest.raises(SpecError, match=r"cannot derive a trace template.*write CounterTrace\.tla"):
        derive_template_text(spec)


def test_the_spec_variables_come_in_order_with_their_typeok_types() -> None:
    variables = read_spec_variables(TWOPC)
    assert list(variables)[:4] == ["tmState", "tmPrepared", "tmLog", "tmUp"]
    assert variables["tmUp"] == "BOOLEAN"
    assert variables["rmLostWork"] == "[RM -> SUBSET Tx]"
    assert read_spec_variables(COUNTER_SPECS / "Counter.tla") == {"count": "[Nodes -> 0..Limit]"}


# --- the refinement mapping, declared -------------------------------------------


def test_gather_builds_each_declared_shape_from_views_logs_and_liveness() -> None:
    roles = {None: ("p", "r1", "r2"), "primary": ("p",), "replica": ("r1", "r2")}
    views = {"p": {"next": 3}, "r1": {"state": "a"}, "r2": {"state": "b"}}
    logs = {"p": [], "r1": [("x", 1)], "r2": [("x", 1), ("y", 2)]}
    alive = {"p": True, "r1": False, "r2": True}
    bag = {("m", 1): 2}
    declared = {
        "next": view("next", role="primary", one=True),
        "state": view("state", role="replica"),
        "log": log(role="replica"),
        "ordered": log(role="replica", ordered=True),
        "alive": up(),
        "msgs": messages(),
    }
    assert gather(declared, roles, views, logs, alive, bag) == {
        "next": 3,
        "state": {"r1": "a", "r2": "b"},
        "log": {"r1": frozenset({("x", 1)}), "r2": frozenset({("x", 1), ("y", 2)})},
        "ordered": {"r1": (("x", 1),), "r2": (("x", 1), ("y", 2))},
        "alive": {"p": True, "r1": False, "r2": True},
        "msgs": bag,
    }


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"v": view("nope")}, "node a's view has no 'nope'"),
        ({"v": view("k", role="ghost")}, "role 'ghost', which roles() does not name"),
        ({"v": view("k", one=True)}, "the one node of role None, which has 2"),
    ],
)
def test_gather_names_what_a_declaration_gets_wrong(declared: dict[str, Gathered],
                                                    message: str) -> None:
    views = {"a": {"k": 1}, "b": {"k": 2}}
    with pytest.raises(ConfigError, match=re.escape(message)):
        gather(declared, {None: ("a", "b")}, views, {"a": [], "b": []},
               {"a": True, "b": True}, {})
