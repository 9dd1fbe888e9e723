"""The coverage hash follows TLA+ equality and is the same in every process."""

from __future__ import annotations

import os
import subprocess
import sys
from enum import IntEnum, StrEnum
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tlasim.sim.coverage.hashing import ValueHasher, value_hash
from tlasim.tracing.values import FnMap, Record, canonical_json, freeze

ints = st.integers(-(2**63), 2**63 - 1)
leaves = st.one_of(st.booleans(), ints, st.text(max_size=6))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(tuple),
        st.frozensets(ints, max_size=4) | st.frozensets(st.text(max_size=4), max_size=4),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
    ),
    max_leaves=12,
)


def rebuilt(value: Any) -> Any:
    """An equal TLA+ value made of other objects, in other orders and spellings."""
    if isinstance(value, tuple):
        return tuple(rebuilt(v) for v in value)
    if isinstance(value, frozenset):
        return set(reversed([rebuilt(v) for v in value]))
    if isinstance(value, dict):
        items = [(k, rebuilt(v)) for k, v in reversed(list(value.items()))]
        return Record(dict(items)) if items else ()
    return value


def empty_as_tuple(value: Any) -> Any:
    """`value` with every empty function spelt <<>>, as TLA+ holds them one."""
    if isinstance(value, tuple):
        return tuple(map(empty_as_tuple, value))
    if isinstance(value, dict):
        return {k: empty_as_tuple(v) for k, v in value.items()} if value else ()
    return value


@given(values)
def test_equal_values_hash_alike_whatever_their_order_or_spelling(value: Any) -> None:
    assert value_hash(value) == value_hash(rebuilt(value))
    hasher = ValueHasher()  # remembering changes nothing
    assert hasher(value) == hasher(value) == value_hash(value)


@given(values, values)
def test_values_hash_alike_exactly_when_tla_holds_them_equal(a: Any, b: Any) -> None:
    # canonical_json tells TLA+ values apart as TLC does (0 is not FALSE).
    equal = canonical_json(freeze(empty_as_tuple(a))) == canonical_json(freeze(empty_as_tuple(b)))
    assert (value_hash(a) == value_hash(b)) == equal


def test_tla_kinds_stay_apart() -> None:
    assert value_hash(1) != value_hash(True)
    assert value_hash(0) != value_hash(False)
    assert value_hash("1") != value_hash(1)
    assert value_hash((1, 2)) != value_hash((2, 1))
    assert value_hash((1, 2)) != value_hash(frozenset({1, 2}))
    assert value_hash(frozenset({1})) != value_hash(1)
    assert value_hash({"a": 1}) != value_hash({"a": 2}) != value_hash({"b": 1})
    assert value_hash(frozenset({(1, 2)})) != value_hash(frozenset({(2, 1)}))
    assert value_hash(2**64 + 1) != value_hash(1)


def test_functions_and_records_and_the_empty_function() -> None:
    assert value_hash({"a": 1, "b": 2}) == value_hash(Record({"b": 2, "a": 1}))
    assert value_hash(FnMap({1: "x", 2: "y"})) == value_hash({2: "y", 1: "x"})
    assert value_hash(()) == value_hash({}) == value_hash(Record({})) == value_hash(FnMap({}))


class Phase(StrEnum):
    WORKING = "working"


class Level(IntEnum):
    HIGH = 7


def test_enums_hash_as_the_values_tla_sees() -> None:
    assert value_hash(Phase.WORKING) == value_hash("working")
    assert value_hash(Level.HIGH) == value_hash(7)
    assert value_hash({"p": Phase.WORKING}) == value_hash({"p": "working"})


SAMPLE = (
    "(Record({'tx': 't1', 'rms': frozenset({'r1', 'r2'})}), {'r1': (1, True, -5), 'r2': ()}, "
    "frozenset({'a', 'b', 'c'}), 2**65)"
)


def test_the_hash_is_the_same_in_processes_with_other_string_salts() -> None:
    probe = (
        "from tlasim.tracing.values import Record\n"
        "from tlasim.sim.coverage.hashing import value_hash\n"
        f"print(value_hash({SAMPLE}))\n"
    )
    seen = set()
    for salt in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": salt}
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env=env, check=True)
        seen.add(done.stdout.strip())
    assert seen == {str(value_hash(eval(SAMPLE)))}


def test_a_value_remembered_never_answers_for_one_python_confuses_with_it() -> None:
    # Python holds 1 == TRUE and 0 == FALSE, TLA+ does not: two variables
    # of one process may hold <<1, 0>> and <<TRUE, FALSE>>, in either order.
    class Flag(IntEnum):
        ON = 1

    for first, second in [((1, 0), (True, False)), ((True, False), (1, 0)),
                          (((0,), 0, frozenset(), 0), ((False,), False, frozenset(), False)),
                          ((Flag.ON, "a"), (True, "a"))]:
        first_hash = value_hash(first)
        assert value_hash(second) != first_hash
        assert value_hash(first) == first_hash
    assert value_hash(((False,), False, frozenset(), False)) == value_hash(
        ((False,), False, set(), False))
