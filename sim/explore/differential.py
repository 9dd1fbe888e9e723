"""The differential check: every step the implementation takes is a step of the spec.

Theory of operation: the explorer reaches every state of the implementation
within a bound. Each trace step it takes, projected through the refinement
mapping, is a pair of spec states and the action between them. Many steps
project to the same spec step, so `collect` keeps one witness schedule per
distinct projected step. `check` replays each witness into a trace and has
TLC check them all in batches. A rejected trace is a step of the
implementation that the spec does not allow, or a mapping that is wrong.
The count of distinct projected states is what the implementation
reaches of the spec's state space, to set beside TLC's own count for the
same constants.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlasim.protocols.definition import ProtocolDefinition, StepInfo
from tlasim.sim.explore.canonical import state_digest
from tlasim.sim.explore.moves import Move
from tlasim.sim.explore.schedule import Schedule, replay
from tlasim.sim.explore.search import Exploration, Progress, SearchBounds, explore
from tlasim.sim.run.runner import TOOL_VERSION
from tlasim.tracing.outputs import open_output
from tlasim.tracing.validation.validator import Verdict, validate_traces


@dataclass(slots=True)
class ProjectedSteps:
    exploration: Exploration
    states: set[bytes] = field(default_factory=set)  # digests of distinct spec states
    # digest of (before, action, params, after) -> a schedule whose last move takes it
    witnesses: dict[bytes, tuple[Move, ...]] = field(default_factory=dict)
    steps: int = 0  # trace steps taken in all, counted again each time


def collect(
    protocol: ProtocolDefinition,
    config: Any,
    bounds: SearchBounds,
    progress: Progress | None = None,
) -> ProjectedSteps:
    """Explore, keeping every distinct projected state and one witness per projected step."""
    found = ProjectedSteps(Exploration())

    def on_step(
        before: Mapping[str, Any], step: StepInfo, after: Mapping[str, Any], path: Any
    ) -> None:
        found.steps += 1
        found.states.add(state_digest(after))
        key = state_digest((before, step.action, step.params, after))
        if key not in found.witnesses:
            found.witnesses[key] = path()

    found.exploration = explore(protocol, config, bounds, progress=progress, on_step=on_step)
    return found


@dataclass(slots=True)
class DifferentialResult:
    projected_states: int
    projected_steps: int
    traces_checked: int
    rejected: list[tuple[tuple[Move, ...], Verdict]]

    @property
    def passed(self) -> bool:
        return not self.rejected


def write_witnesses(
    schedule_of: Schedule, found: ProjectedSteps, folder: Path
) -> list[tuple[tuple[Move, ...], Path]]:
    """Replay each witness into a trace in `folder`.

    `schedule_of` gives the run (protocol, seed, bug, options, fault bounds);
    its moves are replaced by each witness's."""
    written = []
    for number, moves in enumerate(found.witnesses.values()):
        path = folder / f"{schedule_of.protocol}-step-{number:06d}.ndjson"
        schedule = Schedule(
            schedule_of.protocol, schedule_of.seed, schedule_of.bug,
            schedule_of.protocol_options, schedule_of.faults, moves,
        )
        with open_output(path, "a witness trace") as stream:
            # A witness is a prefix: only its steps count, not whether it finishes.
            replay(schedule, stream=stream, tool_version=TOOL_VERSION, decide_liveness=False)
        written.append((moves, path))
    return written


def check(
    schedule_of: Schedule, found: ProjectedSteps, workdir: Path | None = None
) -> DifferentialResult:
    """Replay each witness into a trace and have TLC check them all, in batches."""
    with tempfile.TemporaryDirectory(prefix="tlasim-differential-") as scratch:
        written = write_witnesses(schedule_of, found, workdir or Path(scratch))
        verdicts = validate_traces([path for _, path in written], explain=False)
    rejected = [
        (moves, verdict)
        for (moves, _), verdict in zip(written, verdicts, strict=True)
        if not verdict.accepted
    ]
    return DifferentialResult(len(found.states), len(written), len(written), rejected)
