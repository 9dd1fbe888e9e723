"""Partial logs of real runs: what a line leaves out is left to the spec.

Simulated traces log every variable on every line; real systems log what
changed, or what the acting node sees, and sometimes no action name. Each
protocol's traces, stripped into those shapes, must still be behaviours of
the spec. (That stripped traces of the bug variants are still rejected is
held by tests/quality/test_bug_zoo.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tlasim.protocols import PROTOCOLS
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import read_trace, write_trace
from tlasim.tracing.mutation.partial import STRIPPINGS, only_changed, strip
from tlasim.tracing.validation.validator import validate_traces

SEEDS = range(1, 4)


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_stripped_traces_of_correct_runs_are_still_accepted(protocol: str, tmp_path: Path) -> None:
    shapes = []
    for seed in SEEDS:
        path = tmp_path / f"{seed}.ndjson"
        run_seed(protocol, seed, trace_path=path)
        full = read_trace(path)
        shapes += [(seed, how, strip(full, how, seed=seed)) for how in STRIPPINGS]
    verdicts = validate_traces([trace for _, _, trace in shapes], explain=False)
    rejected = [(seed, how, v.summary()) for (seed, how, _), v in zip(shapes, verdicts, strict=True)
                if not v.accepted]
    assert not rejected


def test_partial_trace_written_and_read_back_is_the_same_trace(tmp_path: Path) -> None:
    path = tmp_path / "full.ndjson"
    run_seed("twopc", 1, trace_path=path)
    partial = only_changed(read_trace(path))
    assert any(len(s.vars) < len(partial.steps[0].vars) for s in partial.steps)
    for fmt in ("ndjson", "msgpack"):
        out = tmp_path / f"partial.{fmt}"
        write_trace(partial, out, fmt)  # type: ignore[arg-type]
        again = read_trace(out)
        assert again.header == partial.header
        assert [(s.action, s.params, s.vars, s.ts) for s in again.steps] == [
            (s.action, s.params, s.vars, s.ts) for s in partial.steps
        ]
