"""The `tlasim` command line: one run, the bug zoo, trace validation, spec checks.

The campaign family (campaign, search, shrink) lives in sim/cli/campaign.py,
the commands that read a results database (repro, failures) in
sim/cli/repro.py; what all commands share lives in sim/cli/support.py.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

import click

from tlasim.protocols import get_protocol, origin, protocol_names
from tlasim.protocols.errors import ConfigError
from tlasim.sim import exitcodes
from tlasim.sim.cli.campaign import campaign, search, shrink
from tlasim.sim.cli.check_specs import check_specs_command
from tlasim.sim.cli.conformance import conformance_command
from tlasim.sim.cli.corpus import corpus
from tlasim.sim.cli.drift import drift
from tlasim.sim.cli.explore import explore_command
from tlasim.sim.cli.interchange import export
from tlasim.sim.cli.live import live_command
from tlasim.sim.cli.new import new_command
from tlasim.sim.cli.repro import failures, repro
from tlasim.sim.cli.show import report, show
from tlasim.sim.cli.spec_coverage import spec_coverage_command
from tlasim.sim.cli.support import (
    bounded_int,
    check_bug,
    exit_code_help,
    fault_plan,
    guarded,
    out,
    parse_assignments,
    plan_is_trace,
    print_options,
    protocol_argument,
    refuse_overwrite,
)
from tlasim.sim.cli.validate import validate
from tlasim.sim.explore.schedule import OUTCOME_ERROR, Schedule, replay
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY
from tlasim.sim.run.report import reproduce_command
from tlasim.sim.run.runner import TOOL_VERSION, run_seed
from tlasim.tracing.codec import TraceFormat
from tlasim.tracing.outputs import is_stream, open_output, write_output
from tlasim.tracing.printable import printable


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(TOOL_VERSION, prog_name="tlasim")
def main() -> None:
    """Simulate distributed protocols under faults; check every trace with TLC."""


@main.command(epilog=exit_code_help())
@protocol_argument
@click.option("--seed", type=bounded_int(min=0), default=None,
              help="The seed; the same seed gives the same run. (Required, but with --schedule.)")
@click.option("--bug", default=None, help="Switch on a named bug variant (see `tlasim bugs`).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--trace-format", type=click.Choice(["ndjson", "msgpack"]), default="ndjson")
@click.option("--validate", is_flag=True, help="Check the trace with TLC after the run.")
@click.option("--faults", "fault_mode", type=click.Choice(["swarm", "none"]), default="swarm",
              help="swarm: the seed draws a fault plan (default); none: a fault-free run.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Run this fault plan (JSON) instead of the seed's swarm plan.")
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE",
              help="Set a protocol option, e.g. rm_count=4.")
@click.option("--liveness-bound", "liveness_bound", type=bounded_int(min=1), default=600,
              show_default=True,
              help="Ticks the protocol has to finish after every fault healed.")
@click.option("--schedule", "schedule_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Replay a schedule `tlasim explore` wrote (or a trace of one), move by move.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the run's HTML report (see `tlasim report`) here.")
@guarded
def run(
    protocol: str,
    seed: int | None,
    bug: str | None,
    trace_path: Path | None,
    trace_format: TraceFormat,
    validate: bool,
    fault_mode: str,
    plan_path: Path | None,
    protocol_overrides: tuple[str, ...],
    liveness_bound: int,
    schedule_path: Path | None,
    report_path: Path | None,
) -> None:
    """Run one seed of PROTOCOL and report the result."""
    definition = get_protocol(protocol)
    check_bug(protocol, bug)
    refuse_overwrite({"--report": report_path},
                     {"--trace": trace_path, "--plan": plan_path, "--schedule": schedule_path})
    if schedule_path is not None:
        clashing = [
            name for name, given in (
                ("--seed", seed is not None), ("--bug", bug is not None),
                ("--plan", plan_path is not None), ("--set", bool(protocol_overrides)),
                ("--faults", fault_mode != "swarm"),
            ) if given
        ]
        if clashing:
            raise ConfigError(
                f"--schedule fixes the run; {', '.join(clashing)} cannot be given with it"
            )
        _run_schedule(protocol, schedule_path, trace_path, trace_format, validate, report_path)
        return
    if seed is None:
        raise ConfigError("--seed is required (or --schedule)")
    if not plan_is_trace(plan_path):
        # A trace given as its own plan is the regenerate command a report
        # prints: its plan is read whole first, and the new trace replaces
        # it only once written. A plan file would be lost.
        refuse_overwrite({"--trace": trace_path}, {"--plan": plan_path})
    options = SimOptions(
        faults=fault_plan(fault_mode, plan_path),
        trace_format=trace_format,
        liveness_bound_ticks=liveness_bound,
    )
    scratch, trace_path, stream_to = _checkable_trace(
        trace_path, validate or report_path is not None, f"{protocol}-{seed}.{trace_format}"
    )
    seed_run = run_seed(
        definition,
        seed,
        bug=bug,
        protocol_overrides=parse_assignments(protocol_overrides, "--set"),
        options=options,
        trace_path=trace_path,
        on_start=print_options,
    )
    result = seed_run.result
    stats = result.stats
    out.print(
        f"result={result.outcome} steps={stats.steps} last_tick={stats.last_tick} "
        f"crashes={stats.crashes} sent={stats.messages_sent} lost={stats.messages_lost} "
        f"duplicated={stats.messages_duplicated}",
        markup=False,
    )
    try:
        code = _report_end(
            result.outcome, result.failure, result.failing_step,
            _shown(trace_path, scratch, stream_to), trace_path, validate, report_path,
        )
        _stream_out(trace_path, stream_to)
    finally:
        if scratch is not None:
            scratch.cleanup()
    extra: list[str] = []
    if plan_path is None and fault_mode != "swarm":
        extra += ["--faults", fault_mode]
    if liveness_bound != SimOptions().liveness_bound_ticks:
        extra += ["--liveness-bound", str(liveness_bound)]
    command = reproduce_command(protocol, seed, bug, plan_path, protocol_overrides, extra)
    out.print(f"reproduce: {printable(command)}", markup=False)
    if code != exitcodes.OK:
        sys.exit(code)


def _checkable_trace(
    trace_path: Path | None, checked: bool, scratch_name: str
) -> tuple[tempfile.TemporaryDirectory[str] | None, Path | None, Path | None]:
    """Where a run writes its trace so that TLC or the report can read it back:
    (a scratch folder or None, the path to write, a FIFO or device to stream
    the finished trace into). A `--trace` that is a FIFO or a device cannot
    be read back, so a checked run writes a scratch file and copies it there."""
    stream_to = None
    if checked and trace_path is not None and is_stream(trace_path):
        stream_to, trace_path = trace_path, None
    if not checked or trace_path is not None:
        return None, trace_path, stream_to
    scratch = tempfile.TemporaryDirectory(prefix="tlasim-run-")
    return scratch, Path(scratch.name) / scratch_name, stream_to


def _shown(trace: Path | None, scratch: object, stream_to: Path | None) -> Path | None:
    """The trace path to print: the user's, never a scratch file."""
    return stream_to if stream_to is not None else (trace if scratch is None else None)


def _stream_out(trace: Path | None, stream_to: Path | None) -> None:
    if stream_to is not None and trace is not None:
        write_output(stream_to, "--trace", trace.read_bytes())


def _report_end(
    outcome: str,
    failure: str | None,
    failing_step: int | None,
    shown_trace: Path | None,
    trace: Path | None,
    validate: bool,
    report_path: Path | None,
    replays_from: Path | None = None,
) -> int:
    """Print how a run or a replay ended (and TLC's verdict on `trace`, when
    asked to validate); write its HTML report when asked; return its exit code.

    `replays_from` is the user's file that replays the run when `trace` is a
    scratch file, gone once the command ends: a schedule's trace replays
    itself, so its verdict names the schedule instead, and the command it
    prints to regenerate the run still works afterwards."""
    if failure:
        where = f" (trace step {failing_step})" if failing_step is not None else ""
        out.print(f"failure: {failure}{where}", markup=False)
    if shown_trace is not None:
        out.print(f"trace={printable(shown_trace)}", markup=False)
    code = {
        OUTCOME_OK: exitcodes.OK,
        OUTCOME_SAFETY: exitcodes.SAFETY,
        OUTCOME_ERROR: exitcodes.SAFETY,  # a core raised: the protocol failed, not tlasim
        OUTCOME_LIVENESS: exitcodes.LIVENESS,
    }[outcome]
    verdict = None
    if validate and trace is not None:
        from tlasim.tracing.validation.validator import validate_trace

        verdict = validate_trace(trace)
        if replays_from is not None:
            verdict = dataclasses.replace(verdict, path=replays_from.resolve())
        out.print(verdict.report(), markup=False)
        if not verdict.accepted and code == exitcodes.OK:
            code = exitcodes.TRACE_REJECTED
    if report_path is not None and trace is not None:
        from tlasim.sim.cli.show import write_run_report

        write_run_report(trace, report_path, verdict)
    return code


def _run_schedule(
    protocol: str,
    schedule_path: Path,
    trace_path: Path | None,
    trace_format: TraceFormat,
    validate: bool,
    report_path: Path | None,
) -> None:
    """Replay an explorer's schedule: the same moves, the same trace, byte for byte."""
    refuse_overwrite({"--trace": trace_path}, {"--schedule": schedule_path})
    schedule = Schedule.read(schedule_path)
    if schedule.protocol != protocol:
        raise ConfigError(
            f"--schedule {schedule_path} is a schedule of {schedule.protocol}, not {protocol}"
        )
    scratch, trace_path, stream_to = _checkable_trace(
        trace_path, validate or report_path is not None, f"{protocol}-schedule.{trace_format}"
    )
    try:
        if trace_path is not None:
            with open_output(trace_path, "--trace") as stream:
                result = replay(schedule, stream=stream, trace_format=trace_format,
                                tool_version=TOOL_VERSION)
        else:
            result = replay(schedule)
        out.print(
            f"result={result.outcome} moves={result.moves_made} steps={result.steps}",
            markup=False,
        )
        code = _report_end(
            result.outcome, result.failure, result.failing_step,
            _shown(trace_path, scratch, stream_to), trace_path, validate, report_path,
            replays_from=schedule_path if scratch is not None else None,
        )
        _stream_out(trace_path, stream_to)
    finally:
        if scratch is not None:
            scratch.cleanup()
    if code != exitcodes.OK:
        sys.exit(code)


@main.command()
@protocol_argument
@guarded
def bugs(protocol: str) -> None:
    """List PROTOCOL's bug variants: name first, then what it breaks."""
    for variant in get_protocol(protocol).bugs.values():
        out.print(f"{variant.name}  breaks {variant.breaks}: {variant.description}", markup=False)


@main.command("protocols")
@guarded
def protocols_command() -> None:
    """List the protocols tlasim knows: its own, and yours (the tlasim.protocols
    entry points, TLASIM_PROTOCOLS), with where each was found and its specs."""
    for name in protocol_names():
        definition = get_protocol(name)
        folders = ", ".join(str(folder) for folder in definition.spec_dirs)
        out.print(f"{name}  {origin(name)}; specs: {folders}", markup=False)


for command in (
    campaign, repro, failures, search, shrink, validate, export, corpus, drift, explore_command,
    show, report, live_command, conformance_command, new_command, check_specs_command,
    spec_coverage_command,
):
    main.add_command(command)
