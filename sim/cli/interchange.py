"""`tlasim export`: a trace in another tool's format (docs/interchange.md).

Only the Informal Trace Format (ITF) of Apalache and Quint so far. The
trace may be tlasim's own, or another system's log read through a mapping
file (`--mapping`), so a foreign log can reach Quint's and Apalache's tools
too.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import click

from tlasim.sim.cli.support import exit_code_help, guarded, refuse_overwrite
from tlasim.tracing.codec import read_trace
from tlasim.tracing.inputs import check_regular_file
from tlasim.tracing.interchange.foreign import load_foreign_trace
from tlasim.tracing.interchange.itf import write_itf
from tlasim.tracing.outputs import write_output


@click.command("export", epilog=exit_code_help())
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["itf"]), default="itf", show_default=True,
              help="itf: the Informal Trace Format of Apalache and Quint.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here instead of to standard output.")
@click.option("--mapping", "mapping_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="TRACE is another system's log; read it through this mapping.")
@click.option("--spec-dir", "spec_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Look for the mapping's spec here (default: the specs shipped with tlasim).")
@guarded
def export(
    trace_path: Path,
    fmt: str,
    out_path: Path | None,
    mapping_path: Path | None,
    spec_dirs: tuple[Path, ...],
) -> None:
    """Write TRACE in another tool's trace format."""
    refuse_overwrite({"--out": out_path}, {"TRACE": trace_path, "--mapping": mapping_path})
    # Refused before any reader opens them: a FIFO or a device never blocks the export.
    check_regular_file(trace_path, "trace")
    if mapping_path is not None:
        check_regular_file(mapping_path, "--mapping")
    if mapping_path is not None:
        trace = load_foreign_trace(trace_path, mapping_path, list(spec_dirs) or None)
    else:
        trace = read_trace(trace_path)
    # Render in full first, so a trace ITF cannot hold leaves no half-written file.
    text = io.StringIO()
    write_itf(trace, text)
    if out_path is None:
        sys.stdout.write(text.getvalue())
    else:
        write_output(out_path, "--out", text.getvalue().encode("utf-8"))
