"""`tlasim validate`: check trace files, or folders of them, against their specs.

Every trace is read before TLC runs. A trace that cannot be read (or whose
spec cannot be found) is reported and the others are still checked, so one
bad file loses nothing; the exit code then says bad input. Otherwise it says
whether TLC rejected any trace.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import ConfigError, TraceFormatError
from tlasim.sim import exitcodes
from tlasim.sim.cli.support import bounded_int, exit_code_help, guarded, out
from tlasim.tracing.inputs import check_regular_file
from tlasim.tracing.values import from_json

# Files a folder contributes: the trace formats the codec reads.
TRACE_SUFFIXES = (".ndjson", ".jsonl", ".msgpack")


def expand_traces(paths: tuple[Path, ...], any_suffix: bool = False) -> list[Path]:
    """Files as given; a folder as every trace file under it (any file, for
    another system's logs), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and (any_suffix or p.suffix in TRACE_SUFFIXES)
            )
            if not inside:
                raise ConfigError(
                    f"{str(path)!r}: the folder holds no trace files ({', '.join(TRACE_SUFFIXES)})"
                )
            found.extend(inside)
        elif check_regular_file(path, "trace"):
            found.append(path)
        else:
            raise ConfigError(f"trace {str(path)!r}: no such file or folder")
    return found


def parse_constants(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    parsed = load_json(text, "--constants")
    if not isinstance(parsed, dict):
        raise ConfigError("--constants: expected a JSON object of name: value")
    return {name: from_json(v, f"--constants {name}") for name, v in parsed.items()}


@click.command(epilog=exit_code_help())
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--spec-dir", "spec_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Look for specs here (default: the specs shipped with tlasim, and "
                   "those of every protocol of your own it knows).")
@click.option("--spec", default=None, help="The spec module, for traces without a header.")
@click.option("--constants", "constants_text", default=None, metavar="JSON",
              help='Constant values, for traces without a header, as a JSON object in the '
                   'trace value format, e.g. \'{"RM": {"#set": ["r1", "r2"]}}\'.')
@click.option("--jobs", type=bounded_int(min=1), default=2, show_default=True,
              help="TLC processes at once; each checks a batch of traces.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: one JSON document with every verdict.")
@click.option("--explain/--no-explain", default=True, show_default=True,
              help="For a rejected trace, run one more TLC job to show what the spec allowed.")
@click.option("--mapping", "mapping_path", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Read each TRACE as another system's log, mapped to the spec by this TOML "
                   "file (see docs/interchange.md).")
@guarded
def validate(
    traces: tuple[Path, ...],
    spec_dirs: tuple[Path, ...],
    spec: str | None,
    constants_text: str | None,
    jobs: int,
    output_format: str,
    explain: bool,
    mapping_path: Path | None,
) -> None:
    """Check that every TRACE (a file, or a folder of them) is a behaviour of its TLA+ spec."""
    from tlasim.tracing.validation.validator import Verdict, validate_traces

    constants = parse_constants(constants_text)
    paths = expand_traces(traces, any_suffix=mapping_path is not None)
    inputs: list[Any] = list(paths)
    unreadable_logs: list[Verdict] = []
    if mapping_path is not None:
        if spec is not None or constants is not None:
            raise ConfigError("--mapping names the spec and constants; drop --spec and --constants")
        from tlasim.tracing.interchange.foreign import read_foreign_log
        from tlasim.tracing.interchange.log_mapping import read_mapping

        # Read and checked against its spec once, before any log: a bad
        # mapping fails first, and a thousand logs cost one read of it.
        mapping = read_mapping(mapping_path, spec_dirs=list(spec_dirs) or None)
        inputs = []
        for path in paths:
            try:
                inputs.append(read_foreign_log(path, mapping))
            except TraceFormatError as exc:
                unreadable_logs.append(Verdict(path, False, 0, None, 0.0, error=str(exc)))
    text = output_format == "text"

    def heard(_index: int, verdict: Any) -> None:
        if text:
            out.print(verdict.report(), markup=False)

    verdicts = validate_traces(
        inputs,
        spec_dirs=list(spec_dirs) or None,
        spec=spec,
        constants=constants,
        jobs=jobs,
        explain=explain,
        keep_going=True,
        on_verdict=heard,
    )
    for verdict in unreadable_logs:
        heard(-1, verdict)
    verdicts = [*verdicts, *unreadable_logs]
    accepted = sum(v.accepted for v in verdicts)
    unreadable = sum(v.error is not None for v in verdicts)
    rejected = len(verdicts) - accepted - unreadable
    if text:
        out.print(
            f"{len(verdicts)} traces: {accepted} accepted, {rejected} rejected"
            + (f", {unreadable} not checked" if unreadable else ""),
            markup=False,
        )
    else:
        document = {
            "traces": len(verdicts),
            "accepted": accepted,
            "rejected": rejected,
            "not_checked": unreadable,
            "verdicts": [v.to_json() for v in verdicts],
        }
        click.echo(json.dumps(document, indent=1, sort_keys=True))
    if unreadable:
        sys.exit(exitcodes.USAGE)
    if rejected:
        sys.exit(exitcodes.TRACE_REJECTED)
