"""`tlasim drift`: name the specs whose modelled code changed (sim/drift/modelled.py), and
where a spec and its protocol's code disagree on variables or actions (sim/drift/check.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tlasim.protocols import get_protocol, protocol_names
from tlasim.sim import exitcodes
from tlasim.sim.cli.support import ProtocolName, exit_code_help, guarded, out
from tlasim.tracing.printable import printable


@click.command("drift", epilog=exit_code_help())
@click.argument("protocols", nargs=-1, metavar="[PROTOCOL]...", type=ProtocolName())
@click.option("--update", is_flag=True,
              help="After reviewing each spec against its modelled code, record that "
                   "code's hashes in the spec's modelled.json.")
@click.option("--spec-dir", "spec_dirs", multiple=True,
              type=click.Path(path_type=Path, file_okay=False),
              help="Look for specs here (default: the specs shipped with tlasim, and "
                   "those of every protocol of your own it knows).")
@guarded
def drift(protocols: tuple[str, ...], update: bool, spec_dirs: tuple[Path, ...]) -> None:
    """Check every PROTOCOL (default: all) for drift between its spec and its code.

    Spec drift: the Python code a spec models (its modelled.json) changed
    since a human last reviewed the spec against it. Schema drift: the
    spec's VARIABLES or trace actions differ from the fields and action
    names the code emits. See docs/drift.md.
    """
    # Imported here, as `validate` imports the validator: `tlasim` starts
    # faster, and a process that never checks drift never loads the checks.
    from tlasim.sim.drift.check import check_drift
    from tlasim.sim.drift.modelled import read_record, record_path, update_record

    definitions = [get_protocol(p) for p in protocols or protocol_names()]
    dirs = list(spec_dirs) or None
    if update:
        for definition in definitions:
            path = record_path(definition, dirs)
            spec = update_record(read_record(path), definition.source_root)
            if not spec.drifted:
                out.print(f"{_shown(path)}: up to date, revision {spec.revision}", markup=False)
                continue
            out.print(f"updated {_shown(path)} to revision {spec.revision}:", markup=False)
            for line in spec.describe():
                out.print(f"  {line}", markup=False)
        return
    results = check_drift(definitions, dirs)
    for result in results:
        spec = result.spec
        name = f"{result.protocol} ({spec.record.spec})"
        if spec.drifted:
            out.print(f"{name}: SPEC DRIFT since {_shown(spec.record.path)}:", markup=False)
            for line in spec.describe():
                out.print(f"  {line}", markup=False)
        else:
            out.print(f"{name}: modelled code unchanged, revision {spec.revision}", markup=False)
        if result.schema:
            out.print(f"{name}: SCHEMA DRIFT between the spec and the code:", markup=False)
            for line in result.schema:
                out.print(f"  {line}", markup=False)
        else:
            out.print(f"{name}: spec and code agree on variables and actions", markup=False)
    if any(r.spec.drifted for r in results):
        out.print(
            "review each drifted spec against its modelled code, then run "
            "`tlasim drift --update`",
            markup=False,
        )
    if any(r.schema for r in results):
        out.print(
            "schema drift is fixed in the spec, the trace template (whose "
            "TraceActionNames a definition reads as its trace_actions), the code, or "
            "the protocol definition's variable_types",
            markup=False,
        )
    if any(r.drifted for r in results):
        sys.exit(exitcodes.DRIFT)


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the working folder if under it."""
    try:
        return printable(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return printable(path)
