"""TLC's figures while it runs (issue 23, part 5): tlasim starts TLC through
its launcher (tlasim.ProgressTLC), which reports the model checker's counts
every second on standard error; check-specs shows them live and a model
stopped by --time says how far it got."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tlasim.sim.cli.spec_progress import SpecProgress
from tlasim.tracing.tla.speccheck import ManifestCheck, read_manifest
from tlasim.tracing.tla.tlc import TLCTimeout, run_tlc
from tlasim.tracing.tla.tlc_progress import (
    TLCProgress,
    parse_progress_line,
    run_streaming,
    without_progress_lines,
)

SHIPPED = {c.name: c for c in read_manifest()}


def test_a_progress_line_is_parsed_and_any_other_line_is_not() -> None:
    assert parse_progress_line("@tlasim-progress 2500 1000 300 40 7") == TLCProgress(
        seconds=2.5, generated=1000, distinct=300, queue=40, depth=7)
    for other in ("Progress(7) at 2026-12-06: 1,000 states generated",
                  "@tlasim-progress 2500 1000 300 40",  # a field short
                  "@tlasim-progress 2500 1000 300 forty 7",
                  ""):
        assert parse_progress_line(other) is None
    stderr = "warning: x\n@tlasim-progress 1 2 3 4 5\nerror: y\n"
    assert without_progress_lines(stderr) == "warning: x\nerror: y\n"


def test_streaming_hands_over_each_stderr_line_as_it_comes_and_keeps_all_output(
        tmp_path: Path) -> None:
    script = ("import sys\n"
              "for i in range(3):\n"
              "    print('out', i); sys.stderr.write(f'err {i}\\n'); sys.stderr.flush()\n"
              "sys.exit(3)\n")
    seen: list[str] = []
    done = run_streaming([sys.executable, "-c", script], cwd=tmp_path, timeout_s=60,
                         on_stderr_line=seen.append)
    assert seen == ["err 0", "err 1", "err 2"]
    assert done.returncode == 3
    assert done.stdout.decode().split() == ["out", "0", "out", "1", "out", "2"]
    assert done.stderr.decode() == "err 0\nerr 1\nerr 2\n"


def test_streaming_kills_at_the_timeout_and_keeps_what_was_printed(tmp_path: Path) -> None:
    script = "import sys, time\nprint('started', flush=True)\ntime.sleep(600)\n"

    def broken_display(line: str) -> None:
        raise RuntimeError("a display that fails must not stop the run")

    with pytest.raises(subprocess.TimeoutExpired) as stopped:
        run_streaming([sys.executable, "-c", script], cwd=tmp_path, timeout_s=1.0,
                      on_stderr_line=broken_display)
    assert stopped.value.output == b"started\n"


def test_run_tlc_reports_growing_figures_and_gives_the_same_result(tmp_path: Path) -> None:
    check = SHIPPED["twopc-safety"]  # some seconds of search: several reports
    figures: list[TLCProgress] = []
    result = run_tlc(check.module, check.config, workdir=tmp_path, on_progress=figures.append)
    assert result.outcome == "ok"
    assert result.distinct_states == check.distinct_states
    assert "@tlasim-progress" not in result.output
    assert figures, "no figures reported during the run"
    distinct = [f.distinct for f in figures]
    assert distinct == sorted(distinct)
    assert all(f.distinct <= check.distinct_states for f in figures)  # type: ignore[operator]
    assert all(f.generated >= f.distinct and f.depth >= 1 for f in figures)


def test_a_run_stopped_by_its_time_carries_the_last_figures(tmp_path: Path) -> None:
    check = SHIPPED["lockfree-queue"]  # about half a minute of search on this machine
    figures: list[TLCProgress] = []
    with pytest.raises(TLCTimeout) as stopped:
        run_tlc(check.module, check.config, workdir=tmp_path, timeout_s=8,
                on_progress=figures.append)
    assert figures
    assert stopped.value.figures == figures[-1].text()
    assert "distinct states" in str(stopped.value) and "depth" in str(stopped.value)


def _check(name: str) -> ManifestCheck:
    return SHIPPED[name]


def test_each_tick_line_gives_the_figures_and_the_rate_since_the_last_line() -> None:
    progress = SpecProgress(2)
    check = _check("twopc-safety")
    progress.running[check.name] = 0.0
    assert progress.lines()[0].startswith("twopc-safety: running ")
    assert "parsing" in progress.lines()[0]
    progress.figures(check, TLCProgress(seconds=2.0, generated=5000, distinct=1000,
                                        queue=50, depth=4))
    first = progress.lines()[0]
    assert "1,000 distinct states (500/s), 5,000 generated, queue 50, depth 4" in first
    progress.figures(check, TLCProgress(seconds=4.0, generated=9000, distinct=1600,
                                        queue=20, depth=6))
    assert "1,600 distinct states (300/s)" in progress.lines()[0]
    # Figures of a model that has ended are not kept.
    progress.figures(_check("twopc-abstract"), TLCProgress(1.0, 1, 1, 0, 1))
    assert "twopc-abstract" not in progress.latest


def test_tlc_own_progress_report_and_final_figures_are_read_in_the_same_words() -> None:
    from tlasim.tracing.tla.tlc import last_figures

    report = ("Progress(14) at 2026-12-06 23:22:52: 57,511 states generated (57,511 s/min), "
              "8,800 distinct states found (8,800 ds/min), 2,618 states left on queue.")
    assert last_figures(report) == ("8,800 distinct states, 57,511 generated, queue 2,618, "
                                    "depth 14")
    final = "57511 states generated, 8800 distinct states found, 0 states left on queue."
    assert last_figures(report + "\n" + final) == "8,800 distinct states, 57,511 generated, queue 0"
    assert last_figures("no figures here") is None
