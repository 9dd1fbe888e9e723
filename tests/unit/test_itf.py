"""tracing.interchange.itf: tlasim traces as the Informal Trace Format, and back, exactly."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from tla_kinds import tlc_can_hold

from tlasim.protocols.errors import TraceFormatError
from tlasim.sim import exitcodes
from tlasim.sim.cli.interchange import export
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import Trace, read_trace
from tlasim.tracing.interchange.foreign import load_foreign_trace
from tlasim.tracing.interchange.itf import (
    itf_to_tagged,
    itf_to_trace,
    read_itf,
    trace_to_itf,
    value_to_itf,
    write_itf,
)
from tlasim.tracing.tla.type_expr import ANY, Shape
from tlasim.tracing.values import FnMap, Record, canonical_json, from_json

FOREIGN = Path(__file__).resolve().parents[2] / "docs" / "examples" / "foreign"
PROTOCOLS = ("twopc", "shardsplit", "snapshot")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Trace]:
    """One simulated trace per protocol, under swarm faults (crashes, loss, duplicates)."""
    folder = tmp_path_factory.mktemp("itf")
    out = {}
    for protocol in PROTOCOLS:
        path = folder / f"{protocol}.ndjson"
        run_seed(protocol, 1, trace_path=path)
        out[protocol] = read_trace(path)
    return out


def _itf_text(trace: Trace) -> str:
    buffer = io.StringIO()
    write_itf(trace, buffer)
    return buffer.getvalue()


def _header_without_event(trace: Trace) -> Record:
    assert trace.header is not None
    return Record({k: v for k, v in trace.header.items() if k != "event"})


# --- whole traces -----------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_itf_export_of_a_simulated_trace_reads_back_to_the_same_trace(
    traces: dict[str, Trace], protocol: str
) -> None:
    trace = traces[protocol]
    doc = json.loads(_itf_text(trace))
    assert all(_is_itf(v) for state in doc["states"] for k, v in state.items() if k != "#meta")
    back = itf_to_trace(doc, trace.path)
    assert back.steps == trace.steps
    assert back.header == _header_without_event(trace)
    for ours, theirs in zip(trace.steps, back.steps, strict=True):
        assert canonical_json(theirs.vars) == canonical_json(ours.vars)
        assert canonical_json(theirs.params) == canonical_json(ours.params)


def test_itf_export_is_the_same_bytes_every_time(traces: dict[str, Trace]) -> None:
    trace = traces["shardsplit"]
    assert _itf_text(trace) == _itf_text(read_trace(trace.path))


def test_itf_export_puts_the_header_in_meta_and_the_constants_in_the_first_state(
    traces: dict[str, Trace],
) -> None:
    doc = json.loads(_itf_text(traces["twopc"]))
    meta = doc["#meta"]
    assert meta["format"] == "ITF"
    assert (meta["spec"], meta["protocol"], meta["seed"]) == ("TwoPhaseCommitMsg", "twopc", 1)
    assert "event" not in meta and "constants" not in meta
    assert doc["params"] == ["RM", "Tx"]
    assert doc["vars"] == sorted(traces["twopc"].steps[0].vars)
    first, second = doc["states"][:2]
    assert first["RM"] == {"#set": ["r1", "r2", "r3"]}
    assert "RM" not in second
    assert set(second) == {"#meta", *doc["vars"]}


def test_itf_state_meta_holds_the_action_its_params_and_where_the_line_was(
    traces: dict[str, Trace],
) -> None:
    trace = traces["twopc"]
    doc = json.loads(_itf_text(trace))
    for index, (state, step) in enumerate(zip(doc["states"], trace.steps, strict=True)):
        meta = state["#meta"]
        assert meta["index"] == index
        assert (meta["action"], meta["line"], meta["seq"], meta["ts"]) == (
            step.action, step.line, step.seq, step.ts,
        )
        assert meta.get("node") == step.node
    send = next(s["#meta"] for s in doc["states"] if s["#meta"]["action"] == "TMSendPrepare")
    assert set(send["params"]) == {"rm", "tx"}


def test_itf_writes_declared_functions_as_maps_records_as_objects_and_ints_as_bigints(
    traces: dict[str, Trace],
) -> None:
    states = json.loads(_itf_text(traces["twopc"]))["states"]
    last = states[-1]
    # tmState is declared [Tx -> ...]: a function, though its domain is strings.
    assert [k for k, _ in last["tmState"]["#map"]] == ["t1", "t2", "t3", "t4", "t5"]
    # tmLog is a set of records; a record stays an object.
    assert all(type(r) is dict and set(r) == {"kind", "tx"} for r in last["tmLog"]["#set"])
    # msgs is a bag: a map from message records to counts.
    bags = [s["msgs"]["#map"] for s in states if s["msgs"]["#map"]]
    assert bags and all(type(m) is dict and set(n) == {"#bigint"} for b in bags for m, n in b)
    snapshot = json.loads(_itf_text(traces["snapshot"]))["states"][-1]
    assert set(snapshot["srcSnap"]) == {"#bigint"}
    assert type(snapshot["srcLog"]) is list  # Seq(...): a JSON array


def test_itf_export_refuses_a_line_that_logs_other_variables(traces: dict[str, Trace]) -> None:
    trace = traces["twopc"]
    partial = Record({k: v for k, v in trace.steps[3].vars.items() if k != "msgs"})
    broken = replace(trace, steps=(*trace.steps[:3], replace(trace.steps[3], vars=partial)))
    with pytest.raises(TraceFormatError, match=rf":{trace.steps[3].line}: .*lacks msgs"):
        trace_to_itf(broken)


def test_itf_round_trips_a_foreign_trace_without_a_tlasim_header() -> None:
    trace = load_foreign_trace(FOREIGN / "twopc.log", FOREIGN / "twopc.toml")
    back = itf_to_trace(json.loads(_itf_text(trace)), trace.path)
    assert back.steps == trace.steps
    assert back.header == trace.header


def test_read_itf_reads_a_file_and_names_it_in_errors(
    traces: dict[str, Trace], tmp_path: Path
) -> None:
    path = tmp_path / "t.itf.json"
    path.write_text(_itf_text(traces["twopc"]), encoding="utf-8")
    assert read_itf(path).steps == traces["twopc"].steps
    with pytest.raises(TraceFormatError, match=r"nope\.itf\.json': cannot read"):
        read_itf(tmp_path / "nope.itf.json")
    path.write_text("{", encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"t\.itf\.json: not JSON"):
        read_itf(path)


# --- reading ITF that other tools write --------------------------------------------


def test_itf_reader_takes_every_spelling_itf_allows() -> None:
    doc = {
        "#meta": {"source": "MC.tla", "description": "Created by Apalache"},
        "vars": ["x", "f"],
        "loop": 1,
        "states": [
            {"#meta": {"index": 0}, "x": 1, "f": {"#map": [["a", {"#tup": [1, "b"]}]]}},
            {"#meta": {"index": 1}, "x": {"#bigint": "2"}, "f": {"a": [{"#bigint": "1"}, "b"]}},
        ],
    }
    trace = itf_to_trace(doc, "apalache.itf.json")
    assert trace.header is None
    first, second = trace.steps
    assert first.action is None and (first.line, second.line) == (1, 2)
    assert first.vars["f"] == second.vars["f"] == Record({"a": (1, "b")})
    assert (first.vars["x"], second.vars["x"]) == (1, 2)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5, "value: 1.5 is a float"),
        (None, "value: null"),
        ({"#bigint": "12x"}, r"value\['#bigint'\]: must hold a decimal integer"),
        ({"#unserializable": "Nat"}, r"\['#unserializable'\]: the value 'Nat' was not serialised"),
        ({"#set": [1, {"#what": 2}]}, r"value\['#set'\]\[1\]\['#what'\]: unknown tag"),
        ({"#map": [[1, 2, 3]]}, r"\['#map'\]: entry 0 is not a \[key, value\] pair"),
        ({"a": [True, None]}, r"value\['a'\]\[1\]: null"),
    ],
)
def test_itf_reader_names_the_path_of_a_bad_value(value: Any, message: str) -> None:
    with pytest.raises(TraceFormatError, match=message):
        itf_to_tagged(value)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "an ITF trace is a JSON object"),
        ({"vars": "x", "states": []}, "'vars' must be a list of names"),
        ({"vars": ["x"], "states": []}, "'states' must be a non-empty list"),
        ({"vars": ["x"], "states": [{"y": 1}]}, r"states\[0\]: no value for x; y not in vars"),
        ({"vars": ["x"], "params": ["N"], "states": [{"x": 1}]}, r"states\[0\]: no value for N"),
        ({"vars": ["x"], "states": [{"x": 1, "#meta": {"ts": "now"}}]}, "#meta ts must be int"),
        ({"vars": ["x"], "states": [{"x": 1.0}]}, r"states\[0\]\.x: 1\.0 is a float"),
    ],
)
def test_itf_reader_names_the_state_of_a_bad_trace(doc: Any, message: str) -> None:
    with pytest.raises(TraceFormatError, match=message):
        itf_to_trace(doc, "bad.itf.json")


# --- values, by property ---------------------------------------------------------

scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1), st.booleans(), st.text(max_size=5)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple),
        st.frozensets(inner, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3).map(Record),
        st.dictionaries(st.sampled_from(["#", "#set", "#meta", "a"]), inner, max_size=2).map(
            Record
        ),
        st.dictionaries(inner, inner, max_size=3).map(FnMap),
    ),
    max_leaves=14,
)
shapes = st.recursive(
    st.sampled_from([ANY, Shape("int"), Shape("str")]),
    lambda inner: st.one_of(
        st.tuples(inner).map(lambda p: Shape("set", p)),
        st.tuples(inner).map(lambda p: Shape("seq", p)),
        st.tuples(inner, inner).map(lambda p: Shape("fn", p)),
        st.tuples(inner).map(lambda p: Shape("bag", p)),
        st.lists(inner, min_size=1, max_size=3).map(
            lambda p: Shape("record", tuple(p), tuple("abc"[: len(p)]))
        ),
    ),
    max_leaves=6,
)


def _is_itf(j: Any) -> bool:
    """Whether j is ITF as tlasim writes it: no bare numbers, no '#' field names."""
    if type(j) is int:
        return False
    if type(j) is list:
        return all(_is_itf(x) for x in j)
    if type(j) is dict:
        if len(j) == 1 and next(iter(j)) in ("#set", "#tup", "#bigint"):
            inner = next(iter(j.values()))
            return type(inner) is str or all(_is_itf(x) for x in inner)
        if len(j) == 1 and "#map" in j:
            return all(_is_itf(k) and _is_itf(v) for k, v in j["#map"])
        return not any(k.startswith("#") for k in j) and all(_is_itf(x) for x in j.values())
    return True


@settings(max_examples=300, deadline=None)
@given(values, shapes)
def test_any_value_goes_to_itf_and_back_exactly_whatever_the_type_hint(
    value: Any, shape: Shape
) -> None:
    itf = value_to_itf(value, shape)
    assert _is_itf(itf)
    text = json.dumps(itf, ensure_ascii=False)
    if not tlc_can_hold(value):
        with pytest.raises(TraceFormatError, match="mixes"):
            from_json(itf_to_tagged(json.loads(text)))
        return
    back = from_json(itf_to_tagged(json.loads(text)))
    assert back == value
    assert canonical_json(back) == canonical_json(value)


# --- the command ------------------------------------------------------------------


def test_export_command_writes_itf_to_stdout_or_a_file(
    traces: dict[str, Trace], tmp_path: Path
) -> None:
    trace = traces["twopc"]
    result = CliRunner().invoke(export, ["--format", "itf", trace.path])
    assert result.exit_code == exitcodes.OK, result.output
    assert result.output == _itf_text(trace)
    out = tmp_path / "t.itf.json"
    result = CliRunner().invoke(export, [trace.path, "--out", str(out)])
    assert result.exit_code == exitcodes.OK and result.output == ""
    assert read_itf(out).steps == trace.steps


def test_export_command_reads_a_foreign_log_through_its_mapping() -> None:
    args = [str(FOREIGN / "twopc.log"), "--mapping", str(FOREIGN / "twopc.toml")]
    result = CliRunner().invoke(export, args)
    assert result.exit_code == exitcodes.OK, result.output
    doc = json.loads(result.output)
    assert doc["#meta"]["spec"] == "TwoPhaseCommitMsg"
    assert doc["states"][2]["#meta"]["action"] == "TMSendPrepare"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/no/such/trace.ndjson"], "trace '/no/such/trace.ndjson': cannot read it"),
        (["--format", "tla", "x"], "Invalid value for '--format'"),
        (["TRACE", "--out", "/proc/no/such/dir/t.json"], "/proc/no/such/dir/t.json"),
        (["TRACE", "--mapping", "/no/such/map.toml"], "mapping '/no/such/map.toml': cannot read"),
    ],
)
def test_export_command_turns_bad_input_into_a_message_and_exit_code_2(
    traces: dict[str, Trace], args: list[str], message: str
) -> None:
    args = [traces["twopc"].path if a == "TRACE" else a for a in args]
    result = CliRunner().invoke(export, args)
    assert result.exit_code == exitcodes.USAGE
    assert message in result.output
    assert "Traceback" not in result.output
