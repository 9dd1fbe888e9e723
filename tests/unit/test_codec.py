"""tracing.codec: reading traces in every accepted shape, and writing them."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import msgpack
import pytest

from tlasim.protocols.errors import ConfigError, InternalError, TraceFormatError
from tlasim.tracing.codec import TraceWriter, read_trace
from tlasim.tracing.values import FnMap, Record

HEADER = {
    "event": "tla_trace_header",
    "schema": 1,
    "protocol": "twopc",
    "spec": "TwoPhaseCommitMsg",
    "seed": 7,
    "options": {"loss_probability": 0.25},
    "tool_version": "0.1.0",
    "source_revision": "sha256:abc",
    "constants": {"RM": {"#set": ["r1", "r2"]}},
    "variables": {"rmState": "[RM -> STRING]", "msgs": "[Msg -> Nat]"},
}
MSG = {"type": "Prepare", "tx": "t1", "rm": "r1"}
INIT = {
    "event": "tla_trace",
    "seq": 0,
    "ts": 0,
    "action": "Init",
    "params": {},
    "vars": {"rmState": {"r1": "working", "r2": "working"}, "msgs": {}},
}
SEND = {
    "event": "tla_trace",
    "seq": 1,
    "ts": 4,
    "node": "tm",
    "action": "TMSendPrepare",
    "params": {"tx": "t1", "rm": "r1"},
    "vars": {"rmState": {"r1": "working", "r2": "working"}, "msgs": {"#map": [[MSG, 1]]}},
}


def _ndjson(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "trace.ndjson"
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    path.write_text(text, encoding="utf-8")
    return path


def _msgpack(tmp_path: Path, *records: Any) -> Path:
    path = tmp_path / "trace.msgpack"
    path.write_bytes(b"".join(msgpack.packb(r, use_bin_type=True) for r in records))
    return path


def test_ndjson_trace_gives_header_and_steps_with_frozen_vars(tmp_path: Path) -> None:
    trace = read_trace(_ndjson(tmp_path, HEADER, INIT, "", SEND))
    assert trace.header is not None
    assert trace.header["spec"] == "TwoPhaseCommitMsg"
    assert trace.header["constants"] == {"RM": frozenset({"r1", "r2"})}
    assert trace.header["options"]["loss_probability"] == 0.25
    first, second = trace.steps
    assert (first.line, first.seq, first.ts, first.node, first.action) == (2, 0, 0, None, "Init")
    assert (second.line, second.node, second.action) == (4, "tm", "TMSendPrepare")
    assert second.params == {"tx": "t1", "rm": "r1"}
    assert isinstance(second.vars["msgs"], FnMap)
    assert second.vars["msgs"][Record(MSG)] == 1


def test_msgpack_trace_reads_the_same_steps_as_ndjson(tmp_path: Path) -> None:
    from_ndjson = read_trace(_ndjson(tmp_path, HEADER, INIT, SEND))
    from_msgpack = read_trace(_msgpack(tmp_path, HEADER, INIT, SEND))
    assert from_msgpack.header == from_ndjson.header
    assert [(s.action, s.vars, s.params) for s in from_msgpack.steps] == [
        (s.action, s.vars, s.params) for s in from_ndjson.steps
    ]
    assert [s.line for s in from_msgpack.steps] == [2, 3]


def test_slog_record_with_entry_as_json_string_is_a_step(tmp_path: Path) -> None:
    # What Go's slog JSONHandler writes for log.Info("tla_trace", "entry", string(raw)).
    entry = json.dumps({"ts": 1700000000123, "action": "TMCommit", "vars": {"tmState": "x"}})
    line = {"time": "2024-05-01T12:00:00Z", "level": "INFO", "msg": "tla_trace", "entry": entry}
    (step,) = read_trace(_ndjson(tmp_path, line)).steps
    assert (step.ts, step.action, step.seq) == (1700000000123, "TMCommit", None)
    assert step.vars == {"tmState": "x"}
    assert step.params == {}


def test_structlog_record_with_entry_as_object_is_a_step(tmp_path: Path) -> None:
    line = {"event": "step", "level": "info", "entry": {"ts": 2, "action": "A", "vars": {}}}
    (step,) = read_trace(_ndjson(tmp_path, line)).steps
    assert (step.line, step.action) == (1, "A")


def test_bare_step_objects_need_no_header(tmp_path: Path) -> None:
    trace = read_trace(_ndjson(tmp_path, {"ts": 1, "action": "Init", "vars": {"x": 1}}))
    assert trace.header is None
    assert trace.steps[0].vars == {"x": 1}


def test_foreign_log_lines_are_skipped(tmp_path: Path) -> None:
    trace = read_trace(
        _ndjson(
            tmp_path,
            {"msg": "server started", "level": "INFO", "port": 8080},
            INIT,
            {"event": "request", "action": "login"},
            SEND,
        )
    )
    assert [s.line for s in trace.steps] == [2, 4]


def test_header_nested_under_its_own_key_is_read(tmp_path: Path) -> None:
    wrapped = {"level": "info", "tla_trace_header": {k: v for k, v in HEADER.items()}}
    trace = read_trace(_ndjson(tmp_path, wrapped, INIT))
    assert trace.header is not None and trace.header["protocol"] == "twopc"


def test_line_separators_inside_strings_do_not_split_a_record(tmp_path: Path) -> None:
    step = {"ts": 0, "action": "Init", "vars": {"s": "a\u2028b\u0085c\rd"}}
    path = tmp_path / "t.ndjson"
    path.write_bytes(json.dumps(step, ensure_ascii=False).encode() + b"\n")
    assert read_trace(path).steps[0].vars["s"] == "a\u2028b\u0085c\rd"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([INIT, "{not json"], ":2: bad JSON"),
        ([INIT, {"event": "tla_trace", "ts": 1}], ":2: the step has neither an action nor vars"),
        ([{"ts": 1, "action": 3, "vars": {}}], ":1: the action must be a non-empty string"),
        ([{"action": "A", "vars": [1, 2]}], ":1: vars must map names to values"),
        ([{"action": "A", "vars": {"#set": []}}], ":1: vars must map names to values"),
        ([{"action": "A", "vars": {"x": {"#bag": []}}}], ":1: vars['x']: unknown tag '#bag'"),
        ([{"action": "A", "vars": {"x": 0.5}}], ":1: vars['x']: 0.5 is a float"),
        ([{"action": "A", "vars": {}, "ts": "soon"}], ":1: ts must be an integer"),
        ([{"action": "A", "vars": {}, "params": []}], ":1: params must be an object"),
        ([{"msg": "tla_trace", "entry": "{oops"}], ":1: the entry string is not JSON"),
        ([INIT, "[1, 2]"], ":2: a trace record must be an object"),
        ([HEADER, HEADER, INIT], ":2: a second header (the first is at "),
        ([INIT, HEADER], ":2: the header comes after the first step"),
        ([{**HEADER, "schema": 2}, INIT], ":1: header schema 2 is not supported"),
        ([{"msg": "hello"}], ": the trace holds no step records"),
    ],
)
def test_malformed_ndjson_names_the_file_and_line(
    tmp_path: Path, lines: list[Any], message: str
) -> None:
    path = _ndjson(tmp_path, *lines)
    with pytest.raises(TraceFormatError) as err:
        read_trace(path)
    assert str(err.value).startswith(str(path))
    assert message in str(err.value)


def test_empty_file_is_an_empty_trace(tmp_path: Path) -> None:
    path = tmp_path / "empty.ndjson"
    path.write_bytes(b"  \n\n")
    with pytest.raises(TraceFormatError, match="the trace is empty"):
        read_trace(path)


def test_file_that_is_neither_ndjson_nor_msgpack_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_text("INFO server started\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="begins neither an ndjson trace"):
        read_trace(path)


def test_missing_file_is_a_trace_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="cannot read it: No such file"):
        read_trace(tmp_path / "absent.ndjson")


def test_truncated_msgpack_names_the_record_after_the_last_whole_one(tmp_path: Path) -> None:
    path = _msgpack(tmp_path, INIT, SEND)
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(TraceFormatError, match="record 2: truncated"):
        read_trace(path)


def test_msgpack_record_that_is_not_a_map_is_refused(tmp_path: Path) -> None:
    path = _msgpack(tmp_path, INIT, [1, 2])
    with pytest.raises(TraceFormatError, match="record 2: a trace record must be an object"):
        read_trace(path)


def test_msgpack_bytes_value_is_refused(tmp_path: Path) -> None:
    path = _msgpack(tmp_path, {"action": "A", "vars": {"x": b"\x00"}})
    with pytest.raises(TraceFormatError, match=r"record 1: vars\['x'\]: a bytes"):
        read_trace(path)


# --- TraceWriter --------------------------------------------------------------


def test_ndjson_writer_keeps_the_record_key_order_and_is_compact() -> None:
    out = io.BytesIO()
    writer = TraceWriter(out, "ndjson")
    writer.write({"event": "tla_trace", "seq": 0, "vars": {"s": "é\n"}})
    writer.close()
    assert out.getvalue() == '{"event":"tla_trace","seq":0,"vars":{"s":"é\\n"}}\n'.encode()


def test_msgpack_writer_matches_packb() -> None:
    out = io.BytesIO()
    writer = TraceWriter(out, "msgpack")
    writer.write(SEND)
    assert out.getvalue() == msgpack.packb(SEND, use_bin_type=True)


@pytest.mark.parametrize(
    ("fmt", "record"),
    [
        ("ndjson", {"event": "x", "v": float("nan")}),
        ("ndjson", {"event": "x", "v": object()}),
        ("ndjson", {"event": "x", "v": "\ud800"}),
        ("msgpack", {"event": "x", "v": 2**70}),
    ],
)
def test_writer_refuses_what_its_format_cannot_hold(fmt: Any, record: dict[str, Any]) -> None:
    with pytest.raises(TraceFormatError, match="cannot write the 'x' record"):
        TraceWriter(io.BytesIO(), fmt).write(record)


def test_writer_refuses_unknown_format_and_writes_after_close() -> None:
    with pytest.raises(ConfigError):
        TraceWriter(io.BytesIO(), "yaml")  # type: ignore[arg-type]
    writer = TraceWriter(io.BytesIO(), "ndjson")
    writer.close()
    with pytest.raises(InternalError):
        writer.write({"event": "x"})


def test_partial_lines_read_with_what_they_logged(tmp_path: Path) -> None:
    # A partial log may leave out the action, or the vars, of a line (a record
    # with neither vars nor the step event is some other log line).
    path = tmp_path / "partial.ndjson"
    rows = [
        {"action": "Init", "vars": {"x": 0, "y": 0}},
        {"vars": {"x": 1}},
        {"event": "tla_trace", "action": "Tick"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    steps = read_trace(path).steps
    assert [(s.action, dict(s.vars)) for s in steps] == [
        ("Init", {"x": 0, "y": 0}),
        (None, {"x": 1}),
        ("Tick", {}),
    ]


def test_unchanged_variables_are_one_object_from_line_to_line(tmp_path: Path) -> None:
    # The validator tells an unchanged value by identity, so reading keeps it.
    path = tmp_path / "t.ndjson"
    rows = [
        {"action": "A", "vars": {"s": {"#set": [1, 2]}, "b": True}},
        {"action": "B", "vars": {"s": {"#set": [1, 2]}, "b": 1}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    first, second = read_trace(path).steps
    assert second.vars["s"] is first.vars["s"]
    # TRUE and 1 are different TLA+ values, though Python holds them equal.
    assert type(second.vars["b"]) is int and type(first.vars["b"]) is bool


def test_a_fifo_a_device_or_a_folder_given_as_a_trace_is_refused_at_once(
    irregular_path: Path,
) -> None:
    from tlasim.tracing.interchange.itf import read_itf

    path = irregular_path
    for read in (read_trace, read_itf):
        with pytest.raises(TraceFormatError, match="tlasim reads only regular files"):
            read(path)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({"schema": True}, "header schema True is not supported"),
        ({"schema": 1.0}, "header schema 1.0 is not supported"),
        ({"schema": "1"}, "header schema '1' is not supported"),
        ({"seed": True}, "header seed must be an integer"),
        ({"seed": 2**64}, "header seed must be an integer of at most 64 bits"),
        ({"options": {"x": 2**70}}, "header options.x: the integer"),
        ({"options": [[[[1.5, None, "ok"]]]], "spec": "S"}, None),
        ({"variables": {"x": 1}}, "header variables must map"),
    ],
)
def test_header_fields_have_exact_types(
    tmp_path: Path, header: dict[str, Any], message: str | None
) -> None:
    record = {"event": "tla_trace_header", **header}
    path = _ndjson(tmp_path, record, {"action": "Init", "vars": {"x": 1}})
    if message is None:
        assert read_trace(path).header is not None
        return
    with pytest.raises(TraceFormatError, match=re.escape(message)):
        read_trace(path)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({"event": "tla_trace_header", 1: 2}, "header key 1 is not a string"),
        ({"event": "tla_trace_header", "options": {1: "a", "b": 2}}, "key 1 is not a string"),
        ({"event": "tla_trace_header", "options": {"p": float("nan")}}, "nan is not a finite"),
        ({"event": "tla_trace_header", "options": {"p": float("inf")}}, "inf is not a finite"),
        ({"event": "tla_trace_header", "options": b"\x00"}, "is not plain JSON"),
    ],
)
def test_msgpack_header_with_odd_keys_or_non_finite_numbers_is_a_clean_error(
    tmp_path: Path, header: dict[Any, Any], message: str
) -> None:
    path = tmp_path / "t.msgpack"
    step = {"event": "tla_trace", "action": "Init", "vars": {"x": 1}}
    path.write_bytes(msgpack.packb(header) + msgpack.packb(step))
    with pytest.raises(TraceFormatError, match=re.escape(message)) as caught:
        read_trace(path)
    assert str(caught.value).startswith(f"{path}: record 1: ")


@pytest.mark.parametrize("depth", [101, 1_000, 100_000])
@pytest.mark.parametrize("where", ["vars", "options", "entry"])
def test_nesting_past_the_limit_names_the_file_and_line_in_ndjson_and_msgpack(
    tmp_path: Path, depth: int, where: str
) -> None:
    deep = "[" * depth + "]" * depth
    lines = {
        "vars": ['{"action": "Init", "vars": {"x": ' + deep + "}}"],
        "options": ['{"event": "tla_trace_header", "options": ' + deep + "}",
                    '{"action": "Init", "vars": {"x": 1}}'],
        "entry": ['{"msg": "x", "entry": ' + json.dumps('{"vars": {"x": ' + deep + "}}") + "}"],
    }[where]
    path = tmp_path / "t.ndjson"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match=f"{re.escape(str(path))}:1: .*deep") as caught:
        read_trace(path)
    assert "100" in str(caught.value)
    if depth <= 1_000:
        packed = tmp_path / "t.msgpack"
        records = [json.loads(line) for line in lines] if depth < 900 else None
        if records is not None:
            packed.write_bytes(b"".join(msgpack.packb(r) for r in records))
            with pytest.raises(TraceFormatError, match=r"record 1: .*(deep|levels)"):
                read_trace(packed)
