"""`tlasim new NAME`: write a working protocol project to change into your own (sim/scaffold)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from tlasim.protocols import protocol_names
from tlasim.protocols.errors import ConfigError
from tlasim.sim.cli.support import exit_code_help, guarded, out
from tlasim.tracing.printable import printable


@click.command("new", epilog=exit_code_help())
@click.argument("name")
@click.option("--dir", "folder", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Where to write the project (default: ./NAME); "
                                 "it must not exist, or be empty.")
@guarded
def new_command(name: str, folder: Path | None) -> None:
    """Write a new protocol project NAME: a primary that replicates values to
    backups over a lossy network, with synced logs, crashes, one bug variant
    (ack-before-sync), its TLA+ specs, TLC models and tests.

    Every tlasim command works on it as written; then change it into your
    own protocol (README.md in the project says where to start).
    """
    from tlasim.sim.scaffold import names_for, write_project

    names = names_for(name)
    if names.name in protocol_names():
        raise ConfigError(f"a protocol named {name!r} already exists; choose another name")
    target = folder if folder is not None else Path(names.name)
    names, written = write_project(name, target)
    out.print(f"wrote {printable(target)}/ ({len(written)} files): the protocol "
              f"{names.name}, in the package {names.package}", markup=False)
    out.print("next:", markup=False)
    steps = [
        f"cd {shlex.quote(str(target))}",
        "pip install -e '.[test]'   # or, without installing: export TLASIM_PROTOCOLS=\"$PWD\"",
        f"tlasim run {names.name} --seed 1 --validate",
        f"tlasim campaign {names.name} --seeds 1:201",
        f"tlasim campaign {names.name} --seeds 1:201 --bug ack-before-sync",
        f"tlasim explore {names.name} --crashes 1 --set value_count=1 --depth 10 "
        "--bug ack-before-sync",
        f"tlasim check-specs {names.name}",
        "python -m pytest",
    ]
    for step in steps:
        out.print(f"  {step}", markup=False)
