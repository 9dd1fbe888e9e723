"""`tlasim explore`: every schedule of a protocol's cores within bounds (sim/explore/)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click
from rich.progress import Progress as ProgressBar
from rich.progress import TextColumn, TimeElapsedColumn

from tlasim.protocols import command_name, get_protocol
from tlasim.sim import exitcodes
from tlasim.sim.cli.support import (
    bounded_int,
    check_bug,
    err,
    exit_code_help,
    finite_float,
    guarded,
    out,
    parse_assignments,
    protocol_argument,
)
from tlasim.sim.explore.differential import ProjectedSteps, check, collect
from tlasim.sim.explore.schedule import Schedule, replay
from tlasim.sim.explore.search import (
    BFS,
    DFS,
    FOUND_ERROR,
    FOUND_LIVENESS,
    FOUND_SAFETY,
    Exploration,
    Progress,
    SearchBounds,
    explore,
)
from tlasim.sim.explore.system import FaultBounds
from tlasim.sim.kernel.rng import split
from tlasim.sim.run.runner import TOOL_VERSION
from tlasim.tracing.outputs import open_output
from tlasim.tracing.printable import printable

DEFAULT_OUT = Path(".tlasim/explore")
T = TypeVar("T")


@click.command("explore", epilog=exit_code_help())
@protocol_argument
@click.option("--bug", default=None, help="Switch on a named bug variant (see `tlasim bugs`).")
@click.option("--seed", type=bounded_int(min=0), default=0, show_default=True,
              help="The workload seed: which operations the workload runs.")
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE",
              help="Set a protocol option, e.g. tx_count=1 (the workload's size).")
@click.option("--crashes", type=bounded_int(min=0), default=0, show_default=True,
              help="Crashes per schedule, each after any step of a node that may crash.")
@click.option("--losses", type=bounded_int(min=0), default=0, show_default=True,
              help="Messages the network may lose per schedule.")
@click.option("--dups", type=bounded_int(min=0), default=0, show_default=True,
              help="Messages the network may duplicate per schedule.")
@click.option("--idle-crashes", is_flag=True,
              help="Also crash a started node while it is idle, between its own steps "
                   "(before its first one, say), not only after a step of its own.")
@click.option("--depth", "max_depth", type=bounded_int(min=1), default=None,
              help="Expand no state this many moves deep (default: no limit).")
@click.option("--max-states", type=bounded_int(min=1), default=None,
              help="Stop after this many distinct states.")
@click.option("--time", "time_limit", type=finite_float(min=0, min_open=True), default=None,
              help="Stop after this many seconds.")
@click.option("--order", type=click.Choice([BFS, DFS]), default=BFS, show_default=True,
              help="bfs finds a shortest counterexample; dfs keeps less in memory.")
@click.option("--reduce", is_flag=True,
              help="Partial-order reduction (sleep sets): skip moves that commute with one "
                   "already tried. Same states, fewer moves; liveness is then not checked.")
@click.option("--symmetry", is_flag=True,
              help="Symmetry reduction: one state for each set of states that differ only in "
                   "which of the protocol's interchangeable nodes is which (combines with "
                   "--reduce).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=DEFAULT_OUT, show_default=True,
              help="Where a counterexample's schedule and trace go.")
@click.option("--validate", is_flag=True, help="Check a counterexample's trace with TLC.")
@click.option("--differential", is_flag=True,
              help="Also check that every step taken is a step of the spec: one trace per "
                   "distinct projected step, all checked by TLC.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@guarded
def explore_command(
    protocol: str,
    bug: str | None,
    seed: int,
    protocol_overrides: tuple[str, ...],
    crashes: int,
    losses: int,
    dups: int,
    idle_crashes: bool,
    max_depth: int | None,
    max_states: int | None,
    time_limit: float | None,
    order: str,
    reduce: bool,
    symmetry: bool,
    out_dir: Path,
    validate: bool,
    differential: bool,
    quiet: bool,
) -> None:
    """Check every schedule of PROTOCOL within the bounds: each oracle at every
    step of every schedule, and that every state can still finish without faults."""
    definition = get_protocol(protocol)
    check_bug(protocol, bug)
    options = definition.make_options(parse_assignments(protocol_overrides, "--set"))
    config = definition.configure(options, bug, split(seed).workload)
    faults = FaultBounds(crashes=crashes, losses=losses, duplicates=dups,
                         idle_crashes=idle_crashes)
    bounds = SearchBounds(faults, max_depth, max_states, time_limit, order, reduce, symmetry)
    out.print(
        f"explore protocol={protocol} bug={bug} seed={seed} order={order} crashes={crashes} "
        f"losses={losses} dups={dups} idle_crashes={idle_crashes} depth={max_depth} "
        f"max_states={max_states} "
        f"time={time_limit} reduce={reduce} symmetry={symmetry}",
        markup=False,
    )
    for key, value in options.as_dict().items():
        out.print(f"protocol_options.{key}={printable(value)}", markup=False)
    projected: ProjectedSteps | None = None
    if differential:
        projected = _with_progress(
            lambda progress: collect(definition, config, bounds, progress), quiet
        )
        result = projected.exploration
    else:
        result = _with_progress(
            lambda progress: explore(definition, config, bounds, progress=progress), quiet
        )
    out.print(
        f"states={result.states} transitions={result.transitions} depth={result.depth} "
        f"seconds={result.seconds:.1f} states/s={result.states_per_second:.0f}",
        markup=False,
    )
    if reduce and not result.reduced:
        out.print("reduction off: two cores share state, so moves of different nodes "
                  "need not commute", markup=False)
    if result.symmetry is not None:
        out.print(f"symmetry: {result.symmetry.describe()}", markup=False)
    found = result.counterexample
    schedule = Schedule(
        protocol=protocol,
        seed=seed,
        bug=bug,
        protocol_options=options.as_dict(),
        faults=faults,
        moves=found.schedule if found is not None else (),
        found={"kind": found.kind, "failure": found.failure} if found is not None else {},
    )
    if found is None and projected is not None:
        checked = check(schedule, projected)
        out.print(
            f"differential: {checked.projected_states} distinct spec states and "
            f"{checked.projected_steps} distinct spec steps reached; TLC accepted "
            f"{checked.traces_checked - len(checked.rejected)} of {checked.traces_checked} "
            "traces, one per step",
            markup=False,
        )
        for moves, verdict in checked.rejected[:3]:
            out.print(f"  a step the spec does not allow, after {len(moves)} moves:", markup=False)
            out.print(verdict.report(), markup=False)
        if checked.rejected:
            sys.exit(exitcodes.TRACE_REJECTED)
    if found is None:
        if result.exhausted:
            reach = (
                f"every schedule of up to {max_depth} moves" if result.depth_bounded
                else "every schedule (no state had an unexplored move)"
            )
            liveness = (
                "and every state can still finish without faults" if result.liveness_checked
                else "(liveness not checked under reduction)"
            )
            out.print(f"bound exhausted: {reach} passed every oracle, {liveness}", markup=False)
            return
        why = {"states": "--max-states", "time": "--time"}[result.cut_by or ""]
        out.print(f"bound not exhausted: {why} ended the search; no failure in the states "
                  "reached (liveness not checked)", markup=False)
        sys.exit(exitcodes.INCOMPLETE)
    stem = f"{protocol}-{bug or 'correct'}-seed{seed}-{found.kind}"
    schedule_path = out_dir / f"{stem}.schedule.json"
    trace_path = out_dir / f"{stem}.ndjson"
    schedule.write(schedule_path)
    with open_output(trace_path, "--out") as stream:
        again = replay(schedule, stream=stream, tool_version=TOOL_VERSION)
    out.print(f"FAILURE {found.kind}: {found.failure}", markup=False)
    out.print(f"schedule ({len(found.schedule)} moves):", markup=False)
    for number, move in enumerate(found.schedule, 1):
        out.print(f"  {number:>3}. {move.describe()}", markup=False)
    out.print(f"schedule={printable(schedule_path)}", markup=False)
    out.print(f"trace={printable(trace_path)}", markup=False)
    out.print(
        f"reproduce: tlasim run {command_name(protocol)} --schedule {printable(schedule_path)}",
        markup=False,
    )
    if (again.outcome, again.failure) != (found.kind, found.failure):
        # The replay is the same code on the same moves: a difference is a bug.
        err.print(
            f"tlasim: the replay ended {again.outcome} ({again.failure}), not as the search "
            "did: the explorer is not deterministic",
            markup=False,
        )
        sys.exit(exitcodes.INTERNAL)
    if validate:
        from tlasim.tracing.validation.validator import validate_trace

        verdict = validate_trace(trace_path)
        out.print(verdict.report(), markup=False)
    sys.exit({
        FOUND_SAFETY: exitcodes.SAFETY,
        FOUND_ERROR: exitcodes.SAFETY,
        FOUND_LIVENESS: exitcodes.LIVENESS,
    }[found.kind])


def _with_progress(run: Callable[[Progress | None], T], quiet: bool) -> T:
    """Run a search, showing its progress on stderr: a live line on a terminal,
    else a plain line every PLAIN_PROGRESS_EVERY seconds (a long search in CI
    or behind a pipe is not silent until it ends)."""
    if quiet:
        return run(None)
    if not err.is_terminal:
        last = [time.monotonic()]

        def note(so_far: Exploration) -> None:
            now = time.monotonic()
            if now - last[0] >= PLAIN_PROGRESS_EVERY:
                last[0] = now
                err.print(f"explore: {_figures(so_far)}  {so_far.seconds:.0f} s", markup=False)

        return run(note)
    with ProgressBar(
        TextColumn("[progress.description]{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("exploring", total=None)

        def show(so_far: Exploration) -> None:
            bar.update(task, description=_figures(so_far))

        return run(show)


PLAIN_PROGRESS_EVERY = 10.0  # seconds between progress lines when stderr is not a terminal


def _figures(so_far: Exploration) -> str:
    return (f"states {so_far.states:,}  transitions {so_far.transitions:,}  "
            f"depth {so_far.depth}  queue {so_far.queue:,}  "
            f"{so_far.states_per_second:,.0f} states/s")
