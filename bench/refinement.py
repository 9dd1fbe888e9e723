"""Every run a refinement check: `--validate all` against `--validate none`,
side by side, and where TLC's time per checked step goes.

For each protocol's standard campaign (its default options, swarm faults)
at 2 workers, one process runs the same seeds both ways, back to back:
`run_campaign(..., validate="none")` and `validate="all"` (every run checked
by TLC in each worker's session), PAIRS times, at two sizes (a short
campaign, and a long one whose fixed costs are small); and for scale
`validate="all"` as it was before (every run traced to a log and each batch
of ten checked by its own TLC run with the text modules,
`method="reference"`) on a tenth of the short campaign's seeds.

`profile` splits the cost per checked step of one batch's worth of traces: recording the
runs for TLC in Python, writing the batch file, TLC's fixed cost per run
(a run of one trace: Java's start, SANY's parse of the spec, the rest is
TLC's set-up and the JIT's warm-up), and TLC's evaluation (the rest of a
full batch's run), and the same traces through one warm TLC stream (as a
campaign checks them, `tlc_stream`), with the CPU time of each (TLC's
JVMs, all their threads); beside it, the same traces checked the way they were
before (text modules, batches of the validator's old size). No explain run
is part of a campaign: `tlasim repro` explains a rejection on demand.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tlasim.protocols import get_protocol
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.run.runner import run_recorded, run_seed
from tlasim.tracing.tla.binary import trace_logs_of
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.tla.speccheck import TraceSpec, load_trace_spec
from tlasim.tracing.tla.tlc import TLASIM_JAR, find_java, find_tla2tools, run_jar_class, run_tlc
from tlasim.tracing.tla.trace_module import trace_check, trace_data_loaded
from tlasim.tracing.validation.tlc_batch import BatchItem, CheckSession, check_batch, prepare_folder
from tlasim.tracing.validation.validator import BATCH_STEPS

SEEDS = {"twopc": 600, "shardsplit": 300, "snapshot": 300}
# Long enough that the fixed cost (TLC's start, its compiler's warm-up) is a
# small part: a campaign's steady state, and the optimizing JIT's turn
# (`sweep.LONG_RUN_SEEDS`).
LONG_SEEDS = {"twopc": 2000, "shardsplit": 1000, "snapshot": 1000}
# The machines are noisy (the same campaign twice in a row differs by up to
# a fifth): each size runs this many none/all pairs back to back, and the
# ratio reported is the median pair's.
PAIRS = 3


@dataclass(frozen=True)
class Ratio:
    protocol: str
    seeds: int
    pairs: tuple[tuple[float, float], ...]  # (none, all) seconds, pair by pair
    before_seeds: int
    before_seconds: float

    @property
    def ratios(self) -> list[float]:
        """all/none in seeds per second, pair by pair, sorted."""
        return sorted(none / checked for none, checked in self.pairs)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def none_rate(self) -> float:
        return self.seeds / statistics.median(none for none, _ in self.pairs)

    @property
    def all_rate(self) -> float:
        return self.seeds / statistics.median(checked for _, checked in self.pairs)

    @property
    def before_rate(self) -> float:
        return self.before_seeds / self.before_seconds


def _timed_campaign(protocol: str, seeds: int, validate: str) -> float:
    start = time.perf_counter()
    outcomes = run_campaign(protocol, range(seeds), validate=validate, workers=2)
    seconds = time.perf_counter() - start
    if validate == "all" and any(o.validation != "accepted" for o in outcomes):
        raise SystemExit(f"{protocol}: a correct run was not accepted")
    return seconds


def _before(protocol: str, seeds: int) -> float:
    """--validate all as it was: every run logged, ten a TLC run, text modules."""
    from tlasim.tracing.validation.validator import validate_traces

    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        start = time.perf_counter()
        paths = []
        for seed in range(seeds):
            path = Path(scratch) / f"{seed}.ndjson"
            run_seed(protocol, seed, trace_path=path)
            paths.append(path)
            if len(paths) == 10 or seed == seeds - 1:
                validate_traces(paths, explain=False, method="reference")
                paths = []
        return time.perf_counter() - start


def ratios() -> list[Ratio]:
    out = []
    for protocol in SEEDS:
        before_seeds = max(10, SEEDS[protocol] // 10)
        before = _before(protocol, before_seeds)
        for seeds in (SEEDS[protocol], LONG_SEEDS[protocol]):
            pairs = tuple(
                (_timed_campaign(protocol, seeds, "none"), _timed_campaign(protocol, seeds, "all"))
                for _ in range(PAIRS)
            )
            out.append(Ratio(protocol, seeds, pairs, before_seeds, before))
    return out


@dataclass(frozen=True)
class Profile:
    protocol: str
    traces: int
    steps: int
    record_seconds: float  # run_recorded minus the same runs untraced
    file_seconds: float  # writing the batch file
    jvm_seconds: float  # Java starting and loading TLC (TLC printing its usage)
    sany_seconds: float  # SANY parsing the generated modules of one trace
    fixed_seconds: float  # a TLC run of one trace
    batch_seconds: float  # the TLC run of the whole batch
    batch_cpu: float  # its CPU seconds (Java's threads, all of them)
    stream_seconds: float  # the same traces through one warm TLC stream, as a campaign
    stream_cpu: float  # its CPU seconds
    text_seconds: float  # the same batch with text modules (reference method)

    def per_step_ms(self, seconds: float) -> float:
        return 1000 * seconds / self.steps


def profile(protocol: str = "twopc", traces: int = 300) -> Profile:
    spec = load_trace_spec(get_protocol(protocol).spec_module, None)
    start = time.perf_counter()
    for seed in range(traces):
        run_seed(protocol, seed)
    plain = time.perf_counter() - start
    start = time.perf_counter()
    recorded = [run_recorded(protocol, seed)[1] for seed in range(traces)]
    record = time.perf_counter() - start - plain
    if any(ready is None for ready in recorded):
        raise SystemExit(f"{protocol}: a run could not be recorded")
    # A batch shares its constants (shardsplit's workload draws one of two
    # sets): the runs with the first run's constants, by seed.
    first = to_tla(dict(recorded[0].constants))  # type: ignore[union-attr]
    prepared = {
        seed: ready for seed, ready in enumerate(recorded)
        if ready is not None and to_tla(dict(ready.constants)) == first
    }
    items = [
        BatchItem(spec, dict(ready.constants), ready.steps, blob=ready.blob,
                  full_logs=ready.full_logs)
        for ready in prepared.values()
    ]
    # Recording's share of the runs kept, per step as the rest is.
    record *= sum(i.steps for i in items) / sum(r.steps for r in recorded if r is not None)
    start = time.perf_counter()
    trace_logs_of([i.data() for i in items])
    file_seconds = time.perf_counter() - start

    def tlc_run(batch: list[BatchItem], method: str) -> float:
        with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
            prepare_folder(Path(scratch), spec)
            check_batch(Path(scratch), batch, timeout_s=None, tlc=run_tlc,
                        method=method, locate=False)  # type: ignore[arg-type]
        if any(i.step != 0 or i.unchecked for i in batch):
            raise SystemExit(f"{protocol}: a correct run was not accepted")
        return sum(i.seconds for i in batch)

    fixed = tlc_run(items[:1], "fast")
    jvm, sany = _jvm_and_sany(spec, items[0])
    cpu = _children_cpu()
    whole = tlc_run(items, "fast")
    batch_cpu = _children_cpu() - cpu
    cpu, start = _children_cpu(), time.perf_counter()
    with CheckSession(stream=True) as session:
        for seed, ready in prepared.items():
            session.submit(seed, ready)
        session.flush()
        verdicts = [session.results.get() for _ in prepared]
    stream = time.perf_counter() - start
    stream_cpu = _children_cpu() - cpu
    if not all(v.accepted for v in verdicts):
        raise SystemExit(f"{protocol}: the stream did not accept a correct run")
    # The text modules, in batches of the size the validator used for them.
    text = 0.0
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        from tlasim.tracing.codec import read_trace

        chunk: list[BatchItem] = []
        last = max(prepared)
        for seed, ready in prepared.items():
            path = Path(scratch) / f"{seed}.ndjson"
            run_seed(protocol, seed, trace_path=path)
            trace = read_trace(path)
            chunk.append(BatchItem(spec, dict(ready.constants), len(trace.steps), trace=trace))
            if sum(i.steps for i in chunk) >= BATCH_STEPS or seed == last:
                text += tlc_run(chunk, "reference")
                chunk = []
    return Profile(protocol, len(items), sum(i.steps for i in items), record, file_seconds, jvm,
                   sany, fixed, whole, batch_cpu, stream, stream_cpu, text)


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (TLC's JVMs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _jvm_and_sany(spec: TraceSpec, item: BatchItem) -> tuple[float, float]:
    """Seconds for Java to start and load TLC, and for SANY to parse one
    trace's generated modules (spec, template, data module)."""
    java, jar = find_java(), find_tla2tools()
    with tempfile.TemporaryDirectory(prefix="tlasim-bench-") as scratch:
        folder = Path(scratch)
        prepare_folder(folder, spec)
        (folder / "TraceData.tla").write_text(trace_data_loaded(item.constants, "TraceData.bin"))
        (folder / "TraceCheck.tla").write_text(trace_check(spec, full_logs=True, ends_only=True))
        timings = []
        for main_class, args in (("tlc2.TLC", ["-help"]),
                                 ("tla2sany.SANY", ["TraceCheck.tla"])):
            start = time.perf_counter()
            run_jar_class(java, jar, main_class, args, cwd=folder, java_tmp=folder,
                          classpath=[TLASIM_JAR])
            timings.append(time.perf_counter() - start)
    return timings[0], timings[1] - timings[0]
