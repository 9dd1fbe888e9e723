"""Search mode: hypothesis draws the seed, the workload and the fault plan, and shrinks.

Where a campaign sweeps seeds under swarm weather, search lets hypothesis
choose every input and then shrink a failure toward fewer, earlier and
simpler faults, a smaller workload and seed 0. The search itself is seeded,
so the same command finds the same failure.

Hypothesis (6.131 and later) also draws, now and then, literals it reads
from the source of every local module the process has loaded. That made the
search path depend on the text of any tlasim module and on what the process
happened to import, so an unrelated edit could hide a bug from a fixed
budget. Search switches those constants off while it runs: its path depends
on its seed, the protocol's strategies and the runs' verdicts only.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from tlasim.faults.plan import FaultPlan
from tlasim.faults.strategies import fault_plans, workloads
from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.sim.api import Outcome, crash_nodes, nodes, run
from tlasim.sim.campaign.shrinking import shrink_failure
from tlasim.sim.kernel.simulation import OUTCOME_OK


@dataclass(frozen=True, slots=True)
class Example:
    seed: int
    options: dict[str, Any]
    plan: FaultPlan


@dataclass(slots=True)
class SearchResult:
    examples_run: int  # how many runs the search took, both shrinking passes included
    first_failure_at: int | None  # the 1-based example that first failed
    failure: Outcome | None  # the shrunk failing run, or None when none failed


def examples(protocol: str, horizon_ticks: int = 600) -> st.SearchStrategy[Example]:
    ranges = get_protocol(protocol).workload_ranges

    @st.composite
    def draw(draw_fn: st.DrawFn) -> Example:
        options = draw_fn(workloads(ranges))
        plan = draw_fn(
            fault_plans(
                nodes(protocol, **options),
                horizon_ticks=horizon_ticks,
                crash_nodes=crash_nodes(protocol, **options),
            )
        )
        seed = draw_fn(st.integers(min_value=0, max_value=2**16))
        return Example(seed, options, plan)

    return draw()


@contextmanager
def _without_local_constants() -> Iterator[None]:
    """Keep hypothesis from drawing literals out of the loaded modules' source.

    This reaches into hypothesis's internals, so a hypothesis without them
    (older, or changed) is left as it is.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if original is None or cache is None:
        yield
        return
    empty = Constants()
    cache.cache.clear()  # it may hold constants from an earlier search
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


def search(
    protocol: str,
    *,
    bug: str | None = None,
    max_examples: int = 200,
    search_seed: int = 0,
) -> SearchResult:
    """Look for a failing run of `protocol`; shrink and return it, if one is found."""
    get_protocol(protocol)
    if max_examples < 1:
        raise ConfigError(f"--examples {max_examples}: must be at least 1")
    calls = 0
    first_failure: int | None = None

    def fails(example: Example) -> bool:
        nonlocal calls, first_failure
        calls += 1
        outcome = run(protocol, example.plan, seed=example.seed, bug=bug, options=example.options)
        failed = outcome.result.outcome != OUTCOME_OK
        if failed and first_failure is None:
            first_failure = calls
        return failed

    search_settings = settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    try:
        with _without_local_constants():
            found = find(
                examples(protocol),
                fails,
                settings=search_settings,
                random=random.Random(search_seed),
            )
    except NoSuchExample:
        return SearchResult(calls, None, None)
    # Hypothesis shrinks the plan's encoding, which can stall with redundant
    # faults left in; delta debugging on the plan itself finishes the job.
    shrunk = shrink_failure(
        protocol, found.seed, bug=bug, plan=found.plan, options=found.options
    )
    return SearchResult(calls + shrunk.shrink.runs, first_failure, shrunk.shrunk)
