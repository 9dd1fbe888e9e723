"""The lock-free queue and Treiber stack (protocols/lockfree): each structure
run by one thread, the allocator, each race by a hand-written interleaving
(the buggy variant's oracle fails where the correct code passes), and TLC on
traces of correct runs.

The interleavings fire the threads' timers directly, as the explorer does:
"p1:append" fires p1's choice of an append at `run`, and "p1" fires its
next label step.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols import PROTOCOLS
from tlasim.protocols.base import Start, Timeout, Trace
from tlasim.protocols.definition import ProtocolDefinition, StepInfo
from tlasim.protocols.errors import InvariantViolation
from tlasim.protocols.lockfree.memory import SharedMemory
from tlasim.protocols.lockfree.thread import NULL, STEP
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import read_trace
from tlasim.tracing.validation.validator import validate_traces

QUEUE = PROTOCOLS["lockfree-queue"]
STACK = PROTOCOLS["lockfree-stack"]


class Threads:
    """One run's thread cores, driven timer by timer, with the oracle after each step."""

    def __init__(self, definition: ProtocolDefinition, bug: str | None, **overrides: int) -> None:
        self.definition = definition
        options = definition.make_options(overrides)
        self.config = definition.configure(options, bug, random.Random(0))
        ids = definition.node_ids(self.config)
        self.cores = {t: definition.make_core(self.config, t) for t in ids}
        self.oracle = definition.make_oracle(self.config)
        for core in self.cores.values():
            core.handle(0, Start())

    def spec_vars(self) -> dict[str, Any]:
        views = {t: core.view() for t, core in self.cores.items()}
        return self.definition.spec_vars(self.config, views, {}, {}, {})

    def fire(self, event: str) -> str | None:
        """Fire "thread" (its next label) or "thread:choice"; the action traced, if any."""
        thread, _, choice = event.partition(":")
        effects = self.cores[thread].handle(0, Timeout(choice or STEP))
        traces = [e for e in effects if isinstance(e, Trace)]
        if not traces:
            return None
        (trace,) = traces
        step = StepInfo(0, thread, trace.action, trace.params)
        self.oracle.check_step(self.spec_vars(), step)
        return trace.action

    def run(self, schedule: str) -> list[str | None]:
        return [self.fire(event) for event in schedule.split()]


# --- one thread: the sequential behaviour ------------------------------------


def test_queue_run_by_one_thread_is_first_in_first_out() -> None:
    threads = Threads(QUEUE, None, thread_count=1, ops_per_thread=5)
    append = "p1:append p1 p1 p1"
    actions = threads.run(f"{append} {append} p1:empty p1")
    assert actions[-1] == "e_load"
    assert threads.spec_vars()["expected"] == ("n1", "n2")
    # The first remove takes n1 by advancing head; the second takes the last node.
    assert threads.run("p1:remove p1 p1 p1 p1 p1 p1") == [
        "run", "r_lock", "r_head", "r_next", "r_advance", "r_free", "r_release",
    ]
    assert threads.run("p1:remove p1 p1 p1 p1 p1 p1 p1") == [
        "run", "r_lock", "r_head", "r_next", "r_last", "r_clear_head", "r_free", "r_release",
    ]
    state = threads.spec_vars()
    assert (state["head"], state["tail"], state["expected"]) == (NULL, NULL, ())
    assert state["free"] == frozenset({"n1", "n2", "n3", "n4"})
    assert threads.fire("p1") == "run" and threads.spec_vars()["pc"]["p1"] == "Done"
    assert threads.oracle.check_liveness(threads.spec_vars()) is None


def test_queue_remove_from_the_empty_queue_answers_empty() -> None:
    threads = Threads(QUEUE, None, thread_count=1, ops_per_thread=1)
    actions = threads.run("p1:remove p1 p1 p1 p1")
    assert actions == ["run", "r_lock", "r_head", "r_empty", "r_release"]
    assert threads.spec_vars()["mismatch"] == NULL


def test_stack_run_by_one_thread_is_last_in_first_out() -> None:
    threads = Threads(STACK, None, thread_count=1, ops_per_thread=5)
    threads.run("p1:push p1 p1 p1 p1:push p1 p1 p1")
    state = threads.spec_vars()
    assert state["expected"] == ("n2", "n1")
    assert state["top"] == {"ptr": "n2", "tag": 2}
    assert state["next"]["n2"] == "n1"
    assert threads.run("p1:pop p1 p1 p1 p1") == ["run", "p_load", "p_next", "p_cas", "p_free"]
    assert threads.spec_vars()["expected"] == ("n1",)
    threads.run("p1:pop p1 p1 p1 p1")
    assert threads.run("p1:pop p1") == ["run", "p_load"]  # a null pop
    assert threads.spec_vars()["top"] == {"ptr": NULL, "tag": 4}


def test_a_spin_on_a_held_consumer_flag_is_no_step() -> None:
    threads = Threads(QUEUE, None, thread_count=2, ops_per_thread=1)
    threads.run("p1:remove p1")
    assert threads.run("p2:remove p2 p2") == ["run", None, None]
    assert threads.spec_vars()["pc"]["p2"] == "r_lock"


def test_an_append_with_every_node_in_use_is_no_step() -> None:
    threads = Threads(QUEUE, None, thread_count=1, node_count=1, ops_per_thread=3)
    threads.run("p1:append p1 p1 p1")
    assert threads.fire("p1:append") is None
    assert threads.spec_vars()["steps"]["p1"] == 1
    assert threads.fire("p1:remove") == "run"


# --- the allocator -----------------------------------------------------------


def test_allocator_hands_out_the_address_freed_last() -> None:
    memory = SharedMemory(("n1", "n2", "n3"), {})
    assert [memory.alloc(), memory.alloc()] == ["n1", "n2"]
    memory.free_node("n2")
    memory.free_node("n1")
    assert [memory.alloc(), memory.alloc(), memory.alloc(), memory.alloc()] == [
        "n1", "n2", "n3", None,
    ]


# --- the races, by hand-written interleavings ---------------------------------

# Seed 000's half-visible push: p1 has exchanged tail but not yet set head
# when p2 asks whether the queue is empty.
HALF_VISIBLE = "p1:append p1 p1 p2:empty p2"


def test_half_visible_push_is_caught_by_the_oracle() -> None:
    threads = Threads(QUEUE, "half_visible")
    with pytest.raises(InvariantViolation, match=r'^EmptyAnswerMatches: p2 answered "empty"'):
        threads.run(HALF_VISIBLE)


def test_correct_empty_check_sees_a_half_visible_push() -> None:
    threads = Threads(QUEUE, None)
    threads.run(HALF_VISIBLE)
    assert threads.spec_vars()["mismatch"] == NULL


# The last-node transition of docs/lockfree-model.md: p2 finds n1 the last
# node, then p1 exchanges tail to n2 before p2 empties the queue.
LAST_NODE_PREFIX = "p1:append p1 p1 p1 p1:append p1 p2:remove p2 p2 p2 p2 p1"


def test_last_node_race_is_caught_by_the_oracle() -> None:
    threads = Threads(QUEUE, "last_node")
    threads.run(LAST_NODE_PREFIX)
    assert threads.fire("p2") == "r_store_tail"
    with pytest.raises(InvariantViolation, match=r"^EmptyAnswerMatches: p3 answered"):
        threads.run("p3:empty p3")


def test_correct_remove_takes_the_last_node_in_one_compare_exchange() -> None:
    threads = Threads(QUEUE, None)
    threads.run(LAST_NODE_PREFIX)
    # p2's compare-exchange emptied the queue before p1's exchange, so p1
    # found no previous tail and sets head itself: nothing is lost.
    state = threads.spec_vars()
    assert (state["pc"]["p2"], state["previous"]["p1"]) == ("r_clear_head", NULL)
    threads.run("p3:empty p3 p2 p1 p2 p2")
    state = threads.spec_vars()
    assert (state["head"], state["tail"], state["expected"]) == ("n2", "n2", ("n2",))
    assert state["mismatch"] == NULL


# ABA: p2 loads top n1 and its next (nullptr); meanwhile p1 pops n1 and
# pushes the reused address n1 on top of p3's n2. p2's stale compare-exchange
# then succeeds and n2 is lost. With the allocator's LIFO reuse this needs a
# third thread: with two, every reuse puts back the very links p2 read.
ABA = (
    "p1:pop p2:push p2 p2 p2 p1 p1 p2:pop p2 p1 p1 p1:push p2 "
    "p3:push p3 p3 p3 p1 p1 p1 p2"
)


def test_aba_is_caught_by_the_oracle() -> None:
    threads = Threads(STACK, "aba", thread_count=3, ops_per_thread=2)
    threads.run(ABA)
    assert threads.spec_vars()["top"]["ptr"] == NULL  # n2 fell out with n1
    with pytest.raises(InvariantViolation, match=r"^EmptyAnswerMatches: p3 answered nullptr"):
        threads.run("p3:pop p3")


def test_tagged_top_defeats_aba() -> None:
    threads = Threads(STACK, None, thread_count=3, ops_per_thread=2)
    threads.run(ABA)
    assert threads.spec_vars()["pc"]["p2"] == "p_next"  # the tag moved on: retry
    threads.run("p2 p2 p2 p3:pop p3 p3 p3 p3")
    assert threads.spec_vars()["expected"] == ()
    assert threads.spec_vars()["mismatch"] == NULL


# --- runs in the simulator ----------------------------------------------------


@pytest.mark.parametrize("protocol", ["lockfree-queue", "lockfree-stack"])
def test_traces_of_correct_runs_are_behaviours_of_the_spec(protocol: str, tmp_path: Path) -> None:
    traces = []
    for seed in range(4):
        path = tmp_path / f"{seed}.ndjson"
        assert run_seed(protocol, seed, trace_path=path).result.ok
        traces.append(read_trace(path))
    verdicts = validate_traces(traces, explain=False)
    assert [v.accepted for v in verdicts] == [True] * len(traces), [v.summary() for v in verdicts]


@pytest.mark.parametrize("protocol", ["lockfree-queue", "lockfree-stack"])
def test_one_seed_gives_one_trace(protocol: str) -> None:
    first = run_seed(protocol, 7, keep_trace=True).trace
    assert first is not None and first == run_seed(protocol, 7, keep_trace=True).trace


def test_threads_never_crash_and_send_nothing() -> None:
    for definition in (QUEUE, STACK):
        config = definition.configure(definition.default_options(), None, random.Random(0))
        assert definition.crash_nodes(config) == ()
        assert definition.net_lose_action is None and definition.net_duplicate_action is None
