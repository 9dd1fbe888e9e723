"""One run of one seed, with its trace: the API the CLI, campaigns and tests share."""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tlasim.protocols import get_protocol
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import InternalError
from tlasim.sim.coverage.run import CoverageRecorder, abstraction_of
from tlasim.sim.drift.revision import source_revision
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.simulation import RunResult, Simulation
from tlasim.sim.run.report import reproduce_command
from tlasim.tracing.emit.emitter import TraceEmitter
from tlasim.tracing.emit.recorder import TLCRecorder
from tlasim.tracing.outputs import open_output
from tlasim.tracing.tla.binary import PreparedTrace
from tlasim.tracing.validation.report import TRACE_PLACEHOLDER

TOOL_VERSION = "0.1.0"


@dataclass(slots=True)
class SeedRun:
    result: RunResult
    options: dict[str, Any]  # every option of the run, as printed and in the header
    trace: bytes | None  # the whole trace, when it was kept in memory
    trace_path: Path | None  # where the trace was written, when it was


def build_simulation(
    protocol: ProtocolDefinition | str,
    seed: int,
    *,
    bug: str | None = None,
    protocol_overrides: dict[str, Any] | None = None,
    options: SimOptions | None = None,
    emitter: TraceEmitter | None = None,
    coverage: bool = False,
) -> Simulation:
    """The simulation of one seed; with `coverage`, it measures the spec
    coverage of its run (`RunResult.coverage`)."""
    definition = get_protocol(protocol) if isinstance(protocol, str) else protocol
    protocol_options = definition.make_options(protocol_overrides or {})
    sim = Simulation(
        definition,
        seed,
        protocol_options=protocol_options,
        options=options,
        bug=bug,
        emitter=emitter,
    )
    if coverage:
        sim.coverage = CoverageRecorder(abstraction_of(definition))
    return sim


def regenerate_command(sim: Simulation, trace_format: str) -> str:
    """The `tlasim run` command that writes this run's trace again.

    The trace file's own path is left as `TRACE_PLACEHOLDER` for the validator
    to fill in. A run under a given fault plan names the trace as its plan
    too: `--plan` reads the plan back from a trace's header.
    """
    defaults = sim.protocol.default_options().as_dict()
    overrides = [
        f"{key}={value}"
        for key, value in sim.protocol_options.as_dict().items()
        if defaults.get(key) != value
    ]
    extra: list[str] = []
    if sim.options.faults is not None:
        extra += ["--plan", TRACE_PLACEHOLDER]
    if sim.options.liveness_bound_ticks != SimOptions().liveness_bound_ticks:
        extra += ["--liveness-bound", str(sim.options.liveness_bound_ticks)]
    if trace_format != "ndjson":
        extra += ["--trace-format", trace_format]
    extra += ["--trace", TRACE_PLACEHOLDER]
    command = reproduce_command(sim.protocol.name, sim.seed, sim.bug, None, overrides, ())
    # The placeholder must reach the header unquoted, so it is joined by hand.
    return " ".join([command, *extra])


def write_header(sim: Simulation, emitter: TraceEmitter) -> None:
    protocol = sim.protocol
    emitter.header(
        protocol=protocol.name,
        spec=protocol.spec_module,
        seed=sim.seed,
        options=sim.options_record(),
        tool_version=TOOL_VERSION,
        source_revision=source_revision(tuple(protocol.source_files), protocol.source_root),
        constants=protocol.spec_constants(sim.config),
        variables=protocol.variable_types,
        reproduce=regenerate_command(sim, sim.options.trace_format),
    )


def run_seed(
    protocol: ProtocolDefinition | str,
    seed: int,
    *,
    bug: str | None = None,
    protocol_overrides: dict[str, Any] | None = None,
    options: SimOptions | None = None,
    trace_path: Path | None = None,
    keep_trace: bool = False,
    on_start: Callable[[dict[str, Any]], None] | None = None,
    coverage: bool = False,
) -> SeedRun:
    """Run one seed. The trace goes to `trace_path`, to memory, or nowhere.

    `on_start` hears every option of the run before it starts, so a caller
    can print them first (and they are out even if the run then fails).
    """
    sim_options = options or SimOptions()
    fmt = sim_options.trace_format
    buffer: io.BytesIO | None = None
    with ExitStack() as outputs:
        stream: BinaryIO | None = None
        if trace_path is not None:
            # The trace is written beside its place and moved there whole
            # (tracing/outputs.py), so a run that fails leaves whatever was
            # there (the trace it regenerates, say) as it was, and no reader
            # ever sees half a trace. A FIFO or a device is written as such.
            stream = outputs.enter_context(open_output(trace_path, "--trace"))
        elif keep_trace:
            buffer = io.BytesIO()
            stream = buffer
        emitter = TraceEmitter(stream, fmt) if stream is not None else None
        sim = build_simulation(
            protocol,
            seed,
            bug=bug,
            protocol_overrides=protocol_overrides,
            options=sim_options,
            emitter=emitter,
            coverage=coverage,
        )
        if emitter is not None:
            write_header(sim, emitter)
        if on_start is not None:
            on_start(sim.options_record())
        result = sim.run()
        if emitter is not None:
            emitter.close()
    return SeedRun(
        result=result,
        options=sim.options_record(),
        trace=buffer.getvalue() if buffer is not None else None,
        trace_path=trace_path,
    )


def run_recorded(
    protocol: str,
    seed: int,
    *,
    bug: str | None = None,
    protocol_overrides: dict[str, Any] | None = None,
    options: SimOptions | None = None,
    coverage: bool = False,
) -> tuple[SeedRun, PreparedTrace | None, str | None]:
    """Run one seed recording its steps for TLC (`TLCRecorder`), with no log.

    Returns the run, its prepared trace, and None; or, when a value stopped
    the recording, no prepared trace and why (such a run is checked from
    its log, written by a replay).
    """
    # The simulator never changes spec variables after their step (see
    # `ProtocolDefinition.spec_vars`), so the recorder names a value it met before.
    recorder = TLCRecorder(persistent=True)
    sim = build_simulation(
        protocol, seed, bug=bug, protocol_overrides=protocol_overrides, options=options,
        emitter=recorder, coverage=coverage,
    )
    write_header(sim, recorder)
    result = sim.run()
    run = SeedRun(result=result, options=sim.options_record(), trace=None, trace_path=None)
    return run, recorder.prepared(), recorder.refused


def replay_traced(
    protocol: str,
    seed: int,
    first: RunResult,
    trace_path: Path,
    *,
    bug: str | None = None,
    protocol_overrides: dict[str, Any] | None = None,
    options: SimOptions | None = None,
) -> SeedRun:
    """Run a seed again, this time writing its trace to `trace_path`.

    Encoding the trace is most of a run's cost and most runs pass, so callers
    run untraced and replay only the runs whose trace they need (a failure to
    keep or to validate). The simulator is deterministic, so the replay is the
    same run; one that ends otherwise than `first` did is a bug in tlasim.
    """
    again = run_seed(
        protocol, seed, bug=bug, protocol_overrides=protocol_overrides, options=options,
        trace_path=trace_path,
    )
    if (again.result.outcome, again.result.failure) != (first.outcome, first.failure):
        raise InternalError(
            f"{protocol} seed {seed} gave two different results: the simulator is not "
            "deterministic"
        )
    return again
