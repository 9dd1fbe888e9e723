"""`tlasim corpus`: write valid and invalid traces, labelled by TLC, for testing validators.

The work is `sim.corpus`'s; this module parses the options, prints them
first (as `tlasim run` does), and ends with the label counts and where the
manifest is.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from tlasim.sim.cli.support import (
    bounded_int,
    err,
    exit_code_help,
    finite_float,
    guarded,
    out,
    parse_assignments,
    protocol_argument,
)
from tlasim.sim.corpus import MANIFEST_NAME, CorpusOptions, build_corpus
from tlasim.tracing.codec import TraceFormat
from tlasim.tracing.printable import printable


@click.command(epilog=exit_code_help())
@protocol_argument
@click.option("--count", type=bounded_int(min=1), required=True,
              help="How many trace files the corpus holds.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The folder to write into; it must be new or empty (see --force).")
@click.option("--invalid-ratio", type=finite_float(0.0, 1.0), default=0.5, show_default=True,
              help="The share of files made to be invalid (mutations and bug variants); "
                   "a mutation TLC accepts is labelled valid.")
@click.option("--seed", type=bounded_int(min=0), default=0, show_default=True,
              help="The corpus seed; the same seed and options give the same bytes.")
@click.option("--partial", is_flag=True,
              help="Strip about half of the files into partial logs (tracing.mutation.partial).")
@click.option("--format", "trace_format", type=click.Choice(["ndjson", "msgpack"]),
              default="ndjson", show_default=True)
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE",
              help="Set a protocol option for every run, e.g. rm_count=4.")
@click.option("--jobs", type=bounded_int(min=1), default=2, show_default=True,
              help="TLC processes at once; each checks a batch of traces.")
@click.option("--force", is_flag=True,
              help="Write into a folder that is not empty, replacing the corpus there "
                   f"({MANIFEST_NAME} and trace-* files; nothing else is touched).")
@guarded
def corpus(
    protocol: str,
    count: int,
    out_dir: Path,
    invalid_ratio: float,
    seed: int,
    partial: bool,
    trace_format: TraceFormat,
    protocol_overrides: tuple[str, ...],
    jobs: int,
    force: bool,
) -> None:
    """Write COUNT traces of PROTOCOL, valid and invalid, each labelled by TLC, into --out."""
    options = CorpusOptions(
        protocol,
        count,
        seed=seed,
        invalid_ratio=invalid_ratio,
        partial=partial,
        trace_format=trace_format,
        protocol_overrides=parse_assignments(protocol_overrides, "--set"),
    )
    settings: list[tuple[str, object]] = [
        ("seed", seed),
        ("protocol", protocol),
        ("count", count),
        ("invalid_ratio", invalid_ratio),
        ("partial", partial),
        ("format", trace_format),
    ]
    settings += [(f"protocol_options.{k}", v) for k, v in options.protocol_overrides.items()]
    for key, value in [*settings, ("out", out_dir)]:
        out.print(f"{key}={printable(value)}", markup=False)
    started = time.monotonic()

    def phase(message: str) -> None:
        err.print(f"{message} ({time.monotonic() - started:.1f} s)", markup=False)

    manifest = build_corpus(options, out_dir, force=force, jobs=jobs, on_phase=phase)
    summary = manifest["summary"]
    out.print(
        f"wrote {count} traces: {summary['valid']} valid, {summary['invalid']} invalid "
        f"({time.monotonic() - started:.1f} s)",
        markup=False,
    )
    for source, labels in summary["by_source"].items():
        if labels["valid"] or labels["invalid"]:
            out.print(
                f"  {source}: {labels['valid']} valid, {labels['invalid']} invalid", markup=False
            )
    out.print(f"manifest={printable(out_dir / MANIFEST_NAME)}", markup=False)
