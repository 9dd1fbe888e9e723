"""The correct protocols pass the explorer's zoo bounds (explore_zoo_table.py):
no oracle fires in any schedule as deep as the variant's counterexample."""

from __future__ import annotations

import pytest
from explore_zoo_table import FOUND_BY_EXPLORE, configure

from tlasim.sim.explore.search import SearchBounds, explore


@pytest.mark.parametrize(("protocol", "bug"), sorted(FOUND_BY_EXPLORE))
def test_the_correct_protocol_passes_the_same_bound(protocol: str, bug: str) -> None:
    found = FOUND_BY_EXPLORE[(protocol, bug)]
    definition, config = configure(protocol, found.options, None)
    result = explore(definition, config, SearchBounds(found.faults, max_depth=found.depth))
    assert result.exhausted and result.counterexample is None, result.counterexample
