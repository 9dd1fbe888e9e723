"""The chase reaches spec steps that no seed and no exploring showed, by steps the code takes."""

from __future__ import annotations

from tlasim.protocols import get_protocol
from tlasim.sim.conformance.check import conformance
from tlasim.sim.explore.system import FaultBounds


def test_the_chase_alone_takes_the_code_to_spec_steps_it_had_not_shown() -> None:
    # No seeds and no exploring: apart from its first state, what the code
    # shows is what the chase drove it to. A small bound keeps this quick;
    # a chase that follows no step, or profiles none, reaches none.
    result = conformance(get_protocol("twopc"), seeds=0, explore_states=0,
                         explore_workloads=1, chase_states=150,
                         explore_faults=FaultBounds(crashes=1, losses=1, duplicates=1))
    runs = result.runs
    assert runs.chased_states == 150
    assert runs.chased_profiles >= 20, runs.chased_profiles
    assert runs.chase_failures == 0, "the correct protocol failed on a chased move"
    # Every profile the chase counts as reached is one the code now shows.
    unexplained = {p for a in result.actions for p in a.unexplained}
    code = result.impl.profiles()
    assert len(code) >= runs.chased_profiles
    assert not unexplained & code
