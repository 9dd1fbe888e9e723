"""Next split into one operator per action, from SANY's parse (tracing/tla/next_split.py)."""

from __future__ import annotations

from pathlib import Path

from tlasim.tracing.tla.next_split import action_of_label, split_next
from tlasim.tracing.tla.sany import export_xml

MODULE = r"""---- MODULE S ----
EXTENDS Naturals
CONSTANTS Nodes
VARIABLES msgs, x
A(m) == /\ x' = x + 1 /\ UNCHANGED msgs
B(m) == /\ x' = x /\ msgs' = msgs
C(n, k) == /\ x' = k /\ UNCHANGED msgs
Crash == UNCHANGED <<msgs, x>>
Inner == \E n \in Nodes : C(n, 1)
Next ==
    \/ \E m \in DOMAIN msgs :
          \/ A(m)
          \/ B(m)
    \/ \E n \in Nodes, k \in {x, x + 1} : C(n, k)
    \/ Inner
    \/ Crash
====
"""


def split(tmp_path: Path, text: str) -> str | None:
    (tmp_path / "S.tla").write_text(text)
    result = split_next(export_xml(tmp_path / "S.tla"), "S", tmp_path)
    return None if result is None else result.definitions


def test_each_action_gets_its_own_operator_under_its_binders(tmp_path: Path) -> None:
    text = split(tmp_path, MODULE)
    assert text is not None
    assert "Tlasim_A ==\n    \\E m \\in (DOMAIN msgs) :\n        A(m)" in text
    assert "Tlasim_B ==\n    \\E m \\in (DOMAIN msgs) :\n        B(m)" in text
    # Several bounds of one quantifier nest in order; a bound may use the state.
    assert "\\E n \\in (Nodes) : \\E k \\in ({x, x + 1}) :\n        C(n, k)" in text
    # An operator that is itself an action under a quantifier is one action,
    # named by its own occurrence; a second occurrence of C is numbered.
    assert "Tlasim_Inner ==\n    Inner" in text
    assert "Tlasim_Crash ==\n    Crash" in text
    assert "TlasimNext ==\n    \\/ Tlasim_A\n    \\/ Tlasim_B" in text


def test_labels_map_back_to_action_names() -> None:
    assert action_of_label("Tlasim_NetLose") == "NetLose"
    assert action_of_label("Tlasim_C__2") == "C"
    assert action_of_label("TMBegin") == "TMBegin"


def test_a_next_it_cannot_copy_exactly_is_left_alone(tmp_path: Path) -> None:
    with_let = MODULE.replace("Next ==\n", "Next == LET y == 1 IN\n")
    assert split(tmp_path, with_let) is None
