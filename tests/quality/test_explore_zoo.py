"""Each variant in explore_zoo_table.FOUND_BY_EXPLORE is found by `tlasim explore`
at its depth, and TLC rejects the trace of the schedule found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bug_zoo_table import documented
from explore_zoo_table import FOUND_BY_EXPLORE, Found, configure, write_trace

from tlasim.sim.explore.search import DFS, FOUND_SAFETY, SearchBounds, explore
from tlasim.tracing.validation.validator import validate_traces


@pytest.fixture(scope="module")
def counterexamples(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    folder = tmp_path_factory.mktemp("explore-zoo")
    results = {}
    for (protocol, bug), found in FOUND_BY_EXPLORE.items():
        definition, config = configure(protocol, found.options, bug)
        result = explore(definition, config, SearchBounds(found.faults))
        trace = None
        if result.counterexample is not None:
            trace = write_trace(protocol, bug, found, result.counterexample.schedule,
                                folder / f"{protocol}-{bug}.ndjson")
        results[(protocol, bug)] = (result.counterexample, trace)
    return results


@pytest.mark.parametrize(("protocol", "bug"), sorted(FOUND_BY_EXPLORE))
def test_explore_finds_the_variant_at_its_depth(
    protocol: str, bug: str, counterexamples: dict[tuple[str, str], Any]
) -> None:
    counterexample, _ = counterexamples[(protocol, bug)]
    assert counterexample is not None, f"explore did not find {protocol} {bug}"
    assert counterexample.kind == FOUND_SAFETY
    assert documented(protocol, bug, counterexample.failure), counterexample.failure
    assert len(counterexample.schedule) == FOUND_BY_EXPLORE[(protocol, bug)].depth


def test_tlc_rejects_every_counterexample_the_explorer_found(
    counterexamples: dict[tuple[str, str], Any],
) -> None:
    traces = [trace for _, trace in counterexamples.values() if trace is not None]
    assert len(traces) == len(FOUND_BY_EXPLORE)
    verdicts = validate_traces(traces, explain=False)
    accepted = [t.name for t, v in zip(traces, verdicts, strict=True) if v.accepted]
    assert not accepted, f"TLC accepted the counterexample traces {accepted}"


@pytest.mark.slow
def test_explore_finds_the_stacks_aba_race_depth_first(tmp_path: Path) -> None:
    found = Found({"thread_count": 3, "ops_per_thread": 2}, 0)
    definition, config = configure("lockfree-stack", found.options, "aba")
    result = explore(definition, config, SearchBounds(order=DFS))
    counterexample = result.counterexample
    assert counterexample is not None and counterexample.kind == FOUND_SAFETY
    assert documented("lockfree-stack", "aba", counterexample.failure)
    trace = write_trace("lockfree-stack", "aba", found, counterexample.schedule,
                        tmp_path / "aba.ndjson")
    (verdict,) = validate_traces([trace], explain=False)
    assert not verdict.accepted
