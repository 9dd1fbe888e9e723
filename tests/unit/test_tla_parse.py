"""tracing.tla.parse: values and states as TLC prints them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlasim.protocols.errors import TLCError
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.tla.parse import ModelValue, normalize, parse_state, parse_value
from tlasim.tracing.tla.tlc import parse_dump, run_tlc
from tlasim.tracing.values import FnMap, Record, canonical_json


def same(a: Any, b: Any) -> bool:
    """Equal as TLC sees it: normalised, and with True and 1 kept apart."""
    return canonical_json(normalize(a)) == canonical_json(normalize(b))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"plain"', "plain"),
        (r'"a\"b\\c\nd\te\rf\fg"', 'a"b\\c\nd\te\rf\fg'),
        ('"(* \\\\* ==== *)"', "(* \\* ==== *)"),
        ("42", 42),
        ("-7", -7),
        ("(-7)", -7),
        ("(-2147483647 - 1)", -(2**31)),
        ("TRUE", True),
        ("FALSE", False),
        ("<<>>", ()),
        ("<< >>", ()),
        ('<<1, "x", <<>>>>', (1, "x", ())),
        ("{}", frozenset()),
        ("{-5, -1, 2}", frozenset({-5, -1, 2})),
        ("1..3", frozenset({1, 2, 3})),
        ("{{}, {1}}", frozenset({frozenset(), frozenset({1})})),
        ('[a |-> 1, b |-> {"q"}]', Record({"a": 1, "b": frozenset({"q"})})),
        ('(2 :> "x" @@ 5 :> "y")', FnMap({2: "x", 5: "y"})),
        ('("1" :> 1 @@ "a b" :> 1)', Record({"1": 1, "a b": 1})),
        ("(<<1, 2>> :> 5)", FnMap({(1, 2): 5})),
        ("({1} :> {})", FnMap({frozenset({1}): frozenset()})),
    ],
)
def test_parse_value_reads_each_form_tlc_prints(text: str, expected: Any) -> None:
    assert parse_value(text) == expected
    assert same(parse_value(text), expected)


def test_parse_value_reads_model_values_as_bare_identifiers() -> None:
    m1, m2 = ModelValue("m1"), ModelValue("m2")
    assert parse_value("{m1, m2}") == frozenset({m1, m2})
    # `@@` is left-biased: the first binding of a key wins.
    assert dict(parse_value("(m1 :> 1 @@ m2 :> 2 @@ m1 :> 3)")) == {m1: 1, m2: 2}
    assert dict(parse_value("[a |-> m1]")) == {"a": m1}
    assert str(m1) == "m1"


def test_parse_value_string_domain_function_equals_record() -> None:
    value = parse_value('("IF" :> 1 @@ "a.b" :> 2)')
    assert isinstance(value, Record)
    assert value == {"IF": 1, "a.b": 2}


def test_parse_value_ignores_tlc_line_wrapping() -> None:
    text = '<< [k |-> 1, s |-> {"aaaa", "bbbb"}],\n   [k |-> 2, s |-> {"aaaa", "bbbb"}] >>'
    assert parse_value(text) == (
        Record({"k": 1, "s": frozenset({"aaaa", "bbbb"})}),
        Record({"k": 2, "s": frozenset({"aaaa", "bbbb"})}),
    )


@pytest.mark.parametrize(
    "text",
    ['"unterminated', r'"bad \q escape"', "<<1, 2", "[a |-> ]", "1 2", "(1 :> 2", "", "@@", "-x"],
)
def test_parse_value_rejects_malformed_text_with_tlc_error(text: str) -> None:
    with pytest.raises(TLCError, match="cannot read TLC value"):
        parse_value(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{0, FALSE}", "Python cannot tell apart"),
        ("{<<1>>, <<TRUE>>}", "Python cannot tell apart"),
        ("{[a |-> 0], [a |-> FALSE]}", "Python cannot tell apart"),
        ("(0 :> 1 @@ FALSE :> 2)", "Python cannot tell apart"),
        ("(<<1>> :> 1 @@ <<TRUE>> :> 2)", "Python cannot tell apart"),
        ("<<" * 5000 + ">>" * 5000, "nested at most 100 levels"),
        ("{" * 300 + "}" * 300, "nested at most 100 levels"),
        ("1" * 5000, "has 5000 digits"),
        ("-" + "9" * 30, "has 30 digits"),
        ("0..2000000000", "holds more than 1,000,000 integers"),
    ],
)
def test_parse_value_refuses_what_tlc_never_prints_as_a_tlc_error_not_a_crash(
    text: str, message: str
) -> None:
    with pytest.raises(TLCError, match=message):
        parse_value(text)


def test_parse_value_reads_a_value_nested_at_the_limit_with_a_negative_number() -> None:
    text = "<<" * 100 + "(-1)" + ">>" * 100
    value = parse_value(text)
    for _ in range(100):
        value = value[0]
    assert value == -1
    assert parse_value("{0, 0}") == frozenset({0})


def test_parse_state_reads_conjunct_lines_and_wrapped_values() -> None:
    text = '/\\ x = 1\n/\\ y = [ b |-> {1},\n  tmLog |-> {} ]\n/\\ z = "/\\\\ w = 2"'
    assert parse_state(text) == {
        "x": 1,
        "y": Record({"b": frozenset({1}), "tmLog": frozenset()}),
        "z": "/\\ w = 2",
    }


def test_parse_state_reads_a_single_variable_state_without_conjunct() -> None:
    assert parse_state("x = <<1>>") == {"x": (1,)}


def test_parse_state_rejects_a_variable_given_twice() -> None:
    with pytest.raises(TLCError, match="twice"):
        parse_state("/\\ x = 1\n/\\ x = 2")


def test_normalize_maps_sequences_and_empty_functions_to_tlc_form() -> None:
    assert normalize(FnMap({1: "a", 2: "b"})) == ("a", "b")
    assert normalize(Record()) == ()
    assert normalize(FnMap()) == ()
    assert normalize(FnMap({2: "a"})) == FnMap({2: "a"})
    assert normalize(frozenset({Record({"a": FnMap()})})) == frozenset({Record({"a": ()})})


# --- round trip through tla_literal.to_tla ----------------------------------

# What tla_literal.to_tla accepts in a string: printable ASCII but the backtick
# (which SANY refuses inside strings), and four control characters.
_CHARS = [c for c in map(chr, range(0x20, 0x7F)) if c != "`"] + ["\n", "\t", "\r", "\f"]
_text = st.text(st.sampled_from(_CHARS))
_atoms = st.one_of(st.integers(-(2**31), 2**31 - 1), st.booleans(), _text)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4).map(tuple),
        st.frozensets(children, max_size=4),
        st.dictionaries(_text, children, max_size=4).map(Record),
        st.dictionaries(
            st.one_of(st.integers(-5, 5), st.tuples(st.integers(0, 3))), children, max_size=4
        ).map(FnMap),
    )


_values = st.recursive(_atoms, _containers, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_parse_value_reads_back_what_to_tla_writes(value: Any) -> None:
    assert same(parse_value(to_tla(value)), value)


# --- against TLC itself -------------------------------------------------------

_TLC_VALUES: list[Any] = [
    'quote " backslash \\ newline \n tab \t ==== \\* (* *) ----',
    -(2**31),
    -3,
    2**31 - 1,
    True,
    (),
    Record(),
    FnMap({1: "a", 2: "b"}),
    frozenset({"b", "a", "B"}),
    frozenset({(1,), (2,), (1, 2)}),
    Record({"IF": 1, "a b": 2, "WF_x": 3}),
    Record({"tmState": Record({"t1": "init"}), "msgs": FnMap()}),
    FnMap({Record({"type": "Prepare", "tx": "t1", "rm": "r1"}): 2}),
    FnMap({(1, 2): frozenset({Record({"k": -1})})}),
    tuple(Record({"k": i, "s": frozenset({"a" * 12, "b" * 15})}) for i in range(20)),
]


def test_values_printed_by_tlc_parse_back_to_themselves(tmp_path: Path) -> None:
    entries = ",\n".join(to_tla(v) for v in _TLC_VALUES)
    (tmp_path / "Echo.tla").write_text(
        "---- MODULE Echo ----\nEXTENDS Integers, TLC\nVARIABLE i, v\n"
        f"vals == <<\n{entries}\n>>\n"
        f"Init == i = 1 /\\ v = vals[1]\n"
        f"Next == i < {len(_TLC_VALUES)} /\\ i' = i + 1 /\\ v' = vals[i + 1]\n====\n"
    )
    (tmp_path / "Echo.cfg").write_text("INIT Init\nNEXT Next\n")
    result = run_tlc(
        tmp_path / "Echo.tla",
        tmp_path / "Echo.cfg",
        workdir=tmp_path,
        args=["-deadlock", "-dump", str(tmp_path / "echo")],
    )
    assert result.outcome == "ok", result.error_text()
    states = [s.values() for s in parse_dump((tmp_path / "echo.dump").read_text())]
    assert len(states) == len(_TLC_VALUES)
    for state in states:
        expected = _TLC_VALUES[state["i"] - 1]
        assert same(state["v"], expected), (state["v"], expected)
