"""Fuzzing every reader of a user's file, and the TLA+ writer: hostile input
gets a clean error or a right answer, never a traceback and never a wrong value.

Property: only a TlasimError other than InternalError may escape a reader
(never RecursionError, TypeError, ValueError, KeyError, OverflowError or
MemoryError), and what a reader accepts is what the input says, type for
type: `_expected` below reads tagged JSON by the documented rules
(docs/trace-format.md) without using tracing.values, so a set that kept one of
`[0]` and `[false]`, or a header `schema` of `true` read as 1, shows.

Each test runs FUZZ_EXAMPLES inputs (a few hundred; thousands in all) in the
default run; the `slow` ones run SLOW_EXAMPLES. TLASIM_FUZZ_EXAMPLES sets
both, e.g. `TLASIM_FUZZ_EXAMPLES=100000 pytest tests/unit/test_fuzz_inputs.py
--hypothesis-show-statistics` for the figures in the issue.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tlasim.faults.plan import FaultPlan
from tlasim.protocols.errors import ConfigError, InternalError, TLCError, TraceFormatError
from tlasim.tracing.codec import read_trace
from tlasim.tracing.interchange.itf import itf_to_tagged, itf_to_trace
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.tla.parse import parse_value, tlc_key
from tlasim.tracing.tla.type_expr import parse_type, type_hint
from tlasim.tracing.values import MAX_DEPTH, FnMap, Record, canonical_json, from_json

_ENV = int(os.environ.get("TLASIM_FUZZ_EXAMPLES", "0"))
FUZZ_EXAMPLES = _ENV or 400
SLOW_EXAMPLES = _ENV or 2_000
_FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_SLOW = settings(_FUZZ, max_examples=SLOW_EXAMPLES)

_WORK = Path(tempfile.mkdtemp(prefix="tlasim-fuzz-"))


def _file(data: bytes, name: str = "t") -> Path:
    path = _WORK / name
    path.write_bytes(data)
    return path


# --- the oracle: tagged JSON read by the documented rules -----------------------


class _Refused(Exception):
    """The input is not a value the documented format allows."""


def _kind(canon: Any) -> str:
    if type(canon) is bool:
        return "bool"
    if type(canon) in (int, str):
        return type(canon).__name__
    if type(canon) is dict and len(canon) == 1 and "#set" in canon:
        return "set"
    return "function"


def _text(canon: Any) -> str:
    return json.dumps(canon, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _expected(o: Any, depth: int = 0) -> Any:
    """The canonical tagged JSON that the input `o` stands for; _Refused if none."""
    t = type(o)
    if t is str or t is bool:
        return o
    if t is int:
        if not -(2**63) <= o < 2**63:
            raise _Refused
        return o
    if t not in (list, dict):
        raise _Refused  # float, NaN, null, bytes, ...
    if depth >= MAX_DEPTH:
        raise _Refused
    if t is list:
        return [_expected(x, depth + 1) for x in o]
    if len(o) == 1 and type(next(iter(o))) is str and next(iter(o)).startswith("#"):
        ((tag, inner),) = o.items()
        if tag not in ("#set", "#map", "#tup") or type(inner) is not list:
            raise _Refused
        if tag == "#tup":
            return [_expected(x, depth + 1) for x in inner]
        if tag == "#set":
            elements = {_text(c): c for c in (_expected(x, depth + 1) for x in inner)}
            if len({_kind(c) for c in elements.values()}) > 1:
                raise _Refused
            return {"#set": [elements[k] for k in sorted(elements)]}
        pairs: dict[str, list[Any]] = {}
        for pair in inner:
            if type(pair) is not list or len(pair) != 2:
                raise _Refused
            key, value = (_expected(x, depth + 1) for x in pair)
            if _text(key) in pairs:
                raise _Refused
            pairs[_text(key)] = [key, value]
        if len({_kind(k) for k, _ in pairs.values()}) > 1:
            raise _Refused
        if all(type(k) is str for k, _ in pairs.values()):
            return _record({k: v for k, v in pairs.values()})
        if not pairs:
            return []
        return {"#map": [pairs[k] for k in sorted(pairs)]}
    if not all(type(k) is str for k in o):
        raise _Refused
    return _record({k: _expected(v, depth + 1) for k, v in o.items()})


def _record(fields: dict[str, Any]) -> Any:
    if not fields:
        return []  # TLA+ has one empty function: <<>>
    if len(fields) == 1 and next(iter(fields)).startswith("#"):
        return {"#map": [list(item) for item in fields.items()]}
    return fields


def _check_decoding(raw: Any, decode: Any) -> None:
    """`decode(raw)` is right, type for type, or refuses with TraceFormatError."""
    try:
        expected: Any = _text(_expected(raw))
    except _Refused:
        expected = None
    try:
        decoded = decode(raw)
    except TraceFormatError as exc:
        # Refusing a value the rules allow is right only where Python would
        # merge two of its elements (TLC could not compare them either).
        assert expected is None or "cannot tell apart" in str(exc), (raw, str(exc))
        return
    assert expected is not None, f"accepted what the format refuses: {raw!r:.300}"
    assert _text(_one_empty_function(json.loads(canonical_json(decoded)))) == expected


def _one_empty_function(canon: Any) -> Any:
    """Canonical JSON with the empty function spelled [] everywhere, as the oracle does."""
    if type(canon) is list:
        return [_one_empty_function(x) for x in canon]
    if type(canon) is not dict:
        return canon
    if not canon:
        return []
    if len(canon) == 1 and "#set" in canon:
        return {"#set": sorted((_one_empty_function(x) for x in canon["#set"]), key=_text)}
    if len(canon) == 1 and "#map" in canon:
        pairs = [[_one_empty_function(k), _one_empty_function(v)] for k, v in canon["#map"]]
        return {"#map": sorted(pairs, key=lambda pair: _text(pair[0]))}
    return {k: _one_empty_function(v) for k, v in canon.items()}


# --- strategies -----------------------------------------------------------------

_ints = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**64), 2**64),
    st.sampled_from([2**31, -(2**31), 2**63 - 1, -(2**63), 2**63, 10**40]),
    # Built by a function: Hypothesis prints its strategies, and Python cannot
    # print an integer of thousands of digits.
    st.integers(4_000, 4_290).map(lambda n: -(10**n)),
)
_strings = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["#set", "#map", "#tup", "#x", "\x1b[2J", "a\nb", "====", "`", "\ud800"]),
)
_leaves = st.one_of(
    _ints,
    st.booleans(),
    _strings,
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
)


def _json_containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(_strings, children, max_size=3),
        st.builds(lambda xs: {"#set": xs}, st.lists(children, max_size=4)),
        st.builds(lambda xs: {"#tup": xs}, st.lists(children, max_size=3)),
        st.builds(
            lambda ps: {"#map": ps},
            st.lists(st.one_of(st.lists(children, min_size=2, max_size=2), children), max_size=3),
        ),
        st.builds(lambda tag, x: {tag: x}, st.sampled_from(["#set", "#map", "#x", "#"]), children),
    )


# Small pools make equal and nearly equal elements (0 and false, [0] and [false]) common.
_mixed_leaves = st.sampled_from([0, 1, False, True, "a", -1])
_json_values = st.one_of(
    st.recursive(_leaves, _json_containers, max_leaves=20),
    st.recursive(_mixed_leaves, _json_containers, max_leaves=12),
)


class _Deep:
    """A value nested about MAX_DEPTH deep, or far deeper, through any container;
    its repr is its recipe, so that Hypothesis can print a failing example."""

    def __init__(self, depth: int, leaf: Any, wraps: list[str]) -> None:
        self.recipe = (depth, leaf, wraps)

    def __repr__(self) -> str:
        return f"_Deep{self.recipe!r}"

    @property
    def value(self) -> Any:
        return _build_deep(*self.recipe)


def _raw(x: Any) -> Any:
    return x.value if isinstance(x, _Deep) else x


def _deep() -> st.SearchStrategy[_Deep]:
    return st.builds(
        _Deep,
        st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 1_000, 3_000]),
        _mixed_leaves,
        st.lists(st.sampled_from(["list", "set", "tup", "rec", "map"]), min_size=1, max_size=3),
    )


def _build_deep(depth: int, leaf: Any, wraps: list[str]) -> Any:
    value = leaf
    for i in range(depth):
        kind = wraps[i % len(wraps)]
        value = {
            "list": lambda v: [v],
            "set": lambda v: {"#set": [v]},
            "tup": lambda v: {"#tup": [v]},
            "rec": lambda v: {"k": v},
            "map": lambda v: {"#map": [[1, v]]},
        }[kind](value)
    return value


_inputs = st.one_of(_json_values, _deep())


# --- values ---------------------------------------------------------------------


@_FUZZ
@given(_inputs)
@example({"#set": [[0], [False]]})
@example({"#set": [{"a": 1}, {"a": True}]})
@example({"x": [{"#map": [[[1], 1], [[True], 2]]}]})
def test_from_json_reads_any_json_right_type_for_type_or_refuses_it(raw: Any) -> None:
    _check_decoding(_raw(raw), from_json)


@_FUZZ
@given(_inputs)
def test_itf_reader_turns_any_json_into_a_value_or_a_trace_format_error(raw: Any) -> None:
    with contextlib.suppress(TraceFormatError):
        from_json(itf_to_tagged(_raw(raw)))


# --- whole traces: ndjson and msgpack --------------------------------------------


def _read(data: bytes, name: str = "t") -> None:
    try:
        read_trace(_file(data, name))
    except InternalError:  # pragma: no cover - a bug: report it as one
        raise
    except (TraceFormatError, ConfigError):
        pass


def _read_lines(lines: list[bytes]) -> None:
    _read(b"\n".join(lines) + b"\n")


@_FUZZ
@given(st.binary(max_size=300))
@example(b"\x81")
@example(b"\xdf\xff\xff\xff\xff")
@example(b"{" * 5_000)
def test_trace_reader_on_random_bytes_raises_only_trace_format_errors(data: bytes) -> None:
    _read(data)


_header_fields = st.dictionaries(
    st.sampled_from(
        ["schema", "seed", "spec", "protocol", "reproduce", "options", "variables",
         "constants", "source_revision", 1, "#set"]
    ),
    st.one_of(_inputs, st.dictionaries(_strings, _json_values, max_size=2)),
    max_size=4,
)
_step_fields = st.dictionaries(
    st.sampled_from(["action", "vars", "ts", "seq", "node", "params", "entry", "event", 0]),
    st.one_of(_json_values, st.dictionaries(_strings, _json_values, max_size=3)),
    max_size=5,
)


def _encoders(records: list[Any]) -> list[bytes]:
    out = []
    # JSON cannot carry an int key, msgpack an integer past 64 bits; neither
    # encoder can nest as deep as the reader must refuse.
    with contextlib.suppress(TypeError, ValueError, RecursionError):
        out.append(b"\n".join(json.dumps(r).encode("utf-8", "surrogatepass") for r in records))
    with contextlib.suppress(TypeError, ValueError, OverflowError, RecursionError):
        out.append(b"".join(msgpack.packb(r, use_bin_type=True) for r in records))
    return out


@_FUZZ
@given(
    st.one_of(st.none(), _header_fields),
    st.lists(st.one_of(_step_fields, _json_values), min_size=1, max_size=3),
)
def test_trace_reader_on_odd_records_raises_only_trace_format_errors(
    header: dict[Any, Any] | None, steps: list[Any]
) -> None:
    if header is not None:
        header = {k: _raw(v) for k, v in header.items()}
    records = ([{"event": "tla_trace_header", **header}] if header is not None else []) + steps
    for data in _encoders(records):
        _read(data)


def _check_value_in_a_file(raw: Any, fmt: str) -> None:
    raw = _raw(raw)
    record = {"event": "tla_trace", "action": "Init", "vars": {"x": raw}}
    try:
        data = (
            json.dumps(record).encode("utf-8", "surrogatepass") + b"\n"
            if fmt == "ndjson"
            else msgpack.packb(record, use_bin_type=True)
        )
    except (ValueError, TypeError, OverflowError, RecursionError):
        return  # the encoder itself cannot write it
    path = _file(data)
    _check_decoding(raw, lambda _: read_trace(path).steps[0].vars["x"])


@_FUZZ
@given(_inputs, st.sampled_from(["ndjson", "msgpack"]))
def test_a_value_read_from_a_trace_file_is_what_the_file_says_type_for_type(
    raw: Any, fmt: str
) -> None:
    _check_value_in_a_file(raw, fmt)


@functools.cache
def _real_trace_lines() -> tuple[bytes, ...]:
    from tlasim.sim.run.runner import run_seed

    path = _WORK / "real.ndjson"
    run_seed("twopc", 1, trace_path=path)
    return tuple(path.read_bytes().splitlines()[:12])


@_SLOW
@pytest.mark.slow
@given(st.data())
def test_trace_reader_on_mutated_real_lines_raises_only_trace_format_errors(
    data: st.DataObject,
) -> None:
    lines = list(_real_trace_lines())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        line = bytearray(lines[i])
        at = data.draw(st.integers(0, len(line)))
        how = data.draw(st.sampled_from(["flip", "insert", "delete", "splice"]))
        if how == "flip" and at < len(line):
            line[at] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "insert":
            line[at:at] = data.draw(
                st.sampled_from([b"[", b"{", b'"#set":', b"true", b"0", b"1e999", b"NaN", b"\x00"])
            )
        elif how == "delete":
            del line[at : at + data.draw(st.integers(1, 8))]
        else:
            line[at:at] = lines[data.draw(st.integers(0, len(lines) - 1))][:40]
        lines[i] = bytes(line)
    _read_lines(lines)


def test_fuzz_reads_real_lines_unchanged() -> None:
    trace = read_trace(_file(b"\n".join(_real_trace_lines()) + b"\n", "unchanged"))
    assert trace.header is not None and len(trace.steps) == 11


# --- the TLA+ writer, and reading back what TLC prints ---------------------------

_tla_leaves = st.one_of(
    st.sampled_from([0, 1, -1, False, True, 2**31 - 1, -(2**31), 2**31]),
    st.integers(4_000, 6_000).map(lambda n: 10**n),
    st.integers(-(2**40), 2**40),
    st.text(max_size=5),
    st.sampled_from(['a"b', "a\\b", "====", "\\*", "(*", "`", "é", "\x00", "\n"]),
)


def _tla_containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3).map(tuple),
        st.frozensets(children, max_size=3),
        st.dictionaries(st.text(max_size=3), children, max_size=3).map(_or_huge(Record)),
        st.dictionaries(children, children, max_size=2).map(_or_huge(FnMap)),
    )


def _or_huge(cls: Any) -> Any:
    """Record and FnMap refuse an integer past 64 bits; the value is then that
    integer alone, which to_tla must refuse too."""

    def build(items: dict[Any, Any]) -> Any:
        try:
            return cls(items)
        except TraceFormatError:
            return 10**5000

    return build


_tla_values = st.recursive(_tla_leaves, _tla_containers, max_leaves=15)


@_FUZZ
@given(_tla_values)
def test_to_tla_writes_text_that_reads_back_type_for_type_or_refuses(value: Any) -> None:
    try:
        text = to_tla(value)
    except TraceFormatError:
        return
    assert tlc_key(parse_value(text)) == tlc_key(value)


@_FUZZ
@given(_inputs)
def test_to_tla_of_any_decoded_value_is_text_or_a_trace_format_error(raw: Any) -> None:
    try:
        value = from_json(_raw(raw))
        text = to_tla(value)
    except TraceFormatError:
        return
    assert tlc_key(parse_value(text)) == tlc_key(value)


_tlc_words = st.sampled_from(
    ["<<", ">>", "{", "}", "[", "]", "(", ")", ",", "|->", ":>", "@@", "..", "-", "TRUE",
     "FALSE", "0", "1", "99999999999999999999999", '"s"', "x", "/\\", "=", " "]
)


@_FUZZ
@given(st.lists(_tlc_words, max_size=40).map("".join))
@example("<<" * 3000 + ">>" * 3000)
@example("{0, FALSE}")
@example("0..99999999999")
def test_parse_value_on_any_token_soup_returns_or_raises_a_tlc_error(text: str) -> None:
    with contextlib.suppress(TLCError):
        parse_value(text)


# --- plans, types and ITF documents -----------------------------------------------


@_FUZZ
@given(
    st.one_of(
        _json_values,
        st.fixed_dictionaries(
            {},
            optional={
                "schema": _json_values,
                "heal_tick": _json_values,
                "crashes": st.lists(st.dictionaries(
                    st.sampled_from(["node", "tick", "restart_ticks", "after_steps", "x"]),
                    _json_values, max_size=4), max_size=2),
                "windows": st.lists(st.dictionaries(
                    st.sampled_from(["kind", "start", "end", "probability", "links", "seed"]),
                    _json_values, max_size=6), max_size=2),
                "partitions": st.lists(st.dictionaries(
                    st.sampled_from(["start", "end", "src", "dst", "both_ways"]),
                    _json_values, max_size=5), max_size=2),
            },
        ),
        _deep(),
    )
)
def test_plan_reader_on_any_json_raises_only_config_errors(raw: Any) -> None:
    try:
        text = json.dumps(_raw(raw))
    except (ValueError, RecursionError):
        return
    with contextlib.suppress(ConfigError):
        FaultPlan.from_json(text, "plan.json")


_type_words = st.sampled_from(
    ["SUBSET ", "Seq(", "Bag(", "[", "]", "->", "(", ")", "{", "}", ":", ",", "Int", "STRING",
     "BOOLEAN", "\\X", "\\cup", "\\", "a", "1..3", '"s"', "TRUE", "@", " "]
)


@_FUZZ
@given(st.lists(_type_words, max_size=30).map("".join))
@example("(" * 3000 + "Int" + ")" * 3000)
def test_type_reader_on_any_text_raises_only_config_errors(text: str) -> None:
    type_hint(text)
    with contextlib.suppress(ConfigError):
        parse_type(text)


@_FUZZ
@given(
    st.fixed_dictionaries(
        {"vars": st.one_of(st.just(["x"]), _json_values)},
        optional={
            "states": st.one_of(
                st.lists(st.fixed_dictionaries(
                    {"x": _json_values}, optional={"#meta": _json_values}), max_size=2),
                _json_values,
            ),
            "#meta": _inputs,
            "params": _json_values,
        },
    )
)
def test_itf_document_reader_raises_only_trace_format_errors(doc: Any) -> None:
    if "#meta" in doc:
        doc["#meta"] = _raw(doc["#meta"])
    with contextlib.suppress(TraceFormatError):
        itf_to_trace(doc, "t.itf.json")


@_SLOW
@pytest.mark.slow
@given(_inputs, st.sampled_from(["ndjson", "msgpack"]))
def test_many_values_read_from_trace_files_are_what_the_files_say(raw: Any, fmt: str) -> None:
    _check_value_in_a_file(raw, fmt)
