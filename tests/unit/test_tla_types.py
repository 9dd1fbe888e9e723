"""tracing.tla.type_expr: TLA+ type expressions, read for what decides a value's JSON form."""

from __future__ import annotations

import pytest

from tlasim.protocols.errors import ConfigError
from tlasim.tracing.tla.type_expr import ANY, Shape, parse_type, type_hint


def test_parse_type_keeps_what_decides_a_values_json_form() -> None:
    fn = parse_type("[Tx -> SUBSET RM]")
    assert (fn.kind, fn.domain(), fn.range().kind, fn.range().element()) == ("fn", ANY, "set", ANY)
    rec = parse_type('SUBSET [kind: {"begin", "commit"}, tx: Tx, n: 0..3, ok: BOOLEAN]')
    record = rec.element()
    assert record.names == ("kind", "tx", "n", "ok")
    assert [p.kind for p in record.parts] == ["str", "any", "int", "bool"]
    assert parse_type("Seq(Nat \\X STRING)").element().parts == (Shape("int"), Shape("str"))
    assert parse_type("Bag([a: Int])").kind == "bag"
    assert parse_type('Clients \\cup {"-"}') == ANY
    assert parse_type("Nat \\ {0}") == Shape("int")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[Tx -> ", "ends too early"),
        ("[a: Int, a: Int]", "'a' is not a new field name"),
        ("SUBSET", "ends too early"),
        ("[Tx -> Int] junk", "unexpected 'junk'"),
        ("{x \\in S : x > 0}", "may list only literals"),
        ("Int \\cup @x", "cannot read on from '@x'"),
    ],
)
def test_parse_type_names_what_it_does_not_understand(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_type(text)


def test_type_hint_reads_header_notes_and_gives_up_quietly() -> None:
    assert type_hint("[Msg -> Nat \\ {0}] (a bag)") == Shape("fn", (ANY, Shape("int")))
    assert type_hint("{x \\in S : x > 0}") == ANY


@pytest.mark.parametrize(
    "text",
    [
        "(" * 5000 + "Int" + ")" * 5000,
        "SUBSET " * 5000 + "Int",
        "Seq(" * 3000 + "Int" + ")" * 3000,
        "[a: " * 3000 + "Int" + "]" * 3000,
    ],
)
def test_a_type_nested_past_the_limit_is_a_config_error_and_a_shapeless_hint(text: str) -> None:
    with pytest.raises(ConfigError, match="nests deeper than 100 levels"):
        parse_type(text)
    assert type_hint(text) == ANY


def test_a_type_nested_at_the_limit_is_read() -> None:
    shape = parse_type("SUBSET " * 99 + "Int")
    for _ in range(99):
        assert shape.kind == "set"
        shape = shape.element()
    assert shape == Shape("int")
