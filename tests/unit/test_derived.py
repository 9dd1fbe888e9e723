"""protocols.derived: a variable built again only when one of its inputs is another object."""

from __future__ import annotations

from typing import Any

from protocols.derived import Derived, DerivedEach, per_node, per_node_vars


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


def test_refinement_mapping_keeps_a_per_node_variable_while_the_nodes_views_are_kept() -> None:
    gather = Derived(per_node_vars("kv", "state"))
    views = {"s1": {"kv": {"k": 1}, "state": "active"}, "s2": {"kv": {}, "state": "absent"}}
    nodes = ("s1", "s2")
    first = gather(nodes, *map(views.__getitem__, nodes))
    assert first == {"kv": {"s1": {"k": 1}, "s2": {}}, "state": {"s1": "active", "s2": "absent"}}
    assert gather(nodes, *map(views.__getitem__, nodes)) is first
    views["s2"] = {"kv": {"k": 2}, "state": "active"}
    second = gather(nodes, *map(views.__getitem__, nodes))
    assert second["kv"] == {"s1": {"k": 1}, "s2": {"k": 2}}
    assert second["kv"]["s1"] is views["s1"]["kv"]
    assert per_node(nodes, True, False) == {"s1": True, "s2": False}
