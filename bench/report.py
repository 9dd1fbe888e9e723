"""`tlasim report` on a long run: the HTML's size, and its render time in Chromium.

One snapshot-transfer run of about 10,000 steps (clients with many
operations), and, side by side in the same browser, its first 1,000 steps as
a trace of their own: the ratios say how the page grows with the run. The
HTML embeds each step's changes, not its state, so it is compared with the
trace's size too. `python -m bench.report` prints the figures alone.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.browser import chromium_page
from tlasim.sim.run.runner import run_seed
from tlasim.sim.view.html import run_page, write_page
from tlasim.sim.view.model import build_run_view
from tlasim.tracing.codec import Trace, read_trace, write_trace

OPTIONS = {"ops_per_client": 800, "client_count": 3}
SEED = 1
SHORT_STEPS = 1_000


@dataclass(frozen=True)
class PageFigures:
    label: str
    steps: int
    trace_bytes: int
    html_bytes: int
    read_seconds: float  # read_trace
    build_seconds: float  # the model and the page, in Python
    render_seconds: float  # file:// load until the script has drawn every step
    click_seconds: float  # a click on the middle step until its diff is shown


def _measure(label: str, trace_path: Path, folder: Path) -> PageFigures:
    started = time.perf_counter()
    trace = read_trace(trace_path)
    read = time.perf_counter() - started
    started = time.perf_counter()
    page_text = run_page(build_run_view(trace))
    build = time.perf_counter() - started
    html_path = folder / f"{label}.html"
    write_page(html_path, page_text)
    with chromium_page() as page:
        started = time.perf_counter()
        page.goto(html_path.as_uri())
        page.wait_for_selector("body[data-rendered='1']", timeout=600_000)
        render = time.perf_counter() - started
        middle = len(trace.steps) // 2
        started = time.perf_counter()
        page.locator(f"#step-{middle} rect.row-hit").click()
        page.wait_for_function(
            f"document.getElementById('step-{middle}').classList.contains('selected')"
        )
        click = time.perf_counter() - started
    return PageFigures(label, len(trace.steps), trace_path.stat().st_size,
                       html_path.stat().st_size, read, build, render, click)


def run() -> tuple[PageFigures, PageFigures]:
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-report-") as scratch:
        folder = Path(scratch)
        long_path = folder / "long.ndjson"
        run_seed("snapshot", SEED, protocol_overrides=OPTIONS, trace_path=long_path)
        whole = read_trace(long_path)
        short_path = folder / "short.ndjson"
        write_trace(Trace(str(short_path), whole.header, whole.steps[:SHORT_STEPS]), short_path)
        del whole
        return _measure("short", short_path, folder), _measure("long", long_path, folder)


def describe(figures: tuple[PageFigures, PageFigures]) -> list[str]:
    short, long = figures
    lines = [
        f"report, {f.label}: {f.steps:,} steps, trace {f.trace_bytes / 1e6:.1f} MB, "
        f"HTML {f.html_bytes / 1e6:.2f} MB ({f.html_bytes / f.trace_bytes:.1%} of the trace, "
        f"{f.html_bytes / f.steps:,.0f} bytes a step); read {f.read_seconds:.2f} s, "
        f"model and page {f.build_seconds:.2f} s, Chromium render {f.render_seconds:.2f} s, "
        f"click to diff {f.click_seconds:.3f} s"
        for f in figures
    ]
    steps = long.steps / short.steps
    lines.append(
        f"report, long / short ({steps:.1f}x the steps): "
        f"HTML {long.html_bytes / short.html_bytes:.1f}x, "
        f"render {long.render_seconds / short.render_seconds:.1f}x, "
        f"model and page {long.build_seconds / short.build_seconds:.1f}x; "
        f"long run: model and page / reading the trace "
        f"{long.build_seconds / long.read_seconds:.2f}x"
    )
    return lines


if __name__ == "__main__":
    for line in describe(run()):
        print(line)
