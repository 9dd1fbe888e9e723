"""Drift checks (issue 6): schema drift between each spec and its protocol's code,
and spec drift of the code each spec models since its record.

The repository's specs are parsed by SANY once per process (tracing.tla.sany
caches by content), so the copies under tmp_path that leave a spec as it
is cost no JVM start; each test that edits a spec costs one.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tlasim.protocols import PROTOCOLS
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import SpecError
from tlasim.sim import exitcodes
from tlasim.sim.cli.drift import drift
from tlasim.sim.drift.check import declaration_problems, scan_actions, schema_problems
from tlasim.sim.drift.modelled import (
    ROOT,
    check_record,
    hash_item,
    read_record,
    record_path,
    update_record,
)
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import STEP_EVENT

TWOPC = PROTOCOLS["twopc"]
TM_CLASS = "protocols/twopc/tm.py:TransactionManager"


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(drift, list(args), env=env)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def copy_specs(tmp_path: Path) -> Path:
    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "specs", specs, ignore=shutil.ignore_patterns("__pycache__"))
    return specs


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


# --- the repository has no drift ---------------------------------------------


def test_tlasim_drift_reports_no_drift_on_the_repository() -> None:
    code, output = invoke()
    assert code == exitcodes.OK, output
    for definition in PROTOCOLS.values():
        name = f"{definition.name} ({definition.spec_module})"
        assert f"{name}: modelled code unchanged, revision sha256:" in output
        assert f"{name}: spec and code agree on variables and actions" in output


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_declared_actions_are_exactly_what_the_code_emits(protocol: str) -> None:
    assert declaration_problems(PROTOCOLS[protocol]) == []


def test_the_scan_follows_helpers_that_forward_the_action_name() -> None:
    actions = scan_actions(PROTOCOLS["shardsplit"]).actions
    # The coordinator names most phase changes through its `_move` helper.
    assert actions["CoordStartSplit"] == ("protocols/shardsplit/coordinator.py:199",)
    assert any("(crash_step)" in where for where in actions["CoordCrash"])
    assert actions["NetLose"] == ("the kernel (net_lose_action)",)


def actions_seen(definition: ProtocolDefinition, seeds: range) -> set[str]:
    runs = [(seed, None) for seed in seeds] + [(0, bug) for bug in definition.bugs]
    seen: set[str] = set()
    for seed, bug in runs:
        trace = run_seed(definition, seed, bug=bug, keep_trace=True).trace
        assert trace is not None
        for line in trace.splitlines()[1:]:
            record = json.loads(line)
            if record["event"] == STEP_EVENT:
                seen.add(record["action"])
    return seen


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_every_action_seen_in_simulated_runs_is_declared_and_found_by_the_scan(
    protocol: str,
) -> None:
    definition = PROTOCOLS[protocol]
    seen = actions_seen(definition, range(6))
    assert seen - definition.trace_actions == set()
    assert seen - set(scan_actions(definition).actions) == set()
    # The swarm runs reach most actions, so the check above is not vacuous.
    assert len(seen) >= len(definition.trace_actions) * 3 // 4, sorted(seen)


# --- schema drift is found and named -----------------------------------------


def test_a_spec_variable_and_an_action_the_code_disagrees_with_are_named(tmp_path: Path) -> None:
    specs = copy_specs(tmp_path)
    folder = specs / "twopc"
    edit(folder / "TwoPhaseCommitMsg.tla", "vars == <<", "VARIABLE tmClock\n\nvars == <<")
    edit(folder / "TwoPhaseCommitMsgTrace.tla", '"TMCommit", "TMAbort",', '"TMCommit",')
    expected = [
        "TwoPhaseCommitMsg's Next has the action TMAbort, "
        "which TwoPhaseCommitMsgTrace's TraceActionNames lacks",
        "TwoPhaseCommitMsg has the variable tmClock, which twopc does not write",
        "twopc can emit the action TMAbort, which TwoPhaseCommitMsgTrace's TraceActionNames lacks",
    ]
    assert schema_problems(TWOPC, [specs]) == expected
    code, output = invoke("twopc", "--spec-dir", str(specs))
    assert code == exitcodes.DRIFT, output
    assert "twopc (TwoPhaseCommitMsg): SCHEMA DRIFT between the spec and the code:" in output
    assert all(f"  {line}\n" in output for line in expected), output
    assert "twopc (TwoPhaseCommitMsg): modelled code unchanged" in output


_FAKE_DEFINITION = """
class Fake:
    name = "fake"
    net_lose_action = "NetLose"
    net_duplicate_action = "NetDuplicate"
    trace_actions = frozenset(
        {"Init", "NetLose", "NetDuplicate", "Start", "Crash", "Stop", "Never"}
    )

    def crash_step(self, node_id):
        return ("Crash" if node_id == "a" else "Stop"), {}
"""

_FAKE_CORE = """
class Core:
    def handle(self, out, name):
        out.step("Start", {})
        self._move(out, "Moved")
        self._relay(out, action="Relayed")
        out.step(name, {})
        Trace(f"X{name}", {}, {})

    def _move(self, out, action):
        out.step(action, {})

    def _relay(self, out, action):
        self._move(out, action)
"""


def test_the_scan_names_undeclared_unemitted_and_non_literal_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "fakeproto"
    package.mkdir()
    (package / "definition.py").write_text(_FAKE_DEFINITION)
    (package / "core.py").write_text(_FAKE_CORE)
    spec = importlib.util.spec_from_file_location("fakeproto_definition", package / "definition.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "fakeproto_definition", module)
    spec.loader.exec_module(module)
    definition: Any = module.Fake()
    assert declaration_problems(definition, root=tmp_path) == [
        "fakeproto/core.py:7: the action name is not a string literal: name",
        "fakeproto/core.py:8: the action name is not a string literal: f'X{name}'",
        "Moved is emitted at fakeproto/core.py:5, but fake's trace_actions does not declare it",
        "Relayed is emitted at fakeproto/core.py:6, but fake's trace_actions does not declare it",
        "fake's trace_actions declares Never, which no code emits",
    ]


# --- spec drift: the modelled code changed since the record ------------------


def copy_modelled_code(tmp_path: Path) -> Any:
    record = read_record(record_path(TWOPC))
    for item in record.modelled:
        rel = item.partition(":")[0]
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    return record


def test_reformatting_comments_and_docstrings_are_not_drift(tmp_path: Path) -> None:
    record = copy_modelled_code(tmp_path)
    tm = tmp_path / "protocols/twopc/tm.py"
    edit(tm, '"""The two-phase commit transaction manager', '"""A TM')
    edit(
        tm,
        'out.step("TMBegin", {"tx": tx}, Persist({"kind": "begin", "tx": tx}, sync=True))',
        '# Sync the begin record first.\n        out.step(\n            "TMBegin",\n'
        '            {"tx": tx},\n            Persist({"kind": "begin", "tx": tx}, sync=True),\n'
        "        )",
    )
    edit(tm, "class TransactionManager:\n", 'class TransactionManager:\n    """The TM."""\n\n')
    result = check_record(record, tmp_path)
    assert not result.drifted, result.describe()


def test_a_changed_modelled_class_is_named_as_drift(tmp_path: Path) -> None:
    record = copy_modelled_code(tmp_path)
    tm = tmp_path / "protocols/twopc/tm.py"
    edit(tm, "self.prepare_rounds[tx] = 1", "self.prepare_rounds[tx] = 2")
    result = check_record(record, tmp_path)
    assert result.drifted
    assert result.changed == (TM_CLASS,)
    assert result.describe() == [f"{TM_CLASS} changed"]


def test_a_modelled_class_that_is_gone_is_a_spec_error_naming_it(tmp_path: Path) -> None:
    record = copy_modelled_code(tmp_path)
    edit(tmp_path / "protocols/twopc/tm.py", "class TransactionManager:", "class TM:")
    with pytest.raises(SpecError, match=r"protocols/twopc/tm\.py defines no TransactionManager"):
        check_record(record, tmp_path)


def test_a_modelled_file_python_cannot_parse_is_a_spec_error(tmp_path: Path) -> None:
    record = copy_modelled_code(tmp_path)
    tm = tmp_path / "protocols/twopc/tm.py"
    edit(tm, "class TransactionManager:", "class TransactionManager")
    with pytest.raises(SpecError, match=r"cannot parse protocols/twopc/tm\.py"):
        check_record(record, tmp_path)


def test_items_name_modules_classes_methods_and_variables_even_in_tuples() -> None:
    items = [
        "protocols/shardsplit/coordinator.py",
        "protocols/shardsplit/coordinator.py:Coordinator",
        "protocols/shardsplit/coordinator.py:Coordinator._move",
        "protocols/shardsplit/coordinator.py:FREEZING",  # bound by a tuple assignment
        "protocols/shardsplit/coordinator.py:PHASE_TRANSITIONS",
    ]
    hashes = [hash_item(item) for item in items]
    assert all(h.startswith("sha256:") and len(h) == len("sha256:") + 16 for h in hashes)
    assert len(set(hashes)) == len(items)
    with pytest.raises(SpecError, match=r"FREEZING in protocols/shardsplit/coordinator\.py is not"):
        hash_item("protocols/shardsplit/coordinator.py:FREEZING.value")


def test_drift_names_a_changed_item_and_update_records_it(tmp_path: Path) -> None:
    specs = copy_specs(tmp_path)
    path = specs / "twopc" / "modelled.json"
    data = json.loads(path.read_text())
    data["hashes"][TM_CLASS] = "sha256:0000000000000000"
    path.write_text(json.dumps(data))
    code, output = invoke("twopc", "--spec-dir", str(specs))
    assert code == exitcodes.DRIFT, output
    assert "twopc (TwoPhaseCommitMsg): SPEC DRIFT since" in output
    assert f"  {TM_CLASS} changed\n" in output
    assert "then run `tlasim drift --update`" in output
    code, output = invoke("twopc", "--spec-dir", str(specs), "--update")
    assert code == exitcodes.OK, output
    assert f"  {TM_CLASS} changed\n" in output
    assert json.loads(path.read_text())["hashes"] == read_record(record_path(TWOPC)).hashes
    code, output = invoke("twopc", "--spec-dir", str(specs))
    assert code == exitcodes.OK, output


def test_update_leaves_an_up_to_date_record_alone(tmp_path: Path) -> None:
    specs = copy_specs(tmp_path)
    path = specs / "twopc" / "modelled.json"
    before = path.stat().st_mtime_ns
    result = update_record(read_record(path))
    assert not result.drifted
    assert path.stat().st_mtime_ns == before


# --- bad input: a clear message and a non-zero exit, never a traceback -------


def _record(specs: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((specs / "twopc" / "modelled.json").read_text())
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (None, "no record of the code the spec models"),
        ("{not json", "cannot read the record"),
        ([1, 2], "expected a JSON object"),
        ({"modeled": []}, "unknown key(s) modeled"),
        ({"modelled": []}, "'modelled' must be a non-empty list"),
        ({"modelled": [TM_CLASS, TM_CLASS]}, f"lists {TM_CLASS} more than once"),
        ({"spec": "TwoPhaseCommit"}, "records the spec TwoPhaseCommit, but twopc traces are"),
        ({"spec": "Nope"}, "but Nope.tla is not beside it"),
        ({"modelled": ["protocols/twopc/tm.py:NoSuch"]}, "tm.py defines no NoSuch"),
        ({"modelled": ["protocols/twopc/tm.py:TMTx.nope"]}, "tm.py:TMTx defines no nope"),
        ({"modelled": ["protocols/twopc/nope.py"]}, "modelled file protocols/twopc/nope.py does"),
    ],
)
def test_a_bad_record_exits_with_usage_and_names_the_problem(
    tmp_path: Path, change: Any, message: str
) -> None:
    specs = copy_specs(tmp_path)
    path = specs / "twopc" / "modelled.json"
    if change is None:
        path.unlink()
    elif isinstance(change, str):
        path.write_text(change)
    elif isinstance(change, list):
        path.write_text(json.dumps(change))
    else:
        path.write_text(json.dumps({**_record(specs), **change}))
    code, output = invoke("twopc", "--spec-dir", str(specs))
    assert code == exitcodes.USAGE, output
    assert "tlasim: error:" in output
    assert message in " ".join(output.split()), output


def test_missing_java_exits_with_tool_missing(tmp_path: Path) -> None:
    specs = copy_specs(tmp_path)
    # A changed template is not in SANY's cache, so Java is needed.
    template = specs / "twopc" / "TwoPhaseCommitMsgTrace.tla"
    template.write_text(template.read_text() + "\\* edited\n")
    code, output = invoke("twopc", "--spec-dir", str(specs), env={"JAVA": "/no/such/java"})
    assert code == exitcodes.TOOL_MISSING, output
    assert "$JAVA is set to '/no/such/java'" in output
