"""`tlasim conformance`: the spec behaviour the correct code never shows (sim/conformance/)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.table import Table

from tlasim.protocols import get_protocol, protocol_names
from tlasim.sim import exitcodes
from tlasim.sim.cli.support import (
    ProtocolName,
    bounded_int,
    err,
    exit_code_help,
    finite_float,
    guarded,
    out,
)
from tlasim.sim.conformance import defaults
from tlasim.tracing.printable import printable

F = TypeVar("F", bound=Callable[..., Any])


def explorer_fault_options(fn: F) -> F:
    """--crashes, --losses, --dups and --idle-crashes: the explorer's fault
    bounds, at conformance's defaults (also `tlasim spec-coverage`'s)."""
    for option in reversed([
        click.option("--crashes", type=bounded_int(min=0, max=8), default=defaults.CRASHES,
                     show_default=True, help="Crashes per explored schedule."),
        click.option("--losses", type=bounded_int(min=0, max=8), default=defaults.LOSSES,
                     show_default=True, help="Lost messages per explored schedule."),
        click.option("--dups", type=bounded_int(min=0, max=8), default=defaults.DUPLICATES,
                     show_default=True, help="Duplicated messages per explored schedule."),
        click.option("--idle-crashes/--no-idle-crashes", default=defaults.IDLE_CRASHES,
                     show_default=True,
                     help="Let the explorer crash an idle node between its steps too."),
    ]):
        fn = option(fn)
    return fn


def tlc_model_options(fn: F) -> F:
    """--tlc-timeout and --spec-dir, for a command that has TLC explore a
    spec's conformance model."""
    fn = click.option("--spec-dir", "spec_dirs", multiple=True,
                      type=click.Path(path_type=Path, file_okay=False),
                      help="Look for specs here (default: the specs shipped with tlasim, and "
                           "those of every protocol of your own it knows).")(fn)
    return click.option("--tlc-timeout", type=finite_float(min=0, min_open=True),
                        default=900.0, show_default=True,
                        help="Give up on TLC's exploration after this many seconds.")(fn)


@click.command("conformance", epilog=exit_code_help())
@click.argument("protocols", nargs=-1, metavar="[PROTOCOL]...", type=ProtocolName())
@click.option("--seeds", type=bounded_int(min=0, max=1_000_000), default=None,
              help="Seeded runs under swarm faults, at the model's options.  [default: the "
                   f"model's budget, else {defaults.SEEDS}]")
@click.option("--explore-states", type=bounded_int(min=0, max=10_000_000), default=None,
              help="Distinct states the explorer may reach in each workload (0: no "
                   f"exploring).  [default: the model's budget, else {defaults.EXPLORE_STATES}]")
@click.option("--explore-time", type=finite_float(min=0, min_open=True), default=None,
              help="Also stop exploring after this many seconds in all (the result then "
                   "depends on the machine's speed).")
@click.option("--explore-workloads", type=bounded_int(min=1, max=1000), default=None,
              help="Explore, and chase in, the workloads of this many seeds.  [default: the "
                   f"model's budget, else {defaults.EXPLORE_WORKLOADS}]")
@click.option("--chase-states", type=bounded_int(min=0, max=10_000_000), default=None,
              help="Code states the chase toward still-unreached spec profiles may expand "
                   "in each workload (0: no chase).  [default: the model's budget, else "
                   f"{defaults.CHASE_STATES}]")
@explorer_fault_options
@click.option("--show", "show_count", type=bounded_int(min=0), default=20, show_default=True,
              help="Print at most this many unexplained profiles per protocol.")
@click.option("--explained", "list_explained", is_flag=True,
              help="Also print each explained profile with its reason.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Also write the whole result as JSON to this file.")
@tlc_model_options
@guarded
def conformance_command(
    protocols: tuple[str, ...], seeds: int | None, explore_states: int | None,
    explore_time: float | None, explore_workloads: int | None, chase_states: int | None,
    crashes: int, losses: int,
    dups: int, idle_crashes: bool, show_count: int, list_explained: bool, json_out: Path | None,
    tlc_timeout: float, spec_dirs: tuple[Path, ...],
) -> None:
    """Find where each PROTOCOL's spec (default: all) allows more than its code does.

    TLC explores the spec at the small constants of its conformance model
    (<Spec>.conformance.json beside the spec); explore and seeded runs drive
    the correct code at the same constants. Every step of either is cut into
    per-node profiles (the acting node's local state before and after), and
    each profile the spec reaches but the code never does is reported by
    action: a fault or workload the simulator never tries there, or a place
    the spec is looser than the code. Each must be explained in the model
    or the spec tightened. See docs/conformance.md.
    """
    from tlasim.sim.conformance.check import conformance, has_model
    from tlasim.sim.explore.system import FaultBounds

    faults = FaultBounds(crashes=crashes, losses=losses, duplicates=dups,
                         idle_crashes=idle_crashes)
    results = []
    for name in protocols or protocol_names():
        definition = get_protocol(name)
        if not protocols and not has_model(definition, list(spec_dirs) or None):
            # Asked for every protocol: one without a model is named, not an error.
            out.print(f"{name}: no conformance model beside {definition.spec_module}.tla; "
                      "skipped (docs/conformance.md)", markup=False)
            continue
        err.print(f"{name}: exploring {definition.spec_module} with TLC ...", markup=False)
        result = conformance(
            definition, seeds=seeds, explore_states=explore_states, explore_faults=faults,
            explore_workloads=explore_workloads, explore_seconds=explore_time,
            chase_states=chase_states,
            spec_dirs=list(spec_dirs) or None, tlc_timeout_s=tlc_timeout,
            progress=_progress_of(name),
        )
        _print(result, show_count, list_explained)
        results.append(result)
    if json_out is not None:
        from tlasim.tracing.outputs import write_output

        write_output(json_out, "--json",
                     (json.dumps([_as_json(r) for r in results], indent=1) + "\n").encode())
    if any(not r.passed for r in results):
        sys.exit(exitcodes.DRIFT)


def _progress_of(name: str) -> Callable[[str], None]:
    def progress(line: str) -> None:
        err.print(f"{name}: {line}", markup=False)
    return progress


def _print(result: Any, show_count: int, list_explained: bool) -> None:
    runs = result.runs
    explored = (f"explore {runs.explored_states} states of {runs.explored_workloads} "
                f"workloads{' (exhausted)' if runs.explore_exhausted else ''}, ")
    out.print(
        f"{result.protocol} ({result.model.spec}): TLC reached {result.spec.states} states, "
        f"{len(result.spec.profiles())} profiles in {result.spec_seconds:.0f} s; the code "
        f"{len(result.impl.profiles())} profiles from {explored}{runs.seeds_run} seeds "
        f"in {result.impl_seconds:.0f} s", markup=False)
    if runs.chased_states:
        out.print(f"  the chase toward unreached spec profiles expanded {runs.chased_states} "
                  f"states and reached {runs.chased_profiles} of them", markup=False)
    if runs.chase_failures:
        out.print(f"  {runs.chase_failures} chased moves of the correct protocol FAILED an "
                  "oracle: run explore to see them", markup=False)
    if result.unowned:
        out.print(f"  owned by no node, so in no profile: {', '.join(result.unowned)}",
                  markup=False)
    if runs.seeds_skipped:
        out.print(f"  {runs.seeds_skipped} seeds skipped: their workload gives other "
                  "constants than the model's", markup=False)
    if runs.seeds_failed:
        out.print(f"  {runs.seeds_failed} seeds of the correct protocol FAILED an oracle: "
                  "run a campaign to see them", markup=False)
    table = Table("action", "spec profiles", "code reached", "explained", "unexplained")
    for action in result.actions:
        table.add_row(printable(action.action), str(action.spec_profiles), str(action.reached),
                      str(len(action.explained)), str(len(action.unexplained)))
    out.print(table)
    shown = 0
    for action in result.actions:
        for profile in action.unexplained:
            if shown < show_count:
                out.print(f"  UNEXPLAINED {printable(action.text(profile))}", markup=False)
            shown += 1
        if list_explained:
            for profile, why in action.explained:
                out.print(f"  explained {printable(action.text(profile))}\n    because "
                          f"{printable(why.why)}", markup=False)
    if shown > show_count:
        out.print(f"  ... and {shown - show_count} more (--show N)", markup=False)
    for stale in result.unused_explanations:
        out.print(f"  note: the explanation for {', '.join(stale.actions)} containing "
                  f"{stale.contains!r} matches nothing at these options (remove it unless a "
                  "larger run needs it)", markup=False)
    out.print(f"  {result.beyond_model} profiles of the code lie beyond the model's bounds",
              markup=False)
    verdict = ("OK: every spec profile is reached by the code or explained" if result.passed
               else f"LOOSE: {result.unexplained} spec profiles the code never shows, "
                    "unexplained")
    out.print(f"{result.protocol}: {verdict}", markup=False)


def _as_json(result: Any) -> dict[str, Any]:
    return {
        "protocol": result.protocol,
        "spec": result.model.spec,
        "spec_states": result.spec.states,
        "spec_profiles": len(result.spec.profiles()),
        "code_profiles": len(result.impl.profiles()),
        "explored_states": result.runs.explored_states,
        "explore_exhausted": result.runs.explore_exhausted,
        "seeds_run": result.runs.seeds_run,
        "seeds_skipped": result.runs.seeds_skipped,
        "chased_states": result.runs.chased_states,
        "chased_profiles": result.runs.chased_profiles,
        "chase_failures": result.runs.chase_failures,
        "beyond_model": result.beyond_model,
        "passed": result.passed,
        "actions": [
            {"action": a.action, "spec_profiles": a.spec_profiles, "reached": a.reached,
             "explained": [{"profile": a.text(p), "why": e.why} for p, e in a.explained],
             "unexplained": [a.text(p) for p in a.unexplained]}
            for a in result.actions
        ],
        "unused_explanations": [{"actions": list(e.actions), "contains": e.contains}
                                for e in result.unused_explanations],
    }
