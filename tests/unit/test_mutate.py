"""Each mutation of tracing.mutation.mutate does what its name says, on a real trace,
deterministically."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import Trace, TraceStep, read_trace, write_trace
from tlasim.tracing.mutation.mutate import MUTATIONS, Mutant, mutate, renumbered
from tlasim.tracing.validation.validator import validate_traces
from tlasim.tracing.values import Record

# Seed 85 has crashes, loss and duplication under swarm faults.
SEED = 85


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    path = tmp_path_factory.mktemp("mutate") / "source.ndjson"
    run_seed("twopc", SEED, trace_path=path)
    return read_trace(path)


def made(trace: Trace, how: str, seed: int = 0, **kwargs: object) -> Mutant:
    mutant = mutate(trace, how, random.Random(seed), **kwargs)  # type: ignore[arg-type]
    assert mutant is not None, f"{how} found no place in the trace"
    return mutant


def first_mutant(trace: Trace, how: str, wanted: Callable[[Mutant], bool]) -> Mutant:
    """The mutant of the first stream seed that lands where `wanted` says."""
    for seed in range(500):
        mutant = made(trace, how, seed)
        if wanted(mutant):
            return mutant
    raise AssertionError(f"no {how} mutant in 500 seeds is the one wanted")


def same_line(a: TraceStep, b: TraceStep) -> bool:
    """Equal but for the line number."""
    return (a.seq, a.ts, a.node, a.action, a.params, a.vars) == (
        b.seq, b.ts, b.node, b.action, b.params, b.vars
    )


def copies(step: TraceStep, message: object) -> int:
    bag = step.vars["msgs"]
    count = bag.get(message, 0)
    assert isinstance(count, int)
    return count


@pytest.mark.parametrize("how", MUTATIONS)
def test_mutation_is_deterministic_and_numbers_lines_as_the_file_will(
    trace: Trace, how: str, tmp_path: Path
) -> None:
    first, again = made(trace, how, 11), made(trace, how, 11)
    assert first == again
    assert [s.line for s in first.trace.steps] == list(range(2, len(first.trace.steps) + 2))
    assert first.trace.steps[first.index].line == first.line
    # The lines are those of the written file.
    path = tmp_path / "mutant.ndjson"
    write_trace(first.trace, path)
    assert read_trace(path).steps == first.trace.steps
    assert first.trace != trace


@pytest.mark.parametrize("how", MUTATIONS)
def test_mutation_draws_its_place_from_the_stream(trace: Trace, how: str) -> None:
    mutants = {made(trace, how, seed).detail for seed in range(8)}
    assert len(mutants) > 1


def test_drop_line_removes_one_inner_line(trace: Trace) -> None:
    mutant = made(trace, "drop-line")
    i = mutant.index
    assert 1 <= i < len(trace.steps) - 1
    kept = [*trace.steps[:i], *trace.steps[i + 1 :]]
    assert len(mutant.trace.steps) == len(trace.steps) - 1
    assert all(same_line(a, b) for a, b in zip(mutant.trace.steps, kept, strict=True))
    assert mutant.detail == f"dropped line {trace.steps[i].line} ({trace.steps[i].action})"


def test_swap_lines_exchanges_two_adjacent_lines_whole(trace: Trace) -> None:
    mutant = made(trace, "swap-lines")
    i = mutant.index
    steps = mutant.trace.steps
    assert same_line(steps[i], trace.steps[i + 1])
    assert same_line(steps[i + 1], trace.steps[i])
    others = [j for j in range(len(steps)) if j not in (i, i + 1)]
    assert all(same_line(steps[j], trace.steps[j]) for j in others)


def test_reorder_steps_swaps_the_actions_and_recomputes_the_state_between(trace: Trace) -> None:
    mutant = made(trace, "reorder-steps")
    i = mutant.index
    before, first, second = trace.steps[i - 1 : i + 2]
    new_first, new_second = mutant.trace.steps[i : i + 2]
    assert (new_first.action, new_first.params) == (second.action, second.params)
    assert (new_second.action, new_second.params) == (first.action, first.params)
    # Lines keep their place in time, and the state after both steps is the same.
    assert (new_first.seq, new_first.ts) == (first.seq, first.ts)
    assert new_second.vars == second.vars
    # Each variable only the second step changed is changed at once; each
    # variable only the first step changed still has its value from before.
    for name in before.vars:
        by_first = before.vars[name] != first.vars[name]
        by_second = first.vars[name] != second.vars[name]
        if by_second and not by_first:
            assert new_first.vars[name] == second.vars[name], name
        if by_first and not by_second:
            assert new_first.vars[name] == before.vars[name], name


def test_reorder_of_two_sends_moves_each_message_copy(trace: Trace) -> None:
    def two_sends(m: Mutant) -> bool:
        return {s.action for s in m.trace.steps[m.index : m.index + 2]} == {"TMSendPrepare"}

    mutant = first_mutant(trace, "reorder-steps", two_sends)
    i = mutant.index
    sent_second = mutant.trace.steps[i].params
    message = Record({"rm": sent_second["rm"], "tx": sent_second["tx"], "type": "Prepare"})
    # The message of the step now first is in flight one line earlier.
    assert copies(mutant.trace.steps[i], message) == copies(trace.steps[i - 1], message) + 1
    assert mutant.trace.steps[i].vars["msgs"] != trace.steps[i].vars["msgs"]


def test_change_value_changes_one_value_of_one_variable_on_one_line(trace: Trace) -> None:
    for seed in range(30):
        mutant = made(trace, "change-value", seed)
        i = mutant.index
        differing = [
            j for j, (a, b) in enumerate(zip(trace.steps, mutant.trace.steps, strict=True))
            if not same_line(a, b)
        ]
        assert differing == [i]
        old, new = trace.steps[i], mutant.trace.steps[i]
        changed = [n for n in old.vars if old.vars[n] != new.vars[n]]
        assert len(changed) == 1, mutant.detail
        (name,) = changed
        assert type(new.vars[name]) is type(old.vars[name]) or not new.vars[name], mutant.detail
        assert (old.action, old.params) == (new.action, new.params)
        assert name in mutant.detail and f"line {old.line}" in mutant.detail


def test_change_value_keeps_a_leaf_of_the_same_kind(trace: Trace) -> None:
    flipped = first_mutant(trace, "change-value", lambda m: m.detail.startswith("flipped"))
    assert "TRUE became FALSE" in flipped.detail or "FALSE became TRUE" in flipped.detail
    replaced = first_mutant(
        trace, "change-value", lambda m: m.detail.startswith("replaced rmState")
    )
    states = ('"working"', '"prepared"', '"committed"', '"aborted"')
    old, _, new = replaced.detail.rpartition(": ")[2].partition(" became ")
    assert old in states and new in states and old != new


def test_rename_action_changes_only_the_action_to_another_of_the_pool(trace: Trace) -> None:
    pool = ("TMCommit", "RMRcvAbort", "Init")
    for seed in range(10):
        mutant = made(trace, "rename-action", seed, actions=pool)
        i = mutant.index
        old, new = trace.steps[i], mutant.trace.steps[i]
        assert new.action in pool and new.action not in (old.action, "Init")
        assert (old.params, old.vars) == (new.params, new.vars)
        assert i >= 1


def test_duplicate_line_writes_one_line_twice(trace: Trace) -> None:
    mutant = made(trace, "duplicate-line")
    i = mutant.index
    steps = mutant.trace.steps
    assert len(steps) == len(trace.steps) + 1
    assert same_line(steps[i], steps[i - 1])
    assert same_line(steps[i], trace.steps[i - 1])
    assert all(same_line(a, b) for a, b in zip(steps[i:], trace.steps[i - 1 :], strict=False))


def test_deliver_before_send_moves_a_receipt_before_its_send(trace: Trace) -> None:
    for seed in range(10):
        mutant = made(trace, "deliver-before-send", seed)
        steps, i = mutant.trace.steps, mutant.index
        moved = steps[i]
        # The line is unchanged; only its place is.
        original = next(s for s in trace.steps if s.line == int(mutant.detail.split()[2]))
        assert same_line(moved, original)
        before = trace.steps[trace.steps.index(original) - 1]
        received = [
            m for m in before.vars["msgs"] if copies(original, m) < copies(before, m)
        ]
        assert received, "the moved line receives no message"
        # Where it now stands, none of the messages it receives has been sent,
        # and the next line (the send) puts one in flight.
        assert any(copies(steps[i - 1], m) == 0 < copies(steps[i + 1], m) for m in received)
        assert sorted(s.seq for s in steps) == sorted(s.seq for s in trace.steps)


def test_deliver_before_send_ignores_lost_messages(trace: Trace) -> None:
    for seed in range(20):
        mutant = made(trace, "deliver-before-send", seed, lose_actions=("NetLose",))
        assert mutant.trace.steps[mutant.index].action != "NetLose"


def test_mutation_without_a_place_gives_none(trace: Trace) -> None:
    init_only = renumbered(Trace(trace.path, trace.header, trace.steps[:1]))
    for how in MUTATIONS:
        if how != "change-value":  # which changes the one line there is
            assert mutate(init_only, how, random.Random(0)) is None, how
    assert made(init_only, "change-value").index == 0
    no_network = mutate(trace, "deliver-before-send", random.Random(0), network="nothing")
    assert no_network is None
    with pytest.raises(ValueError, match="unknown mutation"):
        mutate(trace, "shuffle", random.Random(0))


def test_tlc_accepts_independent_reorders_and_rejects_dependent_ones(trace: Trace) -> None:
    def independent(m: Mutant) -> bool:
        return {s.action for s in m.trace.steps[m.index : m.index + 2]} == {"TMSendPrepare"}

    def dependent(m: Mutant) -> bool:
        # A Yes vote sent before the Prepare that made the RM prepared.
        a, b = m.trace.steps[m.index : m.index + 2]
        return (a.action, b.action) == ("RMSendPrepared", "RMRcvPrepare") and a.params == b.params

    mutants = [
        first_mutant(trace, "reorder-steps", independent),
        first_mutant(trace, "reorder-steps", dependent),
    ]
    verdicts = validate_traces([m.trace for m in mutants], explain=False)
    assert verdicts[0].accepted, mutants[0].detail
    assert not verdicts[1].accepted
    assert verdicts[1].divergence is not None
    assert verdicts[1].divergence.line == mutants[1].line
