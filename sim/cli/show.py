"""`tlasim show` (a run in the terminal) and `tlasim report` (a run or a results
database as one HTML file). Both draw `sim.view.model`'s model of a run; TLC's
verdict comes from the validator, run here unless `--no-tlc`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tlasim.protocols.errors import ConfigError
from tlasim.sim.cli.support import bounded_int, exit_code_help, guarded, out, refuse_overwrite
from tlasim.sim.view.model import RunView, build_run_view, mark_tlc
from tlasim.tracing.codec import read_trace
from tlasim.tracing.inputs import open_regular_file
from tlasim.tracing.printable import printable

_SQLITE_MAGIC = b"SQLite format 3\x00"

_tlc_option = click.option(
    "--tlc/--no-tlc", "run_tlc", default=True, show_default=True,
    help="Have TLC check the trace and mark the first line it rejects.",
)


def load_run(trace_path: Path, run_tlc: bool) -> RunView:
    trace = read_trace(trace_path)
    view = build_run_view(trace)
    if run_tlc and trace.header is None:
        view.notes.append("TLC was not run: the trace has no header naming its spec "
                          "(tlasim validate --spec NAME checks it)")
    elif run_tlc:
        from tlasim.tracing.validation.validator import validate_trace

        mark_tlc(view, trace, validate_trace(trace))
    return view


def write_run_report(trace_path: Path, output: Path, verdict: Any = None) -> None:
    """Write a run's HTML report, with TLC's `verdict` when the caller has one
    (a command that has just validated the trace does not run TLC again)."""
    from tlasim.sim.view.html import run_page, write_page

    trace = read_trace(trace_path)
    view = build_run_view(trace)
    if verdict is not None:
        mark_tlc(view, trace, verdict)
    else:
        view.notes.append("TLC was not asked to check this trace, so its verdict is not marked")
    write_page(output, run_page(view))
    out.print(f"report={printable(output.resolve())}", markup=False)


@click.command(epilog=exit_code_help())
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--node", default=None, help="Only this node's steps.")
@click.option("--tx", default=None, help="Only steps whose params name this tx (at any depth).")
@click.option("--key", default=None, help="Only steps whose params name this key (at any depth).")
@click.option("--from", "first", type=bounded_int(min=0), default=None,
              help="Only steps from this seq on.")
@click.option("--to", "last", type=bounded_int(min=0), default=None,
              help="Only steps up to this seq.")
@_tlc_option
@guarded
def show(
    trace_path: Path,
    node: str | None,
    tx: str | None,
    key: str | None,
    first: int | None,
    last: int | None,
    run_tlc: bool,
) -> None:
    """Print TRACE one step a line, with only what each step changed.

    The oracles' failing step and TLC's first rejected line are always shown,
    marked, with what each said, whatever the filters.
    """
    if first is not None and last is not None and first > last:
        raise ConfigError(f"--from {first} is after --to {last}")
    view = load_run(trace_path, run_tlc)
    if node is not None and node not in view.lanes:
        raise ConfigError(
            f"--node {node!r}: the trace has no steps of that node; its nodes are "
            + ", ".join(view.lanes)
        )
    fields = {name: value for name, value in (("tx", tx), ("key", key)) if value is not None}
    from tlasim.sim.view.terminal import print_view

    print_view(out, view, node=node, fields=fields, first=first, last=last)


def _is_database(path: Path) -> bool:
    with open_regular_file(str(path), "input", 1 << 40, error=ConfigError) as f:
        return f.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC


@click.command(epilog=exit_code_help())
@click.argument("input_path", metavar="TRACE|DB", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "output", required=True,
              type=click.Path(dir_okay=False, path_type=Path), help="The HTML file to write.")
@_tlc_option
@guarded
def report(input_path: Path, output: Path, run_tlc: bool) -> None:
    """Write one self-contained HTML file about a trace or a results database.

    For a trace: a space-time diagram (a lane per node, messages from send to
    delivery, losses, duplicates, crashes, partitions), each step's changes
    on a click, the oracles' and TLC's verdicts linked to their steps, and the
    fault plan with the faults that fired. For a database: its campaigns,
    failures grouped by property, and the fault kinds shrinking kept.
    """
    from tlasim.sim.view.html import run_page, write_page

    refuse_overwrite({"-o": output}, {"TRACE|DB": input_path})
    if _is_database(input_path):
        from tlasim.sim.view.campaign import database_page, summarize

        page = database_page(summarize(input_path))
    else:
        page = run_page(load_run(input_path, run_tlc))
    write_page(output, page)
    out.print(f"report={printable(output.resolve())}", markup=False)
