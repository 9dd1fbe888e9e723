"""`tlasim live`: run a protocol's cores as a real cluster on loopback (sim/live/)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tlasim.protocols.errors import ConfigError
from tlasim.sim import exitcodes
from tlasim.sim.cli.support import (
    bounded_int,
    check_bug,
    exit_code_help,
    fault_plan,
    finite_float,
    guarded,
    out,
    parse_assignments,
    print_options,
    protocol_argument,
    refuse_overwrite,
)
from tlasim.sim.live.supervisor import LiveOptions, LiveResult, Supervisor
from tlasim.tracing.codec import TraceFormat
from tlasim.tracing.printable import printable


@click.command("live", epilog=exit_code_help())
@protocol_argument
@click.option("--seed", type=bounded_int(min=0), default=0, show_default=True,
              help="Draws the workload, and the fault plan in swarm mode.")
@click.option("--bug", default=None, help="Switch on a named bug variant (see `tlasim bugs`).")
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE",
              help="Set a protocol option, e.g. rm_count=4.")
@click.option("--faults", "fault_mode", type=click.Choice(["swarm", "none"]), default="swarm",
              help="swarm: the seed draws a fault plan (default); none: no faults.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Carry out this fault plan (JSON, or a trace whose header holds one).")
@click.option("--tick-ms", type=finite_float(min=0.1, max=10_000), default=5.0,
              show_default=True, help="Milliseconds per tick of the protocol's timers and plan.")
@click.option("--liveness-bound", type=bounded_int(min=1), default=600, show_default=True,
              help="Ticks the protocol has to finish after every fault healed.")
@click.option("--timeout", "timeout_s", type=finite_float(min=0, min_open=True),
              default=120.0, show_default=True, help="Stop the run after this many seconds.")
@click.option("--dir", "run_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="A new or empty folder for the nodes' logs, traces and events "
                   "(default: a new folder under .tlasim/live).")
@click.option("--out", "trace_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Where the merged trace goes (default: DIR/merged.ndjson).")
@click.option("--trace-format", type=click.Choice(["ndjson", "msgpack"]), default="ndjson")
@click.option("--no-validate", is_flag=True, help="Do not check the merged trace with TLC.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the run's HTML report (see `tlasim report`) here.")
@guarded
def live_command(
    protocol: str,
    seed: int,
    bug: str | None,
    protocol_overrides: tuple[str, ...],
    fault_mode: str,
    plan_path: Path | None,
    tick_ms: float,
    liveness_bound: int,
    timeout_s: float,
    run_dir: Path | None,
    trace_path: Path | None,
    trace_format: TraceFormat,
    no_validate: bool,
    report_path: Path | None,
) -> None:
    """Run PROTOCOL's unchanged cores as a cluster of local processes (UDP on
    127.0.0.1), crash and disturb them as a fault plan says, merge the nodes'
    traces into one causal order, check it with the oracles and TLC."""
    check_bug(protocol, bug)
    if plan_path is not None and fault_mode != "swarm":
        raise ConfigError("--plan and --faults cannot be given together")
    refuse_overwrite({"--out": trace_path, "--report": report_path}, {"--plan": plan_path})
    refuse_overwrite({"--report": report_path}, {"--out": trace_path})
    supervisor = Supervisor(
        protocol, seed, bug=bug,
        overrides=parse_assignments(protocol_overrides, "--set"),
        plan=fault_plan(fault_mode, plan_path),
        options=LiveOptions(tick_ms=tick_ms, liveness_bound_ticks=liveness_bound,
                            timeout_s=timeout_s, trace_format=trace_format),
        run_dir=run_dir, trace_path=trace_path,
    )
    print_options(supervisor.options_record())
    out.print(f"nodes={','.join(supervisor.node_ids)} dir={printable(supervisor.run_dir)}",
              markup=False)
    result = supervisor.run()
    code = report(result)
    verdict = None
    if not no_validate:
        from tlasim.tracing.validation.validator import validate_trace

        verdict = validate_trace(result.trace_path)
        out.print(verdict.report(), markup=False)
        if not verdict.accepted and code == exitcodes.OK:
            code = exitcodes.TRACE_REJECTED
    if report_path is not None:
        from tlasim.sim.cli.show import write_run_report

        write_run_report(result.trace_path, report_path, verdict)
    if code != exitcodes.OK:
        sys.exit(code)


def report(result: LiveResult) -> int:
    """Print how a live run ended; return its exit code (before TLC's verdict)."""
    merged = result.merged
    restarts = sum(n - 1 for n in result.incarnations.values())
    outcome = "ok"
    code = exitcodes.OK
    if merged.failure is not None:
        outcome, code = "safety", exitcodes.SAFETY
    elif merged.unfinished is not None:
        outcome, code = "liveness", exitcodes.LIVENESS
    out.print(
        f"result={outcome} steps={merged.steps} stopped_by={result.stopped_by} "
        f"seconds={result.seconds:.2f} busy_seconds={result.busy_seconds:.2f} "
        f"sent={result.messages_sent} "
        f"msgs/s={result.messages_per_second:.0f} restarts={restarts}",
        markup=False,
    )
    fired = " ".join(f"{kind}={n}" for kind, n in sorted(result.events.items())) or "none"
    out.print(f"faults fired: {fired}", markup=False)
    dropped = " ".join(f"{why}={n}" for why, n in sorted(result.dropped.items())) or "none"
    out.print(f"datagrams dropped: {dropped}", markup=False)
    if result.unreadable_events:
        # Lines no node writes (or an events file that cannot be read): skipped,
        # so the counts above may miss what they held.
        out.print(f"unreadable event lines: {result.unreadable_events} skipped "
                  f"(first: {printable(result.events_problem)})", markup=False)
    if merged.failure is not None:
        out.print(f"failure: {merged.failure} (trace step {merged.failing_step})", markup=False)
    elif merged.unfinished is not None:
        out.print(f"failure: {merged.unfinished} (stopped by {result.stopped_by})", markup=False)
    out.print(f"trace={printable(result.trace_path)}", markup=False)
    return code
