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

from tlasim.protocols import command_name, get_protocol
from tlasim.protocols.checked import checked_int, load_json
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError, InvariantViolation, TraceFormatError, short_repr
from tlasim.sim.campaign.records import SEED_MAX as MAX_SEED
from tlasim.sim.drift.revision import source_revision
from tlasim.sim.explore.moves import Move
from tlasim.sim.explore.system import ExploredSystem, FaultBounds
from tlasim.sim.kernel.rng import split
from tlasim.sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY
from tlasim.tracing.codec import HEADER_EVENT, TraceFormat, read_trace, thaw
from tlasim.tracing.emit.emitter import TraceEmitter
from tlasim.tracing.inputs import PLAN_MAX_BYTES, read_regular_file
from tlasim.tracing.validation.report import TRACE_PLACEHOLDER

SCHEDULE_VERSION = 1
OUTCOME_ERROR = "error"  # a core raised
# How many states a replay visits to decide whether its unfinished end state
# can still finish (`_can_finish`); far above what a liveness counterexample
# the explorer can report within its own bounds reaches.
FINISH_SEARCH_MAX_STATES = 20_000
# A fault bound beyond any search's reach, and within what a counter holds.
MAX_FAULTS = 2**31 - 1


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
        from tlasim.tracing.outputs import write_output

        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, "--out", (json.dumps(self.to_json(), indent=1) + "\n").encode())

    @staticmethod
    def from_json(data: Any, where: str) -> Schedule:
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: a schedule is a JSON object")
        version = data.get("tlasim_schedule")
        # `true` and `1.0` equal 1 in Python, but name no version.
        if type(version) is not int or version != SCHEDULE_VERSION:
            raise ConfigError(
                f"{where}: not a tlasim schedule of version {SCHEDULE_VERSION} "
                f"(tlasim_schedule={short_repr(version)})"
            )
        return _schedule_of(data, where)

    @staticmethod
    def read(path: Path) -> Schedule:
        """A schedule file, or a trace whose header holds a schedule."""
        data = read_regular_file(path, "--schedule", PLAN_MAX_BYTES)
        where = f"--schedule {path}"
        if not _looks_like_trace(data):
            try:
                parsed = load_json(data, where)
            except ConfigError as exc:
                raise ConfigError(f"{exc}; neither a schedule (JSON) nor a trace") from None
            return Schedule.from_json(parsed, where)
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
        line = load_json(data.split(b"\n", 1)[0], "--schedule")
    except ConfigError:
        return False
    return isinstance(line, dict) and line.get("event") == HEADER_EVENT


def _schedule_of(data: Mapping[str, Any], where: str) -> Schedule:
    protocol, seed, bug = data.get("protocol"), data.get("seed"), data.get("bug")
    if not isinstance(protocol, str):
        raise ConfigError(f"{where}: no protocol named")
    get_protocol(protocol)  # a clear error for an unknown one
    seed = checked_int(seed, f"{where}: seed", low=0, high=MAX_SEED)
    if bug is not None and not isinstance(bug, str):
        raise ConfigError(f"{where}: bug must be a string or null")
    options = data.get("protocol_options", {})
    if not isinstance(options, dict):
        raise ConfigError(f"{where}: protocol_options must be an object")
    faults = data.get("faults", {})
    if (
        not isinstance(faults, dict)
        or set(faults) - {"crashes", "losses", "duplicates"}
        or not all(type(n) is int and 0 <= n <= MAX_FAULTS for n in faults.values())
    ):
        raise ConfigError(
            f"{where}: faults must hold non-negative crashes, losses and duplicates "
            f"(at most {MAX_FAULTS:,} each)"
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
    note: str | None = None  # what the replay could not decide, for people


def replay(
    schedule: Schedule,
    *,
    stream: BinaryIO | None = None,
    trace_format: TraceFormat = "ndjson",
    tool_version: str = "",
    decide_liveness: bool = True,
) -> Replay:
    """Make the schedule's moves on a fresh system, writing the trace to `stream`.

    Ends at the first failure: an oracle's (safety), a core's exception
    (error). A schedule that ends with its work unfinished reports liveness
    when no fault-free schedule from there finishes it (decided here, never
    taken from the file's `found`). `decide_liveness=False` skips that
    search, for a caller that replays prefixes only for their steps (the
    differential check): an unfinished end is then no failure.
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
            source_revision=source_revision(tuple(definition.source_files), definition.source_root),
            constants=definition.spec_constants(config),
            variables=definition.variable_types,
            # The trace holds its schedule, so it replays itself.
            reproduce=f"tlasim run {command_name(definition.name)} --schedule {TRACE_PLACEHOLDER}",
        )
    try:
        result = _play(system, schedule, decide_liveness)
        if emitter is not None:
            emitter.end(outcome=result.outcome, failure=result.failure,
                        failing_step=result.failing_step)
    finally:
        if emitter is not None:
            emitter.close()
    return result


def _play(system: ExploredSystem, schedule: Schedule, decide_liveness: bool) -> Replay:
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
    if unfinished is None or not decide_liveness:
        return Replay(OUTCOME_OK, None, None, system.steps, system.moves_made)
    # The schedule's own `found` is only what its writer claimed: the replay
    # judges liveness itself, as the explorer did, from the state it reached.
    finishes = _can_finish(system)
    if finishes is False:
        failure = f"no fault-free schedule from this state finishes: {unfinished}"
        return Replay(OUTCOME_LIVENESS, failure, None, system.steps, system.moves_made)
    note = None
    if finishes is None:
        note = (
            f"the work is unfinished here ({unfinished}); whether a fault-free schedule "
            f"finishes it was not decided within {FINISH_SEARCH_MAX_STATES:,} states"
        )
    return Replay(OUTCOME_OK, None, None, system.steps, system.moves_made, note)


def _can_finish(end: ExploredSystem) -> bool | None:
    """Whether some fault-free schedule (starts, deliveries, timers, restarts)
    from the state `end` finishes the protocol's work: True; False when none
    does, a liveness counterexample; None when telling would take more than
    FINISH_SEARCH_MAX_STATES states.

    Depth-first, so a state from which the work can finish is usually
    answered after one path; an answer of False visits every fault-free
    state reachable from the end, as the explorer's own liveness check did.
    """
    definition = end.protocol
    seen = {end.digest()}
    stack = [end.freeze()]
    while stack:
        frozen = stack.pop()
        for move in ExploredSystem.thaw(frozen, definition).moves():
            if not move.fault_free:
                continue
            twin = ExploredSystem.thaw(frozen, definition)
            try:
                twin.apply(move)
            except ConfigError:
                raise
            except Exception:  # a failure on the way there is no finish
                continue
            if twin.unfinished() is None:
                return True
            digest = twin.digest()
            if digest not in seen:
                if len(seen) >= FINISH_SEARCH_MAX_STATES:
                    return None
                seen.add(digest)
                stack.append(twin.freeze())
    return False
