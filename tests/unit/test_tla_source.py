"""tracing.tla.source: the declarations the validator reads from a module's source."""

from __future__ import annotations

import pytest

from protocols.errors import SpecError
from tracing.tla.source import read_module, read_string_set

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


def test_read_string_set_reads_the_literal_set() -> None:
    assert read_string_set(_MODULE, "TraceActionNames") == ("Init", "Inc", "Reset")


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
def test_read_string_set_is_strict(text: str, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        read_string_set(text, "TraceActionNames", "A.tla")


def test_unknown_escape_in_trace_action_names_is_a_spec_error() -> None:
    import pytest

    from protocols.errors import SpecError
    from tracing.tla.source import read_string_set

    with pytest.raises(SpecError, match="unknown escape"):
        read_string_set(
            '---- MODULE T ----\nTraceActionNames == {"a\\q"}\n====\n', "TraceActionNames"
        )
