"""Adding a protocol (issue 13, part 3): discovery, ProtocolBase's defaults, and the
trace actions read from the trace template.

The minimal protocol `tick` (tests/fixtures/fixture_protocols, specs in
tests/fixtures/specs) is what a new protocol writes with ProtocolBase; these
tests run it, validate its trace, check it for drift and find it by
discovery, as the real protocols are found.
"""

from __future__ import annotations

import importlib
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tlasim.protocols import PROTOCOLS, definition_modules, find_definitions, get_protocol
from tlasim.protocols.base import Send, Timeout
from tlasim.protocols.defaults import ProtocolBase
from tlasim.protocols.errors import ConfigError, InternalError, ProtocolViolation, SpecError
from tlasim.protocols.trace_template import find_template, read_action_names, read_name_set
from tlasim.sim.drift.check import declaration_problems, schema_problems
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.tla.speccheck import find_spec
from tlasim.tracing.validation.validator import validate_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE_SPECS = FIXTURES / "specs"


@pytest.fixture
def forget_imports() -> Iterator[None]:
    """Whatever a test imports from its own folders is forgotten after it."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.fixture
def tick(monkeypatch: pytest.MonkeyPatch, forget_imports: None) -> ModuleType:
    """The fixture protocol's definition module, importable as `fixture_protocols`."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    return importlib.import_module("fixture_protocols.tick.definition")


# --- discovery ---------------------------------------------------------------


def test_discovery_finds_exactly_the_five_protocols_in_name_order() -> None:
    assert list(PROTOCOLS) == [
        "lockfree-queue",
        "lockfree-stack",
        "shardsplit",
        "snapshot",
        "twopc",
    ]
    twopc = importlib.import_module("tlasim.protocols.twopc.definition")
    assert get_protocol("twopc") is twopc.DEFINITION
    queue = importlib.import_module("tlasim.protocols.lockfree.queue.definition")
    assert get_protocol("lockfree-queue") is queue.DEFINITION


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


BOMB = "raise AssertionError('discovery imported a module that is not a definition')\n"


def test_discovery_lists_folders_at_any_depth_and_imports_only_definition_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forget_imports: None
) -> None:
    one = "class D:\n    name = {!r}\n\n\nDEFINITION = D()\n"
    write_tree(
        tmp_path,
        {
            "found/__init__.py": "",
            "found/zeta/__init__.py": "",
            "found/zeta/definition.py": one.format("zeta"),
            "found/zeta/core.py": BOMB,
            # A family: its definition module holds what its members share.
            "found/family/__init__.py": "",
            "found/family/definition.py": "SHARED = 1\n",
            "found/family/member/__init__.py": "",
            "found/family/member/definition.py": one.format("alpha"),
            "found/family/member/deeper/__init__.py": "",
            "found/family/member/deeper/definition.py": one.format("beta"),
            "found/plain/__init__.py": "",
            "found/plain/helpers.py": BOMB,
            "found/notapackage/definition.py": one.format("stray"),
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = [str(tmp_path / "found")]
    assert list(definition_modules("found", paths)) == [
        "found.family.definition",
        "found.family.member.definition",
        "found.family.member.deeper.definition",
        "found.zeta.definition",
    ]
    assert not any(m.startswith("found.") for m in sys.modules), "listing imported a module"
    definitions = find_definitions("found", paths)
    assert list(definitions) == ["alpha", "beta", "zeta"]
    assert definitions["zeta"] is sys.modules["found.zeta.definition"].DEFINITION
    assert "found.zeta.core" not in sys.modules
    assert "found.plain.helpers" not in sys.modules


def test_two_protocols_with_one_name_are_a_config_error_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forget_imports: None
) -> None:
    one = "class D:\n    name = 'same'\n\n\nDEFINITION = D()\n"
    write_tree(
        tmp_path,
        {
            "twice/__init__.py": "",
            "twice/a/__init__.py": "",
            "twice/a/definition.py": one,
            "twice/b/__init__.py": "",
            "twice/b/definition.py": one,
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="two protocols are named 'same'") as caught:
        find_definitions("twice", [str(tmp_path / "twice")])
    assert "twice.a.definition.DEFINITION and twice.b.definition.DEFINITION" in str(caught.value)


def test_discovery_finds_a_protocol_that_only_wrote_its_own_package(tick: ModuleType) -> None:
    paths = [str(FIXTURES / "fixture_protocols")]
    assert find_definitions("fixture_protocols", paths) == {"tick": tick.DEFINITION}


# --- the minimal protocol runs, validates and has no drift --------------------


def test_the_minimal_protocol_runs_and_tlc_accepts_its_trace(
    tick: ModuleType, tmp_path: Path
) -> None:
    definition = tick.DEFINITION
    run = run_seed(definition, 3, keep_trace=True)
    assert run.result.outcome == "ok", run.result
    assert run.trace is not None
    path = tmp_path / "tick.ndjson"
    path.write_bytes(run.trace)
    verdict = validate_trace(path, spec_dirs=[FIXTURE_SPECS])
    assert verdict.accepted, verdict


def test_the_minimal_protocol_has_no_schema_drift(tick: ModuleType) -> None:
    definition = tick.DEFINITION
    assert definition.trace_actions == frozenset({"Init", "Tick"})
    assert schema_problems(definition, [FIXTURE_SPECS], root=FIXTURES) == []


def test_a_template_that_lacks_an_action_the_code_emits_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forget_imports: None
) -> None:
    # A copy of the minimal protocol whose template forgot "Tick".
    package = tmp_path / "drifted_protocols"
    shutil.copytree(FIXTURES / "fixture_protocols", package)
    definition_py = package / "tick" / "definition.py"
    definition_py.write_text(
        definition_py.read_text().replace("fixture_protocols", "drifted_protocols")
    )
    specs = tmp_path / "specs"
    shutil.copytree(FIXTURE_SPECS, specs)
    template = specs / "tick" / "TickTrace.tla"
    template.write_text(template.read_text().replace('{ "Init", "Tick" }', '{ "Init" }'))
    monkeypatch.syspath_prepend(str(tmp_path))
    definition = importlib.import_module("drifted_protocols.tick.definition").DEFINITION
    assert definition.trace_actions == frozenset({"Init"})
    assert declaration_problems(definition, root=tmp_path) == [
        "Tick is emitted at drifted_protocols/tick/core.py:21, "
        "but tick's trace_actions does not declare it"
    ]
    assert schema_problems(definition, [specs], root=tmp_path) == [
        "Tick's Next has the action Tick, which TickTrace's TraceActionNames lacks",
        "Tick is emitted at drifted_protocols/tick/core.py:21, "
        "but tick's trace_actions does not declare it",
    ]


# --- ProtocolBase's defaults ----------------------------------------------------


def test_an_unknown_option_is_named_with_the_known_ones(tick: ModuleType) -> None:
    with pytest.raises(ConfigError) as caught:
        tick.DEFINITION.make_options({"limit": 2, "nodes": 3})
    assert str(caught.value) == "unknown tick option(s) nodes; known: limit, node_count"
    with pytest.raises(ConfigError, match=r"unknown twopc option\(s\) rm_cont; known: "):
        get_protocol("twopc").make_options({"rm_cont": 3})
    options = tick.DEFINITION.make_options({"limit": 2})
    assert options.as_dict() == {"node_count": 2, "limit": 2}
    assert tick.DEFINITION.default_options().as_dict() == {"node_count": 2, "limit": 3}


def test_an_unknown_bug_is_named_with_the_known_ones(tick: ModuleType) -> None:
    definition = tick.DEFINITION
    rng = random.Random(0)
    with pytest.raises(ConfigError) as caught:
        definition.configure(definition.default_options(), "off-by-one", rng)
    assert str(caught.value) == (
        "unknown tick bug 'off-by-one'; known: none (it has no bug variants)"
    )
    twopc = get_protocol("twopc")
    with pytest.raises(ConfigError) as caught:
        twopc.configure(twopc.default_options(), "nope", rng)
    assert str(caught.value) == f"unknown twopc bug 'nope'; known: {', '.join(twopc.bugs)}"
    assert definition.bugs == {}


def test_a_protocol_without_messages_refuses_to_encode_one(tick: ModuleType) -> None:
    definition = tick.DEFINITION
    assert definition.net_lose_action is None and definition.net_duplicate_action is None
    with pytest.raises(ProtocolViolation, match=r"tick sends no messages .*encode 'hello'"):
        definition.encode_message("hello")
    with pytest.raises(ProtocolViolation, match=r"tick sends no messages .*decode"):
        definition.decode_message({"type": "Hello"})
    with pytest.raises(ProtocolViolation, match="tick sends no messages"):
        definition.message_record("hello")


def test_the_kernel_asking_a_protocol_without_messages_to_send_one_fails_clearly(
    tick: ModuleType,
) -> None:
    core_module = importlib.import_module("fixture_protocols.tick.core")

    class Chatty(core_module.Ticker):  # type: ignore[misc, name-defined]
        """Sends a message in each of its steps."""

        def handle(self, now: int, event: Any) -> list[Any]:
            effects = super().handle(now, event)
            return [Send("n1", "hello"), *effects] if isinstance(event, Timeout) else effects

    class ChattyTick(tick.Tick):  # type: ignore[misc, name-defined]
        def make_core(self, config: Any, node_id: str) -> Any:
            return Chatty(node_id, config.limit)

    with pytest.raises(ProtocolViolation, match="tick sends no messages"):
        run_seed(ChattyTick(), 0)


def test_only_a_protocol_with_a_crash_step_may_crash_its_nodes(tick: ModuleType) -> None:
    definition = tick.DEFINITION
    assert definition.crash_nodes(definition.default_options()) == ()
    with pytest.raises(InternalError, match=r"tick defines no crash_step.*but n1 did"):
        definition.crash_step("n1")
    twopc = get_protocol("twopc")
    config = twopc.configure(twopc.default_options(), None, random.Random(0))
    assert twopc.crash_nodes(config) == twopc.node_ids(config)


def test_defaults_settle_at_once_and_hash_the_package_sources(tick: ModuleType) -> None:
    definition = tick.DEFINITION
    assert definition.settle_tick(definition.default_options()) == 0
    assert definition.workload_ranges == {}
    assert definition.source_files == (
        "tests/fixtures/fixture_protocols/tick/__init__.py",
        "tests/fixtures/fixture_protocols/tick/core.py",
        "tests/fixtures/fixture_protocols/tick/definition.py",
    )


def test_a_definition_missing_what_only_it_knows_cannot_be_built() -> None:
    class Unfinished(ProtocolBase):
        name = "unfinished"

    with pytest.raises(TypeError, match="abstract methods configure, make_core, make_oracle"):
        Unfinished()  # type: ignore[abstract]


# --- reading TraceActionNames -----------------------------------------------------


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_each_shipped_protocol_reads_the_validators_action_names(protocol: str) -> None:
    """protocols/ has its own small reader; the validator's (tracing.tla.source)
    must read the same set from every shipped template (as SANY must, in drift)."""
    definition = PROTOCOLS[protocol]
    _module, template = find_spec(definition.spec_module)
    text = template.read_text(encoding="utf-8")
    assert definition.trace_actions == set(read_name_set(text, "TraceActionNames"))
    assert "Init" in definition.trace_actions


TEMPLATE = """\
---- MODULE T ----
(* TraceActionNames == {"Commented"} (* nested *) *)
\\* TraceActionNames == {"AlsoCommented"}
Other == "TraceActionNames == {}"
TraceActionNames ==
    { "Init", \\* the first line
      "Step" (* and the one step *) }
====
TraceActionNames == {"AfterTheModule"}
"""


def test_the_template_reader_skips_comments_strings_and_text_after_the_module(
    tmp_path: Path,
) -> None:
    path = tmp_path / "TTrace.tla"
    path.write_text(TEMPLATE)
    assert read_action_names(path) == frozenset({"Init", "Step"})


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("Names == {}", "no definition `TraceActionNames"),
        ('TraceActionNames == {"Init", Step}', "must be a literal set of names; found Step"),
        ('TraceActionNames == {"Init", "a b"}', 'found "a b"'),
        ('TraceActionNames == {"Init"', "never closed"),
        ('TraceActionNames == {"A"}\nTraceActionNames == {"B"}', "defined more than once"),
        ('TraceActionNames == {"A"} \\cup {"B"} \\ {"A"}', "or a union"),
    ],
)
def test_the_template_reader_refuses_anything_but_a_literal_set_of_names(
    tmp_path: Path, body: str, problem: str
) -> None:
    path = tmp_path / "TTrace.tla"
    path.write_text(f"---- MODULE T ----\n{body}\n====\n")
    with pytest.raises(SpecError, match=problem.replace("(", r"\(")) as caught:
        read_action_names(path)
    assert str(path) in str(caught.value)


def test_a_missing_template_names_where_it_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=f"trace template NopeTrace.tla not found under {tmp_path}"):
        find_template("Nope", [tmp_path])
