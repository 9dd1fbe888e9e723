"""tracing.tla.sany: a spec's shape from SANY's XML export, and how it differs from an emitter.

Each SANY run starts a JVM (about a second), so the toy specs here pack
several cases into one module each, and the repository's specs are parsed
once per process (`spec_shape` caches them; tests/unit/test_drift.py shares
the cache).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tlasim.protocols import PROTOCOLS
from tlasim.protocols.errors import SpecError, ToolNotFound
from tlasim.tracing.tla.sany import SpecShape, export_xml, schema_drift, spec_shape
from tlasim.tracing.tla.speccheck import find_spec

_BASE = """---- MODULE Base ----
VARIABLE b
====
"""

# Next reaches Inc twice and Reset twice, expands Local (a disjunction of
# actions), keeps Flip (alternatives written inline) as one action, looks
# through LET and \E, and has one inline step that names no action.
_TOY = r"""---- MODULE Toy ----
EXTENDS Base, Naturals
VARIABLES x, y
Init == x = 0 /\ y = 0 /\ b = 0
Inc(n) == x' = x + n /\ UNCHANGED <<y, b>>
Reset == x' = 0 /\ UNCHANGED <<y, b>>
Flip == \/ y' = 1 - y /\ UNCHANGED <<x, b>>
        \/ y' = y /\ UNCHANGED <<x, b>>
Tick == b' = b + 1 /\ UNCHANGED <<x, y>>
Local == \/ Reset
         \/ \E n \in 1..2 : Inc(n)
Next == \/ Local
        \/ Flip
        \/ LET k == 1 IN Inc(k)
        \/ Tick \/ Reset
        \/ x' = x /\ UNCHANGED <<y, b>>
====
"""

_TOY_TRACE = """---- MODULE ToyTrace ----
EXTENDS Toy
TraceActionNames == {"Init", "Inc", "Reset", "Flip", "Ghost", "Local", "Init"}
TraceAction(e) == TRUE
====
"""


def write_toy(folder: Path, toy: str = _TOY, trace: str = _TOY_TRACE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Base.tla").write_text(_BASE)
    (folder / "Toy.tla").write_text(toy)
    (folder / "ToyTrace.tla").write_text(trace)
    return folder / "Toy.tla"


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> SpecShape:
    return spec_shape(write_toy(tmp_path_factory.mktemp("toy")))


def test_variables_come_in_declaration_order_with_extended_modules_first(toy: SpecShape) -> None:
    assert toy.module == "Toy"
    assert toy.template == "ToyTrace"
    assert toy.variables == ("b", "x", "y")


def test_next_actions_look_through_disjunctions_exists_let_and_expand_named_disjunctions(
    toy: SpecShape,
) -> None:
    assert toy.next_actions == ("Reset", "Inc", "Flip", "Tick")
    assert len(toy.unnamed_disjuncts) == 1
    assert "line 16" in toy.unnamed_disjuncts[0]


def test_trace_action_names_are_read_in_order_without_duplicates(toy: SpecShape) -> None:
    assert toy.trace_action_names == ("Init", "Inc", "Reset", "Flip", "Ghost", "Local")
    assert {"Init", "Inc", "Local", "Next"} <= toy.definitions


def test_problems_name_every_disagreement_between_template_and_spec(toy: SpecShape) -> None:
    problems = toy.problems()
    assert "ToyTrace's TraceActionNames names Ghost, which Toy does not define" in problems
    assert "Toy's Next has the action Tick, which ToyTrace's TraceActionNames lacks" in problems
    assert (
        "ToyTrace's TraceActionNames names Local, which is not an action of Toy's Next" in problems
    )
    assert any("Toy's Next has a disjunct at line 16" in p for p in problems)
    assert len(problems) == 4


def test_the_shipped_specs_agree_with_their_templates() -> None:
    for definition in PROTOCOLS.values():
        module, _template = find_spec(definition.spec_module)
        shape = spec_shape(module)
        assert shape.problems() == [], definition.name
        assert shape.trace_action_names[0] == "Init"
        # PlusCal's Terminating (the lock-free specs') changes nothing: no line names it.
        assert set(shape.next_actions) - shape.stuttering_actions == (
            set(shape.trace_action_names) - {"Init"}
        )
        assert shape.stuttering_actions <= {"Terminating"}


def test_twopc_spec_shape_is_read_from_sany() -> None:
    module, _template = find_spec("TwoPhaseCommitMsg")
    shape = spec_shape(module)
    assert shape.variables == (
        "tmState", "tmPrepared", "tmLog", "tmUp", "rmState", "rmLog", "rmUp", "rmLostWork",
        "msgs",
    )
    assert shape.next_actions[:3] == ("TMBegin", "TMCommit", "TMAbort")
    assert "TCRefinement" in shape.definitions
    assert spec_shape(module) is shape  # parsed once per process


def test_schema_drift_names_each_variable_and_action_that_differs() -> None:
    module, _template = find_spec("TwoPhaseCommitMsg")
    shape = spec_shape(module)
    actions = (set(shape.trace_action_names) - {"TMAbort"}) | {"TMPanic"}
    variables = [v for v in shape.variables if v != "rmUp"] + ["tmClock"]
    assert schema_drift(shape, variables, actions, "twopc") == [
        "TwoPhaseCommitMsg has the variable rmUp, which twopc does not write",
        "twopc writes the variable tmClock, which TwoPhaseCommitMsg lacks",
        "TwoPhaseCommitMsgTrace's TraceActionNames has TMAbort, which twopc never emits",
        "twopc can emit the action TMPanic, which TwoPhaseCommitMsgTrace's TraceActionNames lacks",
    ]
    reordered = [*shape.variables[1:], shape.variables[0]]
    (order,) = schema_drift(shape, reordered, shape.trace_action_names, "twopc")
    assert order.startswith("twopc declares the variables in the order tmPrepared, ")
    assert schema_drift(shape, shape.variables, shape.trace_action_names, "twopc") == []


def test_a_spec_sany_rejects_is_a_spec_error_with_sanys_report(tmp_path: Path) -> None:
    bad = _TOY.replace("Reset == x' = 0", "Reset == x' = zero")
    with pytest.raises(SpecError, match=r"(?s)SANY cannot parse.*Unknown operator: `zero'") as info:
        spec_shape(write_toy(tmp_path, toy=bad))
    assert "at tla2sany" not in str(info.value)  # no Java stack trace


def test_trace_action_names_must_be_a_literal_set_of_strings(tmp_path: Path) -> None:
    trace = _TOY_TRACE.replace(
        '{"Init", "Inc", "Reset", "Flip", "Ghost", "Local", "Init"}', '{"Init"} \\cup {"Inc"}'
    )
    with pytest.raises(SpecError, match="TraceActionNames in ToyTrace is not a literal set"):
        spec_shape(write_toy(tmp_path, trace=trace))


def test_a_spec_without_a_template_or_file_is_a_spec_error(tmp_path: Path) -> None:
    (tmp_path / "Lone.tla").write_text(_BASE.replace("Base", "Lone"))
    # No template beside it, and no Next to derive one from.
    with pytest.raises(SpecError, match=r"cannot derive a trace template.*LoneTrace\.tla"):
        spec_shape(tmp_path / "Lone.tla")
    with pytest.raises(SpecError, match="does not exist"):
        export_xml(tmp_path / "Missing.tla")


def test_missing_java_is_tool_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA", str(tmp_path / "no-java"))
    with pytest.raises(ToolNotFound, match="JAVA"):
        export_xml(write_toy(tmp_path).with_name("ToyTrace.tla"))


def test_a_jar_without_sany_is_tool_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jar = tmp_path / "not-tla2tools.jar"
    jar.write_text("not a jar")
    monkeypatch.setenv("TLA2TOOLS_JAR", str(jar))
    with pytest.raises(ToolNotFound, match="SANY did not start"):
        export_xml(write_toy(tmp_path).with_name("ToyTrace.tla"))
