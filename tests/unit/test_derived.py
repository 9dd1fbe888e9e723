"""protocols.derived: a variable built again only when one of its inputs is another object."""

from __future__ import annotations

from typing import Any

from tlasim.protocols.derived import Derived, DerivedEach, per_node


def test_derived_hands_out_the_same_object_while_every_input_is_the_same_object() -> None:
    built: list[tuple[Any, ...]] = []

    def build(*inputs: Any) -> dict[str, Any]:
        built.append(inputs)
        return dict(zip("ab", inputs, strict=True))

    derived = Derived(build)
    view, log = {"s": "x"}, ("r",)
    first = derived(view, log)
    assert derived(view, log) is first
    # An equal input that is another object is not looked into: built again.
    again = derived({"s": "x"}, log)
    assert again is not first and again == first
    assert len(built) == 2


def test_derived_each_keeps_one_entry_per_key() -> None:
    sets: DerivedEach[frozenset[str]] = DerivedEach(frozenset)
    log1, log2 = ("a",), ("b",)
    s1, s2 = sets("r1", log1), sets("r2", log2)
    assert sets("r1", log1) is s1 and sets("r2", log2) is s2
    assert sets("r1", ("a", "c")) == {"a", "c"}


def test_per_node_is_kept_while_every_node_s_value_is_the_same_object() -> None:
    up = Derived(per_node)
    nodes = ("r1", "r2")
    first = up(nodes, True, False)
    assert first == {"r1": True, "r2": False}
    assert up(nodes, True, False) is first
    assert up(nodes, True, True) == {"r1": True, "r2": True}
