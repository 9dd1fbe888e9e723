"""The linearizability checker: hand-made verdicts, agreement with brute force, scale, bad input."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlasim.protocols.errors import ConfigError
from tlasim.protocols.linearizability import (
    BRUTE_FORCE_MAX_OPS_PER_KEY,
    Op,
    brute_force_linearizable,
    check_linearizable,
)


def w(value: Any, invoke: int, respond: int | None, key: str = "x", client: str = "c") -> Op:
    return Op(client, "write", key, value, invoke, respond)


def r(value: Any, invoke: int, respond: int | None, key: str = "x", client: str = "c") -> Op:
    return Op(client, "read", key, value, invoke, respond)


def agree(history: list[Op], initial: dict[str, Any] | None = None) -> bool:
    """Both checkers' verdict, asserting they give the same one."""
    fast = check_linearizable(history, initial=initial).ok
    assert fast == brute_force_linearizable(history, initial), history
    return fast


# --- Hand-made histories -------------------------------------------------------------------------


def test_sequential_write_then_read_of_that_value_is_linearizable() -> None:
    result = check_linearizable([w(1, 0, 1), r(1, 2, 3)])
    assert result.ok and result.violation is None and result.key is None
    assert (result.ops, result.keys) == (2, 1)
    assert result.states_explored >= 3


def test_empty_history_is_linearizable() -> None:
    result = check_linearizable([])
    assert result.ok and (result.ops, result.keys) == (0, 0)


def test_stale_read_after_a_completed_write_is_reported_with_the_value_it_could_return() -> None:
    history = [w(1, 0, 1), w(2, 2, 3), r(1, 4, 5, client="reader")]
    result = check_linearizable(history)
    assert not result.ok and not brute_force_linearizable(history)
    assert result.violation is not None
    assert result.violation.op == history[2]
    assert result.violation.possible_values == (2,)
    assert result.violation.linearized == 2
    assert "'reader'" in result.explanation and "{2}" in result.explanation


def test_read_of_a_value_never_written_is_not_linearizable() -> None:
    history = [w(1, 0, 1), r(9, 2, 3)]
    result = check_linearizable(history)
    assert not result.ok and not brute_force_linearizable(history)
    assert result.violation is not None and result.violation.op == history[1]
    assert set(result.violation.possible_values) == {1}


def test_read_before_any_write_returns_none_not_a_later_value() -> None:
    assert agree([r(None, 0, 1), w(1, 2, 3)])
    assert not agree([r(1, 0, 1), w(1, 2, 3)])


def test_read_concurrent_with_a_write_may_see_old_or_new_value() -> None:
    assert agree([w(1, 0, 10), r(None, 1, 2)])
    assert agree([w(1, 0, 10), r(1, 1, 2)])
    assert agree([w(1, 0, 10), r(1, 1, 2), r(None, 3, 4)]) is False


def test_concurrent_writes_may_be_observed_in_either_order() -> None:
    both = [w(1, 0, 10, client="a"), w(2, 0, 10, client="b")]
    assert agree([*both, r(1, 11, 12)])
    assert agree([*both, r(2, 11, 12)])
    assert agree([*both, r(1, 1, 2), r(2, 3, 4)])
    assert agree([*both, r(2, 1, 2), r(1, 3, 4)])


def test_concurrent_writes_cannot_flip_order_after_both_complete() -> None:
    both = [w(1, 0, 10, client="a"), w(2, 0, 10, client="b")]
    assert not agree([*both, r(1, 11, 12), r(2, 13, 14)])


def test_equal_ticks_count_as_concurrent_not_ordered() -> None:
    # The read is invoked at the tick the write responds: they overlap, so the
    # read may still see the value from before the write.
    assert agree([w(1, 0, 5), r(None, 5, 6)])
    assert not agree([w(1, 0, 5), r(None, 6, 7)])


def test_pending_write_may_be_observed_or_never_take_effect() -> None:
    assert agree([w(1, 0, None), r(1, 5, 6)])
    assert agree([w(1, 0, None), r(None, 5, 6)])
    assert agree([w(1, 0, None), r(None, 5, 6), r(1, 7, 8)])


def test_pending_write_cannot_be_unobserved_once_seen() -> None:
    history = [w(1, 0, None), r(1, 5, 6), r(None, 7, 8)]
    assert not agree(history)
    result = check_linearizable(history)
    assert result.violation is not None and result.violation.op == history[2]


def test_pending_write_cannot_take_effect_before_its_invocation() -> None:
    assert not agree([r(1, 0, 2), w(1, 10, None)])


def test_pending_write_does_not_block_later_operations() -> None:
    # Without the pending write's infinite response, the later write and read
    # would have to wait for it; they must not.
    assert agree([w(1, 0, None), w(2, 5, 6), r(2, 7, 8)])
    assert agree([w(1, 0, None), w(2, 5, 6), r(1, 7, 8)])


def test_pending_read_constrains_nothing() -> None:
    assert agree([w(1, 0, 1), r(99, 2, None)])


def test_initial_values_are_what_reads_before_any_write_return() -> None:
    assert agree([r(5, 0, 1)], {"x": 5})
    assert not agree([r(None, 0, 1)], {"x": 5})
    assert agree([r(None, 0, 1)], {"other": 5})
    result = check_linearizable([r(7, 0, 1)], initial={"x": 5})
    assert result.violation is not None and result.violation.possible_values == (5,)


def test_values_equal_under_eq_share_a_register_state() -> None:
    assert agree([w(1, 0, 1), r(1.0, 2, 3)])


def test_violation_on_one_key_is_reported_with_that_key() -> None:
    history = [
        w(1, 0, 1, key="a"),
        r(1, 2, 3, key="a"),
        w(1, 0, 1, key="b"),
        w(2, 2, 3, key="b"),
        r(1, 4, 5, key="b"),
        w(1, 0, 1, key="c"),
    ]
    result = check_linearizable(history)
    assert not result.ok and result.key == "b"
    assert result.violation is not None and result.violation.op == history[4]
    # Keys are checked in sorted order, stopping at the first violation.
    assert (result.ops, result.keys) == (6, 2)
    assert result.explanation.startswith("key 'b':")


def test_keys_do_not_interfere() -> None:
    # Each read would be a stale read if keys shared one register.
    history = [w(1, 0, 1, key="a"), w(2, 2, 3, key="b"), r(1, 4, 5, key="a")]
    assert agree(history)


def test_op_id_appears_in_the_explanation() -> None:
    history = [w(1, 0, 1), Op("c", "read", "x", 3, 2, 3, op_id="op-7")]
    assert "'op-7'" in check_linearizable(history).explanation


# --- Agreement with brute force on random histories ----------------------------------------------


@dataclass(frozen=True)
class Planned:
    """One operation before simulation: its interval and where it takes effect."""

    key: str
    kind: str
    value: int
    invoke: int
    effect_delay: int  # ticks after invoke
    respond_delay: int  # ticks after the effect
    pending: bool
    applied: bool  # for a pending write: whether it took effect at all


def simulate(planned: list[Planned], initial: dict[str, Any] | None = None) -> list[Op]:
    """Run the operations against a real map at their effect ticks; linearizable by construction."""
    store = dict(initial or {})
    observed: dict[int, Any] = {}
    order = sorted(
        range(len(planned)), key=lambda i: (planned[i].invoke + planned[i].effect_delay, i)
    )
    for i in order:
        p = planned[i]
        if p.kind == "write":
            if not p.pending or p.applied:
                store[p.key] = p.value
        else:
            observed[i] = store.get(p.key)
    history = []
    for i, p in enumerate(planned):
        respond = None if p.pending else p.invoke + p.effect_delay + p.respond_delay
        value = p.value if p.kind == "write" else observed[i]
        history.append(Op(f"c{i}", cast(Any, p.kind), p.key, value, p.invoke, respond, op_id=i))
    return history


planned_ops = st.builds(
    Planned,
    key=st.sampled_from("ab"),
    kind=st.sampled_from(["read", "write"]),
    value=st.integers(1, 3),
    invoke=st.integers(0, 8),
    effect_delay=st.integers(0, 3),
    respond_delay=st.integers(0, 3),
    pending=st.sampled_from([False, False, False, True]),
    applied=st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(
    planned=st.lists(planned_ops, max_size=BRUTE_FORCE_MAX_OPS_PER_KEY - 1),
    corruption=st.none() | st.tuples(st.integers(0, 10), st.sampled_from([None, 1, 2, 3, 4])),
    initial=st.sampled_from([None, {"a": 1}, {"a": 2, "b": 3}]),
)
def test_fast_checker_agrees_with_brute_force_on_small_random_histories(
    planned: list[Planned],
    corruption: tuple[int, Any] | None,
    initial: dict[str, Any] | None,
) -> None:
    history = simulate(planned, initial)
    if not corruption:
        assert check_linearizable(history, initial=initial).ok
    elif history:
        index, value = corruption
        op = history[index % len(history)]
        history[index % len(history)] = Op(
            op.client, op.kind, op.key, value, op.invoke, op.respond, op.op_id
        )
    agree(history, initial)


def test_random_sweep_agrees_with_brute_force_and_finds_both_verdicts() -> None:
    # A seeded sweep, so the property test above is known not to be vacuous:
    # corrupted histories must produce both verdicts.
    rng = random.Random(20261202)
    verdicts = {True: 0, False: 0}
    for _ in range(300):
        planned = [
            Planned(
                key=rng.choice("ab"),
                kind=rng.choice(["read", "write"]),
                value=rng.randint(1, 3),
                invoke=rng.randint(0, 8),
                effect_delay=rng.randint(0, 3),
                respond_delay=rng.randint(0, 3),
                pending=rng.random() < 0.2,
                applied=rng.random() < 0.5,
            )
            for _ in range(rng.randint(1, 7))
        ]
        history = simulate(planned)
        i = rng.randrange(len(history))
        op = history[i]
        history[i] = Op(
            op.client, op.kind, op.key, rng.choice([None, 1, 2, 3]), op.invoke, op.respond
        )
        verdicts[agree(history)] += 1
    assert verdicts[True] > 30 and verdicts[False] > 30, verdicts


# --- Scale ----------------------------------------------------------------------------------------


def simulated_clients(
    seed: int, clients: int, ops_per_client: int, keys: int, pending_probability: float
) -> list[Op]:
    """Clients issuing one operation at a time against a real map, with overlapping intervals."""
    rng = random.Random(seed)
    planned: list[Planned] = []
    next_value = 0
    for _ in range(clients):
        tick = rng.randint(0, 5)
        for _ in range(ops_per_client):
            next_value += 1
            p = Planned(
                key=f"k{rng.randrange(keys)}",
                kind="write" if rng.random() < 0.4 else "read",
                value=next_value,
                invoke=tick,
                effect_delay=rng.randint(0, 6),
                respond_delay=rng.randint(0, 6),
                pending=rng.random() < pending_probability,
                applied=rng.random() < 0.5,
            )
            planned.append(p)
            tick = p.invoke + p.effect_delay + p.respond_delay + rng.randint(1, 3)
    return simulate(planned)


def test_ten_thousand_operation_history_over_many_keys_is_linearizable() -> None:
    history = simulated_clients(
        1, clients=40, ops_per_client=250, keys=50, pending_probability=0.01
    )
    assert len(history) == 10_000
    result = check_linearizable(history)
    assert result.ok, result.explanation
    assert (result.ops, result.keys) == (10_000, 50)


def test_ten_thousand_operation_history_on_one_key_needs_no_recursion() -> None:
    history = simulated_clients(2, clients=8, ops_per_client=1250, keys=1, pending_probability=0.0)
    result = check_linearizable(history)
    assert result.ok, result.explanation
    assert result.states_explored >= 10_000


def test_stale_read_planted_in_a_large_history_is_found_on_its_key() -> None:
    history = simulated_clients(3, clients=40, ops_per_client=250, keys=50, pending_probability=0.0)
    # A read of a value that was never written to its key cannot be linearized.
    index = next(i for i, op in enumerate(history) if op.kind == "read" and op.respond is not None)
    op = history[index]
    history[index] = Op(op.client, "read", op.key, -1, op.invoke, op.respond, op.op_id)
    result = check_linearizable(history)
    assert not result.ok and result.key == op.key
    assert result.violation is not None and result.violation.op == history[index]


# --- Malformed input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "culprit"),
    [
        (Op("c", "write", "x", 1, 5, 4), "respond=4 is before invoke=5"),
        (Op("c", cast(Any, "cas"), "x", 1, 0, 1), "kind 'cas'"),
        (Op("c", "read", "x", 1, cast(Any, "3"), 4), "invoke '3'"),
        (Op("c", "read", "x", 1, cast(Any, True), 4), "invoke True"),
        (Op("c", "read", "x", 1, 0, cast(Any, 1.5)), "respond 1.5"),
        (Op("c", "read", cast(Any, 7), 1, 0, 1), "key 7"),
        (Op(cast(Any, None), "read", "x", 1, 0, 1), "client None"),
        (Op("c", "write", "x", [1], 0, 1), "unhashable"),
    ],
)
def test_malformed_operation_raises_config_error_naming_it(op: Op, culprit: str) -> None:
    history = [w(1, 0, 1), op]
    with pytest.raises(ConfigError, match=culprit.replace(".", r"\.")):
        check_linearizable(history)
    if culprit != "unhashable":
        with pytest.raises(ConfigError, match=r"history\[1\]"):
            brute_force_linearizable(history)


def test_non_op_in_history_raises_config_error() -> None:
    with pytest.raises(ConfigError, match=r"history\[0\]: expected an Op, got tuple"):
        check_linearizable(cast(Any, [("c", "read", "x", 1, 0, 1)]))


def test_unhashable_initial_value_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="initial value is unhashable"):
        check_linearizable([r(None, 0, 1)], initial={"x": {"a": 1}})


def test_brute_force_refuses_large_histories_but_ignores_pending_reads() -> None:
    limit = BRUTE_FORCE_MAX_OPS_PER_KEY
    ok_size = [w(i, 2 * i, 2 * i + 1) for i in range(limit)] + [r(0, 0, None)]
    assert brute_force_linearizable(ok_size)
    too_big = [w(i, 2 * i, 2 * i + 1) for i in range(limit + 1)]
    with pytest.raises(ConfigError, match=f"key 'x' has {limit + 1} operations"):
        brute_force_linearizable(too_big)
