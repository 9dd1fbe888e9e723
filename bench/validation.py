"""TLC validation: batched runs against one TLC process per trace, side by side.

Both paths check the same two-phase commit traces (3 RMs, 4 transactions,
swarm faults: about 110 steps each, the size the target names) with the
same generated modules; the only difference is how many traces one TLC
process checks. One
process per trace costs about a second and a half each, so by default it is
timed on a sample and the ratio compares seconds per trace;
`python -m bench.validation --sample 1000` times it on every trace.

`large_values` times one trace with a 1 MB string and a 100,000-element set
(SANY's parse is quadratic in line length, so the generated module breaks
its lines), and, side by side on a tenth of that, the same module text
written the old way, each value on one line.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import Trace, TraceStep
from tlasim.tracing.tla import trace_module
from tlasim.tracing.validation.validator import validate_trace, validate_traces
from tlasim.tracing.values import Record


@dataclass(frozen=True)
class ValidationComparison:
    traces: int
    steps: int
    sample: int  # traces checked one TLC process each
    per_trace_seconds: float  # wall seconds for the sample, one TLC per trace
    batched: dict[int, float]  # jobs -> wall seconds for all traces, batched

    @property
    def per_trace_mean(self) -> float:
        return self.per_trace_seconds / self.sample

    def speedup(self, jobs: int) -> float:
        """Seconds per trace, one TLC each, over seconds per trace batched."""
        return self.per_trace_mean / (self.batched[jobs] / self.traces)


TX_COUNT = 4  # transactions per trace: about 110 steps


def make_traces(count: int, folder: Path) -> tuple[list[Path], int]:
    paths, steps = [], 0
    for seed in range(1, count + 1):
        path = folder / f"twopc-{seed}.ndjson"
        run = run_seed("twopc", seed, trace_path=path, protocol_overrides={"tx_count": TX_COUNT})
        steps += run.result.stats.steps
        paths.append(path)
    return paths, steps


def run(
    traces: int = 1000, sample: int = 60, jobs: tuple[int, ...] = (1, 2)
) -> ValidationComparison:
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        paths, steps = make_traces(traces, Path(scratch))
        start = time.perf_counter()
        for path in paths[:sample]:
            verdict = validate_trace(path)
            if not verdict.accepted:
                raise SystemExit(f"benchmark trace {path.name} was rejected:\n{verdict.report()}")
        per_trace = time.perf_counter() - start
        batched = {}
        for j in jobs:
            start = time.perf_counter()
            verdicts = validate_traces(paths, jobs=j)
            batched[j] = time.perf_counter() - start
            rejected = [v for v in verdicts if not v.accepted]
            if rejected:
                raise SystemExit(f"benchmark trace rejected in a batch:\n{rejected[0].report()}")
    return ValidationComparison(traces, steps, min(sample, traces), per_trace, batched)


def describe(c: ValidationComparison) -> list[str]:
    lines = [
        f"TLC validation of {c.traces} twopc traces ({c.steps} steps, "
        f"{c.steps / c.traces:.0f} per trace):",
        f"  one TLC process per trace: {c.per_trace_mean:.2f} s per trace "
        f"(timed on {c.sample} traces: {c.per_trace_seconds:.1f} s)",
    ]
    for j, seconds in sorted(c.batched.items()):
        lines.append(
            f"  batched, {j} TLC at once: {seconds:.1f} s for all, "
            f"{1000 * seconds / c.traces:.0f} ms per trace: {c.speedup(j):.1f}x faster"
        )
    return lines


# A spec whose state is one string and one set, each written whole by a step
# and then kept, so TLC compares the logged values with the spec's.
_BLOB = r"""---------------- MODULE Blob ----------------
EXTENDS Naturals
VARIABLES text, bag
Init == text = "" /\ bag = {}
Write(s) == text' = s /\ UNCHANGED bag
Fill(b) == bag' = b /\ UNCHANGED text
Keep == UNCHANGED <<text, bag>>
==============================================
"""
_BLOB_TEMPLATE = r"""---------------- MODULE BlobTrace ----------------
EXTENDS Blob
TraceActionNames == {"Init", "Write", "Fill", "Keep"}
TraceAction(e) ==
    CASE e.action = "Write" -> Write(e.vars.text)
      [] e.action = "Fill" -> Fill(e.vars.bag)
      [] e.action = "Keep" -> Keep
      [] OTHER -> FALSE
==================================================
"""


def write_blob_specs(folder: Path) -> None:
    """Write the Blob spec and its trace template into `folder`/blob; the
    large-value tests check against it too."""
    (folder / "blob").mkdir()
    (folder / "blob" / "Blob.tla").write_text(_BLOB)
    (folder / "blob" / "BlobTrace.tla").write_text(_BLOB_TEMPLATE)


@dataclass(frozen=True)
class LargeValues:
    chars: int  # the string's length
    elements: int  # the set's size
    seconds: float  # validate_traces wall time, module lines broken
    small_chars: int
    small_elements: int
    small_seconds: float  # the smaller trace, lines broken
    small_one_line_seconds: float  # the smaller trace, each value on one line


def _blob_trace(chars: int, elements: int) -> Trace:
    text = ('say "hi" \\ back\n' * (chars // 16 + 1))[:chars]
    bag = frozenset(f"e{i}" for i in range(elements))
    empty: frozenset[Any] = frozenset()
    rows = [("Init", "", empty), ("Write", text, empty), ("Fill", text, bag), ("Keep", text, bag)]
    steps = tuple(
        TraceStep(i + 2, i, i, None, action, Record(), Record({"text": t, "bag": b}))
        for i, (action, t, b) in enumerate(rows)
    )
    return Trace("blob.ndjson", Record({"spec": "Blob", "constants": Record()}), steps)


@contextmanager
def _one_line() -> Iterator[None]:
    """The generated module as it was written before: no line breaks in values."""
    saved = trace_module._BREAK_AT, trace_module._PIECE
    trace_module._BREAK_AT = trace_module._PIECE = 2**62
    try:
        yield
    finally:
        trace_module._BREAK_AT, trace_module._PIECE = saved


def _time_blob(specs: Path, chars: int, elements: int) -> float:
    trace = _blob_trace(chars, elements)
    start = time.perf_counter()
    verdict = validate_traces([trace], spec_dirs=[specs])[0]
    seconds = time.perf_counter() - start
    if not verdict.accepted:
        raise SystemExit(f"the large-value trace was rejected:\n{verdict.report()}")
    return seconds


def large_values(
    chars: int = 1_000_000, elements: int = 100_000, small: int = 10
) -> LargeValues:
    """Validation time of one trace with a `chars` string and an `elements` set;
    and of one a `small`-th that size, with lines broken and on one line."""
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        specs = Path(scratch)
        write_blob_specs(specs)
        seconds = _time_blob(specs, chars, elements)
        small_chars, small_elements = chars // small, elements // small
        small_seconds = _time_blob(specs, small_chars, small_elements)
        with _one_line():
            one_line = _time_blob(specs, small_chars, small_elements)
    return LargeValues(
        chars, elements, seconds, small_chars, small_elements, small_seconds, one_line
    )


def describe_large(c: LargeValues) -> list[str]:
    return [
        f"TLC validation of one trace holding a {c.chars:,}-character string and a "
        f"{c.elements:,}-element set: {c.seconds:.1f} s",
        f"  a tenth of that ({c.small_chars:,} characters, {c.small_elements:,} elements): "
        f"{c.small_seconds:.1f} s with lines broken, {c.small_one_line_seconds:.1f} s with "
        f"each value on one line ({c.small_one_line_seconds / c.small_seconds:.1f}x slower)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=60)
    args = parser.parse_args()
    for line in describe(run(args.traces, args.sample)):
        print(line, flush=True)
    for line in describe_large(large_values()):
        print(line, flush=True)


if __name__ == "__main__":
    main()
