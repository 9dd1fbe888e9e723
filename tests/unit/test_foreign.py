"""tracing.interchange.foreign and log_mapping: another system's log, read through a mapping
file, validated by TLC."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tla_kinds import tlc_can_hold

from tlasim.protocols.errors import ConfigError, TraceFormatError
from tlasim.tracing.interchange.foreign import decode_plain, load_foreign_trace, read_foreign_log
from tlasim.tracing.interchange.log_mapping import read_mapping
from tlasim.tracing.tla.type_expr import ANY, Shape
from tlasim.tracing.validation.validator import validate_trace
from tlasim.tracing.values import FnMap, Record, canonical_json, to_json

FOREIGN = Path(__file__).resolve().parents[2] / "docs" / "examples" / "foreign"
LOG, MAPPING = FOREIGN / "twopc.log", FOREIGN / "twopc.toml"


def _log_lines() -> list[str]:
    return LOG.read_text(encoding="utf-8").splitlines()


def _write_log(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "app.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _edited_mapping(tmp_path: Path, old: str, new: str) -> Path:
    text = MAPPING.read_text(encoding="utf-8")
    assert old in text, old
    path = tmp_path / "map.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


# --- the worked example (docs/interchange.md) ----------------------------------------


def test_the_example_twopc_log_is_accepted_by_tlc() -> None:
    verdict = validate_trace(load_foreign_trace(LOG, MAPPING))
    assert verdict.accepted, verdict.report()
    assert verdict.steps == 21
    assert verdict.spec == "TwoPhaseCommitMsg"


def test_the_example_with_a_step_left_out_is_rejected_at_the_next_step(tmp_path: Path) -> None:
    lines = _log_lines()
    commit = next(i for i, line in enumerate(lines) if '"event":"tm.commit"' in line)
    log = _write_log(tmp_path, lines[:commit] + lines[commit + 1 :])
    verdict = validate_trace(load_foreign_trace(log, MAPPING))
    assert not verdict.accepted
    assert verdict.divergence is not None
    assert verdict.divergence.line == commit + 1  # the first tm.send_commit, one line up
    assert verdict.divergence.action == "TMSendCommit"


def test_the_example_decodes_sets_functions_and_the_bag_of_messages() -> None:
    trace = load_foreign_trace(LOG, MAPPING)
    assert trace.header is not None
    assert trace.header["spec"] == "TwoPhaseCommitMsg"
    assert trace.header["constants"] == {"RM": frozenset({"r1", "r2"}), "Tx": frozenset({"t1"})}
    init, begin, _, send = trace.steps[:4]
    assert (init.action, init.line, init.ts, init.node) == ("Init", 2, 0, None)
    assert (begin.action, begin.params, begin.node) == ("TMBegin", {"tx": "t1"}, "tm")
    assert begin.vars["tmLog"] == frozenset({Record({"kind": "begin", "tx": "t1"})})
    assert begin.vars["tmPrepared"] == {"t1": frozenset()}
    prepare = Record({"rm": "r2", "tx": "t1", "type": "Prepare"})
    prepare_r1 = Record({"rm": "r1", "tx": "t1", "type": "Prepare"})
    assert send.vars["msgs"] == FnMap({prepare_r1: 1, prepare: 1})
    assert sorted(send.vars) == sorted(
        ["tmState", "tmPrepared", "tmLog", "tmUp", "rmState", "rmLog", "rmUp", "msgs"]
    )


def test_a_bag_counts_every_copy_in_the_logged_list(tmp_path: Path) -> None:
    lines = _log_lines()
    message = '{"type":"Prepare","tx":"t1","rm":"r1"}'
    doubled = lines[3].replace(f'"in_flight":[{message}]', f'"in_flight":[{message},{message}]')
    assert doubled != lines[3]
    trace = load_foreign_trace(_write_log(tmp_path, [*lines[:3], doubled]), MAPPING)
    assert list(trace.steps[-1].vars["msgs"].values()) == [2]


# --- errors in the mapping file --------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('var = "tmLog"', 'var = "tmLogs"', r"map.toml:\d+: variables.tm_log: 'tmLogs' is not a "
         "variable of TwoPhaseCommitMsg"),
        ('var = "tmUp"', 'var = "tmLog"', r"variables.tm_up: tmLog is already the spec name"),
        ('"tm.abort" = "TMAbort"', '"tm.abort" = "TMAbandon"', r"map.toml:\d+: actions.tm.abort: "
         "'TMAbandon' is not an action"),
        ('Tx = { "#set" = ["t1"] }', 'Tx = { "#set" = ["t1"] }\nN = 3',
         r"constants.N: TwoPhaseCommitMsg declares no such constant"),
        ('Tx = { "#set" = ["t1"] }', "", r"constants: no value for Tx"),
        ('Tx = { "#set" = ["t1"] }', 'Tx = { "#set" = [1.5] }', r"constants.Tx: .*1.5 is a float"),
        ('spec = "TwoPhaseCommitMsg"', 'spec = "NoSuchSpec"', r"map.toml:\d+: spec: spec module "
         "NoSuchSpec.tla not found"),
        ('spec = "TwoPhaseCommitMsg"', "", r"spec: name the spec module"),
        ('spec = "TwoPhaseCommitMsg"', 'spec = "TwoPhaseCommitMsg"\nspecs = 1',
         r"map.toml:\d+: specs: unknown key"),
        ('action = "event"', 'actoin = "event"', r"fields.actoin: unknown part"),
        ('vars = "state"', 'vars = ""', r"fields.vars: must be a field name"),
        ('type = "[Tx -> SUBSET RM]"', 'type = "[Tx -> SUBSET RM"', r"variables.tm_prepared: "
         r"type '\[Tx -> SUBSET RM': expected '\]'"),
        ('tm_up = { var = "tmUp", type = "BOOLEAN" }', 'tm_up = { var = "tmUp", kind = "x" }',
         r"variables.tm_up: unknown key 'kind'"),
        ('tm_up = { var = "tmUp", type = "BOOLEAN" }', 'tm_up = "tmUp"',
         r"variables.tm_up: must be a table"),
        ("[params]", "[params\n", r"map.toml: not TOML: .*line"),
        ('txn = "tx"', "txn = 3", r"params.txn: must be a non-empty string"),
    ],
)
def test_a_bad_mapping_is_a_config_error_naming_file_line_and_key(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        read_mapping(_edited_mapping(tmp_path, old, new))


def test_a_mapping_error_names_the_line_of_the_key(tmp_path: Path) -> None:
    path = _edited_mapping(tmp_path, 'var = "tmLog"', 'var = "tmLogs"')
    number = next(
        n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("tm_log")
    )
    with pytest.raises(ConfigError, match=rf"map.toml:{number}: "):
        read_mapping(path)


def test_a_missing_mapping_or_log_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"mapping .*nope\.toml': cannot read it"):
        load_foreign_trace(LOG, tmp_path / "nope.toml")
    with pytest.raises(TraceFormatError, match=r"log .*nope\.log': cannot read it"):
        load_foreign_trace(tmp_path / "nope.log", MAPPING)


def test_a_fifo_a_device_or_a_folder_as_mapping_or_log_is_refused_at_once(
    irregular_path: Path,
) -> None:
    path = irregular_path
    with pytest.raises(ConfigError, match="tlasim reads only regular files"):
        load_foreign_trace(LOG, path)
    with pytest.raises(TraceFormatError, match="tlasim reads only regular files"):
        load_foreign_trace(path, MAPPING)


def test_a_mapping_nested_too_deep_is_a_config_error_not_a_crash(tmp_path: Path) -> None:
    mapping = tmp_path / "deep.toml"
    mapping.write_text('spec = "TwoPhaseCommitMsg"\nx = ' + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"deep\.toml: not TOML that tlasim reads"):
        read_mapping(mapping)


# --- errors in the log -------------------------------------------------------------------


def _step_line(variables: dict[str, Any] | None = None, **fields: Any) -> str:
    """The example's Init line with some of its variables and fields replaced."""
    record = json.loads(_log_lines()[1])
    record["state"].update(variables or {})
    record.update(fields)
    return json.dumps(record)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (_step_line({"tm_log": "begin"}), r"app.log:2: state.tm_log: expected a set \(an array\)"),
        (_step_line({"tm_log": [{"kind": "begin"}]}),
         r"app.log:2: state.tm_log\[0\]: the record's fields are \['kind'\], not \['kind', 'tx'\]"),
        (_step_line({"tm_log": [{"kind": 1, "tx": "t1"}]}),
         r"state.tm_log\[0\].kind: expected a string, got 1"),
        (_step_line({"tm_prepared": {"t1": "r1"}}), r"state.tm_prepared\['t1'\]: expected a set"),
        (_step_line({"in_flight": {"#set": []}}), r"state.in_flight: expected a bag"),
        (_step_line({"tm_up": 1}), r"state.tm_up: expected a boolean, got 1"),
        (_step_line({"rm_up": {"r1": None}}), r"state.rm_up\['r1'\]: null is not a TLA\+ value"),
        (_step_line({"tm_clock": 3}), r"app.log:2: the logged variable 'tm_clock' is not a "
         r"variable of TwoPhaseCommitMsg nor under \[variables\]"),
        (_step_line({"tmUp": True}), r"app.log:2: tmUp is logged twice"),
        (_step_line(tick="10:15"), r"app.log:2: tick must be an integer"),
        (_step_line(event=7), r"app.log:2: the action must be a non-empty string"),
        (_step_line(state=[]), r"app.log:2: state must be an object"),
        (_step_line(args={"txn": "t1", "tx": "t1"}), r"the parameter 'tx' is logged twice"),
        ('{"event": "init", "state": {}', r"app.log:2: bad JSON"),
        ("[1, 2]", r"app.log:2: a log record must be an object"),
    ],
)
def test_a_bad_log_line_is_a_trace_format_error_naming_file_line_and_path(
    tmp_path: Path, line: str, message: str
) -> None:
    log = _write_log(tmp_path, [_log_lines()[0], line])
    with pytest.raises(TraceFormatError, match=message):
        load_foreign_trace(log, MAPPING)


def test_a_log_with_no_step_says_which_fields_it_looked_for(tmp_path: Path) -> None:
    log = _write_log(tmp_path, [_log_lines()[0]])
    with pytest.raises(TraceFormatError, match=r"no line holds the field 'state' or 'event'"):
        load_foreign_trace(log, MAPPING)


def test_a_logged_variable_with_the_spec_name_needs_no_mapping(tmp_path: Path) -> None:
    mapping = _edited_mapping(tmp_path, 'tm_up = { var = "tmUp", type = "BOOLEAN" }\n', "")
    record = json.loads(_step_line())
    record["state"]["tmUp"] = record["state"].pop("tm_up")
    trace = load_foreign_trace(_write_log(tmp_path, [json.dumps(record)]), mapping)
    assert trace.steps[0].vars["tmUp"] is True


def test_ignored_variables_and_wrapped_entries_are_read(tmp_path: Path) -> None:
    mapping = _edited_mapping(tmp_path, 'spec = "TwoPhaseCommitMsg"',
                              'spec = "TwoPhaseCommitMsg"\nignore = ["tm_clock"]')
    record = json.loads(_step_line({"tm_clock": 3}))
    wrapped = json.dumps({"level": "INFO", "entry": json.dumps(record)})
    trace = read_foreign_log(_write_log(tmp_path, [wrapped]), read_mapping(mapping))
    assert trace.steps[0].action == "Init" and "tm_clock" not in trace.steps[0].vars


# --- decoding by type, by property -----------------------------------------------------

_INT, _STR, _BOOL = Shape("int"), Shape("str"), Shape("bool")
_FIELDS = ("a", "b", "c")

shapes = st.recursive(
    st.sampled_from([_INT, _STR, _BOOL, ANY]),
    lambda inner: st.one_of(
        st.tuples(inner).map(lambda p: Shape("set", p)),
        st.tuples(inner).map(lambda p: Shape("seq", p)),
        st.tuples(inner).map(lambda p: Shape("bag", p)),
        st.lists(inner, min_size=2, max_size=3).map(lambda p: Shape("tuple", tuple(p))),
        st.lists(inner, min_size=1, max_size=3).map(
            lambda p: Shape("record", tuple(p), _FIELDS[: len(p)])
        ),
        st.tuples(st.sampled_from([_INT, _STR, ANY]), inner).map(lambda p: Shape("fn", p)),
    ),
    max_leaves=6,
)
any_values = st.recursive(
    st.one_of(st.integers(-(2**40), 2**40), st.booleans(), st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple),
        st.frozensets(inner, max_size=3),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(Record),
        st.dictionaries(st.integers(-3, 3), inner, max_size=3).map(FnMap),
    ),
    max_leaves=8,
)


def values_of(shape: Shape) -> st.SearchStrategy[Any]:
    """Values of a shape; a bag is drawn as its elements with their counts."""
    kind = shape.kind
    if kind == "int":
        return st.integers(-(2**60), 2**60)
    if kind == "str":
        return st.text(max_size=4)
    if kind == "bool":
        return st.booleans()
    if kind == "any":
        return any_values
    if kind == "set":
        return st.frozensets(values_of(shape.element()), max_size=3)
    if kind == "seq":
        return st.lists(values_of(shape.element()), max_size=3).map(tuple)
    if kind == "tuple":
        return st.tuples(*(values_of(p) for p in shape.parts))
    if kind == "record":
        return st.tuples(*(values_of(p) for p in shape.parts)).map(
            lambda vs: Record(zip(shape.names, vs, strict=True))
        )
    domain = st.integers(-3, 3) if shape.domain().kind == "int" else (
        st.text(max_size=3) if shape.domain().kind == "str" else values_of(shape.domain())
    )
    counts = st.integers(1, 3) if kind == "bag" else values_of(shape.range())
    return st.dictionaries(domain, counts, max_size=3).map(FnMap)


def plain(value: Any, shape: Shape) -> Any:
    """The untagged JSON another system would log for a value of a shape."""
    kind = shape.kind
    if kind in ("int", "str", "bool"):
        return value
    if kind == "any":
        return to_json(value)
    if kind == "set":
        return [plain(x, shape.element()) for x in sorted(value, key=canonical_json)]
    if kind in ("seq", "tuple"):
        return [plain(x, shape.item(i)) for i, x in enumerate(value)]
    if kind == "record":
        return {f: plain(value[f], shape.field(f)) for f in shape.names}
    if kind == "bag":
        return [plain(k, shape.element()) for k, n in value.items() for _ in range(n)]
    if shape.domain().kind in ("int", "str"):
        return {str(k): plain(v, shape.range()) for k, v in value.items()}
    return [[plain(k, shape.domain()), plain(v, shape.range())] for k, v in value.items()]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_plain_json_decodes_to_the_value_its_type_describes(data: st.DataObject) -> None:
    shape = data.draw(shapes)
    value = data.draw(values_of(shape))
    logged = json.loads(json.dumps(plain(value, shape)))
    if not tlc_can_hold(value):
        with pytest.raises(TraceFormatError, match="mixes"):
            decode_plain(logged, shape, "x")
        return
    assert canonical_json(decode_plain(logged, shape, "x")) == canonical_json(value)


def test_decoding_keeps_a_function_key_that_looks_like_a_tag() -> None:
    assert decode_plain({"#id": [1]}, Shape("fn", (_STR, ANY)), "x") == Record({"#id": (1,)})
    with pytest.raises(TraceFormatError, match="x: expected a function"):
        decode_plain({"#set": [1]}, Shape("fn", (_STR, ANY)), "x")


def test_a_value_that_misfits_its_type_names_the_path() -> None:
    fn = Shape("fn", (_INT, Shape("set", (_STR,))))
    with pytest.raises(TraceFormatError, match=re.escape("x['1x']: the key '1x' is not a 64-bit")):
        decode_plain({"1x": []}, fn, "x")
    with pytest.raises(TraceFormatError, match=re.escape("x['2'][0]: expected a string, got 3")):
        decode_plain({"2": [3]}, fn, "x")
