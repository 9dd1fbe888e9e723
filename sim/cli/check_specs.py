"""`tlasim check-specs [PROTOCOL]...`: run TLC on each model in a manifest and
compare with the result and state count it expects; the way to size a model
(live figures, `--time`, `--record`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError, SpecError
from tlasim.sim import exitcodes
from tlasim.sim.cli.support import ProtocolName, bounded_int, exit_code_help, guarded, out
from tlasim.tracing.printable import printable


@click.command("check-specs", epilog=exit_code_help())
@click.argument("protocols", nargs=-1, metavar="[PROTOCOL]...", type=ProtocolName())
@click.option("--name", "names", multiple=True, help="Only the manifest checks with these names.")
@click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The manifest to run (default: the protocols' own, or tlasim's).")
@click.option(
    "--jobs",
    type=bounded_int(min=1),
    default=2,
    show_default=True,
    help="TLC processes at once (each with one worker).",
)
@click.option("--time", "time_limit", type=click.FloatRange(min=0, min_open=True),
              default=None, metavar="SECONDS",
              help="Stop each TLC run after this many seconds: a model that does not "
                   "finish is reported with the last figures TLC printed.")
@click.option("--record", is_flag=True,
              help="Write the distinct-state counts TLC measured into the manifest, for "
                   "each check that finished with the result the manifest expects.")
@guarded
def check_specs_command(protocols: tuple[str, ...], names: tuple[str, ...],
                        manifest: Path | None, jobs: int, time_limit: float | None,
                        record: bool) -> None:
    """Run TLC on the models of PROTOCOL's manifest (every protocol's in
    specs/manifest.json when none is named, or --manifest's) and compare each
    with its expected result and state count. While TLC runs, a line every
    10 s gives each model's figures so far."""
    from tlasim.sim.cli.spec_progress import SpecProgress
    from tlasim.tracing.tla.speccheck import (
        check_specs,
        protocol_checks,
        read_manifest,
        record_counts,
    )

    # Which checks of which manifests: the protocols' own checks, or every
    # check of one manifest; --name narrows either.
    if protocols and manifest is not None:
        raise ConfigError("check-specs: name protocols or --manifest, not both")
    plan: dict[Path | None, list[str]] = {}
    for protocol in protocols:
        own, checks = protocol_checks(protocol, get_protocol(protocol).spec_dirs)
        chosen = plan.setdefault(own, [])
        chosen.extend(c for c in checks if c not in chosen)
    if not protocols:
        plan[manifest] = [c.name for c in read_manifest(manifest)]
    if names:
        known = {n for chosen in plan.values() for n in chosen}
        unknown = sorted(set(names) - known)
        if unknown:
            raise SpecError(f"no check named {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(known))}")
        plan = {where: [n for n in chosen if n in names] for where, chosen in plan.items()}
        plan = {where: chosen for where, chosen in plan.items() if chosen}
    total = sum(len(chosen) for chosen in plan.values())

    table = Table(title="TLC spec checks")
    for column in ("check", "expected", "actual", "distinct states", "seconds", "verdict"):
        table.add_column(column)
    passed = True
    with SpecProgress(total) as progress:
        runs = [(where, check_specs(where, names=chosen, jobs=jobs, timeout_s=time_limit,
                                    on_event=progress.event, on_progress=progress.figures))
                for where, chosen in plan.items()]
    # Record first, so that the table can say which rows now match.
    recorded: dict[Path | None, list[str]] = {
        where: record_counts(where, results) if record else [] for where, results in runs}
    for where, results in runs:
        for r in results:
            verdict = "recorded" if r.name in recorded[where] else "pass" if r.passed else "FAIL"
            table.add_row(
                r.name,
                r.expected,
                r.actual,
                str(r.distinct_states if r.distinct_states is not None else "-"),
                f"{r.seconds:.1f}",
                verdict,
            )
    out.print(table)
    for where, results in runs:
        written = recorded[where]
        if record:
            shown = printable(where) if where is not None else "the shipped manifest"
            out.print(f"recorded in {shown}: {', '.join(written) or 'no count changed'}",
                      markup=False)
            skipped = [r.name for r in results if r.name not in written and r.actual != r.expected
                       and (r.unfinished is not None or r.outcome != r.check.expect)]
            if skipped:
                out.print(f"not recorded (did not finish, or another result): "
                          f"{', '.join(skipped)}", markup=False)
        passed = passed and all(r.passed for r in results if r.name not in written)
    if not passed:
        sys.exit(exitcodes.SPEC_MISMATCH)
