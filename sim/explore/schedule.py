"""Schedules: what the explorer found, written down so that one command replays it.

A schedule file is JSON: the run's protocol, workload seed, bug, options
and fault bounds, what was found, and the moves from the initial state.
`replay` makes those moves on a fresh system and writes the trace, so the
trace the explorer writes beside a schedule and the one `tlasim run
--schedule` writes are the same bytes: both come from this function. The
trace's header holds the schedule too (under `options.explore`), so a trace
can be handed to `--schedule` in place of its schedule file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from protocols import get_protocol
from protocols.definition import ProtocolDefinition
from protocols.errors import ConfigError, InvariantViolation, TraceFormatError
from sim.drift.revision import source_revision
from sim.explore.moves import Move
from sim.explore.system import ExploredSystem, FaultBounds
from sim.kernel.rng import split
from sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY
from tracing.codec import HEADER_EVENT, TraceFormat, read_trace, thaw
from tracing.emit.emitter import TraceEmitter
from tracing.inputs import PLAN_MAX_BYTES, read_regular_file
from tracing.validation.report import TRACE_PLACEHOLDER

SCHEDULE_VERSION = 1
OUTCOME_ERROR = "error"  # a core raised


@dataclass(frozen=True, slots=True)
class Schedule:
    protocol: str
    seed: int  # the workload seed: `configure` draws from its workload stream
    bug: str | None
    protocol_options: Mapping[str, Any]  # every option, not only the changed ones
    faults: FaultBounds
    moves: tuple[Move, ...]
    found: Mapping[str, Any] = field(default_factory=dict)  # kind and failure, if any

    def definition(self) -> ProtocolDefinition:
        return get_protocol(self.protocol)

    def config(self) -> Any:
        definition = self.definition()
        options = definition.make_options(dict(self.protocol_options))
        return definition.configure(options, self.bug, split(self.seed).workload)

    def explore_record(self) -> dict[str, Any]:
        return {
            "faults": {
                "crashes": self.faults.crashes,
                "losses": self.faults.losses,
                "duplicates": self.faults.duplicates,
            },
            "moves": [move.to_json() for move in self.moves],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "tlasim_schedule": SCHEDULE_VERSION,
            "protocol": self.protocol,
            "seed": self.seed,
            "bug": self.bug,
            "protocol_options": dict(self.protocol_options),
            **self.explore_record(),
            "found": dict(self.found),
        }

    def write(self, path: Path) -> None:
        """Write the schedule into `path`, whose folder (explore's --out) is made if missing."""
        from tracing.outputs import write_output

        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, "--out", (json.dumps(self.to_json(), indent=1) + "\n").encode())

    @staticmethod
    def from_json(data: Any, where: str) -> Schedule:
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: a schedule is a JSON object")
        version = data.get("tlasim_schedule")
        if version != SCHEDULE_VERSION:
            raise ConfigError(
                f"{where}: not a tlasim schedule of version {SCHEDULE_VERSION} "
                f"(tlasim_schedule={version!r})"
            )
        return _schedule_of(data, where)

    @staticmethod
    def read(path: Path) -> Schedule:
        """A schedule file, or a trace whose header holds a schedule."""
        data = read_regular_file(path, "--schedule", PLAN_MAX_BYTES)
        where = f"--schedule {path}"
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "tlasim_schedule" in parsed:
            return Schedule.from_json(parsed, where)
        if not _looks_like_trace(data):
            raise ConfigError(f"{where}: neither a schedule (JSON) nor a trace")
        try:
            header = read_trace(path).header
        except TraceFormatError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        options = thaw(header.get("options")) if header else None
        if not isinstance(options, dict) or not isinstance(options.get("explore"), dict):
            raise ConfigError(f"{where}: the trace's header holds no schedule")
        return _schedule_of({**options, **options["explore"]}, where)


def _looks_like_trace(data: bytes) -> bool:
    first = data.lstrip()[:1]
    if first and (0x80 <= first[0] <= 0x8F or first[0] in (0xDE, 0xDF)):
        return True  # msgpack: a trace's first record is a map
    try:
        line = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return False
    return isinstance(line, dict) and line.get("event") == HEADER_EVENT


def _schedule_of(data: Mapping[str, Any], where: str) -> Schedule:
    protocol, seed, bug = data.get("protocol"), data.get("seed"), data.get("bug")
    if not isinstance(protocol, str):
        raise ConfigError(f"{where}: no protocol named")
    get_protocol(protocol)  # a clear error for an unknown one
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"{where}: seed must be a non-negative integer")
    if bug is not None and not isinstance(bug, str):
        raise ConfigError(f"{where}: bug must be a string or null")
    options = data.get("protocol_options", {})
    if not isinstance(options, dict):
        raise ConfigError(f"{where}: protocol_options must be an object")
    faults = data.get("faults", {})
    if not isinstance(faults, dict) or not all(
        isinstance(faults.get(k, 0), int) and not isinstance(faults.get(k, 0), bool)
        and faults.get(k, 0) >= 0
        for k in ("crashes", "losses", "duplicates")
    ) or set(faults) - {"crashes", "losses", "duplicates"}:
        raise ConfigError(
            f"{where}: faults must hold non-negative crashes, losses and duplicates"
        )
    moves = data.get("moves")
    if not isinstance(moves, list):
        raise ConfigError(f"{where}: moves must be a list")
    found = data.get("found", {})
    return Schedule(
        protocol=protocol,
        seed=seed,
        bug=bug,
        protocol_options=options,
        faults=FaultBounds(**faults),
        moves=tuple(Move.from_json(m, f"{where}: move {i}") for i, m in enumerate(moves)),
        found=found if isinstance(found, dict) else {},
    )


@dataclass(slots=True)
class Replay:
    outcome: str  # ok, safety, liveness (unfinished at the end) or error
    failure: str | None
    failing_step: int | None  # seq of the trace line after which it failed
    steps: int
    moves_made: int


def replay(
    schedule: Schedule,
    *,
    stream: BinaryIO | None = None,
    trace_format: TraceFormat = "ndjson",
    tool_version: str = "",
) -> Replay:
    """Make the schedule's moves on a fresh system, writing the trace to `stream`.

    Ends at the first failure: an oracle's (safety), a core's exception
    (error). A schedule that ends with its work unfinished and that the
    explorer found as a liveness counterexample reports liveness.
    """
    definition = schedule.definition()
    config = schedule.config()
    emitter = TraceEmitter(stream, trace_format) if stream is not None else None
    system = ExploredSystem(definition, config, schedule.faults, emitter)
    if emitter is not None:
        emitter.header(
            protocol=definition.name,
            spec=definition.spec_module,
            seed=schedule.seed,
            options={
                "seed": schedule.seed,
                "protocol": definition.name,
                "bug": schedule.bug,
                "protocol_options": dict(schedule.protocol_options),
                "explore": schedule.explore_record(),
            },
            tool_version=tool_version,
            source_revision=source_revision(tuple(definition.source_files)),
            constants=definition.spec_constants(config),
            variables=definition.variable_types,
            # The trace holds its schedule, so it replays itself.
            reproduce=f"tlasim run {definition.name} --schedule {TRACE_PLACEHOLDER}",
        )
    try:
        result = _play(system, schedule)
        if emitter is not None:
            emitter.end(outcome=result.outcome, failure=result.failure,
                        failing_step=result.failing_step)
    finally:
        if emitter is not None:
            emitter.close()
    return result


def _play(system: ExploredSystem, schedule: Schedule) -> Replay:
    """Make the schedule's moves; how they ended."""
    try:
        system.initial_step()
        for move in schedule.moves:
            system.apply(move)
    except InvariantViolation as violation:
        return Replay(OUTCOME_SAFETY, str(violation), system.steps - 1, system.steps,
                      system.moves_made)
    except ConfigError:
        raise
    except Exception as exc:  # a core's own failure, as the explorer reports it
        return Replay(OUTCOME_ERROR, f"{type(exc).__name__}: {exc}", system.steps - 1,
                      system.steps, system.moves_made)
    unfinished = system.unfinished()
    if unfinished is not None and schedule.found.get("kind") == OUTCOME_LIVENESS:
        return Replay(OUTCOME_LIVENESS, unfinished, None, system.steps, system.moves_made)
    return Replay(OUTCOME_OK, None, None, system.steps, system.moves_made)
