"""tracing.tla.source: the declarations the validator reads from a module's source."""

from __future__ import annotations

import pytest

from tlasim.protocols.errors import SpecError
from tlasim.protocols.trace_template import read_name_set
from tlasim.tracing.tla.source import read_module

_MODULE = r"""
Text before the module is not part of it: VARIABLES nope
---------------- MODULE Sample ----------------
EXTENDS Naturals, TLC
(* VARIABLE hidden  (* nested *) still a comment *)
CONSTANTS N, \* a comment with VARIABLE inside
          Op(_, _)
CONSTANT Names
VARIABLES x, \* the counter
          y
VARIABLE z
S == "VARIABLE w == ===="
f[n \in Nat] == n
G(a, b) == a + b
TraceActionNames == {"Init", "Inc" , "Reset"}
=============================================
VARIABLE after_the_end
"""


def test_read_module_finds_declarations_and_skips_comments_and_strings() -> None:
    decls = read_module(_MODULE, "Sample.tla")
    assert decls.name == "Sample"
    assert decls.extends == ("Naturals", "TLC")
    assert decls.constants == (("N", 0), ("Op", 2), ("Names", 0))
    assert decls.variables == ("x", "y", "z")
    assert {"S", "f", "G", "TraceActionNames"} <= decls.definitions


def test_read_name_set_reads_the_literal_set() -> None:
    assert read_name_set(_MODULE, "TraceActionNames") == ("Init", "Inc", "Reset")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("no module here", "MODULE"),
        ("---- MODULE A ----\nX == 1\n", "closing"),
        ("---- MODULE A ----\n(* open\n====", "never closed"),
        ('---- MODULE A ----\nTraceActionNames == {"a", b}\n====', "literal set"),
        ("---- MODULE A ----\nTraceActionNames == Other\n====", "literal set"),
        ("---- MODULE A ----\nX == 1\n====", "no definition"),
    ],
)
def test_read_name_set_is_strict(text: str, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        read_name_set(text, "TraceActionNames", "A.tla")


def test_an_escape_in_trace_action_names_is_a_spec_error() -> None:
    # An action name is an identifier, so a string with an escape names none.
    with pytest.raises(SpecError, match="literal set of names"):
        read_name_set(
            '---- MODULE T ----\nTraceActionNames == {"a\\q"}\n====\n', "TraceActionNames"
        )


@pytest.mark.parametrize(
    "written",
    [
        '{"Init", "A"} \\cup {"B"}',
        '{"Init"} \\union {"A"} \\cup {"B", "A"}\nOther == 1',
        '{"Init", "A", "B"}\n------------\nVARIABLE x',
    ],
)
def test_a_union_of_literal_sets_is_read_whole(written: str) -> None:
    text = f"---- MODULE T ----\nTraceActionNames == {written}\n====\n"
    assert set(read_name_set(text, "TraceActionNames")) == {"Init", "A", "B"}


@pytest.mark.parametrize(
    "written",
    ['{"Init", "A"} \\ {"A"}', '{"Init"} \\cup Other', '{"Init"} \\cap {"Init"}', '{"A"} @@ 1'],
)
def test_anything_after_a_set_but_a_union_is_refused_not_cut_off(written: str) -> None:
    text = f"---- MODULE T ----\nTraceActionNames == {written}\n====\n"
    with pytest.raises(SpecError, match="union"):
        read_name_set(text, "TraceActionNames", "T.tla")
