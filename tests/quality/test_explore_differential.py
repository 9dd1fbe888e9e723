"""The differential check: every step the implementation takes within a bound,
projected through the refinement mapping, is a step of the spec (TLC checks one
trace per distinct projected step, for all five protocols in one batch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.sim.explore import differential
from tlasim.sim.explore.schedule import Schedule
from tlasim.sim.explore.search import SearchBounds
from tlasim.sim.explore.system import FaultBounds
from tlasim.sim.kernel.rng import split
from tlasim.tracing.validation.validator import validate_traces

# protocol -> (options, fault bounds, depth; None: every state)
BOUNDS: dict[str, tuple[dict[str, Any], FaultBounds, int | None]] = {
    "twopc": ({"rm_count": 2, "tx_count": 1}, FaultBounds(1, 1, 1), 6),
    "shardsplit": (
        {"key_count": 2, "split_count": 1, "client_count": 1, "ops_per_client": 1},
        FaultBounds(crashes=1), 7,
    ),
    "snapshot": (
        {"key_count": 2, "chunk_count": 1, "client_count": 1, "ops_per_client": 1},
        FaultBounds(crashes=1), 8,
    ),
    "lockfree-queue": ({"thread_count": 2, "ops_per_thread": 1}, FaultBounds(), None),
    "lockfree-stack": ({"thread_count": 2, "ops_per_thread": 1}, FaultBounds(), None),
}


@pytest.mark.slow
def test_every_projected_step_of_the_implementation_is_a_step_of_the_spec(
    tmp_path: Path,
) -> None:
    written: list[tuple[str, Path]] = []
    for protocol, (options, faults, depth) in BOUNDS.items():
        definition = get_protocol(protocol)
        made = definition.make_options(options)
        config = definition.configure(made, None, split(0).workload)
        found = differential.collect(definition, config, SearchBounds(faults, max_depth=depth))
        assert found.exploration.exhausted and found.exploration.counterexample is None
        # Distinct spec states are fewer than implementation states (volatile
        # state the spec does not see), and many steps project to one.
        assert 0 < len(found.states) <= found.exploration.states
        assert len(found.witnesses) < found.steps
        schedule = Schedule(protocol, 0, None, made.as_dict(), faults, ())
        folder = tmp_path / protocol
        folder.mkdir()
        written += [
            (protocol, path)
            for _, path in differential.write_witnesses(schedule, found, folder)
        ]
    verdicts = validate_traces([path for _, path in written], explain=False)
    rejected = [
        f"{protocol}: {verdict.report()}"
        for (protocol, _), verdict in zip(written, verdicts, strict=True)
        if not verdict.accepted
    ]
    assert not rejected, "\n".join(rejected[:3])
