"""tracing.values: frozen forms and the tagged JSON form."""

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
from tla_kinds import tlc_can_hold

from tlasim.protocols.errors import TraceFormatError
from tlasim.tracing.values import FnMap, Record, canonical_json, freeze, from_json, to_json

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
    if not tlc_can_hold(value):
        with pytest.raises(TraceFormatError, match="mixes"):
            _json_round_trip(value)
        return
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
        ({"#set": [1, True]}, "mixes a boolean and an integer"),
        ({"#map": [[0, 1], [False, 2]]}, "holds 0 and false, which Python cannot tell apart"),
        ({"#set": [1, "a"]}, "mixes a string and an integer"),
        ({"#set": [{"a": 1}, 2]}, "mixes a function and an integer"),
        ({"#map": [["a", 1], [2, 2]]}, "the domain of '#map' mixes a string and an integer"),
        ({"x": 2**64}, "does not fit in 64 bits"),
        ({"x": -(10**4000)}, "does not fit in 64 bits"),
        ({"#set": [[0], [0], [False]]}, "holds [0] and [false]"),
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


# --- 0 and FALSE, 1 and TRUE: types stay TLA+'s at every depth --------------------

_COLLAPSING_PAIRS = [
    (0, False),
    (1, True),
    ([0], [False]),
    ({"a": 1}, {"a": True}),
    ({"#set": [0]}, {"#set": [False]}),
    ({"#map": [[1, "x"]]}, {"#map": [[True, "x"]]}),
    ({"r": [{"#set": [{"k": 0}]}]}, {"r": [{"#set": [{"k": False}]}]}),
]


@pytest.mark.parametrize(("a", "b"), _COLLAPSING_PAIRS)
@pytest.mark.parametrize("order", ["ab", "ba"])
def test_set_holding_values_that_differ_only_by_bool_or_int_is_refused_at_any_depth(
    a: Any, b: Any, order: str
) -> None:
    pair = [a, b] if order == "ab" else [b, a]
    for obj in (
        {"#set": pair},
        {"x": [{"y": {"#set": pair}}]},
        {"#set": [{"#set": pair}]},
    ):
        with pytest.raises(TraceFormatError, match=r"Python cannot tell apart|mixes"):
            from_json(obj)


@pytest.mark.parametrize(("a", "b"), _COLLAPSING_PAIRS)
def test_function_domain_holding_keys_that_differ_only_by_bool_or_int_is_refused(
    a: Any, b: Any
) -> None:
    for obj in ({"#map": [[a, 1], [b, 2]]}, {"f": [{"#map": [[b, 1], [a, 2]]}]}):
        with pytest.raises(TraceFormatError, match=r"Python cannot tell apart|mixes"):
            from_json(obj)


def test_set_listing_one_element_twice_is_read_as_that_one_element() -> None:
    assert from_json({"#set": [[0], [0]]}) == frozenset({(0,)})
    assert from_json({"#set": [{"a": True}, {"a": True}]}) == frozenset({Record({"a": True})})


def test_value_nested_at_the_limit_is_read_written_and_frozen_and_one_deeper_is_refused() -> None:
    from tlasim.tracing.tla.literal import to_tla
    from tlasim.tracing.values import MAX_DEPTH

    at_limit: Any = 1
    for _ in range(MAX_DEPTH):
        at_limit = [at_limit]
    value = from_json(at_limit)
    assert canonical_json(value) == json.dumps(at_limit, separators=(",", ":"))
    assert freeze(at_limit) == value
    assert to_tla(value) == "<<" * MAX_DEPTH + "1" + ">>" * MAX_DEPTH
    for convert in (from_json, freeze, to_tla):
        with pytest.raises(TraceFormatError, match=f"deeper than {MAX_DEPTH} levels"):
            convert([at_limit])


def test_records_nested_one_inside_another_past_the_limit_are_refused_not_a_crash() -> None:
    from tlasim.tracing.tla.literal import to_tla

    value: Any = Record({"a": 1})
    for _ in range(2000):
        value = Record({"a": value})
    for convert in (to_tla, to_json, canonical_json):
        with pytest.raises(TraceFormatError, match="deep"):
            convert(value)


def test_the_empty_function_has_one_value_however_it_is_spelled() -> None:
    # <<>>, the empty record and the empty function are one TLA+ value.
    assert from_json({"#set": [[], {}, {"#map": []}]}) == frozenset({()})
    with pytest.raises(TraceFormatError, match="twice"):
        from_json({"#map": [[[], 1], [{}, 2]]})
    with pytest.raises(TraceFormatError, match="twice"):
        from_json({"#map": [[[[]], 1], [[{}], 2]]})
